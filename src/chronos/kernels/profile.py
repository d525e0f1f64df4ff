"""A workload's GPU time per kernel as an order: the capture's profile.json (per phase the profiler's time of
each Triton kernel), or launches times the stock time chronos tune measured."""

from __future__ import annotations

import json
from pathlib import Path


def by_gpu_time(specs: list, profile: dict) -> list:
    """`specs` with the entries that took the most GPU time in the profile first (all phases together);
    a kernel the profile does not name keeps its place after them (a stable sort)."""
    us: dict[str, float] = {}
    for phase in (profile.get("phases") or {}).values():
        for name, t in (phase.get("triton_kernels_us") or {}).items():
            us[name] = us.get(name, 0.0) + t
    return sorted(specs, key=lambda s: -us.get(s.entry, 0.0))


def measured_gpu_ms(folder: Path) -> dict[str, float]:
    """Per captured kernel its GPU time in the captured steps, as measured: its launches in the capture
    (capture.json per_kernel) times its stock time per launch as chronos tune timed it side by side
    (tune-parts/<kernel>.json). Kernels the tune did not time are absent. Unlike a profile it needs no
    per-kernel profiler times, which captures before #28 do not hold."""
    capture = folder / "capture.json"
    if not capture.is_file():
        return {}
    launches = {k["kernel"]: k["launches"] for k in json.loads(capture.read_text()).get("per_kernel", [])}
    out = {}
    for part in sorted((folder / "tune-parts").glob("*.json")):
        row = json.loads(part.read_text())
        ms = part_stock_ms(row)
        if ms and row.get("kernel") in launches:
            out[row["kernel"]] = launches[row["kernel"]] * ms
    return out


def part_stock_ms(row: dict) -> float | None:
    """A tune part's stock time per launch: `baseline_ms` (a slimmed part) or the baseline's `time_ms`."""
    return row.get("baseline_ms") or (row.get("baseline") or {}).get("time_ms")


def time_share(weights: dict[str, float], kernels: list[str]) -> float | None:
    """The share of the timed GPU time that `kernels` carry (None where nothing was timed)."""
    total = sum(weights.values())
    return sum(weights.get(k, 0.0) for k in sorted(set(kernels))) / total if total else None


def weighted_speedup(weights: dict[str, float], speedups: dict[str, float],
                     default: float = 1.0) -> float | None:
    """The timed GPU time over itself with each kernel's speedup applied (`default` for the kernels
    `speedups` does not name): Amdahl's law over per-kernel weights (None where nothing was timed)."""
    total = sum(weights.values())
    return total / sum(w / speedups.get(k, default) for k, w in weights.items()) if total else None
