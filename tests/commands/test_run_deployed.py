"""`chronos run --db DB -- CMD`: a tuned DB deployed in a command's Python processes with no code change
(CPU: the child compiles for sm_90 with Triton's ptxas), a warm cache reported as such, a bad DB harmless."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")

from chronos.triton import hook
from chronos.triton.tuned_db import TunedDB, make_key
from tests.triton.test_hook import tune

KERNEL = '''
import hashlib, sys
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


def compile_add():
    sig = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    return triton.compile(ASTSource(fn=add_kernel, signature=sig, constexprs={"BLOCK": 128}),
                          target=GPUTarget("cuda", 90, 32))


if __name__ == "__main__":
    print("ptx", hashlib.sha256(compile_add().asm["ptx"].encode()).hexdigest())
'''


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def workload(tmp_path, monkeypatch):
    """A user's script, its stock PTX compiled here, and a DB whose entry tunes it for this machine."""
    import importlib.util

    script = tmp_path / "user" / "kern.py"
    script.parent.mkdir()
    script.write_text(KERNEL)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "stock_cache"))
    spec = importlib.util.spec_from_file_location("kern", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with triton.knobs.cache.scope():
        stock = mod.compile_add()
    tuned = tune(stock.asm["ptx"])
    key = make_key(stock.metadata.hash, stock.asm["ptx"], stock.metadata.name, gpu=hook.detect_gpu(),
                   driver=hook.detect_driver(), ptxas=hook.triton_ptxas_version(90))
    with TunedDB(tmp_path / "tuned.sqlite") as db:
        db.put(key, ["maxnreg_64", "cache_cg"], tuned, 0.8, (0.75, 0.85), {"bit_exact": True}, {})
    return script, tmp_path / "tuned.sqlite", stock.asm["ptx"], tuned


def _run(tmp_path: Path, db: Path, script: Path, tag: str, env_extra: dict | None = None):
    import os

    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "user_triton_cache"), **(env_extra or {})}
    res = subprocess.run([sys.executable, "-m", "chronos.cli", "run", "--db", str(db), "--cache-dir",
                          str(tmp_path / "chronos_cache"), "--stats", str(tmp_path / f"{tag}.json"), "--",
                          sys.executable, str(script)],
                         capture_output=True, text=True, timeout=300, cwd=script.parent, env=env, check=False)
    stats = json.loads((tmp_path / f"{tag}.json").read_text()) if (tmp_path / f"{tag}.json").exists() else {}
    return res, stats


@pytest.mark.slow
def test_a_command_runs_tuned_with_no_code_change_and_a_warm_cache_says_so(workload, tmp_path):
    script, db, stock_ptx, tuned_ptx = workload
    res, stats = _run(tmp_path, db, script, "cold")
    assert res.returncode == 0, res.stderr
    assert f"ptx {_sha(tuned_ptx)}" in res.stdout  # the user's own compile got the tuned PTX
    assert (stats["swapped"], stats["cached"], stats["missed"]) == (1, 0, 0)
    assert stats["swapped_names"] == ["add_kernel"]
    line = [ln for ln in res.stderr.splitlines() if ln.startswith("chronos run:")]
    assert len(line) == 1 and "tuned 1 (swapped 1, from cache 0)" in line[0]
    # warm: Triton's cache serves the binary and skips the stage hook; the summary still says it runs tuned
    res, stats = _run(tmp_path, db, script, "warm")
    assert res.returncode == 0 and f"ptx {_sha(tuned_ptx)}" in res.stdout, res.stderr
    assert (stats["swapped"], stats["cached"], stats["cached_names"]) == (0, 1, ["add_kernel"])
    assert "tuned 1 (swapped 0, from cache 1)" in res.stderr
    assert not (tmp_path / "user_triton_cache").exists()  # the user's own Triton cache is never touched
    assert _sha(stock_ptx) != _sha(tuned_ptx)


@pytest.mark.parametrize("make", ["text", "missing", "folder", "truncated"])
def test_a_bad_db_runs_the_command_stock_with_one_warning(tmp_path, make):
    db = tmp_path / "db.sqlite"
    if make == "text":
        db.write_text("not a database\n")
    elif make == "folder":
        db.mkdir()
    elif make == "truncated":
        db.write_bytes(b"SQLite format 3\x00" + b"\x00" * 50)
    res = subprocess.run([sys.executable, "-m", "chronos.cli", "run", "--db", str(db), "--", sys.executable,
                          "-c", "import sys; print('ran'); sys.exit(3)"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 3 and res.stdout.strip() == "ran"  # the command's own status, run stock
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("chronos run: warning: ") and str(db) in lines[0]
    assert "running the command stock" in lines[0] and "Traceback" not in res.stderr


def test_run_without_a_command_is_a_one_line_error(tmp_path):
    res = subprocess.run([sys.executable, "-m", "chronos.cli", "run", "--db", str(tmp_path / "x")],
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 2 and res.stderr.startswith("chronos: error: chronos run: no command")
