"""The walk (stage knob_walk) in metrics and in reports/README.md: it gives v3 its latest numbers, keeping
the block step's geomean beside them, and v3_on_coordesc its knob-and-PTX number beside the PTX-only one."""

from __future__ import annotations

import pytest

from chronos.report.walk import walk_metrics, walk_section


def _summary(**over):
    s = {"kernels": 24, "measured": 24, "faster": 16, "time_geomean": 1.08, "exact_share": 1.0,
         "with_coordesc": 1.09, "walked": 22, "moved": 14, "steps": 19, "chose_walk": 7,
         "v3_on_coordesc": {"kernels": 5, "faster": 4, "time_geomean": 1.031}}
    return {**s, **over}


def test_the_walk_gives_v3_its_latest_numbers_and_keeps_the_earlier_ones_beside_them():
    walk = {"provenance": {"gpu": "NVIDIA H100 80GB HBM3"}, "params": {"walk_steps": 4},
            "summary": {"captured/llama": _summary(),
                        "captured/flex": _summary(measured=0)}}
    metrics = {"v3": {"llama": {"time_geomean": 1.0759}, "flex": {"time_geomean": 1.0447}},
               "v3_on_coordesc": {"llama": {"time_geomean": 1.016}}}
    walk_metrics(walk, metrics)
    llama = metrics["v3"]["llama"]
    assert llama["time_geomean"] == 1.08 and llama["before_walk"] == 1.0759
    assert llama["gpu"] == "H100 80GB HBM3"
    assert metrics["v3"]["flex"] == {"time_geomean": 1.0447}  # not measured by the walk: kept
    assert metrics["v3_on_coordesc"]["llama"] == {"kernels": 5, "faster": 4, "time_geomean": 1.031,
                                                  "ptx_only": 1.016, "from": "walk"}
    blocks = {"summary": {"captured/llama": {"time_geomean": 1.0759}}}
    lines = walk_section(walk, blocks)
    head = next(ln for ln in lines if ln.startswith("| workload"))
    rows = [ln for ln in lines if ln.startswith("| llama")]
    assert len(rows) == 1 and rows[0].count("|") == head.count("|")
    assert "1.0759×" in rows[0] and "1.0800×" in rows[0] and "14/22 (19)" in rows[0]
    assert "walk_steps = 4" in "".join(lines)
    assert walk_section(None, None) == [] and walk_metrics(None, {}) is None


def _report(stage_rows: list[tuple[str, str, float | None]]) -> dict:
    """A stage's report: (family, kernel, speedup); None is a row that is an error (not measured yet)."""
    return {"kernels": [{"family": f, "kernel": k, **({"speedup": s} if s is not None else
                                                        {"error": "not_measured (run this stage on a GPU)"})}
                        for f, k, s in stage_rows]}


def test_v3_counts_every_kernel_at_its_latest_stages_winner_and_keeps_the_walks_own_numbers():
    ptx = _report([("captured/llama", "a", 1.02), ("captured/llama", "b", 1.05), ("captured/llama", "c", 1.0),
                   ("captured/flex", "t", 1.21)])
    blocks = _report([("captured/llama", "a", 1.10), ("captured/llama", "b", 1.08)])
    walk = {**_report([("captured/llama", "a", 1.12), ("captured/llama", "b", None),
                       ("captured/llama", "c", None)]),
            "provenance": {"gpu": "NVIDIA H100 80GB HBM3"},
            "summary": {"captured/llama": _summary(measured=1, faster=1, time_geomean=1.12)}}
    metrics = {"v3": {"flex": {"time_geomean": 1.21, "measured": 1}}}
    walk_metrics(walk, metrics, {"knob_ptx": ptx, "knob_blocks": blocks})
    llama = metrics["v3"]["llama"]
    # a: the walk's 1.12; b: the walk has not measured it, knob_blocks' 1.08 stands; c: knob_ptx's 1.0
    assert llama["time_geomean"] == pytest.approx((1.12 * 1.08 * 1.0) ** (1 / 3))
    assert (llama["measured"], llama["faster"]) == (3, 2)
    assert llama["from_stage"] == {"knob_ptx": 1, "knob_blocks": 1, "knob_walk": 1}
    assert (llama["walk_time_geomean"], llama["walk_measured"], llama["walk_faster"]) == (1.12, 1, 1)
    assert metrics["v3"]["flex"]["time_geomean"] == pytest.approx(1.21)  # no walk: its knob_ptx winner
    assert "walk_time_geomean" not in metrics["v3"]["flex"]
    row = next(ln for ln in walk_section(walk, blocks, metrics["v3"]) if ln.startswith("| llama"))
    assert row.endswith(f"| {llama['time_geomean']:.4f}× (2/3) |")


def test_a_walk_that_timed_no_candidate_keeps_the_earlier_steps_exact_share_and_says_so():
    walk = {"provenance": {"gpu": "NVIDIA H100 80GB HBM3"},
            "summary": {"captured/attorch_lm": {**_summary(), "exact_share": None},
                        "captured/llama": _summary()}}
    metrics = {"v3": {"attorch_lm": {"time_geomean": 1.017, "exact_share": 0.766},
                      "llama": {"time_geomean": 1.07, "exact_share": 0.5}}}
    walk_metrics(walk, metrics)
    assert metrics["v3"]["attorch_lm"]["exact_share"] == 0.766
    assert metrics["v3"]["attorch_lm"]["exact_share_from"] == "before_walk"
    assert metrics["v3"]["llama"]["exact_share"] == _summary()["exact_share"]
    assert "exact_share_from" not in metrics["v3"]["llama"]
