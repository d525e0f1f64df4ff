"""The body fast path builds exactly what the token parser builds, and fails exactly where it fails."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronos.errors import PTXParseError
from chronos.kernels.gemm_tile import gemm_tile_ptx
from chronos.ptx import emit, parse
from chronos.ptx.parser import parse_with
from chronos.ptx.statements import StatementParser

from .corpus import committed_files, sample
from .test_parser import KERNEL

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n\n.visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n"


def outcome(text: str, fast: bool):
    """The Module with every instruction's line (Instruction equality ignores lines), or the error text."""
    try:
        m = parse_with(text, "t.ptx", fast=fast)
    except PTXParseError as e:
        return str(e)
    return m, [[i.line for i in f.instructions()] for f in m.functions()], emit(m)


def assert_same(text: str) -> None:
    assert outcome(text, fast=True) == outcome(text, fast=False)


@pytest.mark.parametrize("path", committed_files(), ids=lambda p: p.name)
def test_corpus_files(path):
    assert_same(path.read_text())


def test_gemm_tile_takes_the_fast_path_only(monkeypatch):
    """A regression in the patterns would still parse correctly, only slowly: catch that here."""
    calls = []
    original = StatementParser.body_token
    monkeypatch.setattr(StatementParser, "body_token", lambda self, out, depth: calls.append(1) or
                        original(self, out, depth))
    parse(gemm_tile_ptx(4, 6, 4))
    assert calls == []


STATEMENTS = [
    # addresses: offsets int() cannot read stay Raw, like the token parser's
    "ld.global.f32 %f1, [%rd1+08];", "ld.global.f32 %f1, [%rd1+0f3F800000];",
    "ld.global.f32 %f1, [ %rd1 + - 8 ];", "ld.global.f32 %f1, [%rd1-8];", "ld.global.f32 %f1, [16];",
    "ld.global.f32 %f1, [16+4];", "ld.global.f32 %f1, [1.5e+3];", "ld.global.f32 %f1, [%rd1+1.5e+3];",
    "ld.global.f32 %f1, [%rd1 - - 8];", "ld.global.f32 %f1, [%rd1+0x10U];", "ld.global.f32 %f1, [k_param_0];",
    "ld.global.f32 %f1, [%rd1+%rd2];",
    # immediates, negation, vectors, raw operands
    "mov.f32 %f1, - 0f3F800000;", "mov.f32 %f1, 0f3F80000;", "add.s32 %r1, %r2, 16U;",
    "add.s32 %r1, %r2, 16u;",
    "mov.u32%r1, 0x1fg;", "@ ! %p1 bra $L1;", "@%p1bra $L1;", "@%p1 %r1;", "@%p1 .x %r1;",
    "setp.eq.and.pred %p2|%p3, %r1, 0, !%p1;", "mov.b64 %rd1, {%r1, -1, _, 0x10};", "mov.b64 %rd1, { };",
    "mov.b64 %rd1, {%r1, {%r2}};", "call.uni (retval0), f, (param0);", "mov.u32 %r1, é;", "mov.u32 %ré1, 1;",
    # statement boundaries: several on a line, trailing comments, labels
    "ret;", "ret ;", "{ ret; }", "$L1: ret;", "foo::", "L :", "foo\n: ret;", ".reg:", "..x %r1;",
    "ld.param.u64 %rd1, [k_param_0]; // trailing", "/* block */ ret;", "ret; /* a\nb */ ret;",
    "mov.u32 %r1,\n 2;", "mov.u32 %r1, 2 // c\n;", "add.s32 %r1, %r2, ;", "add.s32 %r1 %r2;",
    # declarations and line directives
    ".reg .b32 %r<0x10>;", ".reg .b32 %r<08>;", ".reg .v4 .b32 %v, %w<2>;", ".reg.b32 %r;",
    ".reg.b64 %rd<8>;", ".reg %r;", ".reg .b32 %r<0f3F800000>;",
    ".reg .pred complete;\nmov.pred complete, 1;", ".loc 1 2 3 // c\r",
    ".loc\t1 2 3   ", ".loc 1 2 3;", ".loc :", '.loc 1 "x"', ".locx 1 2", ".loc.x 1", ".loc",
    '.pragma "nounroll";', ".local .align 4 .b8 buf[16];", "mov.u32 %r1, 1; #",
]


@pytest.mark.parametrize("stmt", STATEMENTS)
def test_edge_statements(stmt):
    assert_same(HEAD + "\t" + stmt + "\n\tret;\n}\n")


_CHARS = list(" \t\r\n+-!{}[]:;,.%_$@<>|()/\"#*Uuxfe019") + ["::", "0f3F800000", "//", "/*", "*/", "0x", "+-"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([KERNEL, gemm_tile_ptx(2, 2, 2)] + [t for _, t in sample() if len(t) < 40_000]),
       st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.sampled_from(_CHARS), st.booleans()),
                min_size=1, max_size=3))
def test_mutated_bodies(text, edits):
    """Random edits, mostly inside body lines: the same IR, or the same error at the same place."""
    lines = text.split("\n")
    body = [i for i, ln in enumerate(lines) if ln.startswith("\t")] or list(range(len(lines)))
    for where, col, ch, insert in edits:
        i = body[int(where * (len(body) - 1))]
        j = int(col * len(lines[i]))
        lines[i] = lines[i][:j] + ch + lines[i][j + (0 if insert else 1):]
    assert_same("\n".join(lines))


MODULE_ITEMS = [
    ".section .debug_info { .b8 1 // x\n.b32 2 }", ".section .s\n{\n.b8 1\n}", ".section .s {}",
    ".section .s { { } }", '.section .s { .b8 "}" }', ".section .s { /* } */ }", ".section .s } {",
    ".section .s { # }", ".section .s {", ".section .s { .b8 1 // }\n}", ".section.x { }", '.file 1 "a.py"',
    ".global .align 4 .b8 t[2] = {1, 2};",
]


@pytest.mark.parametrize("item", MODULE_ITEMS)
def test_module_items(item):
    assert_same(HEAD.replace(".visible", item + "\n.visible") + "\tret;\n}\n")
