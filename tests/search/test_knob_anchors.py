"""Inductor's tuners as anchors (#28 item 5): their configs launch on their own grid beside stock and
Chronos's winner in one comparison; a stock-config anchor counts as 1.0 untimed, one not launched is left
out; v2 PTX on top of coordinate descent's kernel is judged beside it."""

from __future__ import annotations

import json
from pathlib import Path

from chronos.kernels.variant import Variant
from chronos.search.knob_anchors import anchor_variants, anchors_kernel, anchors_summary

from .stub_backend import StubBackend, gpt2_kernel

ROOT = Path(__file__).resolve().parents[2]
GPT2 = ROOT / "data" / "kernels" / "captured" / "gpt2"


def _kernel_with_anchors(tmp_path, max_autotune: dict):
    """gpt2's first kernel with knob variants; its coordesc anchor a made-up variant (a knob variant's PTX
    on another grid), its max_autotune anchor `max_autotune`."""
    folder, spec, v, grid = gpt2_kernel(tmp_path)
    coordesc = {"ptx": v["ptx"], "num_warps": v["num_warps"], "shared": v["shared"],
                "grids": {spec.kernel: grid}}
    (folder / "anchors.json").write_text(json.dumps({"kernels": {spec.ptx: {
        "coordesc": coordesc, "max_autotune": max_autotune}}}))
    return folder, spec


def test_anchors_time_beside_stock_and_chronos_and_ptx_goes_on_top_of_coordesc(tmp_path):
    folder, spec = _kernel_with_anchors(tmp_path, {"same_as_stock": True})
    anchors, other = anchor_variants(folder, spec)
    assert list(anchors) == ["coordesc"] and other == {"max_autotune": "same_as_stock"}
    chronos = Variant(spec, "// chronos", ("num_warps=2",))
    backend = StubBackend({"anchor:coordesc": 0.9, "num_warps=2": 0.8})
    row = anchors_kernel(spec, folder, chronos, backend, timing=None, min_gain=0.01)
    first = backend.seen[0]
    assert [v.actions for v in first] == [(), ("anchor:coordesc",), ("num_warps=2",)]
    assert first[1].launch.grid == anchors["coordesc"].launch.grid
    assert row["best"]["actions"] == ["num_warps=2"] and abs(row["speedup"] - 1.25) < 1e-12
    assert backend.seen[1][0].actions == ("anchor:coordesc",)  # PTX on top: judged beside coordesc
    assert all(v.actions[0] == "anchor:coordesc" for v in backend.seen[1])
    s = anchors_summary([row])
    assert abs(s["coordesc"]["time_geomean"] - 1 / 0.9) < 1e-12 and s["max_autotune"]["time_geomean"] == 1.0
    assert abs(s["chronos"]["time_geomean"] - 1.25) < 1e-12 and s["v3_on_coordesc"]["kernels"] == 1


def test_an_anchor_whose_run_did_not_launch_the_kernel_is_left_out_with_why(tmp_path):
    why = "the max_autotune run launched no kernel of this name"
    folder, spec = _kernel_with_anchors(tmp_path, {"error": why})
    row = anchors_kernel(spec, folder, None, StubBackend({}), timing=None, min_gain=0.01)
    s = anchors_summary([row])
    assert s["max_autotune"] == {"kernels": 0, "time_geomean": None, "bit_exact": 0, "not_launched": 1}
    assert row["speedup"] == 1.0 and row["best"]["verdict"] == "none"


def test_the_stages_run_on_replay_and_say_that_nothing_is_measured_yet(tmp_path):
    from chronos.stages import knob_anchors, knob_blocks

    common = ["--params", str(ROOT / "params.yaml"), "--kernels", str(ROOT / "data/kernels"),
              "--knob-parts", str(ROOT / "data/knob_census"), "--joint-parts", str(ROOT / "data/knob_ptx"),
              "--backend", "replay", "--store", str(ROOT / "data/store/measurements.sqlite")]
    for stage, name in ((knob_blocks, "knob_blocks"), (knob_anchors, "knob_anchors")):
        out = tmp_path / f"{name}.json"
        assert stage.main([*common, "--parts", str(tmp_path / name), "--out", str(out)]) == 0
        got = json.loads(out.read_text())
        assert got["section"] == name and all(s["measured"] == 0 for s in got["summary"].values())
        assert {r["error"] for r in got["kernels"]} == {"not_measured (run this stage on a GPU)"}
