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


def register_stub_grader() -> str:
    """Register (once) an offline Inspect model API ``stubgrader/<name>`` whose reply to a
    grading prompt is ``GRADE: C`` when the answer being graded contains the word "right",
    ``GRADE: P`` for "partly" and ``GRADE: I`` otherwise: the grader of ``model_graded_qa`` /
    ``model_graded_fact`` without network. Returns the model name to pass as ``model=``."""
    from inspect_ai.model import ModelAPI, ModelOutput, modelapi

    @modelapi(name="stubgrader")
    def _stub() -> Any:
        class StubGrader(ModelAPI):
            def __init__(self, model_name: str, base_url: Any = None, api_key: Any = None, config: Any = None,
                         **kwargs: Any) -> None:
                super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, api_key_vars=[],
                                 config=config)

            async def generate(self, input: Any, tools: Any, tool_choice: Any, config: Any) -> Any:  # noqa: A002
                text = "\n".join(str(m.text) for m in input)
                answer = text.split("[Submission]:")[-1].split("***")[0] if "[Submission]" in text else text
                grade = "C" if "right" in answer else ("P" if "partly" in answer else "I")
                return ModelOutput.from_content(model=self.model_name, content=f"Reasoning.\nGRADE: {grade}")

        return StubGrader

    return "stubgrader/judge"


def write_graded_logs(path: Any, quality: dict[str, float], epochs: int, seed: int, n: int,
                      scorer: str = "model_graded_qa") -> dict:
    """Inspect logs of models (``quality``: model -> P(a "right" answer)) on ``n`` questions
    ``q0..``, graded by Inspect's own ``model_graded_qa`` (or ``model_graded_fact``) with the
    offline stub grader. Returns the answers (model -> id -> per-epoch text)."""
    import numpy as np
    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import model_graded_fact, model_graded_qa

    grader = register_stub_grader()
    rng = np.random.default_rng(seed)
    answers = {m: {f"q{i}": ["right answer" if rng.random() < p else "wrong answer" for _ in range(epochs)]
                   for i in range(n)} for m, p in quality.items()}
    fixed_output = answer_solver()
    ds = [Sample(id=f"q{i}", input=f"question {i}?", target="the right answer") for i in range(n)]
    make = model_graded_qa if scorer == "model_graded_qa" else model_graded_fact
    for model in quality:
        inspect_eval(Task(dataset=ds, solver=fixed_output(answers[model]), scorer=make(model=grader), epochs=epochs,
                          name="graded"), model=model, log_dir=str(path), display="none")
    return answers
