"""Deployment re-derives tuned PTX from an entry's decisions (chronos.triton.rederive)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from chronos.kernels.spec import load_specs, read_ptx_file
from chronos.triton.rederive import DeriveError, contract, derive, tuned_ptx
from chronos.triton.tuned_db import Entry, make_key
from chronos.tuning.deploy_rule import deploys
from chronos.tuning.parts import returned_candidate

ROOT = Path(__file__).resolve().parents[2]
CORPORA = [ROOT / "data/library/attorch", *sorted((ROOT / "data/kernels/captured").iterdir())]


def _deployed(corpus: Path):
    specs = {s.kernel: s for s in load_specs(corpus / "specs.json")}
    identity = json.loads((corpus / "triton.json").read_text())
    for part in sorted((corpus / "tune-parts").glob("*.json")):
        row = json.loads(part.read_text())
        if deploys(row) and row["kernel"] in identity:
            stock = read_ptx_file(corpus / identity[row["kernel"]]["stock_ptx"])
            yield specs[row["kernel"]], stock, returned_candidate(row)["actions"], part.with_suffix(".ptx")


def test_every_committed_tuned_kernel_is_remade_exactly_from_its_stock_ptx_and_actions():
    """What `chronos tune` measured and recorded is byte for byte what deployment makes again."""
    seen = 0
    for corpus in CORPORA:
        for spec, stock, actions, tuned in _deployed(corpus):
            assert derive(stock, actions, spec.alignment) == tuned.read_text(), (corpus.name, spec.kernel)
            seen += 1
    assert seen >= 40  # attorch's and the four captured workloads' faster kernels


def _entry(stock: str, ptx: str, actions, alignment) -> Entry:
    key = make_key("h" * 64, stock, "k", gpu="g", driver="d", ptxas="p")
    return Entry(key=key, actions=tuple(actions), ptx=ptx, ptx_sha256="", ratio=0.9, ci=(0.8, 0.95),
                 verification={}, provenance={"alignment": alignment})


def test_the_alignment_contract_names_only_pointer_parameters_at_16_bytes():
    spec, stock, actions, tuned = next(_deployed(ROOT / "data/library/attorch"))
    entry = _entry(stock, tuned.read_text(), actions, spec.alignment)
    assert tuned_ptx(stock, entry) == tuned.read_text()
    some = next(iter(spec.alignment))
    with pytest.raises(DeriveError, match="not a map of pointer parameters to 16 bytes"):
        contract(replace(entry, provenance={"alignment": {some: 64}}))
    scalar = next(a.name for a in spec.args if a.kind == "scalar")
    with pytest.raises(DeriveError, match="not pointer parameters"):
        derive(stock, actions, {scalar: 16})
    with pytest.raises(DeriveError, match="do not apply"):
        tuned_ptx(stock, replace(entry, actions=("no_such_action",)))
    with pytest.raises(DeriveError, match="do not apply"):
        tuned_ptx("this is not PTX", entry)
