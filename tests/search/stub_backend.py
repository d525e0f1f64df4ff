"""What the compile-knob stages' tests share: a stand-in measurement backend (each comparison's contenders at
a fixed time ratio to stock by their actions) and a captured kernel with a knob variant to dress up."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from chronos.kernels.spec import load_specs

GPT2 = Path(__file__).resolve().parents[2] / "data" / "kernels" / "captured" / "gpt2"


def gpt2_kernel(tmp_path: Path):
    """(a copy of gpt2's folder, its first kernel with a knob variant, that variant's knobs.json record, the
    kernel's grid with twice the programs): made-up block or anchor variants reuse the variant's PTX."""
    folder = tmp_path / "gpt2"
    shutil.copytree(GPT2, folder, ignore=shutil.ignore_patterns("tune-parts", "ttir", "inputs"))
    knobs = json.loads((folder / "knobs.json").read_text())["kernels"]
    spec = next(s for s in load_specs(folder / "specs.json")
                if any("ptx" in v for v in knobs.get(s.ptx, {}).get("variants", [])))
    v = next(v for v in knobs[spec.ptx]["variants"] if "ptx" in v)
    return folder, spec, v, [2 * spec.grid[0], spec.grid[1], spec.grid[2]]


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
        r = self.ratios[i] / self.ratios[against]
        return _Estimate(r, r - 0.005, r + 0.005)

    def verdict(self, i, timing, min_gain, against=0):
        return "faster" if self.ratios[i] / self.ratios[against] < 0.99 else "same"


class StubBackend:
    """Each comparison's contenders at a fixed time ratio by their actions (1.0 where none is given)."""

    def __init__(self, ratios: dict):
        self.table, self.seen = ratios, []

    def compare(self, spec, variants, timing):
        self.seen.append(variants)
        return _Cmp(variants, lambda v: self.table.get("+".join(v.actions), 1.0))
