"""What every search strategy shares: the `Evaluator` protocol, which realises action sets of one kernel and
measures them through any backend, GPU or replay (the replay backend answers from the measurement store, as
Kernel Tuner's simulation mode answers from its cache: a strategy cannot tell the two apart).

Two evaluators implement it, one per objective (chronos.search.registry pairs every strategy with one):
* `CycleEvaluator` ("cycles", the seed's 1-thread gemm_tile only): realises sets in the canonical order
  (space.py), measures them in batches, never measures one PTX twice in a run, and counts unique cubins (the
  backend skips a cubin it has already measured), invalid variants and their reasons. Only valid (bit-exact
  verified) measurements can win.
* `TimedEvaluator` ("time", chronos.search.timed, every real kernel): compares sets side by side with the
  baseline in one measurement run; every decision is a ratio with its interval.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from chronos.kernels.spec import KernelSpec
from chronos.kernels.variant import Variant
from chronos.ptx import emit
from chronos.ptx.ir import Module
from chronos.search.space import canonical, realize


@dataclass
class Outcome:
    """One evaluated action set."""

    actions: tuple[str, ...]
    valid: bool
    cycles: float | None = None
    cycles_iqr: float | None = None
    time_ms: float | None = None
    time_ms_iqr: float | None = None
    reason: str = ""
    cubin_sha256: str = ""
    ptx_sha256: str = ""
    measured_at: str = ""  # when the record was made (the store's created_at), for provenance

    def to_json(self) -> dict:
        return {"actions": list(self.actions), "valid": self.valid, "cycles": self.cycles,
                "cycles_iqr": self.cycles_iqr, "time_ms": self.time_ms, "time_ms_iqr": self.time_ms_iqr,
                "reason": self.reason, "cubin_sha256": self.cubin_sha256}


@dataclass
class SearchResult:
    kernel: str
    strategy: str
    baseline: Outcome
    best: Outcome
    evaluated: int = 0  # action sets measured (or replayed)
    unique_cubins: int = 0
    invalid: dict[str, int] = field(default_factory=dict)
    trace: list[dict] = field(default_factory=list)  # strategy-specific steps
    demos: list[dict] = field(default_factory=list)  # greedy's (state, action) demonstrations
    measured: tuple[str, str] = ("", "")  # first and last measurement time of the records used

    @property
    def change(self) -> float:
        """Relative cycle change of the best variant (negative is faster)."""
        return self.best.cycles / self.baseline.cycles - 1.0

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "strategy": self.strategy, "baseline": self.baseline.to_json(),
                "best": self.best.to_json(), "change": self.change, "evaluated": self.evaluated,
                "unique_cubins": self.unique_cubins, "invalid": self.invalid, "trace": self.trace,
                "measured": {"first": self.measured[0], "last": self.measured[1]}}


class Evaluator(Protocol):
    """What a strategy is handed: one kernel (`spec`, its parsed PTX `root` and that PTX emitted), the
    backend that measures its variants, and the objective the evaluator judges in ("cycles" or "time")."""

    objective: ClassVar[str]
    spec: KernelSpec
    root: Module
    root_ptx: str
    backend: object


class CycleEvaluator:
    """Realise + measure action sets for one kernel in %clock64 cycles, with a per-run cache keyed by the
    canonical set."""

    objective: ClassVar[str] = "cycles"

    def __init__(self, spec: KernelSpec, root: Module, backend):
        self.spec = spec
        self.root = root
        self.backend = backend
        self.root_ptx = emit(root)
        self.cache: dict[tuple[str, ...], Outcome] = {}
        self.cubins: set[str] = set()
        self.invalid: Counter[str] = Counter()

    def evaluate(self, sets: list[tuple[str, ...]], modules: dict | None = None) -> list[Outcome | None]:
        """Outcomes in order; None for a set that is illegal in canonical order."""
        keys = [canonical(s) for s in sets]
        todo: dict[tuple[str, ...], Variant] = {}
        for k in keys:
            if k in self.cache or k in todo:
                continue
            module = modules[k] if modules and k in modules else realize(self.root, k)
            if module is None:
                continue
            todo[k] = Variant(self.spec, emit(module), k)
        if todo:
            records = self.backend.measure(self.spec, list(todo.values()), baseline_ptx=self.root_ptx)
            for k, rec in zip(todo, records, strict=True):
                out = Outcome(k, bool(rec.valid), rec.cycles_median, rec.cycles_iqr, rec.time_ms_median,
                              rec.time_ms_iqr, rec.reason or "", rec.cubin_sha256 or "", rec.ptx_sha256,
                              rec.created_at or "")
                if out.valid and out.cycles is None:
                    out.valid, out.reason = False, "no_cycles"
                self.cache[k] = out
                if out.cubin_sha256:
                    self.cubins.add(out.cubin_sha256)
                if not out.valid:
                    self.invalid[out.reason or "invalid"] += 1
        return [self.cache.get(k) for k in keys]

    def outcomes(self, sets: list[tuple[str, ...]], module_of) -> list[Outcome]:
        """`evaluate` with each set realised by `module_of(set)` (a memoised realisation, e.g. a decoder's
        KernelSpace.module) and an invalid `illegal_in_order` outcome where the canonical order is illegal."""
        modules = {k: m for k in sets if (m := module_of(k)) is not None}
        outs = self.evaluate(list(sets), modules=modules)
        return [o if o is not None else Outcome(k, False, reason="illegal_in_order")
                for k, o in zip(sets, outs, strict=True)]

    def result(self, strategy: str, best: Outcome, **kw) -> SearchResult:
        base = self.cache[()]
        stamps = sorted(o.measured_at for o in self.cache.values() if o.measured_at)
        return SearchResult(self.spec.kernel, strategy, base, best, evaluated=len(self.cache),
                            unique_cubins=len(self.cubins), invalid=dict(self.invalid),
                            measured=(stamps[0], stamps[-1]) if stamps else ("", ""), **kw)


def better(a: Outcome | None, b: Outcome | None) -> bool:
    """a is valid and has fewer median cycles than b (or b is missing/invalid)."""
    if a is None or not a.valid:
        return False
    return b is None or not b.valid or a.cycles < b.cycles


def clearly_faster(new: Outcome, old: Outcome, min_gain: float) -> bool:
    """`new` beats `old` by more than the measured noise: the IQR bands do not overlap and the relative
    gain is at least `min_gain`."""
    if not new.valid or not old.valid:
        return False
    gain = 1.0 - new.cycles / old.cycles
    separated = new.cycles + (new.cycles_iqr or 0.0) / 2 < old.cycles - (old.cycles_iqr or 0.0) / 2
    return gain >= min_gain and separated
