"""Action space v2 (issue #14) through the registry: every v2 action applied with `apply` to corpus kernels
(the round-trip corpus, gemm_tile, the Triton suite, one captured kernel per workload) and assembled by ptxas
for sm_90a; `legal_actions(space=V2)` agrees with what `apply` accepts; the loop unrolls are never
legal; v2 hints combined with the seed's qualifier and vector transforms, in either order, still assemble."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from chronos.actions import LOOP_UNROLLS, SEED, V2
from chronos.errors import IllegalActionError
from chronos.kernels.gemm_tile import gemm_tile_ptx
from chronos.kernels.spec import read_ptx_file
from chronos.ptx import emit, parse
from chronos.search.space import canonical, realize
from chronos.toolchain import assemble
from chronos.transforms import apply, legal_actions, refusals

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests/corpus"
V2_ONLY = V2.names[SEED.size:]


def _kernels() -> list[tuple[str, str]]:
    files = [*sorted(CORPUS.glob("triton/*.sm_90a.ptx")), *sorted(CORPUS.glob("nvcc/*.sm_90.ptx")),
             *sorted((ROOT / "data/kernels/triton").glob("*.ptx"))[:6]]
    out = [(p.name, p.read_text()) for p in files]
    out += [(p.parent.parent.name + "/" + p.name, read_ptx_file(p))
            for w in sorted((ROOT / "data/kernels/captured").glob("*/ptx"))
            for p in sorted(w.glob("*.ptx*"))[:1]]
    return [*out, ("gemm_tile_4_6_4", gemm_tile_ptx(4, 6, 4))]


KERNELS = _kernels()
_ASSEMBLED: set[str] = set()


def _assembles(module) -> None:
    text = emit(module)
    sha = hashlib.sha256(text.encode()).hexdigest()
    if sha not in _ASSEMBLED:
        assemble(text, "sm_90a")  # raises PtxasError with a repro on refusal
        _ASSEMBLED.add(sha)


@pytest.mark.parametrize("name, text", KERNELS, ids=[n for n, _ in KERNELS])
def test_every_v2_action_is_legal_exactly_where_apply_accepts_it_and_assembles(name, text, ptxas):
    module = parse(text, file=name)
    legal = set(legal_actions(module, space=V2))
    assert set(legal_actions(module)) == legal & set(SEED.transforms)  # the seed's verdicts, unchanged
    accepted = set()
    for action in V2_ONLY:
        try:
            out = apply(module, action)
        except IllegalActionError:
            continue
        accepted.add(action)
        assert out.applied == (action,)
        _assembles(out)
    assert accepted == legal & set(V2_ONLY)


def test_loop_unrolls_apply_where_a_loop_is_and_share_one_slot(ptxas):
    assert not set(LOOP_UNROLLS) & set(legal_actions(parse(gemm_tile_ptx(4, 6, 4)), space=V2))  # no loop
    loopy = next(m for m in (parse(p.read_text()) for p in sorted((CORPUS / "triton").glob("*.ptx")))
                 if set(LOOP_UNROLLS) <= set(legal_actions(m, space=V2)))
    out = apply(loopy, "loop_unroll_2")
    _assembles(out)
    assert "loop_unroll_4" not in legal_actions(out, space=V2)  # one unroll per kernel
    with pytest.raises(IllegalActionError, match="conflicts with loop_unroll_2"):
        apply(out, "loop_unroll_4")


def test_occupancy_targets_join_the_register_budget_group():
    module = parse((CORPUS / "triton/triton_softmax.sm_90a.ptx").read_text())
    after = apply(module, "maxnreg_128")
    assert not {a for a in legal_actions(after, space=V2) if a in V2.groups["register_budget"]}
    with pytest.raises(IllegalActionError, match="conflicts with maxnreg_128"):
        apply(after, "occ_ctas_3")
    with pytest.raises(IllegalActionError, match="two actions of one conflict group"):
        canonical(["occ_ctas_3", "maxnreg_64"])
    assert "occ_ctas_1" in refusals(module, space=V2)  # 128 threads: 2 CTAs fit even at 255 registers
    assert "maxnreg_uncapped" in refusals(module, space=V2)  # no cap to remove


def test_uncapped_removes_a_producers_cap():
    text = (CORPUS / "triton/triton_softmax.sm_90a.ptx").read_text()
    capped = emit(apply(parse(text), "maxnreg_64"))  # as if the producer had written .maxnreg 64
    module = parse(capped)
    assert "maxnreg_uncapped" in legal_actions(module, space=V2)
    out = apply(module, "maxnreg_uncapped")
    assert all(fn.directive(".maxnreg") is None for fn in out.entries())
    _assembles(out)


PAIRED = ("vec_ld", "vec_st", "split_ld", "cache_cs", "cache_cg", "cache_cv", "st_cache_wt", "prefetch_L1",
          "prefetch_L2", "reorder_cp")
HINTS = [a for a in V2_ONLY if not a.startswith(("occ_", "maxnreg_", "loop_"))]


@pytest.mark.parametrize("name", ["triton_softmax.sm_90a.ptx", "triton_layernorm.sm_90a.ptx",
                                  "gemm_tile_4_6_4"])
def test_v2_hints_with_seed_transforms_in_either_order_assemble(name, ptxas):
    text = dict(KERNELS)[name]
    module = parse(text, file=name)
    for first in PAIRED:
        for hint in HINTS:
            for order in ((first, hint), (hint, first)):
                m = module
                try:
                    for a in order:
                        m = apply(m, a)
                except IllegalActionError:
                    continue
                _assembles(m)
            both = realize(module, (first, hint))
            if both is not None:
                _assembles(both)
