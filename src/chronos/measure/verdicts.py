"""Time verdicts from side-by-side samples: a contender is faster only if the whole confidence interval of
its time ratio to the baseline lies below 1 - min_gain, slower only if it lies above 1 + min_gain, otherwise
there is no difference and the baseline stays.

The samples are paired by round: in round r every contender ran once, in a shuffled order, on one allocation
(chronos.measure.timing), so a slow drift of the GPU or host moves all of round r alike. The statistic is the
mean over rounds of log(contender_r / baseline_r), i.e. the geometric mean of the per-round ratios; its
interval is a percentile bootstrap over rounds (resampling whole rounds keeps the pairing), seeded so a
verdict replays identically from the stored samples. Stage aa (chronos.stages.aa) measures how often this
calls a copy of the baseline faster or slower (the A/A test).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from chronos.measure.inputs import stats

FASTER, SLOWER, SAME = "faster", "slower", "no_difference"


@dataclass(frozen=True)
class RatioEstimate:
    """A contender's time relative to its baseline: point estimate and bootstrap interval (ratios)."""

    ratio: float
    low: float
    high: float
    rounds: int

    def verdict(self, min_gain: float) -> str:
        if self.high < 1.0 - min_gain:
            return FASTER
        if self.low > 1.0 + min_gain:
            return SLOWER
        return SAME

    def to_json(self) -> dict:
        return {"ratio": self.ratio, "ci": [self.low, self.high], "rounds": self.rounds}


def ratio_estimate(base: list[float], other: list[float], *, confidence: float, resamples: int,
                   seed: int = 0) -> RatioEstimate:
    """Paired bootstrap of the geometric-mean time ratio other/base over rounds (both lists per round, in
    the same order; rounds where either value is missing or not positive are dropped)."""
    pairs = [(b, o) for b, o in zip(base, other, strict=True) if b and o and b > 0 and o > 0]
    if len(pairs) < 2:
        raise ValueError(f"need at least 2 paired rounds, got {len(pairs)}")
    # math.log, not np.log: numpy's vectorised log (AVX-512 builds) differs from libm in the last bit for
    # about 1 value in 1000, which made replayed verdicts' intervals differ between CPUs
    d = np.array([math.log(o) - math.log(b) for b, o in pairs])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, d.size, size=(resamples, d.size))
    means = d[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return RatioEstimate(math.exp(float(d.mean())), math.exp(float(lo)), math.exp(float(hi)), int(d.size))


def round_ratios(times: dict[str, list[dict]], a: str, b: str, phase: str | None = None) -> list[float]:
    """Per round a / b of two sets' summed step times (or of one phase's), from scripts/e2e_one_process.py's
    `times` (set -> per round, phase -> seconds)."""
    pick = (lambda t: t[phase]) if phase else (lambda t: sum(t.values()))
    return [pick(x) / pick(y) for x, y in zip(times[a], times[b], strict=True)]


def median_summary(ratios: list[float], seed: int = 0, resamples: int = 4000) -> dict:
    """Per-round ratios summarized as scripts/e2e_one_process.py reports a step: median, IQR and the
    bootstrap 95% interval of the median over rounds."""
    r = np.asarray(ratios)
    boots = np.median(np.random.default_rng(seed).choice(r, size=(resamples, r.size)), axis=1)
    return {"median": float(np.median(r)), "iqr": [float(q) for q in np.quantile(r, [0.25, 0.75])],
            "ci95": [float(q) for q in np.quantile(boots, [0.025, 0.975])], "rounds": int(r.size)}


def geomean(vals) -> float | None:
    """Geometric mean of the positive values (None when there are none)."""
    vals = [v for v in vals if v]
    return math.exp(sum(map(math.log, vals)) / len(vals)) if vals else None


def median_iqr(values: list[float]) -> tuple[float, float]:
    s = stats([x for x in values if x is not None])
    return s["median"], s["iqr"]
