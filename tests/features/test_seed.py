"""The 25 kernel features: names, docs, determinism, and that they respond to what transforms change."""

import copy
import math
from pathlib import Path

import pytest

from chronos.errors import ChronosError
from chronos.features.seed import FEATURE_DOCS, FEATURE_NAMES, extract_features, extract_features_from_ptx
from chronos.ptx.ir import Addr, Function, Imm, Instruction, Label, Module, Reg, RegDecl, Vec

CORPUS = Path(__file__).parents[1] / "corpus"
CORPUS_FILES = sorted(CORPUS.rglob("*.ptx")) if CORPUS.is_dir() else []


def idx(name):
    return FEATURE_NAMES.index(name)


def ld(dst, base, off=0, opcode="ld.global.f32"):
    return Instruction(opcode, [dst, Addr(Reg(base), off)])


def st(base, src, off=0, opcode="st.global.f32"):
    return Instruction(opcode, [Addr(Reg(base), off), src])


def hand_module(maxnreg=None):
    """A small kernel: 4 scalar loads, 2 FMAs, 2 scalar stores, a loop label and a branch."""
    body = [
        RegDecl(".pred", [("%p", 2)]), RegDecl(".b32", [("%r", 5)]), RegDecl(".f32", [("%f", 9)]),
        RegDecl(".b64", [("%rd", 4)]),
        Instruction("ld.param.u64", [Reg("%rd1"), Addr(Reg("%rd0"))]),
        Label("$L_loop"),
        *[ld(Reg(f"%f{i + 1}"), "%rd1", 4 * i) for i in range(4)],
        Instruction("fma.rn.f32", [Reg("%f5"), Reg("%f1"), Reg("%f2"), Reg("%f5")]),
        Instruction("fma.rn.f32", [Reg("%f6"), Reg("%f3"), Reg("%f4"), Reg("%f6")]),
        st("%rd1", Reg("%f5")), st("%rd1", Reg("%f6"), 4),
        Instruction("setp.lt.u32", [Reg("%p1"), Reg("%r1"), Imm("8")]),
        Instruction("bra", [Reg("$L_loop")], pred="%p1"),
        Instruction("ret"),
    ]
    directives = [(".maxnreg", str(maxnreg))] if maxnreg else []
    fn = Function(".entry", "k", [".visible"], directives=directives, body=body)
    return Module("8.0", ["sm_90"], 64, items=[fn])


def body_replace(m, pred, fn):
    """Copy of module `m` with every instruction matching `pred` replaced by fn(instruction)."""
    m = copy.deepcopy(m)
    e = m.entry()
    e.body = [fn(s) if isinstance(s, Instruction) and pred(s) else s for s in e.body]
    return m


def is_gld(s):
    return s.opcode.startswith("ld.global")


def test_names_and_docs():
    assert len(FEATURE_NAMES) == 25 == len(set(FEATURE_NAMES))
    assert tuple(FEATURE_DOCS) == FEATURE_NAMES
    assert all(isinstance(d, str) and len(d) > 10 and "\n" not in d for d in FEATURE_DOCS.values())


def test_values_deterministic_and_finite():
    m = hand_module()
    a, b = extract_features(m), extract_features(copy.deepcopy(m))
    assert a == b and len(a) == 25
    assert all(isinstance(x, float) and math.isfinite(x) for x in a)


def test_hand_module_counts():
    f = extract_features(hand_module())
    assert f[idx("n_global_loads")] == pytest.approx(math.log1p(4))
    assert f[idx("n_global_stores")] == pytest.approx(math.log1p(2))
    assert f[idx("n_fma")] == pytest.approx(math.log1p(2))
    assert f[idx("n_branches")] == pytest.approx(math.log1p(1))
    assert f[idx("n_basic_blocks")] == pytest.approx(math.log1p(2))
    assert f[idx("regs_float")] == pytest.approx(math.log1p(9))
    assert f[idx("regs_pred")] == pytest.approx(math.log1p(2))
    assert f[idx("vec_load_ratio")] == 0.0 and f[idx("maxnreg_budget")] == 0.0
    for name in FEATURE_NAMES:
        if name.endswith(("_ratio", "_fraction", "_coverage")) or name.startswith("has_"):
            assert 0.0 <= f[idx(name)] <= 1.0, name


def test_vectorising_loads_raises_vector_ratio():
    m = hand_module()
    e = m.entry()
    loads = [s for s in e.body if isinstance(s, Instruction) and is_gld(s)]
    vec = Instruction("ld.global.v4.f32", [Vec(tuple(s.operands[0] for s in loads)), loads[0].operands[1]])
    drop = {id(s) for s in loads[1:]}
    e.body = [vec if s is loads[0] else s for s in e.body if id(s) not in drop]
    before, after = extract_features(hand_module()), extract_features(m)
    assert before[idx("vec_load_ratio")] == 0.0 and after[idx("vec_load_ratio")] == 1.0
    assert after[idx("n_global_loads")] < before[idx("n_global_loads")]


def test_vectorising_stores_raises_vector_ratio():
    m = body_replace(hand_module(), lambda s: s.opcode == "st.global.f32",
                     lambda s: s.with_opcode("st.global.v2.f32"))
    assert extract_features(m)[idx("vec_store_ratio")] == 1.0


@pytest.mark.parametrize("cop", ["cs", "cg", "ca", "cv", "lu", "L1::evict_last"])
def test_load_cache_hint_raises_coverage(cop):
    m = body_replace(hand_module(), is_gld, lambda s: s.with_opcode(f"ld.global.{cop}.f32"))
    assert extract_features(hand_module())[idx("load_cache_hint_coverage")] == 0.0
    assert extract_features(m)[idx("load_cache_hint_coverage")] == 1.0


@pytest.mark.parametrize("cop", ["cs", "wt", "wb", "cg"])
def test_store_cache_hint_raises_coverage(cop):
    m = body_replace(hand_module(), lambda s: s.opcode.startswith("st.global"),
                     lambda s: s.with_opcode(f"st.global.{cop}.f32"))
    assert extract_features(m)[idx("store_cache_hint_coverage")] == 1.0


def test_maxnreg_sets_budget():
    assert extract_features(hand_module(128))[idx("maxnreg_budget")] == pytest.approx(128 / 255)
    assert extract_features(hand_module(32))[idx("maxnreg_budget")] == pytest.approx(32 / 255)
    assert extract_features(hand_module(255))[idx("maxnreg_budget")] == 1.0


def test_prefetch_raises_count():
    m = hand_module()
    e = m.entry()
    e.body.insert(6, Instruction("prefetch.global.L2", [Addr(Reg("%rd1"), 0)]))
    assert extract_features(m)[idx("n_prefetch")] == pytest.approx(math.log1p(1))
    assert extract_features(hand_module())[idx("n_prefetch")] == 0.0


def test_loads_first_reorder_changes_load_use_distance():
    """Hoisting loads away from their uses (what a reorder does) moves the load-use distance."""
    m = hand_module()
    e = m.entry()
    # interleave: load a, load b, fma a*b  -> the first load is used 2 instructions later, not 3-4
    loads = [s for s in e.body if isinstance(s, Instruction) and is_gld(s)]
    fmas = [s for s in e.body if isinstance(s, Instruction) and s.op == "fma"]
    start = e.body.index(loads[0])
    rest = [s for s in e.body[start:] if s not in loads and s not in fmas]
    e.body = e.body[:start] + [loads[0], loads[1], fmas[0], loads[2], loads[3], fmas[1]] + rest
    assert extract_features(m)[idx("load_use_distance")] < extract_features(hand_module())[
        idx("load_use_distance")]


def test_async_and_tensor_core_flags():
    m = hand_module()
    e = m.entry()
    cp = Instruction("cp.async.cg.shared.global", [Addr(Reg("%r1")), Addr(Reg("%rd1")), Imm("16")])
    e.body.insert(6, cp)
    e.body.insert(6, Instruction("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", [Reg("%f1")]))
    f = extract_features(m)
    assert f[idx("has_async_copy")] == 1.0 and f[idx("has_tensor_core")] == 1.0
    base = extract_features(hand_module())
    assert base[idx("has_async_copy")] == 0.0 and base[idx("has_tensor_core")] == 0.0


def test_multiple_entries_aggregate():
    one = hand_module(128)
    two = copy.deepcopy(one)
    second = copy.deepcopy(two.entry())
    second.name = "k2"
    second.set_directive(".maxnreg", "64")
    two.items.append(second)
    f1, f2 = extract_features(one), extract_features(two)
    assert f2[idx("n_global_loads")] == pytest.approx(math.log1p(8))
    assert f2[idx("vec_load_ratio")] == f1[idx("vec_load_ratio")]
    assert f2[idx("regs_float")] == f1[idx("regs_float")]  # max over entries, not sum
    assert f2[idx("maxnreg_budget")] == pytest.approx(64 / 255)  # the tightest budget


def test_module_without_entry_raises():
    m = Module("8.0", ["sm_90"], 64, items=[Function(".func", "f", body=[Instruction("ret")])])
    with pytest.raises(ChronosError, match="no .entry"):
        extract_features(m)


def test_from_ptx_on_gemm_tile():
    from chronos.kernels.gemm_tile import gemm_tile_ptx

    f = extract_features_from_ptx(gemm_tile_ptx(4, 6, 8))
    assert len(f) == 25 and all(math.isfinite(x) for x in f)
    assert f[idx("n_global_loads")] > 0 and f[idx("n_fma")] > 0
    assert f == extract_features_from_ptx(gemm_tile_ptx(4, 6, 8))
    assert f != extract_features_from_ptx(gemm_tile_ptx(2, 2, 2))


def test_from_ptx_responds_to_text_edits():
    from chronos.kernels.gemm_tile import gemm_tile_ptx

    text = gemm_tile_ptx(4, 4, 4)
    base = extract_features_from_ptx(text)
    hinted = extract_features_from_ptx(text.replace("ld.global.f32", "ld.global.cs.f32"))
    assert hinted[idx("load_cache_hint_coverage")] == 1.0 > base[idx("load_cache_hint_coverage")]
    budget = extract_features_from_ptx(text.replace("\n{", "\n.maxnreg 64\n{", 1))
    assert budget[idx("maxnreg_budget")] == pytest.approx(64 / 255)


@pytest.mark.skipif(not CORPUS_FILES, reason="tests/corpus has no PTX files yet")
@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_features_finite(path):
    text = path.read_text()
    f = extract_features_from_ptx(text, file=str(path))
    assert len(f) == 25 and all(math.isfinite(x) for x in f)
    assert f == extract_features_from_ptx(text)
    assert f[idx("n_instructions")] > 0
