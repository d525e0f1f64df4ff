"""Observation v2 (chronos.features.v2): golden values on a hand-written kernel, the launch's waves on a
Triton suite kernel and a captured one, determinism, the seed's 25 unchanged, and the features that actions
move."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from chronos.actions import SEED, V2
from chronos.features.seed import FEATURE_NAMES, extract_features
from chronos.features.v2 import (
    FEATURE_V2_DOCS,
    FEATURE_V2_NAMES,
    NEW_FEATURE_DOCS,
    kernel_features_v2,
    observed_features,
    space_features,
)
from chronos.kernels.spec import ArgSpec, KernelSpec, load_module, load_specs
from chronos.ptx import parse
from chronos.ptx.loop_trips import back_edges, trip_count
from chronos.transforms.loops import unroll
from chronos.transforms.register_budget import set_maxnreg

ROOT = Path(__file__).resolve().parents[2]
TRITON = ROOT / "data/kernels/triton/specs.json"
GPT2 = ROOT / "data/kernels/captured/gpt2/specs.json"

# one loop of 10 trips (a compare against a constant), and two loads from param_0: one before the loop and
# one in it, so both are re-read (two loop regions); 1 KB of static shared memory
PTX = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry k(
    .param .u64 k_param_0,
    .param .u64 k_param_1,
    .param .u32 k_param_2
)
.reqntid 256
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<4>;
    .shared .align 4 .b8 buf[1024];

    ld.param.u64 %rd1, [k_param_0];
    ld.param.u64 %rd2, [k_param_1];
    ld.param.u32 %r1, [k_param_2];
    ld.global.f32 %f1, [%rd1];
    mov.u32 %r2, 0;
$L_loop:
    ld.global.f32 %f2, [%rd1+4];
    add.f32 %f1, %f1, %f2;
    add.s32 %r2, %r2, 1;
    setp.lt.s32 %p1, %r2, BOUND;
    @%p1 bra $L_loop;
    st.global.f32 [%rd2], %f1;
    ret;
}
"""

LAUNCH = KernelSpec("k", "test", "k", "k.ptx", (1000, 1, 1), (256, 1, 1), (
    ArgSpec("k_param_0", "buffer", "f32", 16), ArgSpec("k_param_1", "buffer", "f32", 1, role="output"),
    ArgSpec("k_param_2", "scalar", "i32", value=7)))


def kernel(bound: str = "10"):
    return parse(PTX.replace("BOUND", bound))


def features(module, launch=None, ptxas_info=None) -> dict[str, float]:
    return dict(zip(FEATURE_V2_NAMES, kernel_features_v2(module, launch, ptxas_info).tolist(), strict=True))


def test_every_feature_is_documented_and_the_seeds_come_first():
    assert len(FEATURE_V2_NAMES) == 52 and FEATURE_V2_NAMES[:25] == FEATURE_NAMES
    assert all(FEATURE_V2_DOCS[n] for n in FEATURE_V2_NAMES)
    import chronos.features.v2 as mod
    assert all(f"`{n}`" in mod.__doc__ for n in NEW_FEATURE_DOCS)  # the docstring says why, per feature
    assert observed_features(SEED) == FEATURE_NAMES and observed_features(V2) == FEATURE_V2_NAMES


def test_golden_values_on_a_hand_written_kernel_without_launch():
    f = features(kernel())
    lg = math.log1p
    expect = {
        "ptxas_registers": 0.0, "ptxas_spill_bytes": 0.0, "has_ptxas_info": 0.0,
        "threads_per_cta": 0.25, "has_cta_size": 1.0,
        "ctas_per_sm": 8 / 32, "occupancy": 1.0, "register_limited": 0.0,  # 2048 threads / 256: 8 CTAs
        "shared_bytes_per_cta": lg(1024),
        "has_launch": 0.0, "grid_ctas_per_sm": 0.0, "waves": 0.0, "last_wave_fill": 0.0,
        "n_loops": lg(1), "n_single_block_loops": lg(1), "unroll_applies": 1.0,
        "loop_body_instructions": lg(4),  # ld, add.f32, add.s32, setp
        "loop_instruction_fraction": 5 / 12,  # the 4 + the back-branch, of 12 instructions
        "loop_trip_count": lg(10), "has_trip_count": 1.0,
        "n_reread_loads": lg(2), "reread_load_fraction": 1.0,
        "global_load_bytes": lg(8), "global_store_bytes": lg(4), "global_access_width": 12 / 3 / 16,
        "n_mma": 0.0, "n_wgmma": 0.0,
    }
    assert {n: f[n] for n in NEW_FEATURE_DOCS} == pytest.approx(expect, rel=1e-6)


def test_golden_values_with_the_launch_and_ptxas_info():
    f = features(kernel("%r1"), LAUNCH, {"registers": 40, "spills": 8})
    # 40 registers: 1280 per warp, 8 warps -> 65536 // 10240 = 6 CTAs, fewer than the 8 thread slots allow
    assert f["ctas_per_sm"] == pytest.approx(6 / 32) and f["register_limited"] == 1.0
    assert f["occupancy"] == pytest.approx(6 * 256 / 2048)
    assert f["ptxas_registers"] == pytest.approx(40 / 255) and f["ptxas_spill_bytes"] == pytest.approx(
        math.log1p(8)) and f["has_ptxas_info"] == 1.0
    slots = 132 * 6
    assert f["has_launch"] == 1.0 and f["grid_ctas_per_sm"] == pytest.approx(math.log1p(1000 / 132))
    assert f["waves"] == pytest.approx(math.log1p(1000 / slots))
    assert f["last_wave_fill"] == pytest.approx((1000 - slots) / slots)
    # the bound is the launch's scalar k_param_2 = 7; without the launch it is unknown
    assert f["loop_trip_count"] == pytest.approx(math.log1p(7)) and f["has_trip_count"] == 1.0
    bare = features(kernel("%r1"))
    assert bare["loop_trip_count"] == 0.0 and bare["has_trip_count"] == 0.0


@pytest.mark.parametrize(("bound", "cmp", "start", "step", "trips"), [
    ("10", "lt", "0", "1", 10), ("10", "le", "0", "1", 11), ("10", "lt", "0", "3", 4),
    ("10", "ne", "0", "2", 5),
    ("10", "ne", "0", "3", None), ("0", "gt", "10", "-1", 10), ("10", "lt", "0", "-1", None),
    ("5", "lt", "9", "1", 1),  # a do-while loop runs once even when the bound is already passed
])
def test_trip_counts_of_simple_compares(bound, cmp, start, step, trips):
    text = PTX.replace("setp.lt.s32 %p1, %r2, BOUND", f"setp.{cmp}.s32 %p1, %r2, {bound}")
    text = text.replace("mov.u32 %r2, 0", f"mov.u32 %r2, {start}").replace("add.s32 %r2, %r2, 1",
                                                                          f"add.s32 %r2, %r2, {step}")
    fn = parse(text).entries()[0]
    assert trip_count(fn, back_edges(fn)[0]) == trips


def test_the_seeds_25_features_are_unchanged():
    for module in (kernel(), kernel("%r1")):
        v2 = kernel_features_v2(module, LAUNCH, {"registers": 40, "spills": 0})
        assert np.array_equal(v2[:25], np.asarray(extract_features(module), dtype=np.float32))
        assert np.array_equal(space_features(module, SEED, LAUNCH), np.float32(extract_features(module)))
        assert np.array_equal(space_features(module, V2, LAUNCH), kernel_features_v2(module, LAUNCH))


def test_deterministic():
    a = kernel_features_v2(kernel(), LAUNCH)
    b = kernel_features_v2(kernel(), LAUNCH)
    assert a.dtype == np.float32 and a.shape == (52,) and a.tobytes() == b.tobytes()


def test_a_tighter_register_budget_never_lowers_the_ctas_per_sm():
    ctas = [features(set_maxnreg(kernel(), b, verify=False))["ctas_per_sm"] for b in (255, 128, 64, 32)]
    assert ctas == sorted(ctas) and ctas[0] < ctas[-1]  # 255: 1 CTA of 256 threads; 32: 8 CTAs
    assert ctas == pytest.approx([1 / 32, 2 / 32, 4 / 32, 8 / 32])


def test_unrolling_moves_the_loop_features():
    before, after = features(kernel()), features(unroll(kernel(), 2, verify=False))
    assert before["n_single_block_loops"] > 0 and after["n_single_block_loops"] == 0.0
    assert before["unroll_applies"] == 1.0 and after["unroll_applies"] == 0.0
    assert after["loop_trip_count"] == pytest.approx(math.log1p(5))  # two increments of 1 per trip now
    assert after["loop_instruction_fraction"] > before["loop_instruction_fraction"]
    assert after["global_load_bytes"] > before["global_load_bytes"]


def test_a_triton_suite_kernel_with_its_launch():
    spec = next(s for s in load_specs(TRITON) if s.kernel == "matmul_f16_m512_n512_k512_t128x128x64")
    f = features(load_module(TRITON, spec), spec)
    # grid 4x4 = 16 CTAs of 128 threads; 96 KB dynamic shared memory (+1 KB reserved) fits 2 CTAs per SM
    assert (spec.grid, spec.block, spec.shared_bytes) == ((4, 4, 1), (128, 1, 1), 98304)
    assert f["ctas_per_sm"] == pytest.approx(2 / 32) and f["occupancy"] == pytest.approx(2 * 128 / 2048)
    assert f["grid_ctas_per_sm"] == pytest.approx(math.log1p(16 / 132))
    assert f["waves"] == pytest.approx(math.log1p(16 / 264))
    assert f["last_wave_fill"] == pytest.approx(16 / 264)
    assert f["loop_trip_count"] == pytest.approx(math.log1p(8))  # K / BLOCK_K = 512 / 64, from the launch
    assert f["n_wgmma"] == pytest.approx(math.log1p(8)) and f["n_mma"] == 0.0
    assert features(load_module(TRITON, spec))["has_trip_count"] == 0.0  # K is a parameter


def test_a_captured_kernel_with_its_launch():
    spec = load_specs(GPT2)[1]
    f = features(load_module(GPT2, spec), spec)
    # 256 CTAs of 256 threads, 8 KB dynamic shared: 8 CTAs per SM, 1056 slots, a quarter of one wave
    assert (spec.grid, spec.block, spec.shared_bytes) == ((256, 1, 1), (256, 1, 1), 8192)
    assert f["ctas_per_sm"] == pytest.approx(8 / 32) and f["occupancy"] == 1.0
    assert f["shared_bytes_per_cta"] == pytest.approx(math.log1p(8192))
    assert f["waves"] == pytest.approx(math.log1p(256 / 1056)) and f["last_wave_fill"] == pytest.approx(
        256 / 1056)
    assert f["grid_ctas_per_sm"] == pytest.approx(math.log1p(256 / 132))
