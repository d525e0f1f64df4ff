"""The committed H200 store replays the committed reports exactly, on a CPU; a miss is a clear error."""

import json
import shutil
from pathlib import Path

import pytest

from chronos.kernels.spec import load_module, load_specs
from chronos.measure.backend import MeasurementMissError, ReplayBackend
from chronos.measure.config import Variant
from chronos.ptx import emit
from chronos.stages import baseline, greedy
from chronos.transforms import apply

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "data/store/measurements.sqlite"
ONLY = r"gemm_tile\((2,2,2|4,6,4|8,8,8)\)$"


@pytest.fixture
def store(tmp_path):
    copy = tmp_path / "m.sqlite"  # replay only reads, but never risk the committed file
    shutil.copy(STORE, copy)
    return copy


def _entries(path: Path, names) -> dict:
    return {k["kernel"]: k for k in json.loads(path.read_text())["kernels"] if k["kernel"] in names}


def test_greedy_replays_the_committed_results(store, tmp_path, ptxas):
    out, demos = tmp_path / "g.json", tmp_path / "d.jsonl"
    rc = greedy.main(["--kernels", str(ROOT / "data/kernels"), "--store", str(store), "--backend", "replay",
                      "--out", str(out), "--demos", str(demos), "--only", ONLY, "--params", str(ROOT / "params.yaml")])
    assert rc == 0
    got = _entries(out, {"gemm_tile(2,2,2)", "gemm_tile(4,6,4)", "gemm_tile(8,8,8)"})
    want = _entries(ROOT / "reports/greedy_results.json", got.keys())
    assert len(got) == 3 and got == want
    committed = [json.loads(x) for x in (ROOT / "data/demos/trajectories.jsonl").read_text().splitlines()]
    replayed = [json.loads(x) for x in demos.read_text().splitlines()]
    assert replayed == [d for d in committed if d["kernel"] in got]


def test_baseline_replays_the_committed_report(store, tmp_path):
    out = tmp_path / "b.json"
    assert baseline.main(["--kernels", str(ROOT / "data/kernels"), "--store", str(store), "--backend", "replay",
                          "--out", str(out), "--only", r"softmax|gemm_tile\(4,6,8\)",
                          "--params", str(ROOT / "params.yaml")]) == 0
    got = _entries(out, {k["kernel"] for k in json.loads(out.read_text())["kernels"]})
    assert got and got == _entries(ROOT / "reports/baseline.json", got.keys())
    assert all(k["valid"] for k in got.values())


def test_a_miss_names_kernel_actions_and_hash(store):
    specs_json = ROOT / "data/kernels/gemm_tile/specs.json"
    spec = next(s for s in load_specs(specs_json) if s.kernel == "gemm_tile(2,2,2)")
    odd = emit(apply(load_module(specs_json, spec), "prefetch_L1")).replace("ret;", "ret;\n\t// unmeasured")
    v = Variant(spec, odd, ("prefetch_L1",))
    with ReplayBackend(store) as be, pytest.raises(MeasurementMissError) as e:
        be.measure(spec, [v])
    msg = str(e.value)
    assert "gemm_tile(2,2,2)" in msg and "prefetch_L1" in msg and v.ptx_sha256[:12] in msg
