"""Every way user code launches a Triton kernel reaches the capture, or is listed as dropped with its reason.

CPU: Triton's real JITFunction, Autotuner and Heuristics classes run their Python launch path; only the
final GPU launch is replaced by a CPU stand-in that returns a kernel compiled for sm_90. GPU: the
launch_styles.py workload under `chronos capture` (plain launches with options, autotune, heuristics,
autograd.Function, torch.library custom op, Inductor).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")
torch = pytest.importorskip("torch")
import triton.language as tl
from triton.runtime import autotuner as autotuner_mod
from triton.runtime import jit as jit_mod

from chronos.commands import capture
from chronos.kernels.spec import load_specs
from chronos.triton import capture as recorder
from chronos.triton import capture_launch

from .test_hook import compile_into_capture_cache


@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):  # the same body as test_hook's: its PTX is compile_add's
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@pytest.fixture
def patched(tmp_path, monkeypatch):
    """Triton's launch classes patched by the recorder over a CPU launch; restored afterwards."""
    out, kernel = compile_into_capture_cache(tmp_path, monkeypatch)
    launches = []

    def cpu_launch(self, *args, grid, warmup, **kwargs):
        launches.append(kwargs)
        x, y, o = args[0], args[1], args[2]
        o.copy_(x + y)
        return kernel

    monkeypatch.setattr(jit_mod.JITFunction, "run", cpu_launch)
    monkeypatch.setattr(autotuner_mod.Autotuner, "run", autotuner_mod.Autotuner.run)
    monkeypatch.setattr(autotuner_mod.Autotuner, "_bench", autotuner_mod.Autotuner._bench)
    rec = recorder.start(out)
    try:
        yield out, rec, launches
    finally:
        recorder.stop()


def _records(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((out / "launches").glob("*.json"))]


def _args():
    x, y = torch.randn(1000), torch.randn(1000)
    return x, y, torch.empty(1000), 1000


def test_launch_options_are_split_from_parameters_and_recorded(patched):
    out, _rec, launches = patched
    for _ in range(2):
        add_kernel[(8,)](*_args(), BLOCK=128, num_warps=4, num_stages=2, maxnreg=128, enable_fp_fusion=False)
    assert len(launches) == 2 and launches[0]["num_warps"] == 4  # the launch itself is untouched
    (rec,) = _records(out)
    assert rec["launch_options"] == {"enable_fp_fusion": False, "maxnreg": 128, "num_stages": 2,
                                     "num_warps": 4}
    assert rec["constexprs"] == {"BLOCK": 128} and rec["grid"] == [8, 1, 1]
    recorder.stop()  # writes the launch counts
    summary = capture.assemble(out, "styles")
    assert (summary["kernels"], summary["dropped"], summary["launches"]) == (1, [], 2)
    assert summary["per_kernel"][0]["launch_options"]["num_stages"] == 2
    ident = json.loads((out / "triton.json").read_text())
    assert next(iter(ident.values()))["launch_options"]["maxnreg"] == 128


def test_an_autotuned_kernel_records_the_config_it_chose_not_its_benchmarks(patched):
    out, _rec, launches = patched
    configs = [triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 256}, num_warps=8)]
    tuned = triton.autotune(configs=configs, key=["n"], reset_to_zero=["out"])(add_kernel)
    timings = iter([[2.0, 2.0, 2.0], [1.0, 1.0, 1.0]])  # the second config wins

    def fake_bench(fn, quantiles):
        fn()
        return next(timings)

    tuned._do_bench = fake_bench
    x, y, o, n = _args()
    for _ in range(3):
        tuned[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, y, o, n)
    assert len(launches) == 2 + 3  # two benchmark runs, three real launches
    (r,) = _records(out)
    assert r["constexprs"] == {"BLOCK": 256} and r["launch_options"]["num_warps"] == 8
    assert r["autotune"]["configs"] == 2 and "BLOCK: 256" in r["autotune"]["best_config"]
    assert r["autotune"]["reset_to_zero"] == ["out"]
    assert [a.get("reset_to_zero") for a in r["args"] if a["kind"] == "tensor"] == [False, False, True]
    recorder.stop()
    summary = capture.assemble(out, "styles")
    assert summary["autotune_benchmark_launches"] == {"add_kernel": 2}
    assert (summary["launches"], summary["dropped"]) == (3, [])
    (spec,) = load_specs(out / "specs.json")
    assert [a.init == "zeros" for a in spec.args[:3]] == [False, False, True]  # `out` is drawn zeroed


def test_a_heuristics_kernel_records_the_values_it_computed(patched):
    out, *_ = patched
    heur = triton.heuristics({"BLOCK": lambda a: triton.next_power_of_2(a["n"]) // 8})(add_kernel)
    heur[(8,)](*_args(), num_warps=2)
    (r,) = _records(out)
    assert r["constexprs"] == {"BLOCK": 128} and r["launch_options"] == {"num_warps": 2}


def test_a_launch_that_cannot_be_captured_is_listed_counted_and_fails_the_capture(patched, capsys):
    out, *_ = patched
    for _ in range(3):
        add_kernel[(8,)](*_args(), BLOCK=128, num_ctas=2)  # thread-block clusters: not measurable here

    def bad_grid(meta):
        raise KeyError("NOT_A_PARAMETER")

    add_kernel[bad_grid](*_args(), BLOCK=128)  # the recorder's own failure: a drop, the launch still runs
    recorder.stop()
    summary = capture.assemble(out, "styles")
    rows = sorted((d["launches"], d["kernel"], d["reason"]) for d in summary["dropped"])
    assert summary["dropped_launches"] == 4 and summary["kernels"] == 0
    assert [(n, k) for n, k, _ in rows] == [(1, "add_kernel"), (3, "add_kernel")]
    assert "recording failed: KeyError" in rows[0][2] and "num_ctas=2" in rows[1][2]
    assert capture._verdict(summary, out, allow_partial=False) == 1
    assert capture._verdict(summary, out, allow_partial=True) == 0
    err = capsys.readouterr().err
    assert "4 launches of 1 kernels were not captured" in err and "dropped 3x add_kernel" in err


def test_the_bootstrap_runs_quietly_and_keeps_a_shadowed_sitecustomize(tmp_path):
    """No 'Error in sitecustomize' in the workload's processes; a sitecustomize of the user's still runs."""
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text("import os\nos.environ['USER_SITE_RAN'] = '1'\n")
    code = ("import os, triton.runtime.jit as j; assert j.JITFunction.run.__chronos_capture__; "
            "print('user site', os.environ.get('USER_SITE_RAN'))")
    env = {"PYTHONPATH": str(user)}
    res = subprocess.run([sys.executable, "-m", "chronos.cli", "capture", "--out", str(tmp_path / "c"), "--",
                          sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, **env}, check=False)
    assert "Error in sitecustomize" not in res.stderr and "not active" not in res.stderr, res.stderr
    assert "user site 1" in res.stdout
    assert res.returncode == 1 and "launched no Triton kernel" in res.stderr  # nothing captured is an error


@pytest.mark.gpu
def test_every_launch_style_is_captured_on_a_gpu(tmp_path):
    out = tmp_path / "styles"
    script = Path(__file__).with_name("launch_styles.py")
    res = subprocess.run([sys.executable, "-m", "chronos.cli", "capture", "--out", str(out), "--",
                          sys.executable, str(script)],
                         capture_output=True, text=True, timeout=600, check=False)
    summary = json.loads((out / "capture.json").read_text())
    assert res.returncode == 0 and summary["dropped"] == [], (res.stderr[-3000:], summary["dropped"])
    functions = {k["kernel"].rsplit("_", 2)[0] for k in summary["per_kernel"]}
    for name in ("scale_opts", "rowsum_autotuned", "shift_heuristic", "square_fwd", "square_bwd",
                 "negate_op_kernel", "axpy_aliased", "with_empty_arg"):
        assert name in functions, (name, functions)
    assert any(k["source"] == "inductor" for k in summary["per_kernel"])
    templates = {k["kernel"] for k in summary["per_kernel"] if k["kernel"].startswith("triton_tem_")}
    assert any("mm" in t for t in templates) and any("flex" in t for t in templates), templates
    specs = {s.entry: s for s in load_specs(out / "specs.json")}
    aliased = [(a.name, a.alias_of) for a in specs["axpy_aliased"].args if a.kind == "alias"]
    assert [n for _, n in aliased] == [specs["axpy_aliased"].args[0].name, specs["axpy_aliased"].args[2].name]
    assert specs["with_empty_arg"].args[1].kind == "null"
    blocks = {tuple(s.block) for s in load_specs(out / "specs.json") if s.entry == "scale_opts"}
    assert blocks == {(32, 1, 1), (256, 1, 1)}  # num_warps=1 and 8, as launched
    assert summary["autotune_benchmark_launches"].get("rowsum_autotuned", 0) > 0
    assert capture_launch.UNSUPPORTED  # the options refused are declared in one place
