"""Search over the transform space: strategies as plug-ins (one registry, chronos.search.registry) over one
evaluator protocol (chronos.search.base) and any measurement backend, GPU or replay.

    from chronos.search import run
    result = run("greedy", spec, module, backend)      # or "random", "exhaustive"
    result = run("greedy_time", spec, module, backend, timing=cfg.timing, min_gain=0.01)  # or "random_time"
"""

from __future__ import annotations

from chronos.search.base import CycleEvaluator, Evaluator, Outcome, SearchResult
from chronos.search.registry import STRATEGIES, Strategy, register, run_strategy, strategy
from chronos.search.space import CANONICAL_ORDER, canonical, enumerate_sets, realize
from chronos.search.strategies import ExhaustiveConfig
from chronos.search.timed import TimedEvaluator

__all__ = ["CANONICAL_ORDER", "STRATEGIES", "CycleEvaluator", "Evaluator", "ExhaustiveConfig", "Outcome",
           "SearchResult", "Strategy", "TimedEvaluator", "canonical", "enumerate_sets", "realize", "register",
           "run", "run_strategy", "strategy"]


def evaluator_for(objective: str, spec, module, backend, *, timing=None, min_gain: float | None = None):
    """The evaluator that judges in `objective`: cycles need only the backend; time needs the timing
    protocol and the least gain that counts."""
    if objective == "cycles":
        return CycleEvaluator(spec, module, backend)
    if timing is None or min_gain is None:
        raise TypeError("a wall-time evaluator needs timing= and min_gain=")
    return TimedEvaluator(spec, module, backend, timing, min_gain)


def run(name: str, spec, module, backend, config=None, *, timing=None, min_gain: float | None = None,
        **options):
    """Run one registered strategy on one kernel, with the evaluator of its objective."""
    ev = evaluator_for(strategy(name).objective, spec, module, backend, timing=timing, min_gain=min_gain)
    return run_strategy(name, ev, config, **options)
