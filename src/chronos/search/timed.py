"""Greedy search in wall time, for multi-thread kernels: every decision is one side-by-side comparison.

At each step the baseline, the incumbent (the set chosen so far) and every legal one-action extension are
measured together in one run (backend.compare: interleaved rounds on one allocation, bit-exact verification
against the baseline). A challenger replaces the incumbent only if the confidence interval of its time ratio
to the incumbent lies entirely below 1 - min_gain (chronos.measure.verdicts); the fastest such one (point
estimate) is taken, else the search stops. No number from another run enters a decision.

The seed's 1-thread gemm_tile family keeps its %clock64-cycle greedy (strategies.greedy): its metric, its
reproduction. Cycles are never used here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from chronos.actions import SEED, ActionSpace, get_action_history, get_action_mask
from chronos.config import GreedySearchConfig, TimingConfig
from chronos.errors import SearchError
from chronos.features.seed import extract_features
from chronos.kernels.spec import KernelSpec
from chronos.kernels.variant import Variant
from chronos.measure.comparison import Comparison
from chronos.measure.verdicts import FASTER
from chronos.ptx import emit
from chronos.ptx.ir import Module
from chronos.search.space import canonical, realize
from chronos.transforms import legal_actions


def time_row(cmp: Comparison, i: int, timing: TimingConfig, min_gain: float, against: int = 0) -> dict:
    """Contender i of a comparison as a report row: its time (median, IQR over rounds of the primary
    series), its ratio to `against` with the interval, and the verdict."""
    c = cmp.contenders[i]
    med, iqr = cmp.time_ms(i)
    est = cmp.estimate(i, timing, against)
    row = {"actions": list(c.actions), "valid": c.valid, "reason": c.reason, "time_ms": med,
           "time_ms_iqr": iqr, "registers": c.registers, "spills": c.spills,
           "verdict": cmp.verdict(i, timing, min_gain, against)}
    if est is not None:
        row.update(ratio=est.ratio, ci=[est.low, est.high])
    return row


@dataclass
class TimedSearch:
    kernel: str
    baseline: dict
    best: dict
    """The final set's row against the baseline, from the last step's comparison."""
    primary: str
    trace: list[dict] = field(default_factory=list)
    demos: list[dict] = field(default_factory=list)
    comparisons: int = 0
    measured: tuple[str, str] = ("", "")
    strategy: str = "greedy_time"

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "strategy": self.strategy, "primary": self.primary,
                "baseline": self.baseline, "best": self.best, "comparisons": self.comparisons,
                "trace": self.trace, "measured": {"first": self.measured[0], "last": self.measured[1]}}


class TimedEvaluator:
    """Realise action sets of one kernel and compare them side by side through a backend (an Evaluator
    judging in wall time)."""

    objective: ClassVar[str] = "time"

    def __init__(self, spec: KernelSpec, root: Module, backend, timing: TimingConfig, min_gain: float):
        self.spec, self.root, self.backend = spec, root, backend
        self.timing, self.min_gain = timing, min_gain
        self.root_ptx = emit(root)
        self.ptx: dict[tuple[str, ...], str] = {(): self.root_ptx}
        """The PTX of every set compared so far (what was measured is what is shipped)."""
        self.stamps: list[str] = []
        self.count = 0

    def compare(self, sets: list[tuple[str, ...]]) -> tuple[Comparison, list[int | None]]:
        """One comparison of the baseline and `sets` (canonical, realised here). Returns it and, per set,
        its contender index (None where the set is illegal in canonical order). Sets equal to the baseline
        or to an earlier set share its contender."""
        variants = [Variant(self.spec, self.root_ptx, ())]
        where: dict[tuple[str, ...], int] = {(): 0}
        idx: list[int | None] = []
        for s in sets:
            k = canonical(s)
            if k not in where:
                module = realize(self.root, k)
                if module is None:
                    idx.append(None)
                    continue
                where[k] = len(variants)
                self.ptx.setdefault(k, emit(module))
                variants.append(Variant(self.spec, self.ptx[k], k))
            idx.append(where[k])
        cmp = self.backend.compare(self.spec, variants, self.timing)
        self.count += 1
        if cmp.provenance.get("created_at"):
            self.stamps.append(cmp.provenance["created_at"])
        return cmp, idx


def greedy_in_time(ev: TimedEvaluator, cfg: GreedySearchConfig, space: ActionSpace = SEED) -> TimedSearch:
    """Greedy over `space`'s legal one-action extensions (the seed's 20 by default; chronos.stages.headroom
    searches v2's)."""
    applied: tuple[str, ...] = ()
    module = ev.root
    trace, demos = [], []
    cmp = None
    for step in range(cfg.max_steps):
        legal = legal_actions(module, space=space)
        cmp, idx = ev.compare([applied, *[(*applied, a) for a in legal]])
        if not cmp.baseline.valid:
            raise SearchError(f"{ev.spec.kernel}: the baseline itself is invalid ({cmp.baseline.reason})")
        inc = idx[0]
        rows = []
        for a, i in zip(legal, idx[1:], strict=True):
            rows.append({"action": a, **(time_row(cmp, i, ev.timing, ev.min_gain, inc) if i is not None
                                        else {"valid": False, "reason": "illegal_in_order"})})
        faster = [r for r in rows if r.get("verdict") == FASTER]
        best = min(faster, key=lambda r: r["ratio"]) if faster else None
        state = {"kernel": ev.spec.kernel, "step": step, "applied": list(applied),
                 "features": extract_features(module), "mask": get_action_mask(applied, legal, space),
                 "history": get_action_history(applied, space)}
        chosen = best["action"] if best else "stop"
        trace.append({"step": step, "incumbent": time_row(cmp, inc, ev.timing, ev.min_gain),
                      "primary": cmp.primary, "candidates": rows, "chosen": chosen})
        demos.append({**state, "action": best["action"] if best else "stop"})
        if best is None:
            break
        applied = canonical((*applied, best["action"]))
        module = realize(ev.root, applied)
    if trace[-1]["chosen"] != "stop":  # max_steps reached: the last choice is judged against the baseline
        cmp, idx = ev.compare([applied])
        inc = idx[0]
    stamps = sorted(ev.stamps)
    return TimedSearch(ev.spec.kernel, time_row(cmp, 0, ev.timing, ev.min_gain),
                       time_row(cmp, inc, ev.timing, ev.min_gain), cmp.primary, trace, demos, ev.count,
                       (stamps[0], stamps[-1]) if stamps else ("", ""))
