"""The logs workflows' room: the evaluation design (:mod:`.design`) that
:func:`mixedeval.compare_logs`, :func:`mixedeval.summarize` and :func:`mixedeval.questions_needed`
build once per call and every analysis of that call reads.

Nothing is imported here (the design is imported by :mod:`mixedeval.workflows._paired`; importing
the workflows from this package would make a cycle)."""
