"""Loop unrolling (action space v2, issue #14): goldens on hand-written loops, ptxas acceptance for sm_90a and
sm_89 on them and on every corpus kernel it applies to, the shape invariants (fresh unique labels, factor-1
exit tests that test the back-branch's predicate, refusal of a second unroll), and semantics preservation
checked by executing both programs' control flow for every trip count."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest

from chronos.errors import NotApplicable
from chronos.kernels.gemm_tile import gemm_tile_ptx
from chronos.ptx import Instruction, Label, emit, format_instruction, parse
from chronos.ptx.analysis import defs_uses
from chronos.ptx.ir import Sym
from chronos.toolchain import assemble
from chronos.transforms import loops
from chronos.transforms.loops import EXIT_PREFIX, single_block_loops, unroll

from ..ptx.corpus import corpus, target_arch

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden"
INPUTS = ("loop_counted", "loop_barrier")
FACTORS = (2, 4)
CORPUS = corpus()


def _source(name: str) -> str:
    return (GOLDEN / f"{name}.ptx").read_text()


def _retarget(ptx: str, arch: str) -> str:
    return re.sub(r"^\.target\s+\S+", f".target {arch}", ptx, count=1, flags=re.MULTILINE)


def _labels(module) -> list[str]:
    return [s.name for fn in module.entries() for s in fn.body if isinstance(s, Label)]


def _exit_tests(module, factor: int) -> list[Instruction]:
    return [i for fn in module.entries() for i in fn.instructions() if i.origin == f"unroll_{factor}"]


# ------------------------------------------------------------------ an interpreter of control flow
def continue_senses(module) -> dict[str, bool]:
    """{predicate of a back-branch: True when the branch is negated (`@!%p bra`: the loop goes on while
    %p is false)}."""
    out = {}
    for fn in module.entries():
        seen: set[str] = set()
        for s in fn.body:
            if isinstance(s, Label):
                seen.add(s.name)
            elif isinstance(s, Instruction) and s.op == "bra" and s.pred and s.operands[0].name in seen:
                out[s.pred] = s.pred_neg
    return out


def trace(module, trips: int, senses: dict[str, bool], limit: int = 10_000) -> list[str]:
    """The instructions one thread executes, in order, when the j-th value that a setp writes to a
    back-branch's predicate says "go on" exactly while j < trips (so each loop runs `trips` times) and every
    other predicate is false. Branches are followed, not recorded; every other instruction is recorded as
    text, guard included (a guarded load is the same text whatever its guard holds)."""
    body = module.entry().body
    where = {s.name: i for i, s in enumerate(body) if isinstance(s, Label)}
    writes: dict[str, int] = {}
    value: dict[str, bool] = {}
    out: list[str] = []
    pc = 0
    while pc < len(body) and len(out) < limit:
        s = body[pc]
        pc += 1
        if not isinstance(s, Instruction):
            continue
        if s.op == "bra":
            if s.pred is None or value.get(s.pred, False) != s.pred_neg:
                pc = where[s.operands[0].name]
            continue
        out.append(format_instruction(s))
        if s.op == "ret":
            break
        if s.op == "setp":
            for p in defs_uses(s)[0]:
                writes[p] = writes.get(p, 0) + 1
                value[p] = p in senses and (writes[p] < trips) != senses[p]
    return out


# ------------------------------------------------------------------ goldens and ptxas
@pytest.mark.parametrize("name", INPUTS)
@pytest.mark.parametrize("factor", FACTORS)
def test_golden(name, factor, ptxas):
    got = emit(unroll(parse(_source(name), file=name), factor))
    path = GOLDEN / f"{name}.unroll_{factor}.ptx"
    if os.environ.get("CHRONOS_UPDATE_GOLDEN"):
        path.write_text(got)
    assert path.exists(), f"missing golden {path}: run with CHRONOS_UPDATE_GOLDEN=1 and review the diff"
    assert got == path.read_text(), f"{path.name} changed: review, then CHRONOS_UPDATE_GOLDEN=1"
    for arch in ("sm_90a", "sm_89"):
        assemble(_retarget(_source(name), arch), arch)  # the input is valid PTX ...
        assemble(_retarget(got, arch), arch)  # ... and so is its unrolled form (PtxasError otherwise)


@pytest.mark.parametrize("name, text", CORPUS, ids=[i for i, _ in CORPUS])
def test_every_applicable_unroll_assembles(name, text, ptxas):
    module = parse(text, file=name)
    for factor in FACTORS:
        try:
            out = unroll(module, factor)
        except NotApplicable:
            continue
        assemble(emit(out), target_arch(text))
        assert_shape(module, out, factor)
    assert emit(module) == emit(parse(text))  # the input was not mutated


def test_triton_suite_loops_unroll_and_assemble(ptxas):
    """The loop shapes Triton emits (masked inline-asm loads, .loc lines, cp.async/wgmma pipelines)."""
    names = ("rowsum_f16_r1027_c333_nodiv", "cross_entropy_f32_r64_v50257_nodiv", "attention_d64_kv64")
    for name in names:
        module = parse((ROOT / f"data/kernels/triton/{name}.ptx").read_text(), file=name)
        out = unroll(module, 4)
        assert_shape(module, out, 4)
        assemble(emit(out), module.arch)


# ------------------------------------------------------------------ invariants
def assert_shape(before, after, factor: int) -> None:
    """Unique labels; per unrolled loop factor-1 exit tests on the back-branch's predicate, negated, to the
    label right after the back-branch; every original instruction still there, in order."""
    labels = _labels(after)
    assert len(labels) == len(set(labels)), "duplicate labels"
    n_loops = sum(len(single_block_loops(fn)[0]) for fn in before.entries())
    tests = _exit_tests(after, factor)
    assert len(tests) == (factor - 1) * n_loops
    for fn in after.entries():
        body = fn.body
        for i, s in enumerate(body):
            if isinstance(s, Label) and s.name.startswith(EXIT_PREFIX) and s.name not in _labels(before):
                back = body[i - 1]
                assert back.op == "bra" and back.origin != f"unroll_{factor}"
                mine = [t for t in tests if t.operands == [Sym(s.name)]]
                assert len(mine) == factor - 1
                assert all((t.pred, t.pred_neg, t.opcode) == (back.pred, not back.pred_neg, back.opcode)
                           for t in mine)
    originals = [id(i) for fn in before.entries() for i in fn.instructions()]
    kept = {id(i) for fn in after.entries() for i in fn.instructions()}
    assert all(i in kept for i in originals)


@pytest.mark.parametrize("name", INPUTS)
@pytest.mark.parametrize("factor", FACTORS)
def test_the_same_instructions_run_for_every_trip_count(name, factor):
    module = parse(_source(name))
    out = unroll(module, factor, verify=False)
    assert_shape(module, out, factor)
    senses = continue_senses(module)
    for trips in range(1, 3 * factor + 2):
        expected = trace(module, trips, senses)
        assert expected[-1] == "ret;"
        assert trace(out, trips, senses) == expected, f"{trips} trips"
    assert len(trace(module, 7, senses)) > len(trace(module, 6, senses))  # the oracle drives the trips
    # the check has teeth: without its exit tests the unrolled loop runs a multiple of `factor` iterations
    fn = out.entry()
    mutant = dataclasses.replace(out, items=[dataclasses.replace(fn, body=[
        s for s in fn.body if not (isinstance(s, Instruction) and s.origin == f"unroll_{factor}")])])
    assert trace(mutant, factor + 1, senses) != trace(module, factor + 1, senses)


def test_a_real_loop_runs_the_same_instructions():
    module = parse((ROOT / "data/kernels/triton/rowsum_f16_r1027_c333_nodiv.ptx").read_text())
    out = unroll(module, 4, verify=False)
    senses = continue_senses(module)
    for trips in (1, 2, 3, 4, 5, 9):
        assert trace(out, trips, senses) == trace(module, trips, senses)
    assert len(trace(module, 9, senses)) > len(trace(module, 5, senses))


def test_a_second_unroll_is_refused():
    once = unroll(parse(_source("loop_counted")), 2, verify=False)
    for factor in FACTORS:
        with pytest.raises(NotApplicable, match="holds bra"):
            unroll(once, factor, verify=False)


def test_a_loop_free_kernel_is_not_applicable():
    with pytest.raises(NotApplicable, match="the kernel has no loop"):
        unroll(parse(gemm_tile_ptx(4, 6, 4)), 2)
    with pytest.raises(ValueError):
        unroll(parse(_source("loop_counted")), 3)


def test_exit_labels_are_fresh():
    text = _source("loop_counted").replace("$L__BB0_3", f"{EXIT_PREFIX}0")
    out = unroll(parse(text), 2, verify=False)
    labels = _labels(out)
    assert f"{EXIT_PREFIX}1" in labels and len(labels) == len(set(labels))


def test_headers_pragma_and_debug_labels_stay_in_the_first_copy(ptxas):
    out = emit(unroll(parse(_source("loop_barrier")), 4))
    assert out.count('.pragma "nounroll";') == 1 and out.count("$L__tmp0:") == 1
    assert out.count("bar.sync") == 8 and out.count("shfl.sync") == 4
    assert out.count(f"@%p1 bra.uni \t{EXIT_PREFIX}0;") == 3  # negated back-branch: the exit tests are not


@pytest.mark.parametrize("edit, reason", [
    (("\t@%p3 bra \t$L__BB0_2;", "\tbra \t$L__BB0_2;"), "unguarded"),
    (("\tadd.f32 \t%f1, %f1, %f2;\n", "\tadd.f32 \t%f1, %f1, %f2;\n\t@%p2 bra \t$L__BB0_3;\n"), "holds bra"),
    (("\tadd.f32 \t%f1, %f1, %f2;\n", "\tadd.f32 \t%f1, %f1, %f2;\n$L__x:\n"), "branch target"),
    (("\tadd.f32 \t%f1, %f1, %f2;\n", "\tadd.f32 \t%f1, %f1, %f2;\n\t.reg .b32 \t%t1;\n"), "declares"),
    (("\tadd.f32 \t%f1, %f1, %f2;\n", "\tadd.f32 \t%f1, %f1, %f2;\n\tret;\n"), "holds ret"),
])
def test_loops_that_are_not_one_block_are_refused(edit, reason):
    text = _source("loop_counted").replace(*edit)
    if "$L__x:" in text:  # a branch from before the loop into its middle
        text = text.replace("@%p1 bra \t$L__BB0_3", "@%p1 bra \t$L__x")
    assert text != _source("loop_counted")
    with pytest.raises(NotApplicable, match=reason):
        unroll(parse(text), 2, verify=False)


def test_an_inner_loop_unrolls_inside_a_refused_outer_one():
    inner = "\tadd.f32 \t%f1, %f1, %f2;\n$L__x:\n\tsetp.ne.s32 \t%p1, %r3, 0;\n\t@%p1 bra \t$L__x;\n"
    module = parse(_source("loop_counted").replace("\tadd.f32 \t%f1, %f1, %f2;\n", inner))
    loops_found, refused = single_block_loops(module.entry())
    assert [module.entry().body[lp.head].name for lp in loops_found] == ["$L__x"]
    assert refused == ["the loop at $L__BB0_2: its body holds the branch target $L__x"]
    out = unroll(module, 2, verify=False)
    assert [(i.pred, i.pred_neg, i.operands[0].name) for i in _exit_tests(out, 2)] == [
        ("%p1", True, f"{EXIT_PREFIX}0")]


def test_size_caps(monkeypatch):
    module = parse(_source("loop_counted"))
    monkeypatch.setattr(loops, "MAX_BODY_INSTRUCTIONS", 8)
    with pytest.raises(NotApplicable, match="its body has 9 instructions"):
        unroll(module, 2, verify=False)
    monkeypatch.setattr(loops, "MAX_BODY_INSTRUCTIONS", 9)
    monkeypatch.setattr(loops, "MAX_ADDED_INSTRUCTIONS", 20)
    unroll(module, 2, verify=False)  # adds 10: one copy and one exit test
    with pytest.raises(NotApplicable, match="would add 30 instructions"):
        unroll(module, 4, verify=False)


def test_ptxas_decides_and_can_be_deferred(monkeypatch):
    module = parse(_source("loop_counted"))
    monkeypatch.setattr(loops, "ptxas_verdict", lambda ptx, arch: f"no ({arch})")
    with pytest.raises(NotApplicable, match=r"ptxas refuses the x2 unrolled kernel for sm_90: no \(sm_90\)"):
        unroll(module, 2)
    unroll(module, 2, verify=False)


SCOPED = """\
$L__BB0_2:
\t{
\t.reg .pred \t%q;
\tsetp.eq.s32 \t%q, %r3, 0;
\t@%q add.f32 \t%f1, %f1, 0f3F800000;
\t}
"""


def test_what_a_scope_in_the_body_declares_is_declared_again_in_each_copy(ptxas):
    text = _source("loop_counted").replace("$L__BB0_2:\n", SCOPED)
    out = emit(unroll(parse(text), 4))
    assert out.count(".reg .pred \t%q;") == 4 and out.count("setp.eq.s32 \t%q") == 4
    for arch in ("sm_90a", "sm_89"):
        assemble(_retarget(out, arch), arch)
