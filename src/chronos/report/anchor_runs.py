"""Inductor's tuners over every recorded end-to-end run of a workload (#28: "≥ the best Inductor tuner").

A tuner benchmarks its candidate configs and templates inside the process that compiles the workload, so
two runs of it can keep different ones: bert's coordinate-descent step measured 1.025, 1.021, 0.989 and
0.985 × stock in four runs on H100s (2026-12-06/07). One run's verdict is one draw of the tuner. This
collects a workload's side-by-side runs with anchors timed as CUDA graphs (e2e-one-process.json,
e2e-anchors.json, and earlier ones kept in e2e-anchor-runs/; one per provenance date) and says per tuner its
range of stock / tuner and in how many runs Chronos v3's step was ahead of it, behind it or level (the run's
tuner / v3 interval above 1, below 1, or across 1). Each run's v3 is that run's DB: the ratios stay per run;
where the step chose a DB less some winners (chronos.tuning.step_choice) and a run timed that set beside the
full one, that set is the run's v3 (as_deployed).
A run may time several draws of a tuner (scripts/e2e_one_process.py --anchor-draws: `coordesc`,
`coordesc_draw2`, ...): each draw counts as one, beside the others of its tuner.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

from chronos.files import read_json
from chronos.measure.verdicts import median_summary, round_ratios

DRAW = "_draw"
"""An anchor run's name past a tuner's first draw: `<tuner>_draw<k>`."""

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


def as_deployed(run: dict, name: str) -> dict:
    """The run with the set `name` (one of its `also` sets: the DB the step chose) as its Chronos v3: its
    step ratio, and each tuner over it from the run's own rounds; the run as it is where it did not time
    that set."""
    also = (run.get("also") or {}).get(name)
    if also is None:
        return run
    anchors = {a: {**v, "v3_over": median_summary(round_ratios(run["times"], a, name))}
               for a, v in (run.get("anchors") or {}).items()}
    return {**run, "speedup": also["speedup"], "anchors": anchors}


def tuner_of(anchor: str) -> str:
    """The tuner an anchor run drew: `coordesc_draw2` -> `coordesc`."""
    return re.sub(rf"{DRAW}\d+$", "", anchor)


def draw_of(anchor: str) -> int:
    """Which draw of its tuner an anchor run is: `coordesc` 1, `coordesc_draw2` 2."""
    m = re.search(rf"{DRAW}(\d+)$", anchor)
    return int(m.group(1)) if m else 1


def v3_standing(timed: list[dict]) -> dict[str, int]:
    """In how many of these draws (each one anchor's record in its run) Chronos v3 was ahead (the draw's
    tuner / v3 interval above 1), behind (below 1) or level."""
    ahead = sum(a["v3_over"]["ci95"][0] > 1.0 for a in timed)
    behind = sum(a["v3_over"]["ci95"][1] < 1.0 for a in timed)
    return {"v3_ahead": ahead, "v3_behind": behind, "v3_level": len(timed) - ahead - behind}


def across_runs(runs: list[dict], deployed: str = "tuned") -> dict:
    """Per tuner: its runs and draws, min / median / max of stock / tuner over its draws, the draws v3 was
    ahead of, behind, level with (each against its own run's v3: the set `deployed` where the run timed
    it)."""
    runs = [as_deployed(r, deployed) for r in runs]
    v3 = [r["speedup"]["median"] for r in runs]
    out: dict = {"runs": len(runs), "v3_min": min(v3), "v3_max": max(v3)}
    for tuner in sorted({tuner_of(a) for r in runs for a in r["anchors"]}):
        timed = [v for r in runs for a, v in r["anchors"].items() if tuner_of(a) == tuner]
        step = [a["speedup"]["median"] for a in timed]
        out[tuner] = {"runs": sum(any(tuner_of(a) == tuner for a in r["anchors"]) for r in runs),
                      "draws": len(timed), "step_speedup_min": min(step),
                      "step_speedup_median": statistics.median(step), "step_speedup_max": max(step),
                      **v3_standing(timed)}
    return out


def across_runs_lines(anchors: dict) -> list[str]:
    """One sentence per workload with a tuner drawn more than once (metrics' anchor.<w>.across_runs)."""
    lines = []
    for w, a in sorted(anchors.items()):
        runs = a.get("across_runs")
        if not runs or max(s.get("draws", 1) for s in runs.values() if isinstance(s, dict)) < 2:
            continue
        per = [f"{t.replace('_', '-')} {s['step_speedup_min']:.4f}–{s['step_speedup_max']:.4f} × stock "
               f"(median {s['step_speedup_median']:.4f}; v3 ahead in {s['v3_ahead']}, behind in "
               f"{s['v3_behind']}, level in {s['v3_level']} of {_draws(s)})"
               for t, s in runs.items() if isinstance(s, dict)]
        lines.append(f"- {w}, {runs['runs']} runs (v3 {runs['v3_min']:.4f}–{runs['v3_max']:.4f} × stock): "
                     + "; ".join(per) + ".")
    if not lines:
        return []
    note = ("Across runs: a tuner benchmarks its choices in the process that compiles the workload, so each "
            "compile is one draw of it (every recorded side-by-side run with CUDA graphs, each of its draws "
            "with caches of its own where a run drew a tuner more than once; each run's v3 is its own DB's; "
            "ahead / behind: that draw's tuner / v3 interval above / below 1).")
    return ["", note, "", *lines]


def _draws(s: dict) -> str:
    """'5' where each run drew the tuner once, else 'N draws in R runs'."""
    draws = s.get("draws", s["runs"])
    runs = f"{s['runs']} run" + ("s" if s["runs"] != 1 else "")
    return str(draws) if draws == s["runs"] else f"{draws} draws in {runs}"
