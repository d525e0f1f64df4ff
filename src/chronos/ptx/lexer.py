"""Tokeniser for PTX text. Newlines are tokens because some directives (.loc, .target, .maxnreg) end at them.

Tokens carry only their offsets; line and column are computed on demand (errors, instruction lines), which
keeps tokenising a 700-line kernel to a few milliseconds.
"""

from __future__ import annotations

import bisect
import re
from typing import NamedTuple

from chronos.errors import PTXParseError

# Order matters: comments before '/', hex/float literals before plain integers, words last.
_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\f\v]+)
  | (?P<nl>\n)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<num>0[fF][0-9a-fA-F]{8}(?![\w$])|0[dD][0-9a-fA-F]{16}(?![\w$])|0[xX][0-9a-fA-F]+U?|0[bB][01]+U?
           |\d+\.\d*(?:[eE][+-]?\d+)?|\d+U?)
  | (?P<word>[A-Za-z_$%.][\w$.]*(?:::[\w$.]+)*)
  | (?P<punct>[,;{}\[\]()+\-!@|<>:=])
  | (?P<bad>.)
    """,
    re.VERBOSE | re.DOTALL,
)


class Token(NamedTuple):
    kind: str  # nl, comment, string, num, word, punct, eof
    text: str
    start: int
    end: int


class Positions:
    """Offset -> (line, column), both 1-based."""

    def __init__(self, text: str):
        self.newlines = [i for i, c in enumerate(text) if c == "\n"] if "\n" in text else []

    def line_col(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_left(self.newlines, offset)
        start = self.newlines[line - 1] + 1 if line else 0
        return line + 1, offset - start + 1


def tokenize(text: str, file: str | None = None) -> list[Token]:
    """Split PTX into tokens (whitespace dropped), ending with two `eof` tokens so that one token of
    look-ahead never runs off the end. Raises PTXParseError on a character PTX cannot contain."""
    toks = [Token(m.lastgroup, m.group(), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)
            if m.lastgroup != "ws"]
    for t in toks:
        if t.kind == "bad":
            line, col = Positions(text).line_col(t.start)
            raise PTXParseError(f"unexpected character {t.text!r}", line=line, column=col, file=file)
    n = len(text)
    toks.append(Token("eof", "", n, n))
    toks.append(Token("eof", "", n, n))
    return toks
