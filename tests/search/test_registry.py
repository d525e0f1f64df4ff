"""One strategy registry over one evaluator protocol: every search registers with the objective it judges in,
and an evaluator of the other objective is refused before anything is measured."""

from __future__ import annotations

import pytest

from chronos.config import GreedySearchConfig, RandomTimeConfig
from chronos.errors import SearchError
from chronos.search import STRATEGIES, CycleEvaluator, Strategy, TimedEvaluator, register, run, run_strategy
from chronos.search.timed import greedy_in_time
from chronos.search.timed_random import random_in_time
from tests.search.test_search import StandInBackend
from tests.search.test_search import _kernel as _gemm_kernel
from tests.search.test_timed import TIMING, CompareStandIn
from tests.search.test_timed import _kernel as _triton_kernel


def test_every_search_is_registered_with_its_objective():
    assert {n: s.objective for n, s in STRATEGIES.items()} == {
        "greedy": "cycles", "random": "cycles", "exhaustive": "cycles",
        "greedy_time": "time", "random_time": "time"}
    assert CycleEvaluator.objective == "cycles" and TimedEvaluator.objective == "time"


def test_an_evaluator_of_the_other_objective_is_refused():
    spec, module = _gemm_kernel()
    cycles = CycleEvaluator(spec, module, StandInBackend())
    with pytest.raises(SearchError, match="greedy_time judges in time, but this evaluator measures cycles"):
        run_strategy("greedy_time", cycles, GreedySearchConfig())
    with pytest.raises(SearchError, match="unknown search strategy 'beam'; registered: exhaustive"):
        run_strategy("beam", cycles)


def test_the_registry_runs_the_time_searches_as_calling_them_directly_does():
    spec, module = _triton_kernel("softmax_r32_c128")
    cfg = GreedySearchConfig()
    direct = greedy_in_time(TimedEvaluator(spec, module, CompareStandIn(), TIMING, 0.005), cfg).to_json()
    via = run("greedy_time", spec, module, CompareStandIn(), cfg, timing=TIMING, min_gain=0.005).to_json()
    assert via == direct and direct["trace"]
    rcfg = RandomTimeConfig(sets=6, max_steps=2, seed=4)
    direct = random_in_time(TimedEvaluator(spec, module, CompareStandIn(), TIMING, 0.005), *_random(rcfg))
    via = run("random_time", spec, module, CompareStandIn(), rcfg, timing=TIMING, min_gain=0.005)
    assert via.to_json() == direct.to_json() and via.strategy == "random_time"


def _random(cfg):
    from chronos.actions import SEED

    return SEED, cfg.sets, cfg.max_steps, cfg.seed


def test_a_new_strategy_plugs_in_and_a_name_is_taken_once():
    def stop_at_once(ev, cfg):
        return ev.evaluate([()])[0]

    s = Strategy("stop_at_once_test", "cycles", stop_at_once, GreedySearchConfig)
    try:
        register(s)
        spec, module = _gemm_kernel()
        assert run("stop_at_once_test", spec, module, StandInBackend()).actions == ()
        with pytest.raises(SearchError, match="registered already"):
            register(Strategy("stop_at_once_test", "time", stop_at_once, GreedySearchConfig))
        with pytest.raises(SearchError, match="objective 'energy'"):
            register(Strategy("x_test", "energy", stop_at_once, GreedySearchConfig))
    finally:
        STRATEGIES.pop("stop_at_once_test", None)
