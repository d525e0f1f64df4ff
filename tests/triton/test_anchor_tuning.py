"""The per-kernel anchors' set-up (#28 item 5): a stock Inductor module rewritten as a tuner's run would have
generated it changes its kernel's inductor_meta and nothing else, and Inductor's own heuristics then give
that tuner's config space and search."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronos.triton.anchor_tuning import MODES, AnchorError, is_template, python_args, tuner_module

ROOT = Path(__file__).resolve().parents[2]
CAPTURED = ROOT / "data/kernels/captured/flex_decode_long/sources/40c9400a0f436a77.py"  # as Inductor wrote it
MODULE = Path(__file__).resolve().parent / "inductor_modules" / "pointwise_mul.py"
NAME = "triton_poi_fused_mul_0"


def _changed_lines(a: str, b: str) -> list[tuple[str, str]]:
    al, bl = a.splitlines(), b.splitlines()
    assert len(al) == len(bl)
    return [(x, y) for x, y in zip(al, bl, strict=True) if x != y]


@pytest.mark.parametrize("mode", list(MODES))
def test_only_the_kernel_s_inductor_meta_changes_and_it_says_the_tuner(mode):
    text = CAPTURED.read_text()
    got = tuner_module(text, mode)
    (before, after), = _changed_lines(text, got)
    assert "inductor_meta=" in before and "'max_autotune': False" in before
    assert "'max_autotune': True" in after and "'autotune_local_cache': False" in after
    assert "'force_disable_caches': True" in after and after.count("'max_autotune':") == 1
    assert ("'coordinate_descent_tuning': True" in after) == (mode == "coordesc")


def test_a_module_without_one_inductor_meta_or_an_unknown_tuner_is_refused():
    with pytest.raises(AnchorError, match="found 0"):
        tuner_module("import triton\n", "coordesc")
    with pytest.raises(AnchorError, match="unknown tuner"):
        tuner_module(CAPTURED.read_text(), "exhaustive")


def test_templates_are_told_apart_by_name():
    assert is_template("triton_tem_fused_flex_attention_0")
    assert not is_template("triton_per_fused_sum_0") and not is_template("triton_poi_fused_ones_0")


def test_loaded_the_rewritten_module_is_inductor_s_autotuner_with_the_tuner_s_configs(tmp_path):
    pytest.importorskip("triton")
    pytest.importorskip("torch._inductor.runtime.triton_heuristics")
    from chronos.triton.inductor_source import load_tuner

    stock = load_tuner(MODULE, NAME)
    tuned = {}
    for mode in MODES:
        path = tmp_path / f"{mode}.py"
        path.write_text(tuner_module(MODULE.read_text(), mode))
        tuned[mode] = load_tuner(path, NAME)
    assert not stock.inductor_meta.get("coordinate_descent_tuning")
    assert tuned["coordesc"].inductor_meta["coordinate_descent_tuning"] is True
    assert all(t.inductor_meta["max_autotune"] is True for t in tuned.values())
    assert tuned["max_autotune"].fn.src == stock.fn.src  # the same kernel



def test_the_ptx_kernel_s_arguments_map_onto_the_python_call_without_triton_s_scratch_pointers():
    pytest.importorskip("triton")
    pytest.importorskip("torch._inductor.runtime.triton_heuristics")
    from chronos.triton.inductor_source import load_tuner

    tuner = load_tuner(MODULE, NAME)  # (in_ptr0, out_ptr0, xnumel, XBLOCK: constexpr)
    assert python_args(tuner, ["in", "out", 65536, None, None]) == ["in", "out", 65536]
    signature = {**tuner.triton_meta["signature"], "xnumel": "constexpr"}  # specialised into a constant
    tuner.triton_meta = {**tuner.triton_meta, "signature": signature, "constants": {"xnumel": 65536}}
    assert python_args(tuner, ["in", "out", None, None]) == ["in", "out", 65536]
    tuner = load_tuner(MODULE, NAME)
    with pytest.raises(AnchorError, match="3 parameters"):
        python_args(tuner, ["in", "out"])
    with pytest.raises(AnchorError, match="do not map"):
        python_args(tuner, ["in", "out", 65536, "extra"])
