"""Stage `report`: tables, figures, reports/README.md and reports/metrics.json from the other stages' outputs.

    python -m chronos.stages.report --params params.yaml --reports reports

Reads reports/{baseline,greedy_results,bc_stats}.json (required) and, when present,
reports/{random_results,oracle,predictions,training_result,triton_search,measure_triton_results,confirm,aa,
captured,headroom,census,heldout,random_time,knob_census,knob_ptx,knob_blocks,knob_anchors,
knob_walk,knob_shapes}.json
and grpo_curves.csv, heldout_curves.csv. Writes reports/search_gemm_tile.csv,
reports/figures/{search_gemm_tile,bc_curves,grpo_curves,triton_results,heldout_curves}.png,
reports/metrics.json (for `dvc exp show`; the Triton tiers nested under "triton", the A/A test under "aa",
the captured workloads under "capture", "tune", "e2e", the headroom search, census and held-out evaluation
under "v2", the compile-knob census under "knobs", the joint space under "v3" (its latest step: the walk
where it ran), Inductor's tuners under "anchor" and "v3_on_coordesc") and reports/README.md.
Every number comes from those files (the verdicts' confidence and min_gain from the Triton runs' params,
params.yaml's where none ran); nothing is measured here.
A missing required input, or any input that is truncated or corrupt, is a one-line error naming the file
(exit code 2), raised before any output is written.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from chronos.report.knobs import anchors_section, kernel_anchors_section, knob_metrics, knob_section
from chronos.report.plots import bc_curves, grpo_curves, heldout_curves, search_bars, triton_bars
from chronos.report.readme import render_readme
from chronos.report.shapes import shapes_metrics, shapes_section
from chronos.report.tables import (
    captured_metrics,
    headroom_metrics,
    read_grpo_curves,
    search_table,
    summary_metrics,
)
from chronos.report.walk import walk_metrics, walk_section
from chronos.stages.common import read_json, run_stage, write_json

REQUIRED = {"baseline": "baseline report", "greedy_results": "greedy results", "bc_stats": "BC stats"}
OPTIONAL = {"random_results": "random-search results", "oracle": "oracle report",
            "predictions": "policy predictions", "training_result": "GRPO training result",
            "triton_search": "Triton search results", "measure_triton_results": "Triton measurements",
            "confirm": "confirm report", "aa": "A/A test", "captured": "captured-workload summary",
            "headroom": "headroom report", "census": "census report", "heldout": "held-out evaluation",
            "random_time": "random search in time", "reliability": "bad-input benchmark",
            "knob_census": "compile-knob census", "knob_ptx": "knobs with PTX actions on top",
            "knob_blocks": "block sizes beside the knob winners",
            "knob_anchors": "Inductor's tuners as anchors", "knob_walk": "the walk over Inductor configs",
            "knob_shapes": "shared variants judged again"}


def _read_inputs(reports: Path) -> dict:
    """Every input, parsed: required ones must exist; an absent optional one is None."""
    inputs = {name: read_json(reports / f"{name}.json", what) for name, what in REQUIRED.items()}
    for name, what in OPTIONAL.items():
        path = reports / f"{name}.json"
        inputs[name] = read_json(path, what) if path.is_file() else None
    curves = reports / "grpo_curves.csv"
    inputs["grpo_curves"] = read_grpo_curves(curves) if curves.is_file() else None
    return inputs


def _arguments(ap) -> None:
    ap.add_argument("--reports", type=Path, default=Path("reports"))


def _verdicts(x: dict, cfg) -> dict:
    """How the Triton verdicts were drawn: the params recorded by search_triton or aa, else params.yaml's."""
    for name in ("triton_search", "aa"):
        p = (x[name] or {}).get("params") or {}
        if "min_gain" in p and "confidence" in (p.get("timing") or {}):
            return {"confidence": p["timing"]["confidence"], "min_gain": p["min_gain"]}
    return {"confidence": cfg.timing.confidence, "min_gain": cfg.search.greedy.min_gain}


def _body(args, cfg) -> None:
    r, figures = args.reports, args.reports / "figures"
    x = _read_inputs(r)  # all of them first: a bad input leaves the previous outputs untouched
    table = search_table(x["baseline"], x["greedy_results"], x["random_results"], x["oracle"],
                         x["training_result"])
    table.to_csv(r / "search_gemm_tile.csv", index=False, float_format="%.6g")
    search_bars(table, figures / "search_gemm_tile.png")
    bc_curves(x["bc_stats"]["history"], figures / "bc_curves.png")
    if x["grpo_curves"] is not None:
        grpo_curves(x["grpo_curves"], figures / "grpo_curves.png")
    triton, search = x["measure_triton_results"], x["triton_search"]
    if (triton or {}).get("tiers") or (search or {}).get("tiers"):
        triton_bars(triton, search, figures / "triton_results.png")
    metrics = summary_metrics(table, x["bc_stats"], x["predictions"], x["baseline"], triton, x["confirm"],
                              search, x["aa"])
    metrics.update(captured_metrics(x["captured"]))
    metrics.update(headroom_metrics(x["headroom"], x["census"], x["heldout"], x["random_time"]))
    knob = knob_metrics(x["knob_census"], x["knob_ptx"], x["knob_blocks"], x["knob_anchors"])
    for w, tuners in knob.pop("anchor", {}).items():  # per kernel beside the step's anchor numbers
        slot = metrics.setdefault("anchor", {}).setdefault(w, {})
        for tuner, v in tuners.items():  # a tuner's numbers, or why the anchors do not apply (a string)
            if isinstance(v, dict):
                slot.setdefault(tuner, {}).update(v)
            else:
                slot[tuner] = v
    metrics.update(knob)
    walk_metrics(x["knob_walk"], metrics, {"knob_ptx": x["knob_ptx"], "knob_blocks": x["knob_blocks"]})
    shapes_metrics(x["knob_shapes"], metrics)
    if x["reliability"]:  # benchmarks/bench_reliability.py: bad input through the CLI, counted
        metrics["reliability"] = {k: x["reliability"][k] for k in ("inputs_tried", "tracebacks", "silent")}
    if (r / "heldout_curves.csv").is_file() and x["heldout"]:
        heldout_curves(pd.read_csv(r / "heldout_curves.csv"), figures / "heldout_curves.png")
    write_json(r / "metrics.json", metrics, indent=1, sort_keys=True)
    knobs = (knob_section(x["knob_census"], x["knob_ptx"], x["knob_blocks"])
             + anchors_section(metrics.get("anchor", {})) + kernel_anchors_section(x["knob_anchors"])
             + walk_section(x["knob_walk"], x["knob_blocks"], metrics.get("v3"))
             + shapes_section(x["knob_shapes"], metrics))
    partial = bool((x["random_results"] or {}).get("provenance", {}).get("partial", False))
    (r / "README.md").write_text(render_readme(metrics, table, x["baseline"], partial, x["oracle"], search,
                                               _verdicts(x, cfg), x["captured"], x["headroom"],
                                               x["heldout"], knobs))
    print(f"report: {json.dumps(metrics)}")


def main(argv: list[str] | None = None) -> int:
    return run_stage("report", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())
