"""Helpers for tests that write real Inspect AI logs offline: a solver that sets the model's
output itself (Inspect's mock model would need a tokenizer download)."""
from __future__ import annotations

from typing import Any


def answer_solver() -> Any:
    """An Inspect solver factory ``fixed_output(answers)``: ``answers[sample_id][epoch - 1]`` is
    the text the "model" outputs for that sample and epoch."""
    from inspect_ai.model import ModelOutput
    from inspect_ai.solver import solver

    @solver
    def fixed_output(ans: dict) -> Any:
        async def solve(state: Any, generate: Any) -> Any:
            state.output = ModelOutput.from_content(model=str(state.model),
                                                    content=ans[str(state.sample_id)][state.epoch - 1])
            return state
        return solve

    return fixed_output


def write_match_logs(path: Any, right: dict[str, float], epochs: int, seed: int, n: int,
                     metadata: Any = None, task: str = "arith") -> dict:
    """Inspect logs of ``right`` (model -> P(correct)) on ``n`` questions ``q0..q{n-1}`` (target
    ``2i``) scored by ``match()``, written offline by :func:`answer_solver`; ``metadata(i)`` gives a
    sample's metadata. Returns the answers."""
    import numpy as np
    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match

    rng = np.random.default_rng(seed)
    answers = {m: {f"q{i}": [str(2 * i) if rng.random() < p else "?" for _ in range(epochs)] for i in range(n)}
               for m, p in right.items()}
    fixed_output = answer_solver()
    ds = [Sample(id=f"q{i}", input=f"{i}+{i}?", target=str(2 * i), metadata=metadata(i) if metadata else None)
          for i in range(n)]
    for model in right:
        inspect_eval(Task(dataset=ds, solver=fixed_output(answers[model]), scorer=match(), epochs=epochs, name=task),
                     model=model, log_dir=str(path), display="none")
    return answers


def reduced_scores(path: Any, metadata: Any = None, scorer: str = "match") -> dict[str, tuple[list, float]]:
    """Per model, Inspect's own epoch-reduced sample scores (``log.reductions``, mean reducer) as
    SampleScore objects ordered by question number (with ``metadata(i)``), and the stderr Inspect
    logged."""
    from inspect_ai.log import list_eval_logs, read_eval_log
    from inspect_ai.scorer import SampleScore, Score

    out = {}
    for info in list_eval_logs(str(path)):
        log = read_eval_log(info)
        (red,) = [r for r in log.reductions if r.scorer == scorer]
        scores = [SampleScore(score=Score(value=s.value), sample_id=s.sample_id,
                              sample_metadata=metadata(int(s.sample_id[1:])) if metadata else None)
                  for s in red.samples]
        logged = log.results.scores[0].metrics["stderr"].value
        out[log.eval.model] = (sorted(scores, key=lambda s: int(s.sample_id[1:])), logged)
    return out
