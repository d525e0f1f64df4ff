"""Tokeniser for PTX text. Newlines are tokens because some directives (.loc, .target, .maxnreg) end at them.

The word, number and whitespace patterns are exported as regex fragments so that the line fast path
(`fastpath.py`) recognises exactly the tokens this tokeniser would produce. Tokens carry only their offsets;
line and column are computed on demand (errors, instruction lines).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

# Fragments shared with the fast path. Possessive/atomic forms match what the tokeniser's alternation
# picks at a position (the longest word, the first number form that matches) and never backtrack.
WS = r"[ \t\r\f\v]"
WORD = r"[A-Za-z_$%.][\w$.]*+(?:::[\w$.]+)*+"
NUM = (r"(?>0[fF][0-9a-fA-F]{8}(?![\w$])|0[dD][0-9a-fA-F]{16}(?![\w$])|0[xX][0-9a-fA-F]+U?|0[bB][01]+U?"
       r"|\d+\.\d*(?:[eE][+-]?\d+)?|\d+U?)")

# Order matters: comments before '/', hex/float literals before plain integers, words last.
_TOKEN_RE = re.compile(
    rf"""
    (?P<ws>{WS}+)
  | (?P<nl>\n)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<num>{NUM})
  | (?P<word>{WORD})
  | (?P<punct>[,;{{}}\[\]()+\-!@|<>:=])
  | (?P<bad>.)
    """,
    re.VERBOSE | re.DOTALL,
)


class Token(NamedTuple):
    kind: str  # nl, comment, string, num, word, punct, eof
    text: str
    start: int
    end: int


def iter_tokens(text: str, pos: int = 0) -> Iterator[Token]:
    """Tokens of text from offset pos (a token boundary), whitespace dropped; `bad` tokens included."""
    for m in _TOKEN_RE.finditer(text, pos):
        kind = m.lastgroup
        if kind != "ws":
            yield Token(kind, m.group(), m.start(), m.end())


def line_col(text: str, offset: int) -> tuple[int, int]:
    """Offset -> (line, column), both 1-based."""
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1

