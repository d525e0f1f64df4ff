"""gemm_tile generator: shape set, determinism, instruction counts, the stage, and ptxas acceptance."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from chronos.kernels.gemm_tile import GEMM_TILE_SHAPES, gemm_tile_ptx, gemm_tile_spec, kernel_name
from chronos.kernels.spec import KernelSpec, load_specs
from chronos.stages import kernels as stage

LD = re.compile(r"^\s*ld\.global\.f32\s", re.MULTILINE)
ST = re.compile(r"^\s*st\.global\.f32\s", re.MULTILINE)
FMA = re.compile(r"^\s*fma\.rn\.f32\s", re.MULTILINE)
VEC = re.compile(r"\.v[248]\.")


def test_shapes_are_the_seed_64():
    assert len(GEMM_TILE_SHAPES) == 64
    assert set(GEMM_TILE_SHAPES) == {
        (m, n, k) for m in (2, 4, 6, 8) for n in (2, 4, 6, 8) for k in (2, 4, 6, 8)
    }


@pytest.mark.parametrize("shape", GEMM_TILE_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_counts_and_form(shape):
    m, n, k = shape
    ptx = gemm_tile_ptx(m, n, k)
    assert ptx == gemm_tile_ptx(m, n, k)  # deterministic
    assert f".visible .entry {kernel_name(m, n, k)}(" in ptx
    assert len(LD.findall(ptx)) == m * k + k * n
    assert len(ST.findall(ptx)) == m * n
    assert len(FMA.findall(ptx)) == m * n * k
    assert not VEC.search(ptx)  # all scalar: vectorising is the transforms' job
    assert ptx.count(".align 16") == 3
    # Declared %f count is exact: indices 1..N-1 are all used.
    nf = int(re.search(r"\.reg \.f32 \t%f<(\d+)>;", ptx).group(1))
    used = {int(x) for x in re.findall(r"%f(\d+)", ptx)}
    assert used == set(range(1, nf))


def test_names_targets_and_spec():
    assert kernel_name(4, 6, 8) == "gemm_tile_4_6_8"
    ptx = gemm_tile_ptx(2, 4, 6, target="sm_89", version="7.8")
    assert ".target sm_89" in ptx and ".version 7.8" in ptx
    spec = gemm_tile_spec(4, 6, 4)
    assert KernelSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec
    assert spec.entry == "gemm_tile_4_6_4" and set(spec.alignment.values()) == {16}
    threads = spec.args[3].value
    assert spec.threads >= threads
    assert [a.elements for a in spec.args[:3]] == [threads * 16, 24, threads * 24]
    assert [a.role for a in spec.args] == ["input", "input", "output", "input"]
    assert [o.name for o in spec.outputs] == ["gemm_tile_4_6_4_param_2"]


def test_row_stride_can_break_v4_alignment():
    # gemm_tile(4,6,4): C rows are 24 bytes apart, so row 1 starts at +24 (not 16-aligned).
    ptx = gemm_tile_ptx(4, 6, 4)
    assert "st.global.f32 \t[%rd10+24]," in ptx


def test_stage_writes_corpus(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("kernels:\n  gemm_tile:\n    m: [2, 4]\n    n: [6]\n    k: [8]\n    target: sm_89\n")
    out = tmp_path / "gt"
    stage.main(["--params", str(params), "--out", str(out)])
    assert sorted(p.name for p in out.glob("*.ptx")) == ["gemm_tile_2_6_8.ptx", "gemm_tile_4_6_8.ptx"]
    assert ".target sm_89" in (out / "gemm_tile_2_6_8.ptx").read_text()
    specs = load_specs(out / "specs.json")
    assert [s.entry for s in specs] == ["gemm_tile_2_6_8", "gemm_tile_4_6_8"]


PTXAS = os.environ.get("CHRONOS_PTXAS") or shutil.which("ptxas")


@pytest.mark.skipif(not PTXAS, reason="ptxas not found (set CHRONOS_PTXAS or put it on PATH)")
@pytest.mark.parametrize("target", ["sm_90", "sm_89"])
@pytest.mark.parametrize("shape", [(2, 2, 2), (4, 6, 4), (6, 2, 8), (8, 8, 8)])
def test_ptxas_accepts(tmp_path, shape, target):
    src = tmp_path / "k.ptx"
    src.write_text(gemm_tile_ptx(*shape, target=target))
    res = subprocess.run(
        [PTXAS, f"-arch={target}", str(src), "-o", str(tmp_path / "k.cubin")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
