"""Roofline probes: the copy kernel's PTX assembles for Ada and Hopper and matches its spec; min_bytes and
flops on committed specs; the roofline and peak arithmetic."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from chronos.kernels.gemm_tile import gemm_tile_spec
from chronos.kernels.spec import load_specs
from chronos.measure.probes import (
    COPY_ENTRY,
    COPY_PTX,
    COPY_THREADS,
    COPY_TRIPS,
    COPY_UNROLL,
    copy_probe_spec,
    flops,
    min_bytes,
    named_args,
    peaks_from_probes,
    roofline,
)
from chronos.ptx import parse

SPECS = Path(__file__).resolve().parents[2] / "data" / "kernels" / "triton" / "specs.json"
TRITON = {s.kernel: s for s in load_specs(SPECS)}


@pytest.mark.parametrize("arch", ["sm_89", "sm_90a"])
def test_copy_ptx_assembles(ptxas, arch):
    from chronos.toolchain import assemble

    res = assemble(COPY_PTX, arch, name=COPY_ENTRY, ptxas=ptxas)
    assert res.entries[COPY_ENTRY].spill_stores == 0 and res.entries[COPY_ENTRY].stack_frame == 0


def test_copy_ptx_is_plain_sm89_code():
    assert ".version 8.0" in COPY_PTX and ".target sm_89" in COPY_PTX
    assert COPY_PTX.count("ld.global.v4.u32") == COPY_UNROLL + 1  # unrolled main loop + tail
    assert COPY_PTX.count("st.global.v4.u32") == COPY_UNROLL + 1
    for hopper_only in ("cp.async.bulk", "wgmma", "mbarrier", "setmaxnreg", "%cluster"):
        assert hopper_only not in COPY_PTX


def test_copy_spec_mirrors_the_ptx_entry():
    spec = copy_probe_spec()
    entry = parse(COPY_PTX).entry(spec.entry)
    assert [a.name for a in spec.args] == [p.name for p in entry.params] == ["src", "dst", "n_vec4"]
    assert [p.is_ptr for p in entry.params] == [True, True, False] and entry.params[2].dtype == ".u64"
    assert f".reqntid {spec.block[0]}" in COPY_PTX and spec.block == (COPY_THREADS, 1, 1)
    assert spec.family == "probes" and spec.ptx == f"{COPY_ENTRY}.ptx"
    assert spec.alignment == {"src": 16, "dst": 16}
    assert named_args(spec)["n_vec4"].value == spec.args[0].nbytes // 16


@pytest.mark.parametrize("nbytes", [1 << 30, 16, 48, 1 << 20])
def test_copy_grid_covers_the_buffer_in_a_few_trips(nbytes):
    spec = copy_probe_spec(nbytes)
    n_vec4 = spec.args[2].value
    per_cta = COPY_THREADS * COPY_UNROLL * COPY_TRIPS  # vec4s one CTA copies in COPY_TRIPS unrolled trips
    assert spec.grid[0] * per_cta >= n_vec4 > (spec.grid[0] - 1) * per_cta
    assert min_bytes(spec) == 2 * nbytes and flops(spec) is None
    assert spec.args[0].nbytes <= 1.1e9


@pytest.mark.parametrize("nbytes", [0, 8, 100])
def test_copy_size_must_be_whole_vec4s(nbytes):
    with pytest.raises(ValueError):
        copy_probe_spec(nbytes)


def test_min_bytes_and_flops_of_committed_specs():
    mm = TRITON["matmul_f16_m512_n512_k512_t128x128x64"]
    assert min_bytes(mm) == 3 * 512 * 512 * 2 and flops(mm) == 2 * 512**3
    odd = TRITON["matmul_bf16_m384_n320_k200_t64x64x32"]
    assert flops(odd) == 2 * 384 * 320 * 200 and min_bytes(odd) == 2 * (384 * 200 + 200 * 320 + 384 * 320)
    tf32 = TRITON["matmul_tf32_m1024_n1024_k1024_t128x128x32"]
    assert min_bytes(tf32) == 3 * 1024 * 1024 * 4
    att = TRITON["attention_d64_kv1024"]  # batch*heads 32, q 1024, kv 1024, d 64
    assert flops(att) == 4 * 32 * 1024 * 1024 * 64 and min_bytes(att) == 4 * 32 * 1024 * 64 * 2
    assert flops(TRITON["attention_d128_kv4096"]) == 4 * 8 * 1024 * 4096 * 128
    ce = TRITON["cross_entropy_bf16_r1024_v32000"]  # logits bf16 + targets i64 in, f32 loss out
    assert min_bytes(ce) == 1024 * 32000 * 2 + 1024 * 8 + 1024 * 4 and flops(ce) is None
    assert flops(TRITON["softmax_r4096_c1024"]) is None
    assert flops(gemm_tile_spec(2, 4, 6)) == 2 * 2 * 4 * 6 * 132 * 128


def test_flops_needs_the_param_names():
    mm = TRITON["matmul_f16_m512_n512_k512_t128x128x64"]
    blind = dataclasses.replace(mm, notes="no parameter list here")
    assert named_args(blind) == {} and flops(blind) is None


def test_roofline_memory_and_compute_bound():
    rows = TRITON["rowsum_f32_r4096_c1024"]
    nbytes = min_bytes(rows)
    r = roofline(rows, time_ms=nbytes / 2e12 * 1e3, peak_bandwidth_Bps=4e12, peak_flops=1e15)
    assert r["bytes"] == nbytes and r["flops"] is None and r["achieved_TFLOPs"] is None
    assert r["achieved_GBps"] == pytest.approx(2000) and r["bandwidth_fraction"] == pytest.approx(0.5)
    assert r["bound"] == "memory" and r["fraction"] == r["bandwidth_fraction"] and r["flop_fraction"] is None
    mm = TRITON["matmul_f16_m1024_n1024_k1024_t128x256x64"]
    r = roofline(mm, time_ms=flops(mm) / 5e14 * 1e3, peak_bandwidth_Bps=4e12, peak_flops=1e15)
    assert r["achieved_TFLOPs"] == pytest.approx(500) and r["flop_fraction"] == pytest.approx(0.5)
    assert r["bound"] == "compute" and r["fraction"] == r["flop_fraction"] > r["bandwidth_fraction"]
    # the same GEMM on a machine with 1000x less bandwidth: memory-bound by the ridge point
    r = roofline(mm, time_ms=1.0, peak_bandwidth_Bps=4e9, peak_flops=1e15)
    assert r["bound"] == "memory" and r["fraction"] == pytest.approx(min_bytes(mm) / 1e-3 / 4e9)
    with pytest.raises(ValueError):
        roofline(mm, 0.0, 4e12, 1e15)


def test_peaks_from_probes():
    copy = copy_probe_spec()
    p = peaks_from_probes(0.5, min_bytes(copy), 1.4, 2 * 8192**3)
    assert p["peak_bandwidth_Bps"] == pytest.approx(2 * 2**30 / 0.5e-3)
    assert p["peak_flops"] == pytest.approx(2 * 8192**3 / 1.4e-3)
    with pytest.raises(ValueError):
        peaks_from_probes(0.0, 1, 1.0, 1)
