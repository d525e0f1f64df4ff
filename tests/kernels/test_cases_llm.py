"""The LLM-size tier (cases_llm.CASES_LLM) and the GEMM roofline probe: one case per small case on the same
kernel, sizes within the host-memory caps, specialisations the offline builder can reproduce, and no
index that overflows the kernels' 32-bit offsets. CPU only: kernel signatures are read from the source."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from chronos.kernels.spec import DTYPES
from chronos.kernels.triton_suite import CASES, Buf, Scalar
from chronos.kernels.triton_suite.build import jit_specialisation
from chronos.kernels.triton_suite.cases_llm import (
    CASES_LLM,
    LLM_BY_NAME,
    MAX_BUFFER_BYTES,
    MAX_CASE_INPUT_BYTES,
    PROBES,
)

SUITE_SRC = Path(__file__).resolve().parents[2] / "src" / "chronos" / "kernels" / "triton_suite"


def _kernel_arg_names() -> dict[str, list[str]]:
    """Kernel function name -> parameter names, read from the @triton.jit sources without importing triton."""
    out = {}
    for f in ("kernels_simple.py", "kernels_dot.py"):
        for node in ast.parse((SUITE_SRC / f).read_text()).body:
            if isinstance(node, ast.FunctionDef):
                out[node.name] = [a.arg for a in node.args.args]
    return out


def _bufs(case):
    return [a for a in case.args if isinstance(a, Buf)]


def _nbytes(buf: Buf) -> int:
    return (buf.elements + buf.offset) * DTYPES[buf.dtype]


def test_one_llm_case_per_small_case_on_the_same_kernel():
    assert len(CASES_LLM) == len(CASES) == 33
    assert [c.kernel for c in CASES_LLM] == [c.kernel for c in CASES]
    for small, big in zip(CASES, CASES_LLM, strict=True):
        assert big.name.split("_")[0] == small.name.split("_")[0], (small.name, big.name)
        assert [a.name for a in big.args] == [a.name for a in small.args], big.name
        assert [a.dtype for a in big.args] == [a.dtype for a in small.args], big.name
        assert set(big.const) == set(small.const), big.name


def test_names_are_unique_across_tiers():
    names = [c.name for c in (*CASES, *CASES_LLM, *PROBES)]
    assert len(names) == len(set(names)) == 67
    assert set(LLM_BY_NAME) == {c.name for c in CASES_LLM}


def test_sizes_are_llm_scale_and_within_the_memory_caps():
    for small, big in zip(CASES, CASES_LLM, strict=True):
        sizes = [_nbytes(b) for b in _bufs(big)]
        inputs = sum(_nbytes(b) for b in _bufs(big) if b.role == "input")
        assert max(sizes) <= MAX_BUFFER_BYTES and inputs <= MAX_CASE_INPUT_BYTES, big.name
        assert sum(sizes) >= 25e6 and max(sizes) >= 2 * max(_nbytes(b) for b in _bufs(small)), big.name


def test_tags_carry_over_except_latency():
    for small, big in zip(CASES, CASES_LLM, strict=True):
        assert set(big.tags) == set(small.tags) - {"latency"}, big.name
        if "nodiv" in big.tags:
            offsets = [getattr(a, "offset", 0) for a in big.args]
            sizes = [a.value for a in big.args if isinstance(a, Scalar) and isinstance(a.value, int)]
            assert any(offsets) or any(s % 16 for s in sizes), big.name


@pytest.mark.parametrize("case", [*CASES_LLM, *PROBES], ids=lambda c: c.name)
def test_case_binds_to_its_kernel_without_overflow(case):
    sig, _ = jit_specialisation(case, _kernel_arg_names()[case.kernel])
    assert "i64" not in sig.values()  # every int scalar stays an i32, as in the small tier
    for a in case.args:
        # the kernels index with 32-bit offsets (attention and cross-entropy widen the row base themselves)
        assert (a.elements if isinstance(a, Buf) else abs(a.value)) < 2**31, (case.name, a.name)
    gx, gy, gz = case.grid
    assert gx < 2**31 and gy < 65536 and gz < 65536


def test_names_carry_the_sizes():
    for c in CASES_LLM:
        n = {a.name: a.value for a in c.args if isinstance(a, Scalar)}
        if c.kernel == "matmul_kernel":
            assert f"_m{n['M']}_n{n['N']}_k{n['K']}_" in c.name
        elif c.kernel == "attention_kernel":
            q = next(b for b in _bufs(c) if b.name == "q")
            assert c.name == f"attention_d{q.shape[2]}_h{q.shape[0]}_q{n['seq_q']}_kv{n['seq_kv']}"
        elif c.kernel in ("silu_mul_kernel", "gelu_kernel", "add_relu_kernel"):
            assert f"_n{n['n']}" in c.name
        elif "n_cols" in n and c.kernel != "cross_entropy_kernel":
            assert f"_r{_bufs(c)[0].shape[0]}_c{n['n_cols']}" in c.name


def test_gemm_probe_is_the_widest_small_tiling_at_8192_cubed():
    (probe,) = PROBES
    assert probe.name == "probe_matmul_bf16_m8192_n8192_k8192" and probe.kernel == "matmul_kernel"
    widest = next(c for c in CASES if c.kernel == "matmul_kernel" and c.const["BN"] == 256)
    assert probe.const == widest.const and (probe.num_warps, probe.num_stages) == (8, 3)
    assert {a.name: a.value for a in probe.args if isinstance(a, Scalar)} == {"M": 8192, "N": 8192, "K": 8192}
    assert [b.dtype for b in _bufs(probe)] == ["bf16"] * 3
    assert math.prod(probe.grid) == 64 * 32


def test_sampled_gemm_check_compares_the_right_rows(monkeypatch):
    torch = pytest.importorskip("torch")
    from chronos.kernels.triton_suite import reference
    from chronos.kernels.triton_suite.cases import matmul

    case = matmul("f32", 300, 40, 24, (64, 64, 32))
    gen = torch.Generator().manual_seed(0)
    t = {"a": torch.randn(300, 24, generator=gen), "b": torch.randn(24, 40, generator=gen)}
    t["c"] = t["a"] @ t["b"]
    assert reference.check_method(case) == "float64 reference, every element"
    monkeypatch.setattr(reference, "SAMPLED_GEMM_FLOPS", 1)
    monkeypatch.setattr(reference, "SAMPLE_ROWS", 50)
    assert reference.check_method(case).startswith("float64 reference on 50 seeded rows")
    (got, ref), = reference.checked(case, t).values()
    assert got.shape == ref.shape and 48 <= got.shape[0] <= 50 and got.dtype == torch.float64
    assert torch.allclose(got, ref, atol=1e-4)
    t["c"][-1, 0] += 1.0  # the last row is always sampled
    (got, ref), = reference.checked(case, t).values()
    assert not torch.allclose(got, ref, atol=1e-4)
