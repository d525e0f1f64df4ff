"""chronos capture on a CPU: records of real Triton compiles (sm_90, Triton's ptxas) become runnable specs."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

triton = pytest.importorskip("triton")
torch = pytest.importorskip("torch")

from chronos.commands import capture
from chronos.kernels.spec import load_specs
from chronos.measure.inputs import draw_inputs
from chronos.toolchain import assemble
from chronos.triton import capture as recorder
from tests.triton.test_hook import add_kernel, compile_into_capture_cache


class FakeJIT:
    """The attributes of triton.JITFunction that the recorder reads, around a CPU 'launch'."""

    def __init__(self, fn):
        self.fn, self.signature = fn, inspect.signature(fn.fn)
        self.arg_names = list(self.signature.parameters)
        self.params = [SimpleNamespace(name=n, is_constexpr=n == "BLOCK") for n in self.arg_names]
        self.cache_key = "src-hash"


@pytest.fixture
def captured(tmp_path, monkeypatch):
    """One add_kernel launch recorded through the JIT wrapper, its compile in the capture's Triton cache."""
    out, kernel = compile_into_capture_cache(tmp_path, monkeypatch)

    def launch(self, x, y, o, n, BLOCK, *, grid, warmup):
        o.copy_(x + y)
        return kernel

    rec = recorder.start(out)
    try:
        run = recorder._jit_run(launch)
        fake = FakeJIT(add_kernel)
        x, y = torch.randn(1000), torch.randn(1000)
        o = torch.empty(1000)
        for _ in range(3):  # one signature, three launches
            run(
                fake,
                x,
                y,
                o,
                1000,
                BLOCK=128,
                grid=lambda m: (triton.cdiv(m["n"], m["BLOCK"]),),
                warmup=False,
            )
        run(fake, x[:500], y[:500], o[:500], 500, BLOCK=128, grid=(4,), warmup=False)  # a second signature
    finally:
        recorder.stop()
    return out, rec, kernel, x


def test_a_recorded_launch_becomes_a_spec_that_ptxas_accepts(captured):
    out, _rec, kernel, x = captured
    summary = capture.assemble(out, "toy")
    assert (
        summary["kernels"],
        summary["distinct_ptx"],
        summary["launch_signatures"],
        summary["launches"],
    ) == (2, 1, 2, 4)
    assert summary["unmapped"] == []
    specs = {s.grid: s for s in load_specs(out / "specs.json")}
    s = specs[(8, 1, 1)]
    assert s.family == "captured" and s.entry == "add_kernel" and s.block == (128, 1, 1)
    assert [(a.kind, a.role, a.dtype) for a in s.args[:4]] == [
        ("buffer", "inout", "f32"),
        ("buffer", "inout", "f32"),
        ("buffer", "inout", "f32"),
        ("scalar", "input", "i32"),
    ]
    assert s.args[4:] and {(a.kind, a.dtype) for a in s.args[4:]} == {("null", "u64")}  # Triton's scratch
    assert s.args[3].value == 1000 and s.args[0].elements == 1000
    assert s.args[0].init.startswith("normal(")
    assert (out / s.ptx).read_text() == kernel.asm["ptx"]
    record = json.loads(next((out / "launches").glob("*.json")).read_text())
    assert [a.get("changed") for a in record["args"]] in (
        [False, False, True, None],
        [False, False, False, None],
    )
    ident = json.loads((out / "triton.json").read_text())[s.kernel]
    assert (ident["hash"], ident["name"], ident["stock_ptx"]) == (kernel.hash, "add_kernel", s.ptx)
    assemble((out / s.ptx).read_text(), "sm_90a")  # raises on a ptxas failure
    # draw 0 is the captured data, draw 1 a fresh draw from its statistics
    d0, d1 = draw_inputs(s, 7, 0), draw_inputs(s, 7, 1)
    assert np.array_equal(d0[s.args[0].name], x.numpy())
    assert not np.array_equal(d1[s.args[0].name], x.numpy())


def test_a_compacted_capture_reads_the_same(captured):
    """--compact: gzip-compressed PTX, byte-reproducible, read back by every reader of a spec's PTX."""
    from chronos.kernels.spec import load_module, read_ptx
    from chronos.tuning.ptxas import ptx_isa

    out, _rec, kernel, _x = captured
    capture.assemble(out, "toy")
    before = {s.kernel: s for s in load_specs(out / "specs.json")}
    assert capture.compact(out) == 1 and not list((out / "ptx").glob("*.ptx"))
    gz = next((out / "ptx").glob("*.ptx.gz")).read_bytes()
    after = {s.kernel: s for s in load_specs(out / "specs.json")}
    assert after.keys() == before.keys()
    for name, s in after.items():
        assert s.ptx == before[name].ptx + ".gz" and read_ptx(out / "specs.json", s) == kernel.asm["ptx"]
        assert load_module(out / "specs.json", s).entry(s.entry) is not None
    ident = json.loads((out / "triton.json").read_text())
    assert {i["stock_ptx"] for i in ident.values()} == {s.ptx for s in after.values()}
    assert ptx_isa(kernel.asm["ptx"]) is not None
    (out / "ptx" / next(iter(after.values())).ptx.removeprefix("ptx/")).unlink()
    for s in before.values():
        (out / s.ptx).write_text(kernel.asm["ptx"])
    capture.compact(out)
    assert next((out / "ptx").glob("*.ptx.gz")).read_bytes() == gz  # no timestamp inside


def test_without_the_captured_files_draw_0_is_the_init_draw(captured):
    out, *_ = captured
    capture.assemble(out, "toy")
    import shutil

    shutil.rmtree(out / "inputs")
    s = load_specs(out / "specs.json")[0]
    assert draw_inputs(s, 7, 0)[s.args[0].name].shape == (s.args[0].elements,)


def test_a_launch_without_ptx_in_the_cache_is_listed_with_its_reason(captured):
    out, *_ = captured
    import shutil

    shutil.rmtree(out / ".triton_cache")
    summary = capture.assemble(out, "toy")
    assert summary["kernels"] == 0 and len(summary["unmapped"]) == 2
    assert "not in the capture's Triton cache" in summary["unmapped"][0]["reason"]


PARAMS = [
    ("k_param_0", "u64", True),
    ("k_param_1", "u32", False),
    ("k_param_2", "u64", True),
    ("k_param_3", "u64", True),
]


def _t(name, **kw):
    return {
        "name": name,
        "kind": "tensor",
        "dtype": "f32",
        "elements": 64,
        "ptr": 4096,
        "align16": True,
        **kw,
    }


def test_map_args_drops_constants_and_specialised_ones_and_fills_scratch():
    rec = {
        "args": [
            _t("in_ptr0", min=0.0),
            {"name": "xnumel", "kind": "scalar", "value": 64, "pytype": "int"},
            {"name": "r0", "kind": "scalar", "value": 1, "pytype": "int"},
            {"name": "n", "kind": "none"},
        ],
        "constants": {},
    }
    args, align = capture.map_args(rec, PARAMS)
    assert [a.kind for a in args] == ["buffer", "scalar", "null", "null"]
    assert align == {"k_param_0": 16}
    rec["args"].append({"name": "s", "kind": "scalar", "value": 3.5, "pytype": "float"})
    with pytest.raises(
        capture.CaptureError, match="cannot map launch arguments TSSS onto PTX parameters PSPP"
    ):
        capture.map_args(rec, PARAMS)


def test_roles_and_fresh_draws_keep_values_valid():
    rec = {
        "args": [
            _t("idx", dtype="i64", min=0, max=127, mutated=False),
            {"name": "n", "kind": "scalar", "value": 5, "pytype": "int"},
            _t("out_ptr0", ptr=1 << 20, mutated=True, write_only=True),
            _t("in_out_ptr0", ptr=1 << 21, mutated=True, mean=0.5, std=0.0),
        ],
        "constants": {},
    }
    args, _ = capture.map_args(rec, [PARAMS[0], PARAMS[1], PARAMS[2], PARAMS[3], ("k_param_4", "u64", True)])
    assert (args[0].role, args[0].init) == ("input", "randint(0,128)")
    assert (args[2].role, args[2].init) == ("output", "poison")
    assert (args[3].role, args[3].init) == ("inout", "uniform(0.5,0.5)")


def test_an_inductor_launch_records_inductors_grid_and_mutations(tmp_path):
    class Autotuner:
        triton_meta = {  # noqa: RUF012 - a fake of Inductor's class
            "signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"},
            "constants": {},
        }
        inductor_meta = {"kernel_name": "triton_poi_fused_add_0"}  # noqa: RUF012 - a fake of Inductor's class
        mutated_arg_names = []  # noqa: RUF012 - a fake of Inductor's class
        fn = SimpleNamespace(__name__="triton_poi_fused_add_0")
        launchers = [  # noqa: RUF012 - a fake of Inductor's class
            SimpleNamespace(
                config=SimpleNamespace(num_warps=4, num_stages=1, kwargs={"XBLOCK": 256}),
                cache_hash="PATHKEY",
                shared=0,
            )
        ]

        def _interpret_args_grid(self, args, cfg):
            return args, (-(-args[2] // cfg.kwargs["XBLOCK"]), 1, 1)

    def launch(self, x, o, n, *, stream):
        o.copy_(x * 2)

    recorder.start(tmp_path)
    try:
        run = recorder._inductor_run(launch)
        a, x, o = Autotuner(), torch.randn(1000), torch.empty(1000)
        run(a, x, o, 1000, stream=0)
        run(a, x, o, 1000, stream=0)
    finally:
        recorder.stop()
    (record,) = [json.loads(p.read_text()) for p in (tmp_path / "launches").glob("*.json")]
    assert record["grid"] == [4, 1, 1] and record["cache_key"] == "PATHKEY" and record["num_warps"] == 4
    assert [(a["name"], a.get("mutated"), a.get("write_only")) for a in record["args"]] == [
        ("in_ptr0", False, False),
        ("out_ptr0", True, True),
        ("xnumel", None, None),
    ]
    assert np.array_equal(np.load(tmp_path / record["args"][0]["data"]), x.numpy())
    assert list(json.loads(next((tmp_path / "counts").glob("*.json")).read_text()).values()) == [2]


@pytest.mark.slow
def test_the_workload_process_and_its_children_are_patched(tmp_path):
    """The bootstrap patches Triton's JIT and Inductor's launcher when the workload imports them."""
    code = (
        "import triton.runtime.jit as j, torch._inductor.runtime.triton_heuristics as h, os; "
        "assert j.JITFunction.run.__chronos_capture__ and h.CachingAutotuner.run.__chronos_capture__; "
        "assert os.environ['TRITON_CACHE_DIR'].endswith('.triton_cache'); print('patched')"
    )
    res = subprocess.run(  # noqa: PLW1510 - the return code is asserted below
        [
            sys.executable,
            "-m",
            "chronos.cli",
            "capture",
            "--out",
            str(tmp_path / "c"),
            "--",
            sys.executable,
            "-c",
            code,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 1, res.stderr  # a capture that recorded nothing says so and fails
    assert "patched" in res.stdout and "capture c: 0 kernels" in res.stdout
    assert "launched no Triton kernel" in res.stderr and "Error in sitecustomize" not in res.stderr
    assert json.loads((tmp_path / "c" / "capture.json").read_text())["kernels"] == 0


def test_an_inductor_kernel_signs_the_same_in_every_process():
    """Two autotuner objects of one kernel source (two processes, two captures) give one signature, so the
    kernel keeps its name from one capture to the next; another source gives another."""
    import hashlib as _h

    from chronos.triton import capture as recorder

    def tuner(src):
        return SimpleNamespace(fn=SimpleNamespace(__name__="triton_poi_fused_add_0", src=src))

    a, b, c = tuner("def k(x): pass"), tuner("def k(x): pass"), tuner("def k(y): pass")
    ids = [recorder._inductor_identity(t) for t in (a, b, c)]
    assert ids[0] == ids[1] != ids[2]
    assert ids[0] == "triton_poi_fused_add_0:" + _h.sha256(b"def k(x): pass").hexdigest()[:16]
    no_src = SimpleNamespace(fn=SimpleNamespace(__name__="k"))
    assert recorder._inductor_identity(no_src) == f"id{id(no_src)}"  # a fake without source: per object


def test_an_existing_capture_is_kept_unless_forced_and_empty_folders_are_refused(tmp_path, capsys):
    from chronos.cli import main

    old = tmp_path / "old"
    (old / "ptx").mkdir(parents=True)
    (old / "specs.json").write_text("[]\n")
    (old / "ptx" / "k.ptx").write_text("// kept\n")
    assert main(["capture", "--out", str(old), "--", sys.executable, "-c", "pass"]) == 2
    assert "already holds a capture; pass --force" in capsys.readouterr().err
    assert (old / "ptx" / "k.ptx").read_text() == "// kept\n"  # nothing deleted
    for flag in ("--assemble-only", "--compact-only"):
        assert main(["capture", "--out", str(tmp_path / "missing"), flag]) == 2
        err = capsys.readouterr().err
        assert err.startswith("chronos: error: chronos capture: ") and str(tmp_path / "missing") in err


@pytest.mark.parametrize(("setup", "argv", "says"), [
    (lambda d: (d / "f").write_text(""), ["--out", "{d}/f/sub", "--", "true"], "cannot be a capture folder"),
    (lambda d: None, ["--out", "/proc/chronos-capture", "--", "true"], "cannot be a capture folder"),
    (lambda d: _files(d, {"launches/1.json": "{}"}), ["--out", "{d}", "--assemble-only"], "is not one"),
    (lambda d: _files(d, {"launches/1.json": "[]"}), ["--out", "{d}", "--assemble-only"], "is not one"),
    (lambda d: _files(d, {"launches/1.json": "{", "counts/1.json": "{}"}),
     ["--out", "{d}", "--assemble-only"], "unreadable launch record"),
    (lambda d: _files(d, {"launches/x": "", "counts/1.json": "[1]"}), ["--out", "{d}", "--assemble-only"],
     "not a map of signatures to counts"),
    (lambda d: _files(d, {"specs.json": '[{"kernel": 1}]'}), ["--out", "{d}", "--compact-only"],
     "malformed kernel spec"),
    (lambda d: _files(d, {"specs.json": "[]", "triton.json": "[1]"}), ["--out", "{d}", "--compact-only"],
     "not a map of kernels"),
])
def test_bad_capture_input_is_one_line_and_a_nonzero_exit(tmp_path, setup, argv, says):
    setup(tmp_path)
    res = subprocess.run([sys.executable, "-m", "chronos.cli", "capture",
                          *(a.replace("{d}", str(tmp_path)) for a in argv)],
                         capture_output=True, text=True, check=False, timeout=120)
    assert res.returncode != 0 and "Traceback" not in res.stderr and says in res.stderr, res.stderr


def _files(d, files: dict[str, str]) -> None:
    for name, text in files.items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(text)


def test_a_launch_records_the_module_that_defines_its_kernel(tmp_path):
    """What a recompile with other block sizes starts from (#28): the defining file, copied by content once,
    and the function's name and source hash in it; a kernel without a file on disk records none."""
    import hashlib as _h

    module = tmp_path / "kernels_mod.py"
    module.write_text("def triton_poi_fused_add_0(x):\n    return x\n")
    namespace: dict = {}
    exec(compile(module.read_text(), str(module), "exec"), namespace)  # noqa: S102 - the test's own file
    fn = SimpleNamespace(fn=namespace["triton_poi_fused_add_0"], src="def triton_poi_fused_add_0(x): ...")
    rec = recorder.Recorder(tmp_path / "cap")
    got = rec.save_source(fn)
    assert got["qualname"] == "triton_poi_fused_add_0"
    assert got["source_sha256"] == _h.sha256(fn.src.encode()).hexdigest()
    assert (tmp_path / "cap" / got["module"]).read_text() == module.read_text()
    assert rec.save_source(fn) == got and len(list((tmp_path / "cap" / "sources").iterdir())) == 1
    assert rec.save_source(SimpleNamespace(fn=len))["module"] is None  # a builtin: no file
