"""Roofline probes and the roofline arithmetic (no numpy, no GPU: CPU-testable).

A kernel's time alone says nothing about how much faster it could be. The roofline says how close it is to
the machine's limit: the bytes it must move at least over the copy bandwidth, and its flops over the tensor
core's rate, whichever is nearer. Peaks are taken from two probes measured like any other kernel, not from
the datasheet, so that clocks, ECC and the launch path of this runner count the same for both sides:

- `COPY_PTX`: a hand-written grid-stride device-to-device copy (16-byte loads and stores, four in flight per
  thread), the bandwidth probe; `copy_probe_spec` is its launch contract (family "probes").
- `probe_matmul_bf16_m8192_n8192_k8192` (in `chronos.kernels.triton_suite.cases_llm.PROBES`): a big Triton
  bf16 GEMM, the compute probe.

`scripts/make_triton_suite.py --tier probes` writes both into data/kernels/probes/. The copy is a practical
peak, not a bound: on an H200 it streamed 4.17 TB/s while silu_mul (two reads per write) streamed 4.30, so a
memory-bound fraction can slightly exceed 1.
"""

from __future__ import annotations

import math
import re

from chronos.kernels.spec import ArgSpec, KernelSpec

COPY_ENTRY = "chronos_copy_probe"
COPY_THREADS = 256
COPY_UNROLL = 4  # vec4 copies in flight per thread and loop trip
# Main-loop trips per thread: the grid covers the buffer in one unrolled trip, whatever the SM count. On an
# H200, one trip copied at 4.17 TB/s, four at 4.05, persistent grids of 4-32 CTAs per SM at 3.92-3.99 and
# torch's copy_ at 4.25 (1 GiB, bytes read + written, do_bench medians).
COPY_TRIPS = 1
COPY_BYTES = 1 << 30  # 1 GiB source: 2 GiB moved, ~0.5 ms on an H200; one buffer stays under 1.1 GB

# Unrolled by COPY_UNROLL so that each thread has four 16-byte loads in flight before it stores: with one,
# 2048 resident threads per SM keep too few bytes in flight to cover DRAM latency. PTX 8.0 / sm_89: nothing
# Hopper-only, so the same text loads on Ada and Hopper (ptxas and the driver JIT compile it forward).
COPY_PTX = f"""//
// chronos: bandwidth probe, dst[i] = src[i] for i < n_vec4 (16-byte elements), grid-stride loop
.version 8.0
.target sm_89
.address_size 64

.visible .entry {COPY_ENTRY}(
    .param .u64 .ptr .global .align 16 src,
    .param .u64 .ptr .global .align 16 dst,
    .param .u64 n_vec4
)
.reqntid {COPY_THREADS}
{{
    .reg .pred %p<3>;
    .reg .b32 %r<24>;
    .reg .b64 %rd<16>;

    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    ld.param.u64 %rd3, [n_vec4];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, %nctaid.x;
    mul.wide.u32 %rd4, %r1, %r2;
    cvt.u64.u32 %rd5, %r3;
    add.u64 %rd4, %rd4, %rd5;          // i: this thread's first vec4
    mul.wide.u32 %rd6, %r4, %r2;       // s: threads in the grid
    shl.b64 %rd7, %rd6, 4;             // s in bytes
    mul.lo.u64 %rd8, %rd6, 3;          // 3s
    shl.b64 %rd9, %rd6, 2;             // 4s
$L_main:
    add.u64 %rd10, %rd4, %rd8;
    setp.ge.u64 %p1, %rd10, %rd3;      // i + 3s >= n: finish one at a time
    @%p1 bra $L_tail;
    shl.b64 %rd11, %rd4, 4;
    add.u64 %rd12, %rd1, %rd11;
    add.u64 %rd13, %rd2, %rd11;
    ld.global.v4.u32 {{%r5, %r6, %r7, %r8}}, [%rd12];
    add.u64 %rd12, %rd12, %rd7;
    ld.global.v4.u32 {{%r9, %r10, %r11, %r12}}, [%rd12];
    add.u64 %rd12, %rd12, %rd7;
    ld.global.v4.u32 {{%r13, %r14, %r15, %r16}}, [%rd12];
    add.u64 %rd12, %rd12, %rd7;
    ld.global.v4.u32 {{%r17, %r18, %r19, %r20}}, [%rd12];
    st.global.v4.u32 [%rd13], {{%r5, %r6, %r7, %r8}};
    add.u64 %rd13, %rd13, %rd7;
    st.global.v4.u32 [%rd13], {{%r9, %r10, %r11, %r12}};
    add.u64 %rd13, %rd13, %rd7;
    st.global.v4.u32 [%rd13], {{%r13, %r14, %r15, %r16}};
    add.u64 %rd13, %rd13, %rd7;
    st.global.v4.u32 [%rd13], {{%r17, %r18, %r19, %r20}};
    add.u64 %rd4, %rd4, %rd9;
    bra.uni $L_main;
$L_tail:
    setp.ge.u64 %p2, %rd4, %rd3;
    @%p2 bra $L_done;
    shl.b64 %rd11, %rd4, 4;
    add.u64 %rd12, %rd1, %rd11;
    add.u64 %rd13, %rd2, %rd11;
    ld.global.v4.u32 {{%r5, %r6, %r7, %r8}}, [%rd12];
    st.global.v4.u32 [%rd13], {{%r5, %r6, %r7, %r8}};
    add.u64 %rd4, %rd4, %rd6;
    bra.uni $L_tail;
$L_done:
    ret;
}}
"""


def copy_probe_spec(nbytes: int = COPY_BYTES) -> KernelSpec:
    """The copy probe's launch contract: `nbytes` of f32 from src to dst, enough CTAs that each thread makes
    COPY_TRIPS unrolled trips (a grid that does not depend on the SM count, unlike a persistent one; the loop
    still strides over the grid, so any grid is correct)."""
    if nbytes <= 0 or nbytes % 16:
        raise ValueError(f"copy probe size must be a positive multiple of 16 bytes, not {nbytes}")
    n_vec4 = nbytes // 16
    grid = -(-n_vec4 // (COPY_THREADS * COPY_UNROLL * COPY_TRIPS))
    args = (ArgSpec("src", "buffer", "f32", nbytes // 4, "input", "uniform(-1,1)"),
            ArgSpec("dst", "buffer", "f32", nbytes // 4, "output", "poison"),
            ArgSpec("n_vec4", "scalar", "u64", value=n_vec4))
    return KernelSpec(
        kernel=f"probe_copy_f32_n{nbytes // 4}", family="probes", entry=COPY_ENTRY, ptx=f"{COPY_ENTRY}.ptx",
        grid=(grid, 1, 1), block=(COPY_THREADS, 1, 1), args=args, alignment={"src": 16, "dst": 16},
        arch="sm_89",
        notes=f"bandwidth probe: dst = src, {nbytes} bytes, 16-byte loads/stores, {COPY_UNROLL} in flight "
              f"per thread, grid-stride. Params: src, dst, n_vec4.").validate()


def min_bytes(spec: KernelSpec) -> int:
    """Bytes the kernel must move at least: every input read once, every output written once, every inout
    buffer both. Re-reads (a GEMM's operand tiles, a two-pass norm) are the kernel's choice, not its floor."""
    weight = {"input": 1, "output": 1, "inout": 2}
    return sum(weight[a.role] * a.nbytes for a in spec.args if a.kind == "buffer")


def named_args(spec: KernelSpec) -> dict[str, ArgSpec]:
    """Semantic name -> arg, from the spec's notes ("Params: a, b, c, M, N, K + ..."), which list the kept
    (non-null) params in entry order; empty when the notes do not say."""
    m = re.search(r"Params: ([^+.]+)", spec.notes)
    if not m:
        return {}
    names = [n.strip() for n in m.group(1).split(",")]
    kept = [a for a in spec.args if a.kind != "null"]
    return dict(zip(names, kept, strict=False)) if len(names) == len(kept) else {}


def _scalar(args: dict[str, ArgSpec], name: str) -> int | None:
    a = args.get(name)
    return int(a.value) if a is not None and a.kind == "scalar" else None


def flops(spec: KernelSpec) -> int | None:
    """Useful floating-point operations (a fused multiply-add counts 2): 2*M*N*K for a GEMM, 4*bh*sq*kv*d for
    attention (QK^T and PV), 2*m*n*k per thread for gemm_tile; None for kernels the roofline treats as
    memory traffic only (elementwise, reductions, norms: a few flops per byte)."""
    if spec.family == "gemm_tile":
        m = re.fullmatch(r"gemm_tile\((\d+),(\d+),(\d+)\)", spec.kernel)
        count = next((int(a.value) for a in spec.args if a.kind == "scalar"), None)
        return 2 * math.prod(int(g) for g in m.groups()) * count if m and count else None
    args = named_args(spec)
    if spec.entry == "matmul_kernel":
        mnk = [_scalar(args, n) for n in ("M", "N", "K")]
        return 2 * math.prod(mnk) if None not in mnk else None
    if spec.entry == "attention_kernel" and "q" in args:
        kv = _scalar(args, "seq_kv")
        # q holds bh*sq*d elements, so 4*bh*sq*kv*d = 4 * kv * |q|.
        return 4 * kv * args["q"].elements if kv else None
    return None


def roofline(spec: KernelSpec, time_ms: float, peak_bandwidth_Bps: float, peak_flops: float) -> dict:
    """Where one measured time sits under the roofline. The kernel's roofline fraction is the larger of its
    bandwidth and flop fractions, and `bound` names that side (the same verdict as comparing arithmetic
    intensity with the ridge point peak_flops / peak_bandwidth)."""
    if time_ms <= 0 or peak_bandwidth_Bps <= 0 or peak_flops <= 0:
        raise ValueError("time and peaks must be positive")
    seconds = time_ms / 1e3
    nbytes, nflops = min_bytes(spec), flops(spec)
    bw = nbytes / seconds
    fl = nflops / seconds if nflops is not None else None
    bw_frac = bw / peak_bandwidth_Bps
    fl_frac = fl / peak_flops if fl is not None else None
    compute = fl_frac is not None and fl_frac > bw_frac
    return {"bytes": nbytes, "flops": nflops, "achieved_GBps": bw / 1e9,
            "achieved_TFLOPs": fl / 1e12 if fl is not None else None,
            "bandwidth_fraction": bw_frac, "flop_fraction": fl_frac,
            "fraction": fl_frac if compute else bw_frac, "bound": "compute" if compute else "memory"}


def peaks_from_probes(copy_time_ms: float, copy_bytes: int, gemm_time_ms: float, gemm_flops: int) -> dict:
    """{"peak_bandwidth_Bps", "peak_flops"} from the probes' times. `copy_bytes` counts both directions
    (min_bytes of the copy spec: 2x the buffer), `gemm_flops` is flops() of the GEMM probe."""
    if min(copy_time_ms, gemm_time_ms) <= 0 or min(copy_bytes, gemm_flops) <= 0:
        raise ValueError("probe times, bytes and flops must be positive")
    return {"peak_bandwidth_Bps": copy_bytes / (copy_time_ms / 1e3),
            "peak_flops": gemm_flops / (gemm_time_ms / 1e3)}
