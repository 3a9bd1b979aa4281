#!/usr/bin/env python
"""Write the bundled LLM example: Inspect AI ``.eval`` logs of three mock models on two tasks.

    python scripts/make_llm_example.py [--out-dir DIR]

(default DIR: ``mixedeval/datasets_files/llm_inspect_logs/``; its old ``*.eval`` files are
replaced). Offline and deterministic: the questions and every model's answers are drawn from
``numpy.random.default_rng(RANDOM_STATE)``; Inspect AI (``pip install 'mixedeval[logs]'``)
then runs each task with a solver that sets the model's output itself (no model is called,
nothing is downloaded) and scores it with ``match()``. Only the logs' ids and timestamps change
between runs; the scores per model, task, question and epoch are always the same.

The data (fictitious models, questions of our own):

* models ``mockllm/small``, ``mockllm/medium``, ``mockllm/large``;
* task ``arithmetic``: 60 word problems, 3 per template, from 20 templates (the sample
  metadata ``cluster`` names the template: questions of one template share their difficulty);
  target accuracies 0.55 / 0.70 / 0.78 (drawn: 0.556 / 0.717 / 0.767);
* task ``number_facts``: 60 four-option multiple-choice questions ("which of these numbers is
  prime?"), 3 per rule, from 20 rules (``cluster``); target accuracies 0.72 / 0.86 / 0.95
  (drawn: 0.700 / 0.839 / 0.961);
* ``epochs=3``: each question is answered three times; whether an answer is right is drawn
  from a logistic model (model ability - question difficulty + model x cluster interaction),
  so a model answers a question consistently and questions of one cluster are alike.

``me.compare_logs(me.datasets.path("llm_inspect_logs"), metric="match", cluster="cluster")``
analyses them (``mixedeval demo llm`` does that and writes the report).
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

RANDOM_STATE = 8  # of the states 0-17 tried, one whose drawn accuracies land near the targets
EPOCHS = 3
PER_CLUSTER = 3
MODELS = ("mockllm/small", "mockllm/medium", "mockllm/large")
ACCURACY = {  # target mean accuracy per task and model (the drawn answers land near it)
    "arithmetic": (0.55, 0.70, 0.78),
    "number_facts": (0.72, 0.86, 0.95),
}
SD_CLUSTER, SD_ITEM, SD_MODEL_CLUSTER = 1.0, 0.7, 0.4  # logit scale
OUT_DIR = Path(__file__).resolve().parents[1] / "mixedeval" / "datasets_files" / "llm_inspect_logs"

# (template, answer) of the arithmetic word problems; a and b are drawn per question
TEMPLATES = [
    ("A train travels {a} km per hour for {b} hours. How many km does it travel?", lambda a, b: a * b),
    ("Mia has {a} stickers and gives away {b}. How many stickers does she have left?", lambda a, b: a - b),
    ("A box holds {a} pencils. How many pencils are in {b} boxes?", lambda a, b: a * b),
    ("Tom reads {a} pages on Monday and {b} pages on Tuesday. How many pages does he read?", lambda a, b: a + b),
    ("{a} apples are shared equally among {b} children. How many apples does each child get?", None),
    ("A shirt costs {a} dollars and is discounted by {b} dollars. What is the new price?", lambda a, b: a - b),
    ("A garden has {a} rows of {b} plants. How many plants are there?", lambda a, b: a * b),
    ("A tank holds {a} litres and {b} litres are added. How many litres are in the tank?", lambda a, b: a + b),
    ("What is {a} squared minus {b}?", lambda a, b: a * a - b),
    ("A rectangle is {a} cm long and {b} cm wide. What is its perimeter in cm?", lambda a, b: 2 * (a + b)),
    ("A bus carries {a} people and {b} get off. How many people remain on the bus?", lambda a, b: a - b),
    ("Sam saves {a} dollars a week for {b} weeks. How many dollars does he save?", lambda a, b: a * b),
    ("What is the sum of {a}, {b} and {a}?", lambda a, b: 2 * a + b),
    ("A baker makes {a} loaves a day. How many loaves does she make in {b} days?", lambda a, b: a * b),
    ("A film lasts {a} minutes and {b} minutes have passed. How many minutes are left?", lambda a, b: a - b),
    ("What is {a} times {b} plus {b}?", lambda a, b: a * b + b),
    ("A class has {a} girls and {b} boys. How many pupils does it have?", lambda a, b: a + b),
    ("A car uses {b} litres per 100 km. How many litres does it use for {a}00 km?", lambda a, b: a * b),
    ("What is the difference between {a} squared and {b} squared?", lambda a, b: a * a - b * b),
    ("A rope {a} m long is cut into pieces of {b} m. How many pieces are there?", None),
]

# (question, predicate) of the multiple-choice number facts: exactly one option satisfies it
RULES = [
    (f"Which of these numbers is divisible by {k}?", (lambda k: lambda n: n % k == 0)(k))
    for k in (3, 4, 6, 7, 8, 9, 11, 12, 13)
] + [
    ("Which of these numbers is prime?", lambda n: n > 1 and all(n % d for d in range(2, math.isqrt(n) + 1))),
    ("Which of these numbers is a perfect square?", lambda n: math.isqrt(n) ** 2 == n),
    ("Which of these numbers is a perfect cube?", lambda n: round(n ** (1 / 3)) ** 3 == n),
    ("Which of these numbers is a power of two?", lambda n: n & (n - 1) == 0),
    ("Which of these numbers is a palindrome?", lambda n: str(n) == str(n)[::-1]),
    ("Which of these numbers has a digit sum of 10?", lambda n: sum(map(int, str(n))) == 10),
    ("Which of these numbers ends in 5?", lambda n: n % 10 == 5),
    ("Which of these numbers is a multiple of 25?", lambda n: n % 25 == 0),
    ("Which of these numbers is a Fibonacci number?", lambda n: n in {13, 21, 34, 55, 89, 144, 233, 377}),
    ("Which of these numbers is a triangular number?", lambda n: math.isqrt(8 * n + 1) ** 2 == 8 * n + 1),
    ("Which of these numbers has exactly two digits equal to 7?", lambda n: str(n).count("7") == 2),
]
LETTERS = "ABCD"


def arithmetic_questions(rng: np.random.Generator) -> list[dict]:
    out = []
    for c, (text, fn) in enumerate(TEMPLATES):
        for j in range(PER_CLUSTER):
            if fn is None:  # an exact division
                b = int(rng.integers(2, 10))
                a = b * int(rng.integers(3, 13))
                answer = a // b
            else:
                a, b = sorted((int(rng.integers(3, 40)), int(rng.integers(2, 30))), reverse=True)
                answer = fn(a, b)
            out.append({"id": f"arith_{c:02d}_{j}", "input": text.format(a=a, b=b), "target": str(answer),
                        "cluster": f"template_{c:02d}"})
    return out


def _options(rng: np.random.Generator, pred) -> tuple[list[int], int]:
    """Four numbers in 10..400 of which exactly one satisfies ``pred``; the right one's index."""
    pool = np.arange(10, 401)
    good = [int(n) for n in pool if pred(int(n))]
    bad = [int(n) for n in pool if not pred(int(n))]
    right = good[int(rng.integers(len(good)))]
    wrong = [bad[i] for i in rng.choice(len(bad), size=3, replace=False)]
    pos = int(rng.integers(4))
    return wrong[:pos] + [right] + wrong[pos:], pos


def number_fact_questions(rng: np.random.Generator) -> list[dict]:
    out = []
    for c, (text, pred) in enumerate(RULES):
        for j in range(PER_CLUSTER):
            opts, pos = _options(rng, pred)
            choices = "\n".join(f"{L}) {n}" for L, n in zip(LETTERS, opts))
            out.append({"id": f"facts_{c:02d}_{j}", "input": f"{text}\n{choices}\nAnswer with the letter.",
                        "target": LETTERS[pos], "cluster": f"rule_{c:02d}"})
    return out


def _ability(difficulty: np.ndarray, target: float) -> float:
    """The logit ability whose mean probability of a right answer over the questions is ``target``."""
    lo, hi = -10.0, 10.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if np.mean(1 / (1 + np.exp(-(mid - difficulty)))) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _wrong(target: str, rng: np.random.Generator) -> str:
    """A wrong answer that match() (location "end") cannot mistake for ``target``."""
    if target in LETTERS:
        return str(rng.choice([L for L in LETTERS if L != target]))
    for _ in range(100):
        w = str(int(target) + int(rng.choice([-10, -2, -1, 1, 2, 3, 10, 12])))
        if not w.endswith(target) and w != target:
            return w
    raise AssertionError(target)


def draw_answers(questions: list[dict], accuracy: tuple[float, ...], rng: np.random.Generator) -> dict:
    """{model: {question id: [answer per epoch]}} from the logistic model of the docstring."""
    clusters = sorted({q["cluster"] for q in questions})
    u = dict(zip(clusters, rng.normal(0, SD_CLUSTER, len(clusters))))
    difficulty = np.array([u[q["cluster"]] for q in questions]) + rng.normal(0, SD_ITEM, len(questions))
    answers = {}
    for model, acc in zip(MODELS, accuracy):
        mc = dict(zip(clusters, rng.normal(0, SD_MODEL_CLUSTER, len(clusters))))
        eta = _ability(difficulty, acc) - difficulty + np.array([mc[q["cluster"]] for q in questions])
        p = 1 / (1 + np.exp(-eta))
        right = rng.random((len(questions), EPOCHS)) < p[:, None]
        answers[model] = {q["id"]: [f"ANSWER: {q['target'] if ok else _wrong(q['target'], rng)}" for ok in row]
                          for q, row in zip(questions, right)}
    return answers


def example_data() -> dict:
    """{task: (questions, answers)}: everything the logs hold, from RANDOM_STATE alone."""
    rng = np.random.default_rng(RANDOM_STATE)
    out = {}
    for task, make in (("arithmetic", arithmetic_questions), ("number_facts", number_fact_questions)):
        questions = make(rng)
        out[task] = (questions, draw_answers(questions, ACCURACY[task], rng))
    return out


def write_logs(out_dir: Path) -> list[Path]:
    """Run the tasks in Inspect AI for every model and write the logs into ``out_dir``."""
    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import match
    from inspect_ai.solver import solver

    @solver
    def recorded_answers(answers: dict):
        async def solve(state, generate):  # the model is never called: its answer is looked up
            content = answers[str(state.sample_id)][state.epoch - 1]
            state.output = ModelOutput.from_content(model=str(state.model), content=content)
            state.messages.append(state.output.message)
            return state
        return solve

    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.eval"):
        old.unlink()
    data = example_data()
    for model in MODELS:
        tasks = [Task(dataset=MemoryDataset([Sample(id=q["id"], input=q["input"], target=q["target"],
                                                    metadata={"cluster": q["cluster"]}) for q in questions],
                                            name=task),
                      solver=recorded_answers(answers[model]), scorer=match(), epochs=EPOCHS, name=task)
                 for task, (questions, answers) in data.items()]
        for log in inspect_eval(tasks, model=model, log_dir=str(out_dir), display="none", log_format="eval",
                                log_realtime=False):
            if log.status != "success":
                raise RuntimeError(f"{model} {log.eval.task}: status {log.status}")
            _drop_events(Path(log.location), out_dir / f"{model.split('/')[-1]}_{log.eval.task}.eval")
    return sorted(out_dir.glob("*.eval"))


def _drop_events(location: Path, target: Path) -> None:
    """Rewrite the log at ``target`` (a stable name, e.g. ``small_arithmetic.eval``) without the
    samples' event transcripts (Inspect's record of each solver step: span and state events,
    5 kB a sample, nothing a score reader uses), so that the six logs stay small enough to ship
    inside the package."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(location))
    for s in log.samples or []:
        s.events = []
    write_eval_log(log, str(target))
    if location.resolve() != target.resolve():
        location.unlink()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out-dir", type=Path, default=OUT_DIR, help=f"where the logs go (default {OUT_DIR})")
    args = p.parse_args(argv)
    files = write_logs(args.out_dir)
    for f in files:
        print(f"{f}  {f.stat().st_size:,} bytes")
    print(f"total {sum(f.stat().st_size for f in files):,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
