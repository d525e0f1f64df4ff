"""Action space v2 (issue #14), first transforms: load hints chosen per load class and register budgets as
occupancy targets. Goldens, ptxas acceptance on the round-trip corpus (sm_89 and sm_90 targets), and the
invariant that a hint changes only qualifiers (and, for the L2 policy, adds one createpolicy and its
operand)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chronos.errors import NotApplicable
from chronos.ptx import emit, parse
from chronos.ptx.ir import Instruction, Reg
from chronos.toolchain import assemble
from chronos.transforms.cache_policy import (
    L1_POLICIES,
    L2_POLICIES,
    POLICY_REG,
    PREFETCH_SIZES,
    l1_eviction,
    l2_policy,
    load_classes,
    prefetch_size,
    store_eviction,
)
from chronos.transforms.occupancy import (
    ctas_per_sm,
    min_ctas_per_sm,
    occupancy_budgets,
    occupancy_target,
    threads_per_cta,
)

from ..ptx.corpus import CORPUS_DIR, corpus, target_arch

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden"
CORPUS = corpus()
HINTS = ([(f"l1_{p}", lambda m, p=p, w=w: l1_eviction(m, p, w), w) for p in L1_POLICIES for w in ("all",)]
         + [(f"l2_{p}", lambda m, p=p: l2_policy(m, p), "all") for p in L2_POLICIES]
         + [(f"l2_{s}", lambda m, s=s: prefetch_size(m, s), "all") for s in PREFETCH_SIZES]
         + [(f"st_{p}", lambda m, p=p: store_eviction(m, p), "all") for p in L1_POLICIES])


def _loads(module, op="ld"):
    return [i for fn in module.entries() for i in fn.instructions() if i.op == op and "global" in i.mods]


@pytest.mark.parametrize("name, text", CORPUS, ids=[i for i, _ in CORPUS])
def test_every_applicable_hint_assembles_and_changes_only_qualifiers(name, text, ptxas):
    module = parse(text, file=name)
    for label, hint, _ in HINTS:
        try:
            out = hint(module)
        except NotApplicable:
            continue
        assemble(emit(out), target_arch(text))  # raises PtxasError with a repro on refusal
        op = "st" if label.startswith("st_") else "ld"
        before, after = _loads(module, op), _loads(out, op)
        assert len(before) == len(after), label
        for a, b in zip(before, after, strict=True):
            assert (a.pred, a.pred_neg, a.operands) == (b.pred, b.pred_neg, b.operands[: len(a.operands)])
            assert set(a.mods) <= set(b.mods), label
        added = [i for fn in out.entries() for i in fn.instructions() if i.origin == "l2_policy"]
        if label.startswith("l2_evict"):
            assert sum(i.op == "createpolicy" for i in added) == len(out.entries())
    assert emit(module) == emit(parse(text))  # the input was not mutated


def test_hints_never_override_a_qualifier_the_producer_chose():
    text = (CORPUS_DIR / "triton" / "triton_softmax.sm_90a.ptx").read_text()
    once = l1_eviction(parse(text), "evict_first")
    with pytest.raises(NotApplicable, match="no eligible all ld.global would take .L1::evict_last"):
        l1_eviction(once, "evict_last")
    both = prefetch_size(l2_policy(once, "evict_last"), "128B")  # L1 + L2 policy + prefetch size combine
    ld = next(i for i in _loads(both))
    assert ld.opcode.startswith("ld.global.L1::evict_first.L2::cache_hint.L2::128B.")
    assert ld.operands[-1] == Reg(POLICY_REG)
    assemble(emit(both), "sm_90a")


def test_a_cache_operator_excludes_an_l1_eviction_priority():
    ptx = (".version 8.0\n.target sm_89\n.address_size 64\n.visible .entry k(.param .u64 k_p0)\n{\n"
           ".reg .b32 %r<2>;\n.reg .b64 %rd<3>;\nld.param.u64 %rd1, [k_p0];\n"
           "cvta.to.global.u64 %rd2, %rd1;\nld.global.cg.b32 %r1, [%rd2];\n"
           "st.global.b32 [%rd2+4], %r1;\nret;\n}\n")
    with pytest.raises(NotApplicable):
        l1_eviction(parse(ptx), "evict_last")
    out = prefetch_size(parse(ptx), "64B")  # a prefetch size combines with a cache operator
    assert "ld.global.cg.L2::64B.b32" in emit(out)
    assemble(emit(out), "sm_89")


def test_a_second_sweep_over_the_same_tensor_is_reread():
    """cross_entropy (LLM tier): the online pass over the row and the gather of the target's logit read the
    logits twice; the label load is read once."""
    module = parse((ROOT / "data/kernels/triton_llm/cross_entropy_f32_r512_v128256_nodiv.ptx").read_text())
    classes = list(load_classes(module.entries()[0]).values())
    assert classes.count("reread") >= 2 and classes.count("streaming") == 1
    out = l1_eviction(module, "evict_last", "reread")
    marked = [i for i in _loads(out) if "L1::evict_last" in i.mods]
    assert len(marked) == classes.count("reread")
    softmax = parse((ROOT / "data/kernels/triton/softmax_r4096_c1024.ptx").read_text())
    assert set(load_classes(softmax.entries()[0]).values()) == {"streaming"}  # one sweep
    with pytest.raises(NotApplicable, match="reread"):
        l1_eviction(softmax, "evict_last", "reread")


GOLDEN_CASES = [("l1_evict_last_reread", lambda m: l1_eviction(m, "evict_last", "reread")),
                ("l2_evict_first_streaming", lambda m: l2_policy(m, "evict_first", "streaming")),
                ("l2_256B_all", lambda m: prefetch_size(m, "256B"))]


@pytest.mark.parametrize("label, hint", GOLDEN_CASES, ids=[c[0] for c in GOLDEN_CASES])
def test_golden(label, hint, ptxas):
    module = parse((ROOT / "data/kernels/triton_llm/cross_entropy_f32_r512_v128256_nodiv.ptx").read_text())
    got = emit(hint(module))
    path = GOLDEN / f"cross_entropy_f32_r512_v128256.{label}.ptx"
    if os.environ.get("CHRONOS_UPDATE_GOLDEN"):
        path.write_text(got)
    assert path.exists(), f"missing golden {path}: run with CHRONOS_UPDATE_GOLDEN=1 and review the diff"
    assert got == path.read_text(), f"{path.name} changed: review, then CHRONOS_UPDATE_GOLDEN=1"
    assemble(got, "sm_90a")


def test_occupancy_budgets():
    assert ctas_per_sm(128, 255) == 2 and ctas_per_sm(128, 128) == 4 and ctas_per_sm(128, 32) == 16
    assert ctas_per_sm(256, 64) == 4 and ctas_per_sm(256, 72) == 3  # cross_entropy_bf16: 64 keeps 4 CTAs/SM
    b = occupancy_budgets(256)
    assert b[4] == 64 and b[3] == 80 and b[2] == 128 and b[1] == 255 and max(b) == 8
    assert all(ctas_per_sm(256, r) == k for k, r in b.items())
    assert all(ctas_per_sm(256, r + 8) < k for k, r in b.items() if r < 248)  # each is the largest
    assert occupancy_budgets(1024) == {1: 64, 2: 32}


def test_an_occupancy_target_sets_the_budget_ptxas_accepts(ptxas):
    module = parse((ROOT / "data/kernels/triton/softmax_r4096_c1024.ptx").read_text())
    threads = threads_per_cta(module)
    budgets = occupancy_budgets(threads)
    k = max(budgets)
    out = occupancy_target(module, k)
    assert [fn.maxnreg for fn in out.entries()] == [budgets[k]]
    assemble(emit(out), module.arch)
    with pytest.raises(NotApplicable, match="out of reach"):
        occupancy_target(module, 33)
    assert isinstance(next(iter(_loads(out))), Instruction)
    one = min_ctas_per_sm(module, k)
    assert [dict(fn.directives)[".minnctapersm"] for fn in one.entries()] == [str(k)]
    with pytest.raises(NotApplicable, match="already"):
        min_ctas_per_sm(one, k)
