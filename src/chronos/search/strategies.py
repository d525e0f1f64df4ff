"""Search strategies as plug-ins over one CycleEvaluator: greedy (the seed's teacher), random, exhaustive
(the oracle)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from chronos.actions import get_action_history, get_action_mask
from chronos.config import GreedySearchConfig, RandomSearchConfig
from chronos.errors import SearchError
from chronos.features.seed import extract_features
from chronos.search.base import CycleEvaluator, Outcome, SearchResult, better, clearly_faster
from chronos.search.space import canonical, enumerate_sets, realize
from chronos.transforms import legal_actions


@dataclass(frozen=True)
class ExhaustiveConfig:
    """Every legal action set (canonical order); the oracle of the action space."""

    batch: int = 256  # sets measured per backend call


_GREEDY, _RANDOM = GreedySearchConfig(), RandomSearchConfig()  # the defaults (frozen, so shareable)


def _baseline(ev: CycleEvaluator) -> Outcome:
    base = ev.evaluate([()])[0]
    if base is None or not base.valid:
        reason = base.reason if base else "illegal"
        raise SearchError(f"{ev.spec.kernel}: the baseline itself is invalid ({reason})")
    return base


def greedy(ev: CycleEvaluator, cfg: GreedySearchConfig = _GREEDY) -> SearchResult:
    current = _baseline(ev)
    applied: tuple[str, ...] = ()
    module = ev.root
    trace: list[dict] = []
    demos: list[dict] = []
    for step in range(cfg.max_steps):
        legal = legal_actions(module)
        outcomes = ev.evaluate([(*applied, a) for a in legal])
        best_a, best = None, None
        for a, o in zip(legal, outcomes, strict=True):
            if better(o, best):
                best_a, best = a, o
        state = {"kernel": ev.spec.kernel, "step": step, "applied": list(applied),
                 "features": extract_features(module), "mask": get_action_mask(applied, legal),
                 "history": get_action_history(applied), "cycles_before": current.cycles}
        trace.append({"step": step, "cycles_before": current.cycles, "cycles_before_iqr": current.cycles_iqr,
                      "candidates": [{"action": a, **(o.to_json() if o else {"valid": False,
                                                                               "reason": "illegal_in_order"})}
                                     for a, o in zip(legal, outcomes, strict=True)]})
        if best is None or not clearly_faster(best, current, cfg.min_gain):
            trace[-1]["chosen"] = "stop"
            demos.append({**state, "action": "stop", "cycles_after": current.cycles})
            break
        trace[-1]["chosen"] = best_a
        demos.append({**state, "action": best_a, "cycles_after": best.cycles})
        applied = canonical((*applied, best_a))
        module = realize(ev.root, applied)
        current = best
    return ev.result("greedy", current, trace=trace, demos=demos)


def random_search(ev: CycleEvaluator, cfg: RandomSearchConfig = _RANDOM) -> SearchResult:
    best = _baseline(ev)
    rng = random.Random(cfg.seed)
    attempts = 0
    while len(ev.cache) - 1 < cfg.budget and attempts < 20 * cfg.budget:
        attempts += 1
        module, acts = ev.root, ()
        for _ in range(rng.randint(1, cfg.max_steps)):
            # register budgets are not pre-checked with ptxas (one run per budget per step would dominate):
            # the compile step records a refused budget as an invalid variant instead
            legal = legal_actions(module, defer_ptxas=True)
            if not legal:
                break
            acts = canonical((*acts, rng.choice(legal)))
            module = realize(ev.root, acts, defer_ptxas=True)
            if module is None:
                break
        if acts and module is not None:
            out = ev.evaluate([acts], {acts: module})[0]
            if better(out, best):
                best = out
    return ev.result("random", best, trace=[{"attempts": attempts}])


def exhaustive(ev: CycleEvaluator, cfg: ExhaustiveConfig = ExhaustiveConfig()) -> SearchResult:
    best = _baseline(ev)
    batch: dict[tuple[str, ...], object] = {}

    def flush() -> None:
        nonlocal best
        for out in ev.evaluate(list(batch), batch):
            if better(out, best):
                best = out
        batch.clear()

    n_sets = 0
    for acts, module in enumerate_sets(ev.root):
        n_sets += 1
        batch[acts] = module
        if len(batch) >= cfg.batch:
            flush()
    flush()
    return ev.result("exhaustive", best, trace=[{"legal_sets": n_sets}])
