"""Tensor-core Triton kernels of the suite: tiled matmul and flash-attention forward (one program per output
tile, no split-K and no atomics, so every run is bit-identical)."""

import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  PREC: tl.constexpr):
    # Row-major A (MxK), B (KxN), C (MxN); fp32 accumulation; PREC is tl.dot's input_precision for f32.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(tl.cdiv(K, BK)):
        kmask = rk < K - k * BK
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & kmask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=kmask[:, None] & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PREC)
        a_ptrs += BK
        b_ptrs += BK * N
    cmask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty), mask=cmask)


@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_q, seq_kv, qk_scale, HEAD_DIM: tl.constexpr,
                     BM: tl.constexpr, BN: tl.constexpr):
    # Non-causal attention for q/k/v/o[bh, seq, HEAD_DIM]; seq_q % BM == 0 and seq_kv % BN == 0 (no masks).
    # qk_scale = log2(e) / sqrt(HEAD_DIM), so the online softmax runs on exp2.
    start_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    offs_m = start_m * BM + tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_d = tl.arange(0, HEAD_DIM)
    q_base = q_ptr + bh * seq_q * HEAD_DIM
    o_base = o_ptr + bh * seq_q * HEAD_DIM
    k_base = k_ptr + bh * seq_kv * HEAD_DIM
    v_base = v_ptr + bh * seq_kv * HEAD_DIM
    q = tl.load(q_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    m_i = tl.full([BM], -float("inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, HEAD_DIM], tl.float32)
    for start_n in range(0, seq_kv, BN):
        kt = tl.load(k_base + (start_n + offs_n)[None, :] * HEAD_DIM + offs_d[:, None])
        qk = tl.dot(q, kt) * qk_scale
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_base + (start_n + offs_n)[:, None] * HEAD_DIM + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc.to(o_ptr.dtype.element_ty))
