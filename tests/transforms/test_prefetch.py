"""prefetch_L1/L2 on kernels that used to break them (issue #11): a prefetch goes after every definition of
its base and guard that reaches it, or not at all, and ptxas accepts every prefetch `legal_actions` offers."""

import os
from pathlib import Path

import pytest

from chronos.errors import IllegalActionError
from chronos.ptx import Instruction, emit, format_instruction, parse
from chronos.ptx.analysis import basic_blocks
from chronos.toolchain import assemble
from chronos.transforms import apply, legal_actions
from chronos.transforms.prefetch import defined_on_entry

GOLDEN = Path(__file__).parent / "golden"

HEAD = """\
.version 8.0
.target sm_90
.address_size 64

.visible .entry k(
\t.param .u64 .ptr .global .align 16 k_param_0,
\t.param .u64 .ptr .global .align 16 k_param_1,
\t.param .u32 k_param_2
)
{
\t.reg .pred \t%p<3>;
\t.reg .b32 \t%r<3>;
\t.reg .f32 \t%f<5>;
\t.reg .b64 \t%rd<4>;

"""

# The reproducer: %rd1 is read before its ld.param. The prefetch used to land at the block's start,
# above the .reg declarations ("forward reference of '%rd1'": ptxas refused what legal_actions offered).
USE_BEFORE_DEF = HEAD + """\
\tld.global.f32 \t%f1, [%rd1];
\tld.param.u64 \t%rd1, [k_param_0];
\tld.global.f32 \t%f2, [%rd1+4];
\tadd.f32 \t%f3, %f1, %f2;
\tld.param.u64 \t%rd2, [k_param_1];
\tst.global.f32 \t[%rd2], %f3;
\tret;
}
"""

# %rd1 and the guard %p2 are defined on one incoming path only: the join block must not prefetch through
# them; %rd2 is defined on both paths and is prefetched at the join's start.
ONE_ARM = HEAD + """\
\tld.param.u32 \t%r1, [k_param_2];
\tld.param.u64 \t%rd2, [k_param_1];
\tsetp.eq.s32 \t%p1, %r1, 0;
\t@%p1 bra \t$L__join;
\tld.param.u64 \t%rd1, [k_param_0];
\tsetp.gt.s32 \t%p2, %r1, 4;
$L__join:
\tld.global.f32 \t%f1, [%rd1];
\tld.global.f32 \t%f2, [%rd2];
\t@%p2 ld.global.f32 \t%f3, [%rd2+256];
\tadd.f32 \t%f4, %f1, %f2;
\tst.global.f32 \t[%rd2], %f4;
\tret;
}
"""

# A loop: %rd1 reaches the header from the entry and from the back edge (prefetched at the header's start);
# its in-loop redefinition starts a new group (prefetched after the add, not merged into the first one).
# %rd3 is written only under a guard before its load: not surely defined, so not prefetched.
LOOP = HEAD + """\
\tld.param.u64 \t%rd1, [k_param_0];
\tld.param.u32 \t%r1, [k_param_2];
\tsetp.ne.s32 \t%p2, %r1, 0;
\t@%p2 ld.param.u64 \t%rd3, [k_param_1];
\tld.global.f32 \t%f4, [%rd3];
\tmov.u32 \t%r2, 0;
\tmov.f32 \t%f1, 0f00000000;
$L__loop:
\tld.global.f32 \t%f2, [%rd1];
\tadd.f32 \t%f1, %f1, %f2;
\tadd.s64 \t%rd1, %rd1, 512;
\tld.global.f32 \t%f3, [%rd1+4];
\tadd.f32 \t%f1, %f1, %f3;
\tadd.s32 \t%r2, %r2, 1;
\tsetp.lt.u32 \t%p1, %r2, 8;
\t@%p1 bra \t$L__loop;
\tadd.f32 \t%f1, %f1, %f4;
\tld.param.u64 \t%rd2, [k_param_1];
\tst.global.f32 \t[%rd2], %f1;
\tret;
}
"""

CASES = {"use_before_def": USE_BEFORE_DEF, "one_arm": ONE_ARM, "loop": LOOP}


def prefetches(module) -> list[tuple[str, str, str]]:
    """(prefetch text, the statement before it, the statement after it) for every inserted prefetch."""
    body = module.entry().body
    out = []
    for i, s in enumerate(body):
        if isinstance(s, Instruction) and s.op == "prefetch":
            out.append((emit_one(s), emit_one(body[i - 1]), emit_one(body[i + 1])))
    return out


def emit_one(s) -> str:
    if isinstance(s, Instruction):
        return " ".join(format_instruction(s).replace(";", "").split())
    return type(s).__name__


@pytest.mark.parametrize("name", CASES)
def test_every_offered_prefetch_assembles(name, ptxas):
    module = parse(CASES[name], file=name)
    assemble(CASES[name], "sm_90")  # the input itself is valid PTX
    offered = [a for a in legal_actions(module) if a.startswith("prefetch_")]
    assert offered == ["prefetch_L1", "prefetch_L2"]
    for action in offered:
        out = apply(module, action)
        assemble(emit(out), "sm_90")  # raises PtxasError with a repro on refusal
        got = emit(out)
        path = GOLDEN / f"prefetch_{name}.{action}.ptx"
        if os.environ.get("CHRONOS_UPDATE_GOLDEN"):
            path.write_text(got)
        assert got == path.read_text(), f"{path.name} changed: review, then CHRONOS_UPDATE_GOLDEN=1"


def test_use_before_def_prefetches_after_the_definition():
    out = apply(parse(USE_BEFORE_DEF), "prefetch_L1")
    # only the load after the ld.param; the first load reads an undefined %rd1 and gets nothing
    assert [p[:2] for p in prefetches(out)] == [
        ("prefetch.global.L1 [%rd1+4]", "ld.param.u64 %rd1, [k_param_0]")]


def test_one_arm_definitions_are_not_prefetched_through():
    out = apply(parse(ONE_ARM), "prefetch_L2")
    assert [p[:3] for p in prefetches(out)] == [
        ("prefetch.global.L2 [%rd2]", "Label", "ld.global.f32 %f1, [%rd1]")]


def test_loop_prefetches_each_value_of_the_base():
    out = apply(parse(LOOP), "prefetch_L1")
    assert [p[:2] for p in prefetches(out)] == [
        ("prefetch.global.L1 [%rd1]", "Label"),
        ("prefetch.global.L1 [%rd1+4]", "add.s64 %rd1, %rd1, 512"),
    ]


def test_nothing_surely_defined_is_not_applicable():
    text = USE_BEFORE_DEF.replace("\tld.global.f32 \t%f2, [%rd1+4];\n", "")
    with pytest.raises(IllegalActionError, match="surely defined"):
        apply(parse(text), "prefetch_L1")
    assert "prefetch_L1" not in legal_actions(parse(text))


def test_defined_on_entry():
    fn = parse(LOOP).entry()
    blocks = basic_blocks(fn)
    entry = defined_on_entry(fn, blocks)
    assert entry[0] == frozenset()
    header = next(b.index for b in blocks if b.label == "$L__loop")
    # defined before the loop and not lost around it; %rd3 only under a guard
    assert {"%rd1", "%r2", "%f1", "%p2"} <= entry[header] and "%rd3" not in entry[header]
    fn = parse(ONE_ARM).entry()
    blocks = basic_blocks(fn)
    join = next(b.index for b in blocks if b.label == "$L__join")
    assert defined_on_entry(fn, blocks)[join] == {"%r1", "%rd2", "%p1"}
