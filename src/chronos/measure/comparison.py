"""One decision's measurement: its contenders timed side by side in one run (chronos.measure.timing), as
stored and replayed.

Contender 0 is always the baseline itself (a second load of its cubin), so the baseline is timed in the very
rounds its challengers are. Every contender keeps its per-round values, so a verdict can be recomputed from
the store on any machine (chronos.measure.verdicts, seeded bootstrap) and the replay is exact.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

from chronos.config import TimingConfig
from chronos.measure.verdicts import RatioEstimate, median_iqr, ratio_estimate


def contenders_key(ptx_shas: list[str]) -> str:
    """The store key of a comparison: its contenders' PTX hashes in order (the baseline's first)."""
    return hashlib.sha256(json.dumps(ptx_shas).encode()).hexdigest()


@dataclass
class Contender:
    actions: tuple[str, ...]
    ptx_sha256: str
    valid: bool
    reason: str = ""
    log: str = ""
    cubin_sha256: str = ""
    registers: int | None = None
    spills: int | None = None
    event_ms: list[float] | None = None
    """Per round: the median of `reps` single-launch intervals."""
    graph_ms: list[float] | None = None
    """Per round: per-launch time from a CUDA graph of launches (short kernels only)."""


@dataclass
class Comparison:
    kernel: str
    contenders: list[Contender]
    primary: str = "event"
    """The series verdicts use: `graph` for kernels under timing.graph_below_us, else `event`."""
    probe_ms: float | None = None
    flush_graph_ms: list[float] | None = None
    provenance: dict = field(default_factory=dict)

    @property
    def baseline(self) -> Contender:
        return self.contenders[0]

    def series(self, i: int) -> list[float] | None:
        c = self.contenders[i]
        return c.graph_ms if self.primary == "graph" else c.event_ms

    def time_ms(self, i: int) -> tuple[float | None, float | None]:
        """(median, IQR) over rounds of contender i's primary series (None when it was not timed)."""
        s = self.series(i)
        return median_iqr(s) if s else (None, None)

    def estimate(self, i: int, timing: TimingConfig, against: int = 0) -> RatioEstimate | None:
        """Contender i's time ratio to contender `against` (the baseline by default) with its interval."""
        a, b = self.series(against), self.series(i)
        if not (a and b and self.contenders[i].valid and self.contenders[against].valid):
            return None
        return ratio_estimate(a, b, confidence=timing.confidence, resamples=timing.resamples,
                              seed=i * 1009 + against)

    def verdict(self, i: int, timing: TimingConfig, min_gain: float, against: int = 0) -> str:
        """faster | slower | no_difference, or invalid:<reason> (wrong output, ptxas refusal, fault)."""
        c = self.contenders[i]
        if not c.valid:
            return f"invalid:{c.reason or 'invalid'}"
        est = self.estimate(i, timing, against)
        if est is None:
            return f"invalid:{self.contenders[against].reason or 'baseline_invalid'}"
        return est.verdict(min_gain)

    def to_json(self) -> dict:
        d = asdict(self)
        for c in d["contenders"]:
            c["actions"] = list(c["actions"])
        return d

    @classmethod
    def from_json(cls, d: dict) -> Comparison:
        cs = [Contender(**{**c, "actions": tuple(c["actions"])}) for c in d["contenders"]]
        return cls(d["kernel"], cs, d.get("primary", "event"), d.get("probe_ms"), d.get("flush_graph_ms"),
                   d.get("provenance", {}))
