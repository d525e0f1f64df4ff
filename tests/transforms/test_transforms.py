"""Each transform on the corpus: ptxas accepts every legal single action; invariants hold; goldens match."""

import os
from pathlib import Path

import pytest

from chronos.errors import IllegalActionError
from chronos.kernels.gemm_tile import gemm_tile_ptx
from chronos.ptx import Instruction, emit, parse
from chronos.ptx.analysis import is_ordering_point, memory_op
from chronos.toolchain import assemble
from chronos.transforms import TRANSFORM_NAMES, apply, legal_actions, refusals
from chronos.transforms.cache_hints import LOAD_OPS, STORE_OPS

from ..ptx.corpus import CORPUS_DIR, corpus, target_arch
from .helpers import assert_only_qualifiers_changed, assert_reorder_invariants, global_accesses

CORPUS = corpus()
GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("name, text", CORPUS, ids=[i for i, _ in CORPUS])
def test_every_legal_action_assembles(name, text, ptxas):
    module = parse(text, file=name)
    legal = legal_actions(module)
    assert legal, f"{name}: no legal transform at all"
    for action in legal:
        out = apply(module, action)
        assert out.applied == (action,)
        assemble(emit(out), target_arch(text))  # raises PtxasError with a repro on refusal
    assert emit(module) == emit(parse(text))  # the input was not mutated


@pytest.mark.parametrize("name, text", CORPUS[:20], ids=[i for i, _ in CORPUS[:20]])
def test_invariants(name, text, ptxas):
    module = parse(text, file=name)
    for action in legal_actions(module):
        out = apply(module, action)
        if action.startswith("reorder_"):
            assert_reorder_invariants(module, out)
        elif action.startswith("cache_"):
            assert_only_qualifiers_changed(module, out, set(LOAD_OPS))
        elif action.startswith("st_cache_"):
            assert_only_qualifiers_changed(module, out, set(STORE_OPS))
        elif action in ("vec_ld", "split_ld"):
            assert global_accesses(out, "ld") == global_accesses(module, "ld")
            assert global_accesses(out, "st") == global_accesses(module, "st")
        elif action == "vec_st":
            assert global_accesses(out, "st") == global_accesses(module, "st")
        elif action.startswith("maxnreg_"):
            assert [e.maxnreg for e in out.entries()] == [int(action.split("_")[1])] * len(out.entries())
        elif action.startswith("prefetch_"):
            added = [i for e in out.entries() for i in e.instructions() if i.origin == action]
            assert added and all(i.opcode == f"prefetch.global.{action[-2:]}" for i in added)
            kept = [i for e in out.entries() for i in e.instructions() if i.origin != action]
            assert kept == [i for e in module.entries() for i in e.instructions()]


def test_illegal_actions_raise_with_reason():
    m = parse(gemm_tile_ptx(2, 2, 2))
    m1 = apply(m, "cache_cs")
    with pytest.raises(IllegalActionError, match="already applied"):
        apply(m1, "cache_cs")
    with pytest.raises(IllegalActionError, match="conflicts with cache_cs"):
        apply(m1, "cache_cg")
    assert "cache_cg" not in legal_actions(m1) and "vec_ld" in legal_actions(m1)
    assert legal_actions(m, applied=["reorder_cp"]) == legal_actions(apply(m, "reorder_cp"))
    with pytest.raises(IllegalActionError, match="no .v2/.v4 global loads"):
        apply(m, "split_ld")
    assert "split_ld" in refusals(m)


def test_vec_ld_on_gemm_tile_4_6_4_emits_only_aligned_vectors():
    # C rows are 24 bytes apart: row 1 starts at +24, which is 8- but not 16-byte aligned (the seed's 716).
    out = apply(apply(parse(gemm_tile_ptx(4, 6, 4)), "vec_ld"), "vec_st")
    widths = set()
    for ins in out.entry().instructions():
        mem = memory_op(ins)
        if mem and mem.space == "global" and mem.vector > 1:
            assert mem.addr.offset % mem.bytes == 0, emit(out)
            widths.add((ins.op, mem.vector, mem.addr.offset))
    assert ("st", 2, 24) in widths and ("st", 4, 32) in widths and ("st", 4, 24) not in widths


def test_vec_ld_needs_an_alignment_proof():
    text = gemm_tile_ptx(4, 4, 4).replace(".align 16", ".align 4")
    assert "vec_ld" not in legal_actions(parse(text))
    module = parse(text)
    module.align_contract.update({p.name: 16 for p in module.entry().params if p.is_ptr})
    assert "vec_ld" in legal_actions(module)


def test_split_after_vec_is_a_no_op_on_the_same_accesses():
    m = apply(parse(gemm_tile_ptx(4, 4, 4)), "vec_ld")
    with pytest.raises(IllegalActionError, match="vec_ld's own vectors"):
        apply(m, "split_ld")


@pytest.mark.parametrize("name", ["nvcc/reduction.sm_90.ptx", "triton/triton_softmax.sm_90a.ptx"])
def test_reorders_keep_barriers_in_place(name):
    module = parse((CORPUS_DIR / name).read_text())
    assert any(i.op == "bar" for i in module.entry().instructions())

    def fence_signature(m):
        out, since = [], 0
        for s in m.entry().body:
            if isinstance(s, Instruction) and is_ordering_point(s):
                since += 1
                out.append(s.opcode)
            elif isinstance(s, Instruction) and memory_op(s) is not None:
                out.append((since, emit_sorted(s)))
        return sorted(map(str, out))

    for action in [a for a in legal_actions(module) if a.startswith("reorder_")]:
        out = apply(module, action)
        assert fence_signature(out) == fence_signature(module), action
        assert_reorder_invariants(module, out)


def emit_sorted(ins):
    return f"{ins.opcode} {ins.operands}"


GOLDEN_CASES = [("gemm_tile_4_6_4", a) for a in TRANSFORM_NAMES if a != "split_ld"] + [
    ("triton_softmax.sm_90a", a) for a in ("split_ld", "cache_cg", "reorder_lf", "prefetch_L2")]


def _golden_source(kernel):
    if kernel.startswith("gemm_tile"):
        return gemm_tile_ptx(4, 6, 4)
    return (CORPUS_DIR / "triton" / f"{kernel}.ptx").read_text()


@pytest.mark.parametrize("kernel, action", GOLDEN_CASES)
def test_golden(kernel, action, ptxas):
    got = emit(apply(parse(_golden_source(kernel)), action))
    path = GOLDEN / f"{kernel}.{action}.ptx"
    if os.environ.get("CHRONOS_UPDATE_GOLDEN"):
        path.write_text(got)
    assert path.exists(), f"missing golden {path}: run with CHRONOS_UPDATE_GOLDEN=1 and review the diff"
    assert got == path.read_text(), f"{path.name} changed: review, then CHRONOS_UPDATE_GOLDEN=1"
