"""Exceptions raised by mixedeval.

Every error the package raises derives from :class:`MixedEvalError`, so a caller can
catch the whole family with one ``except``.
"""
from __future__ import annotations


class MixedEvalError(Exception):
    """Base class of every error raised by mixedeval."""


class DataError(MixedEvalError, ValueError):
    """The input table (or an argument describing it) is unusable; the message names the
    column and the fix."""


class UsageError(MixedEvalError, ValueError):
    """The command line itself is wrong (unknown option, missing argument, bad combination);
    ``mixedeval.cli.UsageError`` (here so that the subcommand handlers raise it without
    importing the command line's module)."""


class RError(MixedEvalError, RuntimeError):
    """R signalled an error. ``r_message`` holds R's own message; the R session survives."""

    def __init__(self, message: str, r_message: str | None = None, call: str | None = None):
        super().__init__(message)
        self.r_message = r_message if r_message is not None else message
        self.call = call

    def __reduce__(self):  # keep R's message and call when raised in a worker process
        return (type(self), (str(self), self.r_message, self.call))


class RNotAvailableError(MixedEvalError, RuntimeError):
    """R or rpy2 or a required R package is missing; the message says how to install it."""


class FormulaError(DataError):
    """A model formula that mixedeval refuses to send to R: a token outside the allow-list (code,
    strings, unknown functions), names that are not data columns, or a formula too long or too
    deeply nested. The message names the token and how to precompute a column instead."""


class ExecutorError(MixedEvalError, RuntimeError):
    """The ``executor`` could not run a call's tasks (a closed Dask ``Client``, lost workers, a
    script without the ``__main__`` guard). The message says what happened, that nothing was lost
    (the same call with the same ``random_state`` gives the same numbers) and what to do."""


class WorkerLostError(ExecutorError):
    """A worker process (of a local pool or a Dask cluster) died while running the call's tasks."""


class MainGuardError(ExecutorError):
    """Worker processes were started from a script's top level without ``if __name__ == "__main__":``."""


class ExecutorWarning(UserWarning):
    """An ``executor`` that will run, but badly (e.g. more worker processes than CPUs)."""
