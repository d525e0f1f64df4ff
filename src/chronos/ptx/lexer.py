"""Tokeniser for PTX text. Newlines are tokens because some directives (.loc, .target, .maxnreg) end at them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from chronos.errors import PTXParseError

# Order matters: comments before '/', hex/float literals before plain integers, words last.
_TOKEN_RE = re.compile(
    r"""
    (?P<nl>\n)
  | (?P<ws>[ \t\r\f\v]+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<num>0[fF][0-9a-fA-F]{8}(?![\w$])|0[dD][0-9a-fA-F]{16}(?![\w$])|0[xX][0-9a-fA-F]+U?|0[bB][01]+U?
           |\d+\.\d*(?:[eE][+-]?\d+)?|\d+U?)
  | (?P<word>[A-Za-z_$%.][\w$.]*(?:::[\w$.]+)*)
  | (?P<punct>[,;{}\[\]()+\-!@|<>:=])
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # nl, comment, string, num, word, punct, eof
    text: str
    line: int
    col: int
    start: int
    end: int


def tokenize(text: str, file: str | None = None) -> list[Token]:
    """Split PTX into tokens (whitespace dropped). Raises PTXParseError on a character PTX cannot contain."""
    tokens: list[Token] = []
    pos, line, line_start, n = 0, 1, 0, len(text)
    match = _TOKEN_RE.match
    while pos < n:
        m = match(text, pos)
        if m is None or m.end() == pos:
            col = pos - line_start + 1
            raise PTXParseError(f"unexpected character {text[pos]!r}", line=line, column=col, file=file)
        kind = m.lastgroup
        end = m.end()
        if kind != "ws":
            tokens.append(Token(kind, m.group(), line, pos - line_start + 1, pos, end))
        if kind == "nl":
            line += 1
            line_start = end
        elif kind == "comment" and "\n" in m.group():
            line += m.group().count("\n")
            line_start = pos + m.group().rfind("\n") + 1
        pos = end
    tokens.append(Token("eof", "", line, pos - line_start + 1, n, n))
    return tokens
