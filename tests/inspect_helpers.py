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
