"""Pathological inputs: deep `{ }` nesting prints output linear in the input and never hits Python's
recursion limit; what cannot be parsed is a PTXParseError."""

import pytest

from chronos.errors import PTXParseError
from chronos.ptx import emit, parse
from chronos.ptx.parser import parse_with
from chronos.ptx.printer import MAX_INDENT

from .test_parser import KERNEL

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n\n.visible .entry k()\n{\n"
ENTRY = ".visible .entry k()\n{\n"


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "tokens"])
def test_20000_nested_scopes_print_linear_output(fast):
    n = 20_000
    text = HEAD + "{" * n + "}" * n + "\n\tret;\n}\n"  # ~40 KB; indenting by depth would print ~400 MB
    out = emit(parse_with(text, fast=fast))
    assert len(out) <= (MAX_INDENT + 3) * 2 * n + 1000
    assert out.count("{") == n + 1 and out.count("}") == n + 1
    assert emit(parse(out)) == out  # still a fixed point


def test_indentation_is_unchanged_for_shallow_nesting():
    out = emit(parse(HEAD + "{\n{\nret;\n}\n}\n}\n"))
    assert "\n\t{\n\t\t{\n\t\t\tret;\n\t\t}\n\t}\n}\n" in out
    deep = emit(parse(HEAD + "{" * (MAX_INDENT + 3) + "ret;" + "}" * (MAX_INDENT + 3) + "}\n"))
    assert "\n" + "\t" * MAX_INDENT + "ret;\n" in deep and "\t" * (MAX_INDENT + 1) not in deep


@pytest.mark.parametrize(
    "text",
    [
        HEAD + "{" * 100_000 + "\n",  # unterminated
        HEAD + "mov.u32 %r1, " + "{" * 50_000 + ";\n}\n",
        HEAD + "mov.u32 %r1, " + "[" * 50_000 + ";\n}\n",
        HEAD.replace(ENTRY, ".global .b8 x[1] = " + "{" * 50_000 + "1;\n"),
        HEAD.replace(ENTRY, ".section .s " + "{" * 50_000 + "\n"),
    ],
    ids=["body", "vector", "brackets", "initialiser", "section"],
)
def test_deep_nesting_errors_are_parse_errors(text):
    with pytest.raises(PTXParseError) as exc:
        parse(text, file="deep.ptx")
    assert str(exc.value).startswith("deep.ptx:")


@pytest.mark.parametrize(
    "text",
    [
        HEAD + "mov.u32 %r1, " + "[" * 50_000 + "%r2" + "]" * 50_000 + ";\n}\n",
        HEAD.replace(ENTRY, ".global .b8 x = " + "{" * 50_000 + "1" + "}" * 50_000 + ";\n"),
        HEAD.replace(ENTRY, ".section .s " + "{" * 50_000 + "}" * 50_000 + "\n"),
    ],
    ids=["brackets", "initialiser", "section"],
)
def test_deep_nesting_outside_scopes_is_kept_verbatim(text):
    out = emit(parse(text))
    assert len(out) < 2 * len(text)
    assert emit(parse(out)) == out


def test_error_positions_deep_in_a_kernel():
    lines = KERNEL.split("\n")
    i = next(k for k, ln in enumerate(lines) if ln.startswith("\tst.global.v2.f32"))
    lines[i] = lines[i].replace("{%f1, %f2}", "{%f1 %f2}")
    with pytest.raises(PTXParseError) as exc:
        parse("\n".join(lines), file="k.ptx")
    assert (exc.value.line, exc.value.column) == (i + 1, lines[i].index("%f2") + 1)
