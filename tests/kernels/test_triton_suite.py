"""The committed Triton suite (data/kernels/triton/): 33 named cases, specs that mirror their PTX entries,
PTX that parses and assembles for sm_90a, and an H200 provenance record where every case passed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronos.kernels.spec import load_specs, ptx_path
from chronos.kernels.triton_suite import BY_NAME, CASES
from chronos.ptx import parse

SUITE = Path(__file__).resolve().parents[2] / "data" / "kernels" / "triton"
SPECS = SUITE / "specs.json"


def test_registry_has_33_unique_cases():
    names = [c.name for c in CASES]
    assert len(names) == 33 and len(set(names)) == 33
    assert "attention_d64_kv64" in BY_NAME
    tags = {t for c in CASES for t in c.tags}
    assert {"latency", "register", "nodiv"} <= tags


def test_nodiv_cases_have_unaligned_buffers_or_sizes():
    for c in CASES:
        if "nodiv" in c.tags:
            offsets = [getattr(a, "offset", 0) for a in c.args]
            sizes = [a.value for a in c.args if not hasattr(a, "shape") and isinstance(a.value, int)]
            assert any(offsets) or any(s % 16 for s in sizes), c.name


def test_specs_load_and_cover_the_registry():
    specs = load_specs(SPECS)
    assert [s.kernel for s in specs] == [c.name for c in CASES]
    for s in specs:
        assert s.family == "triton" and s.arch == "sm_90a" and s.ptx == f"{s.kernel}.ptx"
        assert [a.kind for a in s.args[-2:]] == ["null", "null"]


@pytest.mark.parametrize("spec", load_specs(SPECS), ids=lambda s: s.kernel)
def test_spec_args_mirror_ptx_entry(spec):
    text = ptx_path(SPECS, spec).read_text()
    entry = parse(text).entry(spec.entry)
    assert [a.name for a in spec.args] == [p.name for p in entry.params]
    for a, p in zip(spec.args, entry.params, strict=True):
        assert p.is_ptr == (a.kind in ("buffer", "null")), a.name
    assert set(spec.alignment) <= {a.name for a in spec.args if a.kind == "buffer"}
    assert f".reqntid {spec.block[0]}" in text
    case = BY_NAME[spec.kernel]
    if "nodiv" in case.tags and any(getattr(a, "offset", 0) for a in case.args):
        assert len(spec.alignment) < sum(a.kind == "buffer" for a in spec.args)


@pytest.mark.parametrize("spec", load_specs(SPECS), ids=lambda s: s.kernel)
def test_ptx_assembles_for_sm90a(spec, ptxas):
    from chronos.toolchain import assemble

    result = assemble(ptx_path(SPECS, spec).read_text(), "sm_90a", name=spec.kernel, ptxas=ptxas)
    assert spec.entry in result.entries


def test_provenance_says_all_passed():
    prov = json.loads((SUITE / "suite_provenance.json").read_text())
    assert prov["n_cases"] == prov["n_passed"] == 33
    assert set(prov["cases"]) == set(BY_NAME)
    for name, rec in prov["cases"].items():
        assert rec["passed"] and rec["check"]["ok"] and rec["nan_free"], name
        assert rec["spec_launch_bit_exact"], name
    assert "H200" in prov["provenance"]["gpu"] and prov["provenance"]["triton"] == "3.6.0"
