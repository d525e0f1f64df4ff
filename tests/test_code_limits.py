"""Limits the code keeps (as tinygrad enforces its line counts): small modules, short functions."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "chronos"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _modules():
    return sorted(SRC.rglob("*.py"))


def test_modules_stay_small():
    sizes = {str(f.relative_to(SRC)): len(f.read_text().splitlines()) for f in _modules()}
    big = {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not big, f"modules over {MAX_MODULE_LINES} lines (split them): {big}"


def test_functions_stay_short():
    long = {}
    for f in _modules():
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{f.relative_to(SRC)}:{node.lineno} {node.name}"] = n
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them into named steps): {long}"
