"""A helper kernel for the runner: the maximum of each row of an int64 matrix, on the GPU.

The cycle measurement writes one %clock64 delta per thread and launch ([samples, threads] int64); reducing
it on the GPU sends back 8 bytes per launch instead of 8 per thread (27 MB for 200 launches of a
16,896-thread gemm_tile, which cost more than the launches themselves). Hand-written PTX, loaded through the
driver's JIT, so that a worker needs no compiler; `GpuRunner` checks it against numpy when it starts.
"""

from __future__ import annotations

ENTRY = "chronos_rowmax_s64"
THREADS = 256

PTX = f"""//
// chronos: row maximum of an int64 matrix, one block of {THREADS} threads per row
.version 7.8
.target sm_80
.address_size 64

.visible .entry {ENTRY}(
    .param .u64 rows_in,
    .param .u64 max_out,
    .param .u32 cols
)
{{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<12>;
    .shared .align 8 .b64 partial[{THREADS}];

    ld.param.u64 %rd1, [rows_in];
    ld.param.u64 %rd2, [max_out];
    ld.param.u32 %r1, [cols];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %tid.x;
    mul.wide.u32 %rd3, %r2, %r1;
    shl.b64 %rd3, %rd3, 3;
    add.u64 %rd3, %rd1, %rd3;
    mov.u64 %rd4, -9223372036854775808;
    mov.u32 %r4, %r3;
$L_stride:
    setp.ge.u32 %p1, %r4, %r1;
    @%p1 bra $L_block;
    mul.wide.u32 %rd5, %r4, 8;
    add.u64 %rd6, %rd3, %rd5;
    ld.global.s64 %rd7, [%rd6];
    max.s64 %rd4, %rd4, %rd7;
    add.u32 %r4, %r4, {THREADS};
    bra.uni $L_stride;
$L_block:
    mov.u64 %rd8, partial;
    cvta.shared.u64 %rd8, %rd8;
    mul.wide.u32 %rd9, %r3, 8;
    add.u64 %rd9, %rd8, %rd9;
    st.s64 [%rd9], %rd4;
    bar.sync 0;
    mov.u32 %r5, {THREADS // 2};
$L_tree:
    setp.eq.u32 %p1, %r5, 0;
    @%p1 bra $L_write;
    setp.lt.u32 %p2, %r3, %r5;
    @!%p2 bra $L_sync;
    mul.wide.u32 %rd10, %r5, 8;
    add.u64 %rd10, %rd9, %rd10;
    ld.s64 %rd7, [%rd10];
    ld.s64 %rd4, [%rd9];
    max.s64 %rd4, %rd4, %rd7;
    st.s64 [%rd9], %rd4;
$L_sync:
    bar.sync 0;
    shr.u32 %r5, %r5, 1;
    bra.uni $L_tree;
$L_write:
    setp.ne.u32 %p1, %r3, 0;
    @%p1 bra $L_done;
    ld.s64 %rd4, [%rd8];
    mul.wide.u32 %rd11, %r2, 8;
    add.u64 %rd11, %rd2, %rd11;
    st.global.s64 [%rd11], %rd4;
$L_done:
    ret;
}}
"""
