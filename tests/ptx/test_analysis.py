"""Analyses: basic blocks and CFG, def/use, memory-op classes, ordering points — on corpus kernels."""

import itertools

from chronos.ptx import Instruction, parse
from chronos.ptx.analysis import basic_blocks, defs_uses, is_ordering_point, memory_op

from .corpus import CORPUS_DIR


def _fn(name):
    return parse((CORPUS_DIR / name).read_text()).entry()


def _ins(text):
    body = parse(f".version 8.0\n.target sm_90\n.address_size 64\n.entry k()\n{{\n{text}\n}}\n").entry().body
    return next(s for s in body if isinstance(s, Instruction))


def test_def_use_vectors_predicates_and_addresses():
    assert defs_uses(_ins("@%p1 ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd1+16];")) == (
        ("%r1", "%r2", "%r3", "%r4"), ("%r1", "%r2", "%r3", "%r4", "%rd1", "%p1"))
    assert defs_uses(_ins("st.global.v2.f32 [%rd2+8], {%f1, %f2};")) == ((), ("%rd2", "%f1", "%f2"))
    assert defs_uses(_ins("setp.lt.s32 %p1|%p2, %r1, %r2;")) == (("%p1", "%p2"), ("%r1", "%r2"))
    assert defs_uses(_ins("@!%p3 bra $L__BB0_2;")) == ((), ("%p3",))
    assert defs_uses(_ins("fma.rn.f32 %f3, %f1, %f2, %f3;")) == (("%f3",), ("%f1", "%f2", "%f3"))
    assert defs_uses(_ins("red.global.add.f32 [%rd1], %f1;")) == ((), ("%rd1", "%f1"))
    assert defs_uses(_ins("mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], %r2;")) == (
        ("%p1",), ("%r1", "%r2"))


def test_plain_named_registers_from_triton_inline_asm():
    fn = _fn("triton/triton_matmul_tma.sm_90a.ptx")
    waits = [i for i in fn.instructions() if i.opcode.startswith("mbarrier.try_wait")]
    assert waits and all(defs_uses(i)[0] == ("complete",) for i in waits)


def test_memory_op_classes():
    ld = memory_op(_ins("ld.global.nc.L1::evict_last.v4.b32 {%r1, %r2, %r3, %r4}, [%rd1+16];"))
    assert (ld.kind, ld.space, ld.vector, ld.bits, ld.bytes) == ("load", "global", 4, 32, 16)
    assert not ld.volatile
    st = memory_op(_ins("st.shared.f32 [%r3], %f1;"))
    assert (st.kind, st.space, st.bytes) == ("store", "shared", 4)
    assert memory_op(_ins("ld.volatile.global.f32 %f1, [%rd1];")).volatile
    assert memory_op(_ins("atom.global.add.f32 %f1, [%rd1], %f2;")).kind == "atomic"
    assert memory_op(_ins("cp.async.cg.shared.global [%r1], [%rd1], 16;")).kind == "async_copy"
    assert memory_op(_ins("prefetch.global.L2 [%rd1];")).kind == "prefetch"
    assert memory_op(_ins("add.s32 %r1, %r2, 1;")) is None
    assert memory_op(_ins("ld.f32 %f1, [%rd1];")).space == "generic"


def test_ordering_points():
    for text in ("bar.sync 0;", "barrier.sync 0;", "membar.gl;", "fence.proxy.async.shared::cta;",
                 "mbarrier.arrive.shared.b64 %rd1, [%r1];", "wgmma.fence.sync.aligned;",
                 "wgmma.commit_group.sync.aligned;", "cp.async.commit_group;", "cp.async.wait_group 0;",
                 "shfl.sync.bfly.b32 %r1, %r2, 16, 31, -1;", "vote.sync.ballot.b32 %r1, %p1, -1;",
                 "elect.sync %r1|%p1, -1;", "bra $L;", "ret;", "exit;", "atom.global.add.u32 %r1, [%rd1], 1;",
                 "ld.volatile.global.u32 %r1, [%rd1];"):
        assert is_ordering_point(_ins(text)), text
    for text in ("ld.global.f32 %f1, [%rd1];", "fma.rn.f32 %f1, %f2, %f3, %f4;",
                 "st.global.f32 [%rd1], %f1;"):
        assert not is_ordering_point(_ins(text)), text


def test_cfg_of_the_shared_memory_reduction():
    fn = _fn("nvcc/reduction.sm_90.ptx")
    blocks = basic_blocks(fn)
    assert blocks[0].start == 0 and blocks[-1].end == len(fn.body)
    assert all(a.end == b.start for a, b in itertools.pairwise(blocks))
    # every conditional branch has two successors; every successor lists its predecessor
    for b in blocks:
        last = [s for s in b.statements(fn) if isinstance(s, Instruction)][-1:]
        if last and last[0].op == "bra" and last[0].pred:
            assert len(b.succs) == 2
        for s in b.succs:
            assert b.index in blocks[s].preds
    assert any(i.opcode == "bar.sync" for i in fn.instructions())
    assert not blocks[-1].succs
