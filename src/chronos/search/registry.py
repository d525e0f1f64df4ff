"""One registry of search strategies, cycle and time alike: Kernel Tuner's plug-in table, with the objective
each strategy judges in. A strategy is a function `(evaluator, config, **options) -> result` over the
`Evaluator` protocol (chronos.search.base); `run_strategy` refuses an evaluator of the other objective, so a
cycle strategy can never be handed wall-time comparisons, nor the reverse.

    from chronos.search.registry import STRATEGIES, register, run_strategy
    run_strategy("greedy_time", TimedEvaluator(spec, module, backend, timing, min_gain), cfg.search.greedy)

A new search (the joint-space search to come) registers here with `register(Strategy(...))`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from chronos.actions import SEED, ActionSpace
from chronos.config import GreedySearchConfig, RandomSearchConfig, RandomTimeConfig
from chronos.errors import SearchError
from chronos.search.base import Evaluator
from chronos.search.strategies import ExhaustiveConfig, exhaustive, greedy, random_search
from chronos.search.timed import TimedEvaluator, TimedSearch, greedy_in_time
from chronos.search.timed_random import random_in_time

OBJECTIVES = ("cycles", "time")


@dataclass(frozen=True)
class Strategy:
    name: str
    objective: str
    """What its evaluator judges in: "cycles" (the seed's gemm_tile) or "time" (every real kernel)."""
    search: Callable
    config: type
    """Its config dataclass; an instance with the defaults is used when none is given."""
    doc: str = ""


def _random_time(ev: TimedEvaluator, cfg: RandomTimeConfig, space: ActionSpace = SEED) -> TimedSearch:
    return random_in_time(ev, space, cfg.sets, cfg.max_steps, cfg.seed)


STRATEGIES: dict[str, Strategy] = {}


def register(strategy: Strategy) -> Strategy:
    if strategy.objective not in OBJECTIVES:
        raise SearchError(f"strategy {strategy.name}: objective {strategy.objective!r} is not one of "
                          f"{OBJECTIVES}")
    if strategy.name in STRATEGIES and STRATEGIES[strategy.name] != strategy:
        raise SearchError(f"strategy {strategy.name} is registered already")
    STRATEGIES[strategy.name] = strategy
    return strategy


for _s in (Strategy("greedy", "cycles", greedy, GreedySearchConfig, "the seed's teacher, in cycles"),
           Strategy("random", "cycles", random_search, RandomSearchConfig, "seeded random sequences"),
           Strategy("exhaustive", "cycles", exhaustive, ExhaustiveConfig, "every legal set: the oracle"),
           Strategy("greedy_time", "time", greedy_in_time, GreedySearchConfig,
                    "greedy, each step one side-by-side comparison"),
           Strategy("random_time", "time", _random_time, RandomTimeConfig,
                    "seeded random sequences compared side by side in one run")):
    register(_s)


def strategy(name: str) -> Strategy:
    if name not in STRATEGIES:
        raise SearchError(f"unknown search strategy {name!r}; registered: {', '.join(sorted(STRATEGIES))}")
    return STRATEGIES[name]


def run_strategy(name: str, ev: Evaluator, config=None, **options):
    """Run strategy `name` over `ev` (its config defaults to the strategy's dataclass defaults)."""
    s = strategy(name)
    if ev.objective != s.objective:
        raise SearchError(f"{ev.spec.kernel}: strategy {name} judges in {s.objective}, but this evaluator "
                          f"measures {ev.objective}")
    return s.search(ev, config if config is not None else s.config(), **options)
