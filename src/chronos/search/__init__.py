"""Search over the transform space: strategies as plug-ins over one evaluator and any measurement backend.

    from chronos.search import run
    result = run("greedy", spec, module, backend)      # or "random", "exhaustive"
"""

from __future__ import annotations

from chronos.search.base import Evaluator, Outcome, SearchResult
from chronos.search.space import CANONICAL_ORDER, canonical, enumerate_sets, realize
from chronos.search.strategies import STRATEGIES, ExhaustiveConfig

__all__ = ["CANONICAL_ORDER", "STRATEGIES", "Evaluator", "ExhaustiveConfig", "Outcome",
           "SearchResult", "canonical", "enumerate_sets", "realize", "run"]


def run(strategy: str, spec, module, backend, config=None) -> SearchResult:
    """Run one strategy on one kernel. `config` defaults to the strategy's dataclass defaults."""
    fn, cfg_cls = STRATEGIES[strategy]
    return fn(Evaluator(spec, module, backend), config or cfg_cls())
