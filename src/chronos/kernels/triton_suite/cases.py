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


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# Case builders, shared by every tier (cases_llm builds the LLM-size cases with them).
def elementwise(name, kernel, dtype, n, block, desc, off=0, tags=(), ref="", const=None):
    bufs = (Buf("x", dtype, (n,), offset=off), Buf("y", dtype, (n,), offset=off),
            Buf("out", dtype, (n,), "output", offset=off))
    if kernel == "gelu_kernel":
        bufs = (bufs[0], bufs[2])
    return Case(name, kernel, (*bufs, Scalar("n", n)), (cdiv(n, block), 1, 1), desc,
                {"BLOCK": block, **(const or {})}, ref=ref, tags=tags)


def rowwise(name, kernel, dtype, r, c, block, desc, off=0, stride=None, extra=(), out_dtype=None, warps=4,
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


def norm_weights(dtype, c, off=0, bias=True):
    w = Buf("w", dtype, (c,), init="uniform(0.5,1.5)", offset=off)
    return (w, Buf("b", dtype, (c,), offset=off)) if bias else (w,)


def matmul(dtype, m, n, k, tile, warps=4, stages=3, prec="ieee", tags=(), desc=""):
    bm, bn, bk = tile
    out = "f32" if dtype in ("f32", "tf32") else dtype
    buf = "f32" if dtype == "tf32" else dtype
    name = f"matmul_{dtype}_m{m}_n{n}_k{k}_t{bm}x{bn}x{bk}"
    args = (Buf("a", buf, (m, k)), Buf("b", buf, (k, n)), Buf("c", out, (m, n), "output"),
            Scalar("M", m), Scalar("N", n), Scalar("K", k))
    const = {"BM": bm, "BN": bn, "BK": bk, "PREC": prec}
    return Case(name, "matmul_kernel", args, (cdiv(m, bm), cdiv(n, bn), 1),
                desc or f"C = A @ B, {dtype}, {bm}x{bn}x{bk} tiles, fp32 accumulation, {warps} warps",
                const, warps, stages, tags=tags)


def attention(d, kv, bh, sq, bm, bn, warps, stages=2, tags=(), name=""):
    q = Buf("q", "f16", (bh, sq, d))
    args = (q, Buf("k", "f16", (bh, kv, d)), Buf("v", "f16", (bh, kv, d)),
            Buf("o", "f16", (bh, sq, d), "output"), Scalar("seq_q", sq), Scalar("seq_kv", kv),
            Scalar("qk_scale", d ** -0.5 * 1.4426950408889634, "f32"))
    return Case(name or f"attention_d{d}_kv{kv}", "attention_kernel", args, (cdiv(sq, bm), bh, 1),
                f"flash attention forward (online softmax, exp2), f16, batch*heads={bh}, q_len={sq}, "
                f"{bm}x{bn} tiles, {warps} warps", {"HEAD_DIM": d, "BM": bm, "BN": bn}, warps, stages,
                tags=tags)


def cross_entropy(name, dtype, r, v, block, off=0, tags=()):
    args = (Buf("logits", dtype, (r, v), offset=off), Buf("target", "i64", (r,), init=f"randint(0,{v - 1})"),
            Buf("loss", "f32", (r,), "output"), Scalar("stride", v), Scalar("n_cols", v))
    return Case(name, "cross_entropy_kernel", args, (r, 1, 1),
                f"per-row cross-entropy loss (online logsumexp over the vocab in {block}-wide chunks), "
                f"{dtype} logits", {"BLOCK": block}, num_warps=8 if block >= 2048 else 4, tags=tags)


def rotary(dtype, t, h, d, block_h, tags=()):
    args = (Buf("x", dtype, (t, h, d)), Buf("cos", dtype, (t, d // 2), init="uniform(-1,1)"),
            Buf("sin", dtype, (t, d // 2), init="uniform(-1,1)"), Buf("out", dtype, (t, h, d), "output"),
            Scalar("n_heads", h))
    return Case(f"rotary_{dtype}_t{t}_h{h}_d{d}", "rotary_kernel", args, (t, cdiv(h, block_h), 1),
                f"rotary embedding (rotate-half), {dtype}, tokens={t}, heads={h}, head_dim={d}",
                {"HALF": d // 2, "BLOCK_H": block_h}, tags=tags)


def transpose(r, c, tile=64):
    args = (Buf("x", "f32", (r, c)), Buf("out", "f32", (c, r), "output"), Scalar("M", r), Scalar("N", c))
    return Case(f"transpose_f32_r{r}_c{c}_t{tile}x{tile}", "transpose_kernel", args,
                (cdiv(r, tile), cdiv(c, tile), 1),
                f"out = x.T, f32, {tile}x{tile} tiles (layout change through shared memory)",
                {"BM": tile, "BN": tile})


CASES: tuple[Case, ...] = (
    # elementwise and activations
    elementwise("silu_mul_f32_n1048576", "silu_mul_kernel", "f32", 1 << 20, 1024,
                "SwiGLU gate silu(x)*y, f32"),
    elementwise("silu_mul_f16_n4096", "silu_mul_kernel", "f16", 4096, 1024,
                "SwiGLU gate silu(x)*y, f16, 4 programs", tags=("latency",)),
    elementwise("gelu_tanh_bf16_n2097152", "gelu_kernel", "bf16", 1 << 21, 2048,
                "GELU (tanh approximation), bf16", const={"APPROX": True}),
    elementwise("gelu_erf_f32_n4099_nodiv", "gelu_kernel", "f32", 4099, 1024,
                "GELU (erf), f32, odd length, pointers at base+4 bytes", off=1, tags=("latency", "nodiv"),
                const={"APPROX": False}),
    elementwise("add_relu_f32_n1000003_nodiv", "add_relu_kernel", "f32", 1_000_003, 1024,
                "relu(x+y), f32, odd length, pointers at base+4 bytes", off=1, tags=("nodiv",)),
    # reductions (one program per row, no atomics)
    rowwise("rowsum_f32_r4096_c1024", "row_sum_kernel", "f32", 4096, 1024, 1024, "row sum, f32"),
    rowwise("rowmax_f32_r64_c8192", "row_max_kernel", "f32", 64, 8192, 2048,
            "row max over long rows, 64 programs", tags=("latency",)),
    rowwise("rowsum_f16_r1027_c333_nodiv", "row_sum_kernel", "f16", 1027, 333, 512,
            "row sum, f16 in, f16 out, odd row stride, x at base+2 bytes", off=1, tags=("nodiv",)),
    # softmax (a whole row per program)
    rowwise("softmax_r4096_c1024", "softmax_kernel", "f32", 4096, 1024, 1024, "row softmax, f32"),
    rowwise("softmax_r128_c4096", "softmax_kernel", "f32", 128, 4096, 4096,
            "row softmax, wide rows held in registers (32 values/thread, 4 warps)", tags=("register",)),
    rowwise("softmax_r32_c128", "softmax_kernel", "f32", 32, 128, 128, "row softmax, tiny", warps=1,
            tags=("latency",)),
    rowwise("softmax_r1823_c781_nodiv", "softmax_kernel", "f32", 1823, 781, 1024,
            "row softmax, odd width/stride, pointers at base+4 bytes", off=1, tags=("nodiv",)),
    # norms
    rowwise("layernorm_f32_r4096_c768", "layernorm_kernel", "f32", 4096, 768, 1024, "layer norm, f32",
            extra=norm_weights("f32", 768)),
    rowwise("layernorm_f16_r64_c4096", "layernorm_kernel", "f16", 64, 4096, 4096,
            "layer norm, f16, wide rows (32 values/thread live), 64 programs",
            extra=norm_weights("f16", 4096), tags=("latency", "register")),
    rowwise("rmsnorm_bf16_r4096_c4096", "rmsnorm_kernel", "bf16", 4096, 4096, 4096, "RMS norm, bf16, 8 warps",
            extra=norm_weights("bf16", 4096, bias=False), warps=8),
    rowwise("rmsnorm_f32_r37_c1000_nodiv", "rmsnorm_kernel", "f32", 37, 1000, 1024,
            "RMS norm, f32, width 1000, pointers at base+4 bytes", off=1,
            extra=norm_weights("f32", 1000, 1, bias=False), tags=("latency", "nodiv")),
    # matmuls (one program per output tile, no split-K)
    matmul("f16", 512, 512, 512, (128, 128, 64)),
    matmul("f16", 1024, 1024, 1024, (128, 256, 64), warps=8, tags=("register",)),
    matmul("bf16", 2048, 2048, 512, (128, 128, 64)),
    matmul("f32", 512, 512, 512, (128, 64, 32), tags=("register",),
           desc="C = A @ B, f32 inputs, IEEE fp32 (no tf32: FMA path), 128x64x32 tiles, 4 warps"),
    matmul("tf32", 1024, 1024, 1024, (128, 128, 32), prec="tf32",
           desc="C = A @ B, f32 inputs through tf32 tensor cores, 128x128x32 tiles, 4 warps"),
    matmul("f16", 64, 64, 64, (64, 64, 32), tags=("latency",)),
    matmul("bf16", 384, 320, 200, (64, 64, 32), tags=("nodiv",),
           desc="C = A @ B, bf16, K=200 (not 16-divisible: masked K tail, no divisibility on K), "
                "64x64x32 tiles"),
    # attention forward
    attention(64, 64, 64, 64, 64, 64, 4, tags=("latency",)),
    attention(64, 1024, 32, 1024, 128, 64, 4),
    attention(64, 4096, 16, 256, 128, 64, 8),
    attention(128, 512, 16, 512, 128, 64, 8, tags=("register",)),
    attention(128, 4096, 8, 1024, 128, 64, 8, tags=("register",)),
    # cross-entropy forward
    cross_entropy("cross_entropy_bf16_r1024_v32000", "bf16", 1024, 32000, 4096),
    cross_entropy("cross_entropy_f32_r64_v50257_nodiv", "f32", 64, 50257, 2048, off=1,
                  tags=("latency", "nodiv")),
    # rotary embedding
    rotary("f16", 4096, 32, 128, 8),
    rotary("f32", 17, 8, 64, 8, tags=("latency",)),
    # transpose
    transpose(4096, 4096),
)

BY_NAME: dict[str, Case] = {c.name: c for c in CASES}
