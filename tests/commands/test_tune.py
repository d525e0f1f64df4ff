"""`chronos tune` on replay: per-kernel parts that reproduce the evaluation, a tuned DB written only for
kernels with a Triton identity, and the shards run as self-contained jobs through Snakemake's
cluster-generic executor (a local submit command standing in for a cluster)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chronos.cli import main
from chronos.triton import TunedDB

ROOT = Path(__file__).resolve().parents[2]
TRITON = ROOT / "data/kernels/triton"
KERNELS = ("rowmax_f32_r64_c8192", "layernorm_f16_r64_c4096", "softmax_r32_c128")
REPLAY = ["--no-confirm", "--backend", "replay", "--store", str(ROOT / "data/store/measurements.sqlite"),
          "--checkpoint", str(ROOT / "models/checkpoint_best.pt"), "--params", str(ROOT / "params.yaml")]


def _workload(tmp_path: Path) -> Path:
    """Three suite kernels as a 'captured' folder; rowmax gets a Triton identity (as capture writes it)."""
    d = tmp_path / "work"
    d.mkdir()
    specs = [s for s in json.loads((TRITON / "specs.json").read_text()) if s["kernel"] in KERNELS]
    (d / "specs.json").write_text(json.dumps(specs))
    for s in specs:
        shutil.copy(TRITON / s["ptx"], d / s["ptx"])
    (d / "triton.json").write_text(json.dumps({"rowmax_f32_r64_c8192": {
        "hash": "a" * 64, "name": "row_max_kernel", "stock_ptx": "rowmax_f32_r64_c8192.ptx"}}))
    return d


def _evaluated(kernel: str) -> dict:
    out = json.loads((ROOT / "reports/measure_triton_results.json").read_text())
    rows = out["tiers"]["triton"]["kernels"]
    return next(r for r in rows if r["kernel"] == kernel)


def test_tune_on_replay_writes_parts_and_a_db_of_the_deployable_faster_kernels(tmp_path, capsys):
    work = _workload(tmp_path)
    parts, db = tmp_path / "parts", tmp_path / "tuned.sqlite"
    assert main(["tune", str(work), "--parts", str(parts), "--db", str(db), *REPLAY]) == 0
    for k in KERNELS:
        row = json.loads((parts / f"{k}.json").read_text())
        want = _evaluated(k)
        assert row["returned"] == want["returned"] and row["speedup_time"] == want["speedup_time"]
    with TunedDB(db, readonly=True) as t:
        (entry,) = t.entries()
    assert entry.key.kernel == "row_max_kernel" and entry.ratio < 0.995 and entry.ci[1] < 0.995
    # the key holds what the comparison was measured with
    assert (entry.key.gpu, entry.key.ptxas) == ("NVIDIA H200", "13.0.88")
    assert entry.verification["bit_exact"] and entry.verification["draws"] == 2  # measure.input_draws
    assert entry.ptx == (parts / "rowmax_f32_r64_c8192.ptx").read_text() and ".maxnreg" in entry.ptx
    assert "'entries': 1" in capsys.readouterr().out  # layernorm is faster too, but has no identity


def test_a_budget_leaves_kernels_for_the_next_run_which_resumes(tmp_path, capsys):
    work = _workload(tmp_path)
    parts = tmp_path / "parts"
    assert main(["tune", str(work), "--parts", str(parts), "--budget", "0", *REPLAY]) == 0
    out, err = capsys.readouterr()
    assert not list(parts.glob("*.json")) and "3 left by the budget" in out
    summary = json.loads((tmp_path / "tune-summary.json").read_text())
    assert {r["kernel"]: r["status"] for r in summary["not_tuned"]} == dict.fromkeys(KERNELS, "left")
    assert "3 of 3 selected kernels not tuned" in err
    assert main(["tune", str(work), "--parts", str(parts), *REPLAY]) == 0
    assert len(list(parts.glob("*.json"))) == 3


@pytest.mark.slow
def test_tune_shards_run_as_cluster_jobs(tmp_path):
    pytest.importorskip("snakemake_executor_plugin_cluster_generic")
    work = _workload(tmp_path)
    cfg = [f"dir={work}", f"db={tmp_path / 'tuned.sqlite'}", "backend=replay",
           f"store={ROOT / 'data/store/measurements.sqlite'}",
           f"checkpoint={ROOT / 'models/checkpoint_best.pt'}", f"params={ROOT / 'params.yaml'}",
           f"python={sys.executable}", "confirm=false"]
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow/tune/Snakefile"), "--directory",
         str(tmp_path), "--executor", "cluster-generic", "--cluster-generic-submit-cmd", "bash",
         "--jobs", "3", "--latency-wait", "5", "--seconds-between-status-checks", "1",  # default: 10 s
         "--config", *cfg],
        capture_output=True, text=True, timeout=900, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    done = sorted(p.name for p in (work / "tune-parts").glob("*.json"))
    assert done == sorted(f"{k}.json" for k in KERNELS)
    with TunedDB(tmp_path / "tuned.sqlite", readonly=True) as t:
        assert [e.key.kernel for e in t.entries()] == ["row_max_kernel"]


def _isa_dir(tmp_path: Path, version: str, recorded: str | None = None) -> Path:
    d = tmp_path / f"isa{version}"
    (d / "ptx").mkdir(parents=True)
    (d / "ptx/k.ptx").write_text(f".version {version}\n.target sm_90a\n.address_size 64\n")
    ident = {"hash": "a" * 64, "name": "k", "stock_ptx": "ptx/k.ptx"}
    if recorded:
        ident["ptxas"] = {"path": recorded, "version": "x"}
    (d / "triton.json").write_text(json.dumps({"k": ident}))
    return d


def test_tune_measures_with_the_ptxas_that_emits_the_captured_isa(tmp_path, monkeypatch):
    """Triton picks its PTX ISA from its ptxas's CUDA version; Inductor hands Triton torch's ptxas, not
    Triton's own. `--ptxas triton` takes the ptxas whose ISA is the corpus's (H200: 9.0 from torch's 13.0,
    which Triton 3.6's own 12.8 rejects), the one capture recorded first."""
    pytest.importorskip("triton")
    from triton.backends.nvidia.compiler import get_ptxas, ptx_get_version

    from chronos.commands.tune import _ptxas
    from chronos.errors import ChronosError
    from chronos.toolchain import find_ptxas, ptxas_version

    monkeypatch.delenv("TRITON_PTXAS_PATH", raising=False)
    own = get_ptxas(90).path
    own_isa = ptx_get_version(get_ptxas(90).version)
    assert _ptxas("triton", _isa_dir(tmp_path, f"{own_isa // 10}.{own_isa % 10}")) == own
    ours = str(find_ptxas())
    isa = ptx_get_version(".".join(ptxas_version(ours).split(".")[:2]))
    if isa != own_isa:  # a corpus Triton's own ptxas cannot have emitted: found through the recorded path
        assert _ptxas("triton", _isa_dir(tmp_path, f"{isa // 10}.{isa % 10}", recorded=ours)) == ours
    with pytest.raises(ChronosError, match="ISA 1.0 and no ptxas here emits it"):
        _ptxas("triton", _isa_dir(tmp_path, "1.0"))
    assert _ptxas("/opt/x/ptxas", tmp_path) == "/opt/x/ptxas"

def test_order_by_puts_the_kernels_with_the_most_gpu_time_first():
    from types import SimpleNamespace

    from chronos.kernels.profile import by_gpu_time

    specs = [SimpleNamespace(kernel=f"k{i}", entry=e) for i, e in enumerate(["a", "b", "c", "b"])]
    profile = {"phases": {"train": {"triton_kernels_us": {"a": 5.0, "b": 3.0}},
                          "decode": {"triton_kernels_us": {"b": 4.0, "z": 99.0}}}}
    assert [s.kernel for s in by_gpu_time(specs, profile)] == ["k1", "k3", "k0", "k2"]
    assert [s.kernel for s in by_gpu_time(specs, {})] == ["k0", "k1", "k2", "k3"]


def test_float_atomics_mark_a_kernel_that_cannot_be_verified_bit_exactly():
    from chronos.kernels.spec import read_ptx_file
    from chronos.ptx.atomics import float_atomics

    captured = ROOT / "data/kernels/captured"
    racy = {p.name: float_atomics(read_ptx_file(p)) for p in captured.glob("*/ptx/*.ptx.gz")}
    racy = {name: ops for name, ops in racy.items() if ops}
    assert len(racy) == 5 and all("embedding_dense_backward" in n for n in racy)
    assert all(op.startswith("atom.global") and op.endswith("f32") for ops in racy.values() for op in ops)
    assert float_atomics("atom.global.add.u64 %rd1, [%rd2], %rd3;\nred.global.add.s32 [%rd2], %r1;") == []
    assert float_atomics("ld.shared.b32 %r1, [%r2];") == []
    assert float_atomics("red.global.add.noftz.bf16x2 [%rd2], %r1;") == ["red.global.add.noftz.bf16x2"]
    assert not any(float_atomics(p.read_text()) for p in TRITON.glob("*.ptx"))


def test_a_set_the_confirming_comparison_does_not_confirm_never_deploys(tmp_path, capsys):
    from chronos.config import Config
    from chronos.kernels.spec import load_specs
    from chronos.tuning.deploy_rule import deploys
    from chronos.tuning.kernel import confirm_one
    from tests.search.test_timed import CompareStandIn

    work = _workload(tmp_path)
    spec = next(s for s in load_specs(work / "specs.json") if s.kernel == "rowmax_f32_r64_c8192")
    ptx = (work / spec.ptx).read_text()
    slower = confirm_one(spec, work / "specs.json", CompareStandIn(), ptx, ["maxnreg_32"], Config())
    faster = confirm_one(spec, work / "specs.json", CompareStandIn(), ptx, ["cache_cs"], Config())
    assert (slower["verdict"], faster["verdict"]) == ("slower", "faster")
    assert 0.95 < faster["aa_ratio"] < 1.05 and faster["ratio"] < 0.95  # the A/A copy inside it
    returned = {"returned": "cache_cs"}
    assert deploys(returned) and deploys({**returned, "confirm": faster})
    assert not deploys({**returned, "confirm": slower}) and not deploys({"returned": "baseline"})
    parts, db = tmp_path / "parts", tmp_path / "tuned.sqlite"
    assert main(["tune", str(work), "--parts", str(parts), *REPLAY]) == 0
    part = parts / "rowmax_f32_r64_c8192.json"
    part.write_text(json.dumps({**json.loads(part.read_text()), "confirm": slower}))
    assert main(["tune", str(work), "--parts", str(parts), "--merge-only", "--db", str(db)]) == 0
    assert "'not_confirmed': 1, 'entries': 0" in capsys.readouterr().out


def test_reconfirm_captured_compares_deployed_sets_again_on_the_captured_inputs(tmp_path):
    import argparse

    import numpy as np

    from chronos.commands.tune import reconfirm_captured
    from chronos.config import Config
    from tests.search.test_timed import CompareStandIn

    work = _workload(tmp_path)
    specs = json.loads((work / "specs.json").read_text())
    row_spec = next(s for s in specs if s["kernel"] == "rowmax_f32_r64_c8192")
    arg = next(a for a in row_spec["args"] if a["kind"] == "buffer" and a["role"] == "input")
    arg["data"] = "inputs/rowmax/0.npy"
    (work / "specs.json").write_text(json.dumps(specs))
    parts = tmp_path / "parts"
    parts.mkdir()
    earlier = {"verdict": "faster", "ratio": 0.9}
    for k, returned in (("rowmax_f32_r64_c8192", "cache_cs"), ("softmax_r32_c128", "cache_cs"),
                        ("layernorm_f16_r64_c4096", "baseline")):
        (parts / f"{k}.json").write_text(json.dumps({"kernel": k, "returned": returned, "confirm": earlier}))
        (parts / f"{k}.ptx").write_text((work / f"{k}.ptx").read_text())
    args = argparse.Namespace(kernel=None, only=None, budget=None)
    backend = CompareStandIn()
    # the captured file is absent (a clone): nothing to verify on, nothing compared
    assert reconfirm_captured(args, work / "specs.json", parts, backend, Config()) == 0 and not backend.calls
    (work / "inputs/rowmax").mkdir(parents=True)
    np.save(work / "inputs/rowmax/0.npy", np.zeros(arg["elements"], dtype=np.float32))
    assert reconfirm_captured(args, work / "specs.json", parts, backend, Config()) == 1
    assert backend.calls == [[(), ("cache_cs",), ()]] and backend.remeasure is False
    row = json.loads((parts / "rowmax_f32_r64_c8192.json").read_text())
    assert row["confirm_history"] == [earlier] and row["confirm"]["verdict"] == "faster"
    assert row["confirm_inputs"] == {"captured": [arg["name"]], "draws": Config().measure.input_draws}
    # softmax has no captured input and layernorm does not deploy: untouched; a second pass does nothing
    assert "confirm_inputs" not in json.loads((parts / "softmax_r32_c128.json").read_text())
    assert reconfirm_captured(args, work / "specs.json", parts, backend, Config()) == 0
    assert len(backend.calls) == 1


def _with_a_failing_and_a_racy_kernel(work: Path) -> None:
    """Two more kernels: softmax under a name the store has nothing for (replay misses: failed) and one
    whose PTX holds a float atomic (skipped)."""
    specs = json.loads((work / "specs.json").read_text())
    soft = next(s for s in specs if s["kernel"] == "softmax_r32_c128")
    racy = (work / soft["ptx"]).read_text() + "\n// red.global.add.f32 [%rd1], %f1;\n"
    (work / "racy.ptx").write_text(racy)
    specs += [{**soft, "kernel": "softmax_unmeasured"}, {**soft, "kernel": "softmax_racy", "ptx": "racy.ptx"}]
    (work / "specs.json").write_text(json.dumps(specs))


def test_nothing_is_dropped_silently(tmp_path, capsys):
    """Every kernel not tuned is listed, with why, on stderr and in <parts>/../tune-summary.json; a failure
    in the run makes the exit status 1, one recorded by an earlier run is listed but does not."""
    work = _workload(tmp_path)
    _with_a_failing_and_a_racy_kernel(work)
    parts = tmp_path / "parts"
    assert main(["tune", str(work), "--parts", str(parts), *REPLAY]) == 1
    out, err = capsys.readouterr()
    summary = json.loads((tmp_path / "tune-summary.json").read_text())
    status = {r["kernel"]: r["status"] for r in summary["not_tuned"]}
    # layernorm is faster, but triton.json gives only rowmax an identity; rowmax and softmax are done
    assert status == {"softmax_unmeasured": "failed", "softmax_racy": "skipped",
                      "layernorm_f16_r64_c4096": "not_deployable"}
    why = {r["kernel"]: r["why"] for r in summary["not_tuned"]}
    assert "no " in why["softmax_unmeasured"] and "softmax_unmeasured" in why["softmax_unmeasured"]
    assert why["softmax_racy"].startswith("float atomics (red.global.add.f32)")
    assert str(work / "triton.json") in why["layernorm_f16_r64_c4096"]
    assert (summary["selected"], summary["tuned_in_this_run"], summary["exit_status"]) == (5, 3, 1)
    assert summary["parts"] == str(parts) and summary["dir"] == str(work)
    assert "1 failed, 1 skipped" in out and "3 of 5 selected kernels not tuned" in err
    for kernel, st in status.items():
        assert f"{kernel:44s} {st}: " in err
    assert not (parts / "softmax_unmeasured.json").exists()  # a replay miss leaves no part: retried next run
    # a failure an earlier (gpu) run recorded in its part is listed, but this run failed nothing: exit 0
    (parts / "softmax_unmeasured.json").write_text(json.dumps(
        {"kernel": "softmax_unmeasured", "verdict": "unmeasured", "error": "ptxas died"}))
    assert main(["tune", str(work), "--parts", str(parts), *REPLAY]) == 0
    summary = json.loads((tmp_path / "tune-summary.json").read_text())
    earlier = next(r for r in summary["not_tuned"] if r["kernel"] == "softmax_unmeasured")
    assert earlier["status"] == "failed" and earlier["why"].endswith("ptxas died")
    assert str(parts / "softmax_unmeasured.json") in earlier["why"]  # what to remove to tune it again
    assert summary["exit_status"] == 0 and summary["tuned_in_this_run"] == 0


def test_tune_prints_the_time_ratio_tuned_over_stock_as_tuned_show_does(tmp_path, capsys):
    from chronos.triton.tuned_db import RATIO_HEADER

    work = _workload(tmp_path)
    parts = tmp_path / "parts"
    assert main(["tune", str(work), "--parts", str(parts), "--kernel", "rowmax_f32_r64_c8192", *REPLAY]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if "time ratio tuned/stock" in line)
    assert header.endswith(RATIO_HEADER) and "(<1 = faster)" in header
    row = json.loads((parts / "rowmax_f32_r64_c8192.json").read_text())
    best = next(c for c in [row["greedy"], *row["beam"]] if "+".join(c["actions"]) == row["returned"])
    line = next(line for line in lines if line.startswith("tune: rowmax_f32_r64_c8192"))
    assert line.endswith(f"{row['returned']}, {best['ratio']:.4f} [{best['ci'][0]:.4f}, {best['ci'][1]:.4f}]")
    # faster reads below 1 on the screen; the part file keeps its speedup (stock/tuned), which replay checks
    assert best["ratio"] < 1 < row["speedup_time"] and abs(row["speedup_time"] * best["ratio"] - 1) < 1e-12


def test_every_path_is_absolute_and_the_store_defaults_to_the_corpus_folder(tmp_path, monkeypatch, capsys):
    _workload(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["tune", "work", "--backend", "replay", "--params", "nope.yaml"]) == 2
    assert f"{tmp_path.resolve() / 'nope.yaml'}: no such params file" in capsys.readouterr().err
    assert main(["tune", "work", "--backend", "replay", "--checkpoint", "../x/p.pt"]) == 2
    assert str(tmp_path.resolve().parent / "x/p.pt") in capsys.readouterr().err
    # the packaged policy and params load; the store is the corpus folder's, which this one lacks
    assert main(["tune", "work", "--backend", "replay"]) == 2
    store = tmp_path.resolve() / "work/measurements.sqlite"
    assert f"replay store {store} does not exist" in capsys.readouterr().err


def test_a_stranger_tunes_a_captured_corpus_from_an_empty_directory(tmp_path):
    """`python -m chronos.cli tune` run where there is no repository: the packaged policy and params.yaml,
    only the corpus and the store given (absolute). The parts reproduce the committed record."""
    from chronos.defaults import policy_path
    from chronos.stages.tune_captured import differences

    corpus, cwd = ROOT / "data/kernels/captured/flex", tmp_path / "cwd"
    cwd.mkdir()
    kernels = ["triton_poi_fused_ones_0_55d7e014_6a33db", "triton_poi_fused_zeros_1_ada52abb_9502ca"]
    # the store holds what the record's policy proposed; once models/checkpoint_best.pt is retrained (and
    # the packaged copy with it), that policy is no longer the default: name it
    record_policy = corpus / "tune-policy.pt"
    same = record_policy.read_bytes() == policy_path().read_bytes()
    own = [] if same else ["--checkpoint", str(record_policy)]
    proc = subprocess.run(
        [sys.executable, "-m", "chronos.cli", "tune", str(corpus), "--backend", "replay",
         "--store", str(ROOT / "data/store/measurements.sqlite"), "--parts", str(tmp_path / "parts"),
         "--only", "|".join(kernels), *own],
        capture_output=True, text=True, timeout=300, check=False, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for k in kernels:
        row = json.loads((tmp_path / "parts" / f"{k}.json").read_text())
        assert differences(row, json.loads((corpus / "tune-parts" / f"{k}.json").read_text())) == []
    assert (tmp_path / "parts" / f"{kernels[1]}.ptx").is_file()  # zeros returned a set: its PTX
    assert json.loads((tmp_path / "tune-summary.json").read_text())["not_tuned"] == []
    assert not list(cwd.iterdir())  # nothing written where it ran
    assert "time ratio tuned/stock" in proc.stdout and "2 tuned, 0 failed" in proc.stdout


def test_a_misspelt_action_to_leave_out_stops_the_run_before_any_db_is_written(tmp_path, capsys):
    db = tmp_path / "v3.sqlite"
    bert = ROOT / "data/kernels/captured/bert"
    argv = ["tune", str(bert), "--merge-only", "--parts", str(tmp_path / "none"), "--db", str(db),
            "--configs-from", str(ROOT / "data/knob_walk/captured/bert"), "--leave-out-actions"]
    assert main([*argv, "l2_evict_lastt"]) != 0
    assert "'l2_evict_lastt' is neither a v2 action nor a v2 group" in capsys.readouterr().err
    assert not db.exists()
    assert main([*argv, "l2_policy_streaming"]) == 0
    assert "(left out by --leave-out-actions)" in capsys.readouterr().out
