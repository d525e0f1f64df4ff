"""The LLM-size tier of the Triton suite (data/kernels/triton_llm/) and the roofline probes (kernels/probes/).

`CASES_LLM` pairs one case with each small case of `cases.CASES`, in the same order and on the same kernel
function, at Llama-3-8B-class sizes (hidden 4096, intermediate 14336, vocab 128256, 8192 tokens, 32 heads of
128): the small tier's launches take 4-100 µs and so are mostly launch- and latency-bound, which says little
about what a transform does to a kernel that streams gigabytes or saturates the tensor cores. Tiles and warps
follow the small tier, except where a whole row must now fit one program (softmax and norms at 4096+ columns
take 8 warps). Each buffer stays at or under 1.1 GB and each case's inputs under 2.5 GB, since the runner
draws inputs on the host with numpy.

Tags keep their meaning: "register" and "nodiv" carry over (nodiv cases keep their odd offsets and odd
sizes); "latency" does not, because no case here is a small launch.

`PROBES` holds the compute-roofline probe (a big bf16 GEMM with the small tier's widest tiles); the
bandwidth probe is hand-written PTX in `chronos.measure.probes`.
"""

from __future__ import annotations

import dataclasses

from chronos.kernels.triton_suite.cases import (
    Case,
    attention,
    cross_entropy,
    elementwise,
    matmul,
    norm_weights,
    rotary,
    rowwise,
    transpose,
)

HIDDEN, INTER, VOCAB, TOKENS, HEADS, HEAD_DIM = 4096, 14336, 128256, 8192, 32, 128
SWIGLU = TOKENS * INTER  # 117,440,512 elements: the MLP's gate/up activations for 8192 tokens
RESIDUAL = TOKENS * HIDDEN  # 33,554,432 elements
MAX_BUFFER_BYTES = 1_100_000_000
MAX_CASE_INPUT_BYTES = 2_500_000_000


def _attn(d, bh, sq, kv, bm, bn, warps, tags=()):
    """Attention named by heads and both lengths: several LLM cases share d and kv."""
    return attention(d, kv, bh, sq, bm, bn, warps, tags=tags, name=f"attention_d{d}_h{bh}_q{sq}_kv{kv}")


CASES_LLM: tuple[Case, ...] = (
    # elementwise and activations (the MLP's 8192 x 14336 intermediate; the residual stream for add_relu)
    elementwise(f"silu_mul_f32_n{SWIGLU}", "silu_mul_kernel", "f32", SWIGLU, 1024,
                "SwiGLU gate silu(x)*y, f32, 8192 tokens x 14336"),
    elementwise(f"silu_mul_f16_n{SWIGLU}", "silu_mul_kernel", "f16", SWIGLU, 1024,
                "SwiGLU gate silu(x)*y, f16, 8192 tokens x 14336"),
    elementwise(f"gelu_tanh_bf16_n{SWIGLU}", "gelu_kernel", "bf16", SWIGLU, 2048,
                "GELU (tanh approximation), bf16, 8192 tokens x 14336", const={"APPROX": True}),
    elementwise(f"gelu_erf_f32_n{SWIGLU - 1}_nodiv", "gelu_kernel", "f32", SWIGLU - 1, 1024,
                "GELU (erf), f32, 8192 x 14336 - 1 (odd length), pointers at base+4 bytes", off=1,
                tags=("nodiv",), const={"APPROX": False}),
    elementwise(f"add_relu_f32_n{RESIDUAL - 1}_nodiv", "add_relu_kernel", "f32", RESIDUAL - 1, 1024,
                "relu(x+y), f32, 8192 x 4096 - 1 (odd length), pointers at base+4 bytes", off=1,
                tags=("nodiv",)),
    # reductions (one program per row, no atomics)
    rowwise("rowsum_f32_r8192_c4096", "row_sum_kernel", "f32", TOKENS, HIDDEN, 1024,
            "row sum, f32, 8192 tokens x hidden 4096"),
    rowwise(f"rowmax_f32_r1024_c{VOCAB}", "row_max_kernel", "f32", 1024, VOCAB, 2048,
            "row max over vocab-long rows (logits of 1024 sequences)"),
    rowwise("rowsum_f16_r8191_c4095_nodiv", "row_sum_kernel", "f16", TOKENS - 1, HIDDEN - 1, 512,
            "row sum, f16 in, f16 out, odd row stride, x at base+2 bytes", off=1, tags=("nodiv",)),
    # softmax (a whole row per program)
    rowwise("softmax_r8192_c4096", "softmax_kernel", "f32", TOKENS, HIDDEN, 4096,
            "row softmax, f32, 8 warps (16 values/thread)", warps=8),
    rowwise("softmax_r8192_c8192", "softmax_kernel", "f32", 8192, 8192, 8192,
            "row softmax over attention scores (q 8192 x kv 8192), rows held in registers "
            "(32 values/thread, 8 warps)", warps=8, tags=("register",)),
    rowwise(f"softmax_r{HEADS * TOKENS}_c128", "softmax_kernel", "f32", HEADS * TOKENS, 128, 128,
            "row softmax, short rows (32 heads x 8192 tokens rows of 128), one warp per row", warps=1),
    rowwise("softmax_r8191_c4095_nodiv", "softmax_kernel", "f32", TOKENS - 1, HIDDEN - 1, 4096,
            "row softmax, odd width/stride, pointers at base+4 bytes, 8 warps", off=1, warps=8,
            tags=("nodiv",)),
    # norms
    rowwise("layernorm_f32_r8192_c4096", "layernorm_kernel", "f32", TOKENS, HIDDEN, 4096,
            "layer norm, f32, 8 warps", extra=norm_weights("f32", HIDDEN), warps=8),
    rowwise("layernorm_f16_r8192_c4096", "layernorm_kernel", "f16", TOKENS, HIDDEN, 4096,
            "layer norm, f16, wide rows (32 values/thread live, 4 warps)", extra=norm_weights("f16", HIDDEN),
            tags=("register",)),
    rowwise("rmsnorm_bf16_r8192_c4096", "rmsnorm_kernel", "bf16", TOKENS, HIDDEN, 4096,
            "RMS norm, bf16, 8 warps", extra=norm_weights("bf16", HIDDEN, bias=False), warps=8),
    rowwise("rmsnorm_f32_r8191_c4095_nodiv", "rmsnorm_kernel", "f32", TOKENS - 1, HIDDEN - 1, 4096,
            "RMS norm, f32, width 4095, pointers at base+4 bytes, 8 warps", off=1,
            extra=norm_weights("f32", HIDDEN - 1, 1, bias=False), warps=8, tags=("nodiv",)),
    # matmuls (one program per output tile, no split-K): the projections of 8192 tokens
    matmul("f16", TOKENS, HIDDEN, HIDDEN, (128, 128, 64),
           desc="C = A @ B, f16, attention output projection (8192 tokens, 4096 -> 4096), 128x128x64 tiles, "
                "fp32 accumulation, 4 warps"),
    matmul("f16", TOKENS, INTER, HIDDEN, (128, 256, 64), warps=8, tags=("register",),
           desc="C = A @ B, f16, MLP gate/up projection (4096 -> 14336), 128x256x64 tiles, "
                "fp32 accumulation, 8 warps"),
    matmul("bf16", TOKENS, HIDDEN, INTER, (128, 128, 64),
           desc="C = A @ B, bf16, MLP down projection (14336 -> 4096), 128x128x64 tiles, "
                "fp32 accumulation, 4 warps"),
    matmul("f32", 4096, 4096, 4096, (128, 64, 32), tags=("register",),
           desc="C = A @ B, f32 inputs, IEEE fp32 (no tf32: FMA path), 128x64x32 tiles, 4 warps"),
    matmul("tf32", 4096, 4096, 4096, (128, 128, 32), prec="tf32",
           desc="C = A @ B, f32 inputs through tf32 tensor cores, 128x128x32 tiles, 4 warps"),
    matmul("f16", TOKENS, 1024, HIDDEN, (64, 64, 32),
           desc="C = A @ B, f16, grouped-query K/V projection (4096 -> 8 heads x 128), 64x64x32 tiles, "
                "fp32 accumulation, 4 warps"),
    matmul("bf16", TOKENS, HIDDEN, 4104, (64, 64, 32), tags=("nodiv",),
           desc="C = A @ B, bf16, K=4104 (not 16-divisible: masked K tail, no divisibility on K), "
                "64x64x32 tiles"),
    # attention forward (prefill: 32 heads, no batch; kv 8192 = 4096 new tokens over a 4096-token cache)
    _attn(64, HEADS, 2048, 2048, 64, 64, 4),
    _attn(64, HEADS, 4096, 4096, 128, 64, 4),
    _attn(64, HEADS, 1024, 8192, 128, 64, 8),
    _attn(HEAD_DIM, HEADS, 4096, 4096, 128, 64, 8, tags=("register",)),
    _attn(HEAD_DIM, HEADS, 4096, 8192, 128, 64, 8, tags=("register",)),
    # cross-entropy forward over the Llama-3 vocabulary
    cross_entropy(f"cross_entropy_bf16_r2048_v{VOCAB}", "bf16", 2048, VOCAB, 4096),
    cross_entropy(f"cross_entropy_f32_r512_v{VOCAB}_nodiv", "f32", 512, VOCAB, 2048, off=1, tags=("nodiv",)),
    # rotary embedding
    rotary("f16", TOKENS, HEADS, HEAD_DIM, 8),
    rotary("f32", TOKENS, HEADS, 64, 8),
    # transpose
    transpose(TOKENS, INTER),
)

LLM_BY_NAME: dict[str, Case] = {c.name: c for c in CASES_LLM}

# The compute-roofline probe: the small tier's widest tensor-core tiling (128x256x64, 8 warps, 3 stages) on
# a GEMM big enough (1.1 TFLOP, 2048 output tiles: about 15.5 waves of one program per SM on 132 SMs) that
# launch and tail effects stay small.
PROBES: tuple[Case, ...] = (
    dataclasses.replace(
        matmul("bf16", 8192, 8192, 8192, (128, 256, 64), warps=8, stages=3,
               desc="compute-roofline probe: C = A @ B, bf16, 128x256x64 tiles, fp32 accumulation, 8 warps"),
        name="probe_matmul_bf16_m8192_n8192_k8192"),
)
