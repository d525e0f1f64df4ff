"""chronos.triton.walk_compile's guards on this CPU: the walk compiles its configs under the ptxas its roots
were remade with (Triton writes that ptxas's PTX ISA into `.version`) and under the capture's module file
name (Triton writes it into every `.loc` comment); either one different made every walked config's PTX one
that no deployment makes (2026-12-06: `.version 8.7` and `<stem>.py` against the capture's 9.0 and
Inductor's hashed name), so that its PTX entry never deployed."""

from __future__ import annotations

import json
import sys

import pytest

pytest.importorskip("torch._inductor.runtime.triton_heuristics")

from chronos.errors import ChronosError
from chronos.triton.walk_compile import TritonCompiler, source_name


def test_the_module_keeps_the_name_the_stock_ptx_was_compiled_from():
    ptx = ('.version 9.0\n\t.file\t1 "/tmp/inductor-bert/qw/cqw752aqzj.py"\n'
           "\t.loc\t1 18 0 // cqw752aqzj.py:18:0\n")
    assert source_name(ptx) == "cqw752aqzj.py"
    assert source_name(".version 9.0\n") == "module.py"


def _manifest(folder, ptxas):
    (folder / "specs.json").write_text("[]")
    (folder / "walk.json").write_text(json.dumps({"provenance": {"ptxas": ptxas}, "kernels": {}}))


def test_a_walk_is_refused_where_the_ptxas_its_roots_were_remade_under_is_absent(tmp_path):
    _manifest(tmp_path, str(tmp_path / "no-such" / "ptxas"))
    with pytest.raises(ChronosError, match="roots were remade under ptxas .*no-such/ptxas, not here"):
        TritonCompiler(tmp_path)
    _manifest(tmp_path, sys.executable)  # a file that exists stands for it
    compiler = TritonCompiler(tmp_path, jobs=1)
    compiler.close()
