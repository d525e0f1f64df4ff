"""Making a cold L2 cold for lines kept by an eviction-priority hint (#14).

The timing protocol's cold L2 is a 128 MiB memset between launches: its normal-priority writes replace
normal and evict_first lines, but a line a kernel loaded with `.L2::cache_hint` under an
`createpolicy ... L2::evict_last` policy is the last the L2 gives up, so it may outlive the memset. Then
the next launch of the same variant (reps run back to back) finds its re-read data in L2 and looks faster
than it would in a workload where other kernels ran in between. experiments/measurement/paired_vs_crowded.py
found the symptom in the H200 searches: L2 evict_last winners lose a median 3.9% of their gain when other
contenders run between their launches; other families do not move.

`applypriority.global.L2::evict_normal [a], 128` (PTX ISA 7.4, sm_80+) demotes the 128-byte line holding
`a` to normal priority without touching its data, so a demote over every buffer of the kernel followed by
the memset leaves none of them in L2. `timing.l2_demote` turns it on (off by default: it changes the
protocol, hence the comparisons' key; experiments/measurement/l2_demote.py measures whether it is needed).
"""

from __future__ import annotations

LINE_BYTES = 128
BLOCK = 256
DEMOTE_ENTRY = "chronos_l2_demote"
DEMOTE_PTX = """.version 8.0
.target sm_89
.address_size 64
.visible .entry chronos_l2_demote(.param .u64 chronos_l2_demote_base, .param .u64 chronos_l2_demote_lines)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [chronos_l2_demote_base];
    ld.param.u64 %rd2, [chronos_l2_demote_lines];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    cvt.u64.u32 %rd3, %r3;
    mad.wide.u32 %rd4, %r1, %r2, %rd3;
    setp.ge.u64 %p1, %rd4, %rd2;
    @%p1 bra $L_done;
    cvta.to.global.u64 %rd5, %rd1;
    shl.b64 %rd6, %rd4, 7;
    add.s64 %rd7, %rd5, %rd6;
    applypriority.global.L2::evict_normal [%rd7], 128;
$L_done:
    ret;
}
"""


def lines_of(nbytes: int) -> int:
    """128-byte lines covering a buffer of nbytes (allocations are 256-byte aligned)."""
    return max(0, -(-int(nbytes) // LINE_BYTES))


def grid_of(nbytes: int) -> tuple[int, int, int]:
    """The 1-D grid whose BLOCK-thread CTAs give every line of the buffer one thread."""
    return (max(1, -(-lines_of(nbytes) // BLOCK)), 1, 1)


class Demoter:
    """Launches the demote over a fixed list of (device pointer, bytes) spans on a stream (graph-capturable:
    a plain kernel launch), before the flush."""

    def __init__(self, runner, spans: list[tuple[int, int]]):
        import numpy as np

        from chronos.measure.verify_device import helper_kernel

        self.fn = helper_kernel(runner, DEMOTE_PTX, DEMOTE_ENTRY, "QQ")
        self.spans = [(np.uint64(int(p)), np.uint64(lines_of(n)), grid_of(n)) for p, n in spans if n > 0]

    def launch(self, stream) -> None:
        for ptr, lines, grid in self.spans:
            self.fn.prepared_async_call(grid, (BLOCK, 1, 1), stream, ptr, lines)
