"""Block-size variants from an Inductor module (#28): its stock config is the one whose compile remakes the
stock PTX, each legal move compiles, and its grid is Inductor's for the launch's numels, checked first
against the captured grid."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("triton")
pytest.importorskip("torch._inductor.runtime.triton_heuristics")

from chronos.triton.inductor_source import build_kernel, compile_config, load_tuner, with_config
from chronos.triton.tuned_db import ptx_identity_sha256

MODULE = Path(__file__).resolve().parent / "inductor_modules" / "pointwise_mul.py"
NAME = "triton_poi_fused_mul_0"
ARGS = [{"kind": "buffer"}, {"kind": "buffer"}, {"kind": "scalar", "value": 65536}]


def _stock(i: int = 0):
    tuner = load_tuner(MODULE, NAME)
    ptx = compile_config(tuner, tuner.configs[i])[0]
    return tuner.configs[i], ptx_identity_sha256(ptx)


def test_the_stock_config_is_found_and_each_move_launches_on_its_own_grid():
    cfg, ident = _stock()
    xblock = cfg.kwargs["XBLOCK"]
    got = build_kernel([str(MODULE)], NAME, ident, {"k": (ARGS, [65536 // xblock, 1, 1])})
    assert got["stock_config"]["kwargs"] == {"XBLOCK": xblock} and got["grid_checks"] == {"k": True}
    made = {v["label"]: v for v in got["variants"] if "ptx_text" in v}
    assert f"XBLOCK={2 * xblock}" in made and f"XBLOCK={xblock // 2},num_warps={cfg.num_warps // 2}" in made
    for v in made.values():
        assert v["grids"] == {"k": [65536 // v["kwargs"]["XBLOCK"], 1, 1]}
        assert f".reqntid {32 * v['num_warps']}" in v["ptx_text"]


def test_a_grid_the_stock_config_does_not_give_keeps_that_launch_out():
    ident = _stock()[1]
    got = build_kernel([str(MODULE)], NAME, ident, {"k": (ARGS, [1, 1, 1])})
    assert got["grid_checks"]["k"] is not True and "captured [1, 1, 1]" in got["grid_checks"]["k"]
    assert all(v.get("grids", {}) == {} for v in got["variants"])


def test_a_kernel_whose_stock_ptx_no_config_remakes_gets_no_variants():
    got = build_kernel([str(MODULE)], NAME, "0" * 64, {"k": (ARGS, [128, 1, 1])})
    assert got["error"].startswith("no config") and "variants" not in got
    configs = len(load_tuner(MODULE, NAME).configs)
    assert got["tried"] == [f"{MODULE.name}: {configs} configs compiled, none to the stock PTX"]


def test_the_config_the_capture_recorded_is_tried_first_even_outside_the_autotuner_s_list():
    tuner = load_tuner(MODULE, NAME)
    ran = {"kwargs": {"XBLOCK": 128}, "num_warps": 2, "num_stages": 1}
    assert all(c.kwargs != ran["kwargs"] for c in tuner.configs)
    ident = ptx_identity_sha256(compile_config(tuner, with_config(tuner.configs[0], **ran))[0])
    got = build_kernel([str(MODULE)], NAME, ident, {"k": (ARGS, [512, 1, 1])}, recorded=ran)
    assert got["stock_config"] == ran and got["grid_checks"] == {"k": True}
    assert "error" in build_kernel([str(MODULE)], NAME, ident, {"k": (ARGS, [512, 1, 1])})


def test_the_stock_grid_is_checked_per_launch_and_a_failing_grid_is_said(monkeypatch):
    from types import SimpleNamespace

    from chronos.triton import inductor_source

    def grid(tuner, cfg, meta, args):
        if args == "broken":
            raise KeyError("xnumel")
        return (args, 1, 1)

    monkeypatch.setattr(inductor_source, "grid_for", grid)
    got = inductor_source.stock_grid_checks(None, None, {}, {"a": (4, [4, 1, 1]), "b": (4, [8, 1, 1]),
                                                            "c": ("broken", [1, 1, 1])})
    assert got["a"] is True and got["b"] == "stock config gives (4, 1, 1), captured [8, 1, 1]"
    assert got["c"].startswith("stock config gives KeyError")
    assert inductor_source.is_persistent(SimpleNamespace(heuristic_type="HeuristicType.PERSISTENT_REDUCTION"),
                                         "triton_red_x")
    assert inductor_source.is_persistent(SimpleNamespace(), "triton_per_fused_sum")
    assert not inductor_source.is_persistent(SimpleNamespace(heuristic_type="REDUCTION"), "triton_red_x")
