"""The committed H200 store replays the committed reports exactly, on a CPU; a miss is a clear error."""

import json
import os
import shutil
from pathlib import Path

import pytest

from chronos.errors import MeasurementMissError
from chronos.kernels.spec import load_module, load_specs
from chronos.kernels.variant import Variant
from chronos.ptx import emit
from chronos.search.atlas_replay import backend_with_atlas
from chronos.stages import baseline, greedy, greedy_kernel
from chronos.transforms import apply

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "data/store/measurements.sqlite"


@pytest.fixture
def store(tmp_path):
    copy = tmp_path / "m.sqlite"  # replay only reads, but never risk the committed files
    shutil.copy(STORE, copy)
    shutil.copy(STORE.parent / "atlas.sqlite", tmp_path / "atlas.sqlite")  # read beside the store
    return copy


def _entries(path: Path, names) -> dict:
    return {k["kernel"]: k for k in json.loads(path.read_text())["kernels"] if k["kernel"] in names}


def test_greedy_kernel_jobs_replay_the_committed_parts(store, tmp_path, ptxas):
    for entry in ("gemm_tile_2_2_2", "gemm_tile_4_6_4", "gemm_tile_8_8_8"):
        out = tmp_path / f"{entry}.json"
        rc = greedy_kernel.main(["--kernels", str(ROOT / "data/kernels"), "--store", str(store), "--backend",
                                 "replay", "--kernel", entry, "--out", str(out),
                                 "--params", str(ROOT / "params.yaml")])
        assert rc == 0
        assert out.read_bytes() == (ROOT / "data/search/greedy" / f"{entry}.json").read_bytes()


def test_greedy_merge_reproduces_the_committed_reports(tmp_path):
    out, demos = tmp_path / "g.json", tmp_path / "d.jsonl"
    argv = ["--params", "params.yaml", "--kernels", "data/kernels", "--parts", "data/search/greedy",
            "--demos", "data/demos/trajectories.jsonl", "--out", "reports/greedy_results.json"]
    cwd = os.getcwd()
    try:  # the committed report records the pipeline's own command line: run it from the repo root
        os.chdir(ROOT)
        rc = greedy.main([*argv[:-4], "--demos", str(demos), "--out", str(out)])
    finally:
        os.chdir(cwd)
    assert rc == 0
    assert demos.read_bytes() == (ROOT / "data/demos/trajectories.jsonl").read_bytes()
    got, want = json.loads(out.read_text()), json.loads((ROOT / "reports/greedy_results.json").read_text())
    assert got["kernels"] == want["kernels"] and got["summary"] == want["summary"]


def test_greedy_merge_names_missing_parts(tmp_path, capsys):
    assert greedy.main(["--params", str(ROOT / "params.yaml"), "--kernels", str(ROOT / "data/kernels"),
                        "--parts", str(tmp_path), "--out", str(tmp_path / "g.json"),
                        "--demos", str(tmp_path / "d.jsonl")]) == 2
    assert "no part for 64 kernels" in capsys.readouterr().err


def test_baseline_replays_the_committed_report(store, tmp_path):
    out = tmp_path / "b.json"
    assert baseline.main(["--kernels", str(ROOT / "data/kernels"), "--store", str(store),
                          "--backend", "replay", "--out", str(out), "--only", r"softmax|gemm_tile\(4,6,8\)",
                          "--params", str(ROOT / "params.yaml")]) == 0
    got = _entries(out, {k["kernel"] for k in json.loads(out.read_text())["kernels"]})
    assert got and got == _entries(ROOT / "reports/baseline.json", got.keys())
    assert all(k["valid"] for k in got.values())
    # replay opens the store and the atlas read-only: both copies are byte for byte the committed files
    assert store.read_bytes() == STORE.read_bytes()
    assert (store.parent / "atlas.sqlite").read_bytes() == (STORE.parent / "atlas.sqlite").read_bytes()


def test_a_miss_names_kernel_actions_and_hash(store):
    specs_json = ROOT / "data/kernels/gemm_tile/specs.json"
    spec = next(s for s in load_specs(specs_json) if s.kernel == "gemm_tile(2,2,2)")
    odd = emit(apply(load_module(specs_json, spec), "prefetch_L1")).replace("ret;", "ret;\n\t// unmeasured")
    v = Variant(spec, odd, ("prefetch_L1",))
    with backend_with_atlas("replay", store) as be, pytest.raises(MeasurementMissError) as e:
        be.measure(spec, [v])
    msg = str(e.value)
    assert "gemm_tile(2,2,2)" in msg and "prefetch_L1" in msg and v.ptx_sha256[:12] in msg
