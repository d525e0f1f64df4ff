"""atlas_kernel on one small kernel through a stand-in backend (made-up costs, logic only)."""

import json
from pathlib import Path

from chronos.kernels.spec import load_module, load_specs
from chronos.search import enumerate_sets
from chronos.stages import atlas_kernel

from ..search.test_search import StandInBackend

ROOT = Path(__file__).resolve().parents[2]


def test_atlas_part_holds_the_oracle_of_every_legal_set(tmp_path, monkeypatch):
    backend = StandInBackend(poisoned=())
    monkeypatch.setattr(atlas_kernel, "make_backend", lambda *a, **k: backend)
    backend.provenance = lambda: {"gpu": "stand-in"}
    backend.close = lambda: None
    out = tmp_path / "gemm_tile_2_2_2.json"
    rc = atlas_kernel.main(["--params", str(ROOT / "params.yaml"), "--kernels", str(ROOT / "data/kernels"),
                            "--kernel", "gemm_tile_2_2_2", "--out", str(out)])
    assert rc == 0
    part = json.loads(out.read_text())
    specs = ROOT / "data/kernels/gemm_tile/specs.json"
    spec = next(s for s in load_specs(specs) if s.entry == "gemm_tile_2_2_2")
    n_sets = sum(1 for _ in enumerate_sets(load_module(specs, spec)))
    res = part["result"]
    assert res["evaluated"] == n_sets and res["strategy"] == "exhaustive"
    assert res["best"]["cycles"] <= res["baseline"]["cycles"]
    assert part["provenance"]["backend"] == "StandInBackend"


def test_unknown_kernel_is_a_clear_error(tmp_path, capsys):
    rc = atlas_kernel.main(["--params", str(ROOT / "params.yaml"), "--kernels", str(ROOT / "data/kernels"),
                            "--kernel", "gemm_tile_3_3_3", "--out", str(tmp_path / "x.json")])
    assert rc == 1 and "no kernel 'gemm_tile_3_3_3'" in capsys.readouterr().err
