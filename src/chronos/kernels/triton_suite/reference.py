"""Torch side of the suite (GPU generation only; imports torch): draw inputs as a spec says, lay them out
as a case says (offsets included), and compute float64 references with tolerances by output dtype."""

from __future__ import annotations

import re
from collections.abc import Callable

import torch
import torch.nn.functional as F

from chronos.kernels.triton_suite.cases import Buf, Case

TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "i64": torch.int64,
                "i32": torch.int32}
TOL = {"f32": (1e-4, 1e-4), "f16": (1e-2, 1e-2), "bf16": (3e-2, 2e-2)}  # (atol, rtol) by output dtype


def draw(dtype: str, n: int, init: str, gen: torch.Generator) -> torch.Tensor:
    """A flat tensor of n elements drawn as `init` says (randint's upper bound is inclusive)."""
    dev = gen.device
    kind, _, rest = init.partition("(")
    p = [float(v) for v in rest.rstrip(")").split(",")] if rest else []
    if kind == "normal":
        t = torch.randn(n, generator=gen, device=dev) * p[1] + p[0]
    elif kind == "uniform":
        t = torch.rand(n, generator=gen, device=dev) * (p[1] - p[0]) + p[0]
    elif kind == "randint":
        t = torch.randint(int(p[0]), int(p[1]) + 1, (n,), generator=gen, device=dev)
    elif kind == "zeros":
        t = torch.zeros(n, device=dev)
    else:
        raise ValueError(f"no draw for init {init!r}")
    return t.to(TORCH_DTYPES[dtype])


def poisoned(dtype: str, n: int, offset: int = 0) -> torch.Tensor:
    """n elements filled with 0xFF bytes (NaN for floats) inside an allocation, `offset` elements in."""
    store = torch.empty(n + offset, dtype=TORCH_DTYPES[dtype], device="cuda")
    store.view(torch.uint8).fill_(0xFF)
    return store[offset:]


def place(buf: Buf, flat: torch.Tensor | None) -> torch.Tensor:
    """The buffer as the kernel sees it: `flat`'s values (or poison) at `buf.offset` elements into a fresh
    allocation, shaped `buf.shape`."""
    t = poisoned(buf.dtype, buf.elements, buf.offset)
    if flat is not None:
        t.copy_(flat)
    return t.view(buf.shape)


def _rows(x: torch.Tensor, n: dict) -> torch.Tensor:
    return x[:, : n["n_cols"]].double()


def _rmsnorm(case: Case, d: dict, n: dict) -> dict[str, torch.Tensor]:
    x = _rows(d["x"], n)
    return {"out": x * torch.rsqrt((x * x).mean(1, keepdim=True) + n["eps"]) * d["w"]}


def _attention(case: Case, d: dict, n: dict) -> dict[str, torch.Tensor]:
    s = d["q"] @ d["k"].transpose(1, 2) / case.const["HEAD_DIM"] ** 0.5
    return {"o": torch.softmax(s, -1) @ d["v"]}


def _rotary(case: Case, d: dict, n: dict) -> dict[str, torch.Tensor]:
    half = case.const["HALF"]
    x1, x2 = d["x"][..., :half], d["x"][..., half:]
    c, s = d["cos"][:, None, :], d["sin"][:, None, :]
    return {"out": torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)}


# kernel name -> (case, float64 inputs, scalar args by name) -> {output buffer name: reference}
_REFERENCES: dict[str, Callable[[Case, dict, dict], dict[str, torch.Tensor]]] = {
    "silu_mul_kernel": lambda case, d, n: {"out": F.silu(d["x"]) * d["y"]},
    "gelu_kernel": lambda case, d, n: {
        "out": F.gelu(d["x"], approximate="tanh" if case.const["APPROX"] else "none")},
    "add_relu_kernel": lambda case, d, n: {"out": torch.relu(d["x"] + d["y"])},
    "row_sum_kernel": lambda case, d, n: {"out": _rows(d["x"], n).sum(1)},
    "row_max_kernel": lambda case, d, n: {"out": _rows(d["x"], n).amax(1)},
    "softmax_kernel": lambda case, d, n: {"out": torch.softmax(_rows(d["x"], n), 1)},
    "layernorm_kernel": lambda case, d, n: {
        "out": F.layer_norm(_rows(d["x"], n), (n["n_cols"],), d["w"], d["b"], n["eps"])},
    "rmsnorm_kernel": _rmsnorm,
    "matmul_kernel": lambda case, d, n: {"c": d["a"] @ d["b"]},
    "attention_kernel": _attention,
    "cross_entropy_kernel": lambda case, d, n: {
        "loss": F.cross_entropy(_rows(d["logits"], n), d["target"], reduction="none")},
    "rotary_kernel": _rotary,
    "transpose_kernel": lambda case, d, n: {"out": d["x"].T},
}


def expected(case: Case, t: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Float64 references for the case's output buffers, from its (placed) input tensors `t`."""
    d = {k: (v.double() if v.is_floating_point() else v) for k, v in t.items()}
    n = {a.name: a.value for a in case.args if not isinstance(a, Buf)}
    k = case.kernel
    ref = _REFERENCES.get(k)
    if ref is None:
        raise KeyError(f"no reference for {k}")
    return ref(case, d, n)


# GEMMs of at least 2*4096^3 flops are checked on SAMPLE_ROWS rows of C: a full float64 reference of the LLM
# tier's 8192x14336x4096 costs ~1 TFLOP of fp64 and a 0.9 GB float64 C per check, three checks per case.
SAMPLED_GEMM_FLOPS = 2 * 4096**3
SAMPLE_ROWS = 256


def _gemm_flops(case: Case) -> int:
    n = {a.name: a.value for a in case.args if not isinstance(a, Buf)}
    return 2 * n["M"] * n["N"] * n["K"] if case.kernel == "matmul_kernel" else 0


def check_method(case: Case) -> str:
    """How `checked` compares this case's outputs (recorded in the provenance)."""
    if _gemm_flops(case) >= SAMPLED_GEMM_FLOPS:
        return f"float64 reference on {SAMPLE_ROWS} seeded rows of C (first and last included)"
    return "float64 reference, every element"


def checked(case: Case, t: dict[str, torch.Tensor]) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """{output buffer name: (output as float64, float64 reference)}, per `check_method`."""
    if _gemm_flops(case) < SAMPLED_GEMM_FLOPS:
        return {name: (t[name].double(), ref) for name, ref in expected(case, t).items()}
    m = t["c"].shape[0]
    pick = torch.randperm(m, generator=torch.Generator().manual_seed(m))[: SAMPLE_ROWS - 2]
    rows = torch.cat([torch.tensor([0, m - 1]), pick]).unique().to(t["c"].device)
    return {"c": (t["c"][rows].double(), t["a"][rows].double() @ t["b"].double())}


def tolerance(case: Case, out: Buf) -> tuple[float, float]:
    if case.kernel == "matmul_kernel":  # long dot products: scale with the reduction length
        kk = next(a.value for a in case.args if a.name == "K")
        prec = "tf32" if re.search(r"tf32", case.name) else out.dtype
        atol, rtol = {"f32": (1e-3, 1e-4), "tf32": (5e-2, 1e-2), "f16": (5e-2, 1e-2),
                      "bf16": (2e-1, 2e-2)}[prec]
        return atol * max(1.0, kk / 512), rtol
    if case.kernel == "cross_entropy_kernel":
        return 1e-3, 1e-4
    return TOL[out.dtype]
