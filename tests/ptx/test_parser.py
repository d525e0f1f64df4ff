"""Parser and printer on hand-written PTX covering every construct the IR models."""

import pytest

from chronos.errors import ChronosError, PTXParseError
from chronos.ptx import (
    Addr,
    Comment,
    Directive,
    Imm,
    Instruction,
    Label,
    Neg,
    Raw,
    Reg,
    RegDecl,
    ScopeClose,
    ScopeOpen,
    Sym,
    Vec,
    emit,
    parse,
)

KERNEL = """//
// hand-written
//
.version 8.7
.target sm_90a
.address_size 64

.extern .shared .align 16 .b8 global_smem[];
.global .align 4 .b8 table[8] = {1, 2, 3, 4, 5, 6, 7, 8};
.extern .func (.param .b32 func_retval0) helper
(
	.param .b64 helper_param_0
)
;

.visible .entry k(
	.param .u64 .ptr .global .align 16 k_param_0,
	.param .u32 k_param_1,
	.param .align 8 .b8 k_param_2[16]
)
.maxntid 128, 1, 1
.minnctapersm 2
.maxnreg 64
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<12>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<6>;
	.loc	1 10 0
	ld.param.u64 	%rd1, [k_param_0];
	mov.u32 	%r1, %tid.x;
	setp.lt.u32 	%p1, %r1, 64;
	// begin inline asm
	@%p1 ld.global.L1::evict_last.L2::cache_hint.v4.b32 { %r2, %r3, %r4, %r5 }, [ %rd1 + 16 ], %rd2;
	// end inline asm
	{
	.reg .pred %ptmp;
	setp.ne.b32 %ptmp, %r2, 0;
	@!%ptmp bra $L__BB0_2;
	}
	ld.global.f32 	%f1, [%rd1+-8];
	mov.f32 	%f2, 0f3F800000;
	mov.f64 	%fd1, 0d3FF0000000000000;
	setp.eq.and.pred 	%p2|%p3, %r1, 0, !%p1;
	st.global.v2.f32 	[%rd1+8], {%f1, %f2};
$L__BB0_2:
	ret;
}
"""


def test_header_and_declarations():
    m = parse(KERNEL)
    assert (m.version, m.target, m.address_size) == ("8.7", ["sm_90a"], 64)
    assert m.arch == "sm_90a"
    assert [c.text for c in m.preamble] == ["//", "// hand-written", "//"]
    directives = [i for i in m.items if isinstance(i, Directive)]
    assert [d.keyword for d in directives] == [".extern", ".global"]
    assert directives[1].text.endswith("{1, 2, 3, 4, 5, 6, 7, 8};")
    proto, k = m.functions()
    assert proto.body is None and proto.ret_params[0].name == "func_retval0" and proto.linkage == [".extern"]
    assert m.entry() is k and m.entries() == [k]


def test_params_and_performance_directives():
    k = parse(KERNEL).entry("k")
    p0, p1, p2 = k.params
    assert (p0.dtype, p0.is_ptr, p0.ptr_space, p0.ptr_align) == (".u64", True, ".global", 16)
    assert (p1.dtype, p1.is_ptr) == (".u32", False)
    assert (p2.align, p2.dtype, p2.array) == (8, ".b8", "[16]")
    assert k.directives == [(".maxntid", "128, 1, 1"), (".minnctapersm", "2"), (".maxnreg", "64")]
    assert k.maxnreg == 64
    k.set_directive(".maxnreg", "128")
    assert k.maxnreg == 128 and len(k.directives) == 3


def test_body_statements():
    body = parse(KERNEL).entry().body
    regs = [s for s in body if isinstance(s, RegDecl)]
    assert regs[1].dtype == ".b32" and regs[1].names == [("%r", 12)]
    assert any(isinstance(s, Directive) and s.keyword == ".loc" for s in body)
    markers = [s.inline_asm for s in body if isinstance(s, Comment)]
    assert markers == ["begin", "end"]
    assert sum(isinstance(s, ScopeOpen) for s in body) == sum(isinstance(s, ScopeClose) for s in body) == 1
    assert any(isinstance(s, Label) and s.name == "$L__BB0_2" for s in body)


def test_instructions_and_operands():
    ins = {i.opcode: i for i in parse(KERNEL).entry().instructions()}
    ld = ins["ld.global.L1::evict_last.L2::cache_hint.v4.b32"]
    assert ld.op == "ld" and ld.mods == ("global", "L1::evict_last", "L2::cache_hint", "v4", "b32")
    assert ld.pred == "%p1" and not ld.pred_neg
    assert ld.operands == [Vec((Reg("%r2"), Reg("%r3"), Reg("%r4"), Reg("%r5"))), Addr(Reg("%rd1"), 16),
                           Reg("%rd2")]
    assert ins["ld.global.f32"].operands[1] == Addr(Reg("%rd1"), -8)
    assert ins["ld.param.u64"].operands[1] == Addr(Sym("k_param_0"), 0)
    assert ins["mov.f32"].operands[1] == Imm("0f3F800000") and ins["mov.f32"].operands[1].value is None
    assert ins["mov.u32"].operands[1] == Reg("%tid.x")
    bra = ins["bra"]
    assert bra.pred == "%ptmp" and bra.pred_neg and bra.operands == [Sym("$L__BB0_2")]
    setp = ins["setp.eq.and.pred"]
    assert setp.operands[0] == Raw("%p2|%p3") and setp.operands[-1] == Neg(Reg("%p1"))
    assert ins["ret"].operands == []


def test_emit_is_a_fixed_point():
    once = emit(parse(KERNEL))
    assert emit(parse(once)) == once
    assert "[%rd1+-8]" in once and "{%r2, %r3, %r4, %r5}, [%rd1+16], %rd2;" in once


def test_instruction_mutation_is_visible_in_emit():
    m = parse(KERNEL)
    ld = next(i for i in m.entry().instructions() if i.opcode == "ld.global.f32")
    ld.opcode = "ld.global.cs.f32"
    assert "ld.global.cs.f32 \t%f1, [%rd1+-8];" in emit(m)


def test_multiline_vector_operand():
    text = KERNEL.replace("{ %r2, %r3, %r4, %r5 }", "{ %r2,\n %r3,\n %r4, %r5 }")
    assert emit(parse(text)) == emit(parse(KERNEL))


@pytest.mark.parametrize(
    "bad, line",
    [
        (KERNEL.replace(".version 8.7", ".versio 8.7"), 4),
        (KERNEL.replace("[%rd1+8], {%f1, %f2};", "[%rd1+8], {%f1, %f2}"), 46),
        (KERNEL.replace("ret;\n}", "ret;\n"), 49),
        (KERNEL.replace("%r<12>", "%r<12"), 26),
        (KERNEL.replace("mov.u32 \t%r1", "mov.u32 \t%r1 #"), 31),
    ],
)
def test_errors_carry_line_and_column(bad, line):
    with pytest.raises(PTXParseError) as exc:
        parse(bad, file="bad.ptx")
    e = exc.value
    assert isinstance(e, ChronosError)
    assert e.file == "bad.ptx" and e.line == line and e.column >= 1
    assert str(e).startswith(f"bad.ptx:{line}:")


def test_instruction_equality_ignores_nothing_but_line():
    a = Instruction("add.s32", [Reg("%r1"), Reg("%r2"), Imm("1")])
    b = Instruction("add.s32", [Reg("%r1"), Reg("%r2"), Imm("1")])
    assert a.operands == b.operands and a.opcode == b.opcode
