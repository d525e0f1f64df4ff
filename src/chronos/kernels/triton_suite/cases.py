"""The 33 cases of the Triton evaluation suite, as plain data (no triton or torch needed to import).

A case names a @triton.jit kernel (by function name; see `kernel_fn`), its non-constexpr arguments in the
kernel's Python signature order, its constexprs, launch geometry and the torch reference (`ref`) that
checks it. `Buf.offset` shifts a buffer by that many elements inside its allocation, so its pointer is not
16-byte aligned and Triton cannot specialise it as 16-divisible: such kernels get scalar loads/stores.

Tags: "latency" (small, launch/latency-bound), "register" (large tiles or many live values per thread),
"nodiv" (some pointer or size not 16-divisible).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Buf:
    name: str
    dtype: str  # spec dtype: f32 | f16 | bf16 | i64
    shape: tuple[int, ...]
    role: str = "input"
    init: str = "normal(0,1)"
    offset: int = 0  # elements of padding before the buffer: breaks 16-byte alignment when odd

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Scalar:
    name: str
    value: int | float
    dtype: str = "i32"  # i32 | f32


@dataclass(frozen=True)
class Case:
    name: str
    kernel: str  # function name in kernels_simple / kernels_dot
    args: tuple[Buf | Scalar, ...]
    grid: tuple[int, int, int]
    desc: str
    const: dict = field(default_factory=dict)
    num_warps: int = 4
    num_stages: int = 3
    ref: str = ""  # reference key in chronos.kernels.triton_suite.reference (default: the kernel name)
    tags: tuple[str, ...] = ()

    @property
    def reference(self) -> str:
        return self.ref or self.kernel


def kernel_fn(name: str):
    """The @triton.jit function called `name` (imports triton)."""
    from chronos.kernels.triton_suite import kernels_dot, kernels_simple

    for mod in (kernels_simple, kernels_dot):
        if hasattr(mod, name):
            return getattr(mod, name)
    raise KeyError(f"no Triton suite kernel named {name!r}")


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _ew(name, kernel, dtype, n, block, desc, off=0, tags=(), ref="", const=None):
    bufs = (Buf("x", dtype, (n,), offset=off), Buf("y", dtype, (n,), offset=off),
            Buf("out", dtype, (n,), "output", offset=off))
    if kernel == "gelu_kernel":
        bufs = (bufs[0], bufs[2])
    return Case(name, kernel, (*bufs, Scalar("n", n)), (_cdiv(n, block), 1, 1), desc,
                {"BLOCK": block, **(const or {})}, ref=ref, tags=tags)


def _rows(name, kernel, dtype, r, c, block, desc, off=0, stride=None, extra=(), out_dtype=None, warps=4,
          tags=(), ref="", const=None):
    stride = stride or c
    x = Buf("x", dtype, (r, stride), offset=off)
    if kernel.startswith("row_"):
        out = Buf("out", out_dtype or dtype, (r,), "output", offset=off)
        args = (x, out, Scalar("stride", stride), Scalar("n_cols", c))
    else:
        out = Buf("out", dtype, (r, stride), "output", offset=off)
        args = (x, *extra, out, Scalar("stride", stride), Scalar("n_cols", c))
        if kernel in ("layernorm_kernel", "rmsnorm_kernel"):
            args = (*args, Scalar("eps", 1e-5, "f32"))
    return Case(name, kernel, args, (r, 1, 1), desc, {"BLOCK": block, **(const or {})}, num_warps=warps,
                ref=ref, tags=tags)


def _norm_w(dtype, c, off=0, bias=True):
    w = Buf("w", dtype, (c,), init="uniform(0.5,1.5)", offset=off)
    return (w, Buf("b", dtype, (c,), offset=off)) if bias else (w,)


def _mm(dtype, m, n, k, tile, warps=4, stages=3, prec="ieee", tags=(), desc=""):
    bm, bn, bk = tile
    out = "f32" if dtype in ("f32", "tf32") else dtype
    buf = "f32" if dtype == "tf32" else dtype
    name = f"matmul_{dtype}_m{m}_n{n}_k{k}_t{bm}x{bn}x{bk}"
    args = (Buf("a", buf, (m, k)), Buf("b", buf, (k, n)), Buf("c", out, (m, n), "output"),
            Scalar("M", m), Scalar("N", n), Scalar("K", k))
    const = {"BM": bm, "BN": bn, "BK": bk, "PREC": prec}
    return Case(name, "matmul_kernel", args, (_cdiv(m, bm), _cdiv(n, bn), 1),
                desc or f"C = A @ B, {dtype}, {bm}x{bn}x{bk} tiles, fp32 accumulation, {warps} warps",
                const, warps, stages, tags=tags)


def _attn(d, kv, bh, sq, bm, bn, warps, stages=2, tags=()):
    q = Buf("q", "f16", (bh, sq, d))
    args = (q, Buf("k", "f16", (bh, kv, d)), Buf("v", "f16", (bh, kv, d)),
            Buf("o", "f16", (bh, sq, d), "output"), Scalar("seq_q", sq), Scalar("seq_kv", kv),
            Scalar("qk_scale", d ** -0.5 * 1.4426950408889634, "f32"))
    return Case(f"attention_d{d}_kv{kv}", "attention_kernel", args, (_cdiv(sq, bm), bh, 1),
                f"flash attention forward (online softmax, exp2), f16, batch*heads={bh}, q_len={sq}, "
                f"{bm}x{bn} tiles, {warps} warps", {"HEAD_DIM": d, "BM": bm, "BN": bn}, warps, stages,
                tags=tags)


def _ce(name, dtype, r, v, block, off=0, tags=()):
    args = (Buf("logits", dtype, (r, v), offset=off), Buf("target", "i64", (r,), init=f"randint(0,{v - 1})"),
            Buf("loss", "f32", (r,), "output"), Scalar("stride", v), Scalar("n_cols", v))
    return Case(name, "cross_entropy_kernel", args, (r, 1, 1),
                f"per-row cross-entropy loss (online logsumexp over the vocab in {block}-wide chunks), "
                f"{dtype} logits", {"BLOCK": block}, num_warps=8 if block >= 2048 else 4, tags=tags)


def _rope(dtype, t, h, d, block_h, tags=()):
    args = (Buf("x", dtype, (t, h, d)), Buf("cos", dtype, (t, d // 2), init="uniform(-1,1)"),
            Buf("sin", dtype, (t, d // 2), init="uniform(-1,1)"), Buf("out", dtype, (t, h, d), "output"),
            Scalar("n_heads", h))
    return Case(f"rotary_{dtype}_t{t}_h{h}_d{d}", "rotary_kernel", args, (t, _cdiv(h, block_h), 1),
                f"rotary embedding (rotate-half), {dtype}, tokens={t}, heads={h}, head_dim={d}",
                {"HALF": d // 2, "BLOCK_H": block_h}, tags=tags)


CASES: tuple[Case, ...] = (
    # elementwise and activations
    _ew("silu_mul_f32_n1048576", "silu_mul_kernel", "f32", 1 << 20, 1024, "SwiGLU gate silu(x)*y, f32"),
    _ew("silu_mul_f16_n4096", "silu_mul_kernel", "f16", 4096, 1024, "SwiGLU gate silu(x)*y, f16, 4 programs",
        tags=("latency",)),
    _ew("gelu_tanh_bf16_n2097152", "gelu_kernel", "bf16", 1 << 21, 2048, "GELU (tanh approximation), bf16",
        const={"APPROX": True}),
    Case("gelu_erf_f32_n4099_nodiv", "gelu_kernel",
         (Buf("x", "f32", (4099,), offset=1), Buf("out", "f32", (4099,), "output", offset=1),
          Scalar("n", 4099)),
         (5, 1, 1), "GELU (erf), f32, odd length, pointers at base+4 bytes", {"BLOCK": 1024, "APPROX": False},
         tags=("latency", "nodiv")),
    _ew("add_relu_f32_n1000003_nodiv", "add_relu_kernel", "f32", 1_000_003, 1024,
        "relu(x+y), f32, odd length, pointers at base+4 bytes", off=1, tags=("nodiv",)),
    # reductions (one program per row, no atomics)
    _rows("rowsum_f32_r4096_c1024", "row_sum_kernel", "f32", 4096, 1024, 1024, "row sum, f32"),
    _rows("rowmax_f32_r64_c8192", "row_max_kernel", "f32", 64, 8192, 2048,
          "row max over long rows, 64 programs", tags=("latency",)),
    _rows("rowsum_f16_r1027_c333_nodiv", "row_sum_kernel", "f16", 1027, 333, 512,
          "row sum, f16 in, f16 out, odd row stride, x at base+2 bytes", off=1, tags=("nodiv",)),
    # softmax (a whole row per program)
    _rows("softmax_r4096_c1024", "softmax_kernel", "f32", 4096, 1024, 1024, "row softmax, f32"),
    _rows("softmax_r128_c4096", "softmax_kernel", "f32", 128, 4096, 4096,
          "row softmax, wide rows held in registers (32 values/thread, 4 warps)", tags=("register",)),
    _rows("softmax_r32_c128", "softmax_kernel", "f32", 32, 128, 128, "row softmax, tiny", warps=1,
          tags=("latency",)),
    _rows("softmax_r1823_c781_nodiv", "softmax_kernel", "f32", 1823, 781, 1024,
          "row softmax, odd width/stride, pointers at base+4 bytes", off=1, tags=("nodiv",)),
    # norms
    _rows("layernorm_f32_r4096_c768", "layernorm_kernel", "f32", 4096, 768, 1024, "layer norm, f32",
          extra=_norm_w("f32", 768)),
    _rows("layernorm_f16_r64_c4096", "layernorm_kernel", "f16", 64, 4096, 4096,
          "layer norm, f16, wide rows (32 values/thread live), 64 programs", extra=_norm_w("f16", 4096),
          tags=("latency", "register")),
    _rows("rmsnorm_bf16_r4096_c4096", "rmsnorm_kernel", "bf16", 4096, 4096, 4096, "RMS norm, bf16, 8 warps",
          extra=_norm_w("bf16", 4096, bias=False), warps=8),
    _rows("rmsnorm_f32_r37_c1000_nodiv", "rmsnorm_kernel", "f32", 37, 1000, 1024,
          "RMS norm, f32, width 1000, pointers at base+4 bytes", off=1,
          extra=_norm_w("f32", 1000, 1, bias=False), tags=("latency", "nodiv")),
    # matmuls (one program per output tile, no split-K)
    _mm("f16", 512, 512, 512, (128, 128, 64)),
    _mm("f16", 1024, 1024, 1024, (128, 256, 64), warps=8, tags=("register",)),
    _mm("bf16", 2048, 2048, 512, (128, 128, 64)),
    _mm("f32", 512, 512, 512, (128, 64, 32), tags=("register",),
        desc="C = A @ B, f32 inputs, IEEE fp32 (no tf32: FMA path), 128x64x32 tiles, 4 warps"),
    _mm("tf32", 1024, 1024, 1024, (128, 128, 32), prec="tf32",
        desc="C = A @ B, f32 inputs through tf32 tensor cores, 128x128x32 tiles, 4 warps"),
    _mm("f16", 64, 64, 64, (64, 64, 32), tags=("latency",)),
    _mm("bf16", 384, 320, 200, (64, 64, 32), tags=("nodiv",),
        desc="C = A @ B, bf16, K=200 (not 16-divisible: masked K tail, no divisibility on K), "
             "64x64x32 tiles"),
    # attention forward
    _attn(64, 64, 64, 64, 64, 64, 4, tags=("latency",)),
    _attn(64, 1024, 32, 1024, 128, 64, 4),
    _attn(64, 4096, 16, 256, 128, 64, 8),
    _attn(128, 512, 16, 512, 128, 64, 8, tags=("register",)),
    _attn(128, 4096, 8, 1024, 128, 64, 8, tags=("register",)),
    # cross-entropy forward
    _ce("cross_entropy_bf16_r1024_v32000", "bf16", 1024, 32000, 4096),
    _ce("cross_entropy_f32_r64_v50257_nodiv", "f32", 64, 50257, 2048, off=1, tags=("latency", "nodiv")),
    # rotary embedding
    _rope("f16", 4096, 32, 128, 8),
    _rope("f32", 17, 8, 64, 8, tags=("latency",)),
    # transpose
    Case("transpose_f32_r4096_c4096_t64x64", "transpose_kernel",
         (Buf("x", "f32", (4096, 4096)), Buf("out", "f32", (4096, 4096), "output"), Scalar("M", 4096),
          Scalar("N", 4096)),
         (64, 64, 1), "out = x.T, f32, 64x64 tiles (layout change through shared memory)",
         {"BM": 64, "BN": 64}),
)

BY_NAME: dict[str, Case] = {c.name: c for c in CASES}
