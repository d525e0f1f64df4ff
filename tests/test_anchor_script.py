"""scripts/make_anchor_variants.py's logic on this CPU (#28 item 5): an anchor run's records give each
function's config; a committed kernel gets the anchor's config compiled, with its grid, only where the
anchor run's module remakes the committed stock PTX; a config equal to stock, or several configs, are said."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")
pytest.importorskip("torch._inductor.runtime.triton_heuristics")

from chronos.triton.inductor_source import compile_config, load_tuner, with_config

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "tests" / "triton" / "inductor_modules" / "pointwise_mul.py"
NAME = "triton_poi_fused_mul_0"


def _script():
    sys.path.insert(0, str(ROOT / "scripts"))
    path = ROOT / "scripts" / "make_anchor_variants.py"
    spec = importlib.util.spec_from_file_location("make_anchor_variants", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _capture(tmp_path: Path, configs: list[dict]) -> Path:
    """An anchor run's capture: the module under sources/, one launch record per config."""
    cap = tmp_path / "cap"
    (cap / "sources").mkdir(parents=True)
    (cap / "launches").mkdir()
    shutil.copy(MODULE, cap / "sources" / "m.py")
    for i, c in enumerate(configs):
        rec = {"source": "inductor", "function": NAME, "module": "sources/m.py", "constexprs": c["kwargs"],
               "num_warps": c["num_warps"], "num_stages": c["num_stages"]}
        (cap / "launches" / f"{i}.json").write_text(json.dumps(rec))
    return cap


def _committed(tmp_path: Path, stock: dict) -> tuple[Path, list[dict], dict]:
    """A captured workload's folder holding this kernel's stock PTX, its spec and its knobs.json entry."""
    tuner = load_tuner(MODULE, NAME)
    ptx = compile_config(tuner, with_config(tuner.configs[0], **stock))[0]
    folder = tmp_path / "w"
    (folder / "ptx").mkdir(parents=True)
    (folder / "ptx" / "k.ptx").write_text(ptx)
    spec = {"kernel": "k_1", "ptx": "ptx/k.ptx", "grid": [65536 // stock["kwargs"]["XBLOCK"], 1, 1],
            "args": [{"kind": "buffer"}, {"kind": "buffer"}, {"kind": "scalar", "value": 65536}],
            "notes": f"captured from w (inductor: {NAME}); constexprs {json.dumps(stock['kwargs'])}"}
    entry = {"stem": "k", "stock": {"num_warps": stock["num_warps"], "num_stages": stock["num_stages"]}}
    return folder, [spec], entry


def test_an_anchor_config_is_compiled_for_the_committed_kernel_with_its_grid(tmp_path):
    mod = _script()
    stock = {"kwargs": {"XBLOCK": 512}, "num_warps": 4, "num_stages": 1}
    tuned = {"kwargs": {"XBLOCK": 1024}, "num_warps": 8, "num_stages": 1}
    folder, specs, entry = _committed(tmp_path, stock)
    runs = {"coordesc": mod.anchor_configs(_capture(tmp_path / "a", [tuned, tuned])),
            "max_autotune": mod.anchor_configs(_capture(tmp_path / "b", [stock]))}
    got = mod.kernel_anchors(folder, "ptx/k.ptx", entry, specs, NAME, runs)
    assert got["coordesc"]["grids"] == {"k_1": [64, 1, 1]} and ".reqntid 256" in got["coordesc"]["ptx_text"]
    assert got["max_autotune"]["same_as_stock"]


def test_an_anchor_run_that_ran_a_kernel_with_several_configs_or_not_at_all_is_said(tmp_path):
    mod = _script()
    stock = {"kwargs": {"XBLOCK": 512}, "num_warps": 4, "num_stages": 1}
    folder, specs, entry = _committed(tmp_path, stock)
    two = [{"kwargs": {"XBLOCK": 256}, "num_warps": 4, "num_stages": 1}, stock]
    runs = {"coordesc": mod.anchor_configs(_capture(tmp_path / "a", two)), "max_autotune": {}}
    got = mod.kernel_anchors(folder, "ptx/k.ptx", entry, specs, NAME, runs)
    assert "2 configs" in got["coordesc"]["error"] and "launched no kernel" in got["max_autotune"]["error"]
