"""Inductor's tuners over every recorded end-to-end run of a workload (#28: "≥ the best Inductor tuner").

A tuner benchmarks its candidate configs and templates inside the process that compiles the workload, so
two runs of it can keep different ones: bert's coordinate-descent step measured 1.025, 1.021, 0.989 and
0.985 × stock in four runs on H100s (2026-12-06/07). One run's verdict is one draw of the tuner. This
collects a workload's side-by-side runs with anchors timed as CUDA graphs (e2e-one-process.json,
e2e-anchors.json, and earlier ones kept in e2e-anchor-runs/; one per provenance date) and says per tuner its
range of stock / tuner and in how many runs Chronos v3's step was ahead of it, behind it or level (the run's
tuner / v3 interval above 1, below 1, or across 1). Each run's v3 is that run's DB: the ratios stay per run.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from chronos.files import read_json

RUN_FILES = ("e2e-one-process.json", "e2e-anchors.json")
KEPT_RUNS = "e2e-anchor-runs"


def recorded_runs(folder: Path, loaded: list[dict] | None = None) -> list[dict]:
    """The workload's one-process runs that timed Inductor's tuners as CUDA graphs, oldest first.
    `loaded`: RUN_FILES' runs as the caller has already read them (else they are read here)."""
    if loaded is None:
        loaded = [read_json(p, "end-to-end result") for p in (folder / n for n in RUN_FILES) if p.is_file()]
    kept = [(str(p), read_json(p, "end-to-end result")) for p in sorted((folder / KEPT_RUNS).glob("*.json"))]
    runs: dict[str, dict] = {}
    for where, run in [*((f"{folder} ({i})", r) for i, r in enumerate(loaded)), *kept]:
        date = (run.get("provenance") or {}).get("date") or where
        if run.get("anchors") and run.get("timing") == "cuda_graphs":
            runs.setdefault(date, run)
    return [runs[d] for d in sorted(runs)]


def across_runs(runs: list[dict]) -> dict:
    """Per tuner: its runs, min / median / max of stock / tuner, the runs v3 was ahead, behind, level."""
    v3 = [r["speedup"]["median"] for r in runs]
    out: dict = {"runs": len(runs), "v3_min": min(v3), "v3_max": max(v3)}
    for tuner in sorted({a for r in runs for a in r["anchors"]}):
        timed = [r["anchors"][tuner] for r in runs if tuner in r["anchors"]]
        step = [a["speedup"]["median"] for a in timed]
        low = [a["v3_over"]["ci95"][0] for a in timed]
        high = [a["v3_over"]["ci95"][1] for a in timed]
        ahead, behind = sum(lo > 1.0 for lo in low), sum(hi < 1.0 for hi in high)
        out[tuner] = {"runs": len(timed), "step_speedup_min": min(step),
                      "step_speedup_median": statistics.median(step), "step_speedup_max": max(step),
                      "v3_ahead": ahead, "v3_behind": behind, "v3_level": len(timed) - ahead - behind}
    return out


def across_runs_lines(anchors: dict) -> list[str]:
    """One sentence per workload with more than one recorded anchors run (metrics' anchor.<w>.across_runs)."""
    lines = []
    for w, a in sorted(anchors.items()):
        runs = a.get("across_runs")
        if not runs or runs["runs"] < 2:
            continue
        per = [f"{t.replace('_', '-')} {s['step_speedup_min']:.4f}–{s['step_speedup_max']:.4f} × stock "
               f"(median {s['step_speedup_median']:.4f}; v3 ahead in {s['v3_ahead']}, behind in "
               f"{s['v3_behind']}, level in {s['v3_level']} of {s['runs']})"
               for t, s in runs.items() if isinstance(s, dict)]
        lines.append(f"- {w}, {runs['runs']} runs (v3 {runs['v3_min']:.4f}–{runs['v3_max']:.4f} × stock): "
                     + "; ".join(per) + ".")
    if not lines:
        return []
    note = ("Across runs: a tuner benchmarks its choices in the process that compiles the workload, so each "
            "run is one draw of it (every recorded side-by-side run with CUDA graphs; each run's v3 is its "
            "own DB's; ahead / behind: that run's tuner / v3 interval above / below 1).")
    return ["", note, "", *lines]
