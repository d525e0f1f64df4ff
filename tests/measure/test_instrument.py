"""%clock64 instrumentation: structure on the IR, and every instrumented kernel assembles."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronos.kernels.gemm_tile import GEMM_TILE_SHAPES, gemm_tile_ptx, kernel_name
from chronos.measure.instrument import instrument_text
from chronos.ptx import parse
from chronos.toolchain import assemble

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "triton"
TRITON = sorted(CORPUS.glob("*.ptx"))


def test_structure_of_gemm_instrumentation():
    ptx = gemm_tile_ptx(4, 6, 8)
    out = instrument_text(ptx)
    fn = parse(out).entry()
    assert fn.params[-1].dtype == ".u64" and "chronos_cycles" in fn.params[-1].name
    text = out.split("{", 1)[1]
    assert text.count("mov.u64 \t%chr0_rd") == 2  # %clock64 at start, and before the one ret
    for d in ("%ctaid.z", "%nctaid.y", "%tid.z", "%ntid.z"):
        assert d in text  # 3-D linear thread id
    assert "st.global.u64" in text
    # the store comes right before the ret
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    i = lines.index("ret;")
    assert lines[i - 1].startswith("st.global.u64")


def test_guarded_ret_keeps_its_guard():
    ptx = gemm_tile_ptx(2, 2, 2).replace("\t@%p1 bra \t$L__BB0_2;", "\t@%p1 ret;")
    out = instrument_text(ptx)
    assert "@%p1 st.global.u64" in out and "@%p1 mov.u64" in out


def test_register_names_do_not_collide():
    ptx = gemm_tile_ptx(2, 2, 2).replace("%rd<11>;", "%rd<11>;\n\t.reg .b64 \t%chr0_rd<2>;")
    out = instrument_text(ptx)
    assert "%chr1_rd" in out


@pytest.mark.parametrize("shape", GEMM_TILE_SHAPES, ids=lambda s: kernel_name(*s))
def test_instrumented_gemm_tile_assembles(ptxas, shape):
    res = assemble(instrument_text(gemm_tile_ptx(*shape)), "sm_90a", ptxas=ptxas)
    assert kernel_name(*shape) in res.entries


@pytest.mark.parametrize("path", TRITON, ids=lambda p: p.name)
def test_instrumented_triton_assembles(ptxas, path):
    arch = "sm_90a" if "sm_90a" in path.name else "sm_89"
    res = assemble(instrument_text(path.read_text()), arch, ptxas=ptxas)
    assert res.entries
