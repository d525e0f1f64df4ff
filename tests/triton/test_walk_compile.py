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


def test_configs_compile_from_a_module_named_as_the_capture_s_once_stock_is_remade(tmp_path):
    """The walk's compile writes the module under the stock PTX's source name, first remakes the stock PTX
    there (a kernel whose stock is not remade is refused, with why), then compiles the configs: their PTX
    names the capture's module in its `.loc` comments, as deployment's does."""
    import gzip
    from pathlib import Path
    from types import SimpleNamespace

    from chronos.search.knob_walk import Point
    from chronos.triton.inductor_source import compile_config, load_tuner, with_config
    from chronos.triton.tuned_db import ptx_identity_sha256

    module = Path(__file__).parent / "inductor_modules" / "pointwise_mul.py"
    name, stock = "triton_poi_fused_mul_0", {"kwargs": {"XBLOCK": 512}, "num_warps": 4, "num_stages": 1}
    tuner = load_tuner(module, name)
    stock_ptx = compile_config(tuner, with_config(tuner.configs[0], **stock))[0]
    (tmp_path / "ptx").mkdir()
    (tmp_path / "ptx" / "k.ptx.gz").write_bytes(gzip.compress(stock_ptx.encode()))
    args = [{"kind": "buffer"}, {"kind": "buffer"}, {"kind": "scalar", "value": 65536}]
    (tmp_path / "specs.json").write_text(json.dumps([{"kernel": "k_1", "ptx": "ptx/k.ptx.gz", "args": args,
                                                      "grid": [128, 1, 1]}]))
    (tmp_path / "walk" / "k").mkdir(parents=True)
    (tmp_path / "walk" / "k" / "module.py.gz").write_bytes(gzip.compress(module.read_bytes()))
    entry = {"stem": "k", "name": name, "module": "walk/k/module.py.gz", "stock": stock,
             "ident": ptx_identity_sha256(stock_ptx), "grid_checks": {"k_1": True}, "configs": {}}
    (tmp_path / "walk.json").write_text(json.dumps({"provenance": {}, "kernels": {"ptx/k.ptx.gz": entry}}))
    spec = SimpleNamespace(kernel="k_1", ptx="ptx/k.ptx.gz")
    compiler = TritonCompiler(tmp_path, jobs=1)
    try:
        point = Point.of({"kwargs": {"XBLOCK": 1024}, "num_warps": 8, "num_stages": 1})
        compiler.compile(spec, compiler.manifest["kernels"]["ptx/k.ptx.gz"], [point])
        assert compiler.modules["ptx/k.ptx.gz"].name == "pointwise_mul.py"
        made = compiler.manifest["kernels"]["ptx/k.ptx.gz"]["configs"][point.label]
        ptx = gzip.decompress((tmp_path / made["ptx"]).read_bytes()).decode()
        assert "pointwise_mul.py:" in ptx and ".reqntid 256" in ptx
        compiler.manifest["kernels"]["ptx/k.ptx.gz"]["ident"] = "0" * 64  # stock not remade here
        compiler.modules.clear()
        with pytest.raises(ChronosError, match="k_1: the walk's compile of its stock config does not remake"):
            compiler.compile(spec, compiler.manifest["kernels"]["ptx/k.ptx.gz"], [point])
    finally:
        compiler.close()
