"""Malformed PTX never escapes as IndexError/KeyError/...: parse succeeds or raises PTXParseError."""

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronos.errors import PTXParseError
from chronos.ptx import parse

from .corpus import sample

SAMPLE = sample()
_TOKEN = re.compile(r"\S+")


def _parse_or_parse_error(text: str) -> None:
    try:
        parse(text, file="mutant.ptx")
    except PTXParseError as e:
        assert e.line >= 1 and e.column >= 1 and e.file == "mutant.ptx"


@st.composite
def mutants(draw):
    _, text = draw(st.sampled_from(SAMPLE))
    kind = draw(st.sampled_from(["truncate", "delete_token", "garbage", "duplicate_token", "swap_lines"]))
    if kind == "truncate":
        return text[: draw(st.integers(0, len(text)))]
    spans = [m.span() for m in _TOKEN.finditer(text)]
    a, b = spans[draw(st.integers(0, len(spans) - 1))]
    if kind == "delete_token":
        return text[:a] + text[b:]
    if kind == "duplicate_token":
        return text[:b] + " " + text[a:b] + text[b:]
    if kind == "swap_lines":
        lines = text.splitlines()
        i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines)
    junk = draw(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x2FF), min_size=1, max_size=8))
    pos = draw(st.integers(0, len(text)))
    return text[:pos] + junk + text[pos:]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutants())
def test_mutated_corpus_parses_or_raises_parse_error(text):
    _parse_or_parse_error(text)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes(data):
    _parse_or_parse_error(data.decode("latin-1"))


def test_every_prefix_of_a_small_kernel():
    _, text = SAMPLE[-1]
    for cut in range(0, len(text), 7):
        _parse_or_parse_error(text[:cut])
