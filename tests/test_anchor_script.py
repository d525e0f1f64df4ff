"""scripts/make_anchor_variants.py's logic on this CPU (#28 item 5): per kernel, the config Inductor's tuner
kept (here a stand-in for the GPU run) is compiled from the stock module with its grid; a config equal to
stock is said as such, a tuner that fails is said for its mode alone, and a template is left out with why."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")
pytest.importorskip("torch._inductor.runtime.triton_heuristics")

from chronos.triton.inductor_source import compile_config, load_tuner, with_config
from chronos.triton.tuned_db import ptx_identity_sha256

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "tests" / "triton" / "inductor_modules" / "pointwise_mul.py"
NAME = "triton_poi_fused_mul_0"
ARGS = [{"kind": "buffer"}, {"kind": "buffer"}, {"kind": "scalar", "value": 65536}]
STOCK = {"kwargs": {"XBLOCK": 512}, "num_warps": 4, "num_stages": 1}


def _script(tuned: dict):
    """The script, its GPU steps replaced: `tune` answers `tuned[mode]` (an exception is raised)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    path = ROOT / "scripts" / "make_anchor_variants.py"
    spec = importlib.util.spec_from_file_location("make_anchor_variants", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def tune(module, name, mode, args):
        assert Path(module) == MODULE and name == NAME and args == ["inputs"]
        if isinstance(tuned[mode], Exception):
            raise tuned[mode]
        return dict(tuned[mode])

    mod.tune, mod.torch_args = tune, lambda spec: ["inputs"]
    return mod


def _job(name: str = NAME) -> tuple:
    tuner = load_tuner(MODULE, NAME)
    ident = ptx_identity_sha256(compile_config(tuner, with_config(tuner.configs[0], **STOCK))[0])
    launches = {"k_1": (ARGS, [65536 // STOCK["kwargs"]["XBLOCK"], 1, 1])}
    return [str(MODULE)], name, ident, launches, STOCK


def test_the_tuner_s_config_is_compiled_from_the_stock_module_on_its_own_grid():
    tuned = {"kwargs": {"XBLOCK": 1024}, "num_warps": 8, "num_stages": 1, "configs": 2}
    mod = _script({"coordesc": tuned, "max_autotune": STOCK})
    got = mod.kernel_anchors(_job(), None, ["max_autotune", "coordesc"])
    assert got["coordesc"]["grids"] == {"k_1": [64, 1, 1]} and ".reqntid 256" in got["coordesc"]["ptx_text"]
    assert got["coordesc"]["kwargs"] == {"XBLOCK": 1024} and got["coordesc"]["configs"] == 2
    assert got["max_autotune"]["same_as_stock"] and "ptx_text" not in got["max_autotune"]


def test_a_tuner_that_fails_is_said_for_its_mode_and_the_other_goes_on():
    mod = _script({"coordesc": RuntimeError("illegal memory access"), "max_autotune": STOCK})
    got = mod.kernel_anchors(_job(), None, ["max_autotune", "coordesc"])
    assert got["coordesc"]["error"].startswith("tuning: RuntimeError: illegal memory access")
    assert got["max_autotune"]["same_as_stock"]


def test_a_template_or_a_kernel_whose_stock_ptx_is_not_remade_gets_no_anchor():
    mod = _script({})
    got = mod.kernel_anchors(_job("triton_tem_fused_mm_0"), None, ["coordesc"])
    assert "select_algorithm" in got["coordesc"]["error"]
    paths, name, _, launches, recorded = _job()
    got = mod.kernel_anchors((paths, name, "0" * 64, launches, recorded), None, ["coordesc"])
    assert got["coordesc"]["error"].startswith("no config of its Inductor source remade the stock PTX")
