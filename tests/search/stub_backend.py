"""A stand-in measurement backend for the compile-knob stages' tests: each comparison's contenders at a
fixed time ratio to stock by their actions."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class _Contender:
    actions: tuple
    valid: bool = True
    reason: str | None = None
    registers: int = 32
    spills: int = 0


@dataclass
class _Estimate:
    ratio: float
    low: float
    high: float


class _Cmp:
    primary = "events"

    def __init__(self, variants, ratios):
        self.contenders = [_Contender(v.actions) for v in variants]
        self.ratios = [1.0] + [ratios(v) for v in variants[1:]]
        self.baseline = self.contenders[0]

    def time_ms(self, i):
        return self.ratios[i], 0.0

    def estimate(self, i, timing, against=0):
        r = self.ratios[i]
        return _Estimate(r, r - 0.005, r + 0.005)

    def verdict(self, i, timing, min_gain, against=0):
        return "faster" if self.ratios[i] < 0.99 else "same"


class StubBackend:
    """Each comparison's contenders at a fixed time ratio by their actions (1.0 where none is given)."""

    def __init__(self, ratios: dict):
        self.table, self.seen = ratios, []

    def compare(self, spec, variants, timing):
        self.seen.append(variants)
        return _Cmp(variants, lambda v: self.table.get("+".join(v.actions), 1.0))
