"""`chronos tune` refuses bad arguments with one line naming them, before any work (#26)."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chronos.commands.tune import add_arguments
from chronos.commands.tune_args import resolve_paths
from chronos.errors import ChronosError

ROOT = Path(__file__).resolve().parents[2]


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_arguments(p)
    return p.parse_args(list(argv))


@pytest.fixture
def corpus(tmp_path):
    d = tmp_path / "corpus"
    d.mkdir()
    shutil.copyfile(ROOT / "data/library/attorch/specs.json", d / "specs.json")
    (tmp_path / "afile").write_text("not json")
    (tmp_path / "list.json").write_text("[1, 2]")
    return d


@pytest.mark.parametrize(("extra", "says"), [
    (["--only", "("], "--only '(' is not a regular expression"),
    (["--order-by", "/nonexistent/profile.json"], "not a readable JSON profile"),
    (["--order-by", "{tmp}/afile"], "not a readable JSON profile"),
    (["--order-by", "{tmp}/list.json"], "not a workload profile"),
    (["--fixed", "vec_ld+bogus"], "unknown action(s) bogus"),
    (["--parts", "{tmp}/afile"], "is a file, not a folder"),
    (["--budget", "-5"], "a number of seconds, 0 or more"),
])
def test_a_bad_argument_is_one_clear_error(corpus, extra, says):
    args = _args(str(corpus), *(e.replace("{tmp}", str(corpus.parent)) for e in extra))
    with pytest.raises(ChronosError, match=None) as e:
        resolve_paths(args)
    assert says in str(e.value)


def test_a_folder_without_specs_is_refused(tmp_path):
    with pytest.raises(ChronosError, match="holds no specs.json"):
        resolve_paths(_args(str(tmp_path)))


def test_the_cli_prints_one_line_and_exits_nonzero(corpus):
    res = subprocess.run([sys.executable, "-m", "chronos.cli", "tune", str(corpus), "--only", "("],
                         capture_output=True, text=True, check=False, timeout=120)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert "not a regular expression" in res.stderr and len(res.stderr.strip().splitlines()) <= 2


def test_a_profile_is_read_once_and_orders_the_kernels(corpus):
    profile = corpus.parent / "profile.json"
    phases = {"train": {"triton_kernels_us": {"dropout_forward_kernel": 9.0}}}
    profile.write_text(json.dumps({"phases": phases}))
    args = _args(str(corpus), "--order-by", str(profile))
    resolve_paths(args)
    assert args.profile["phases"]["train"]["triton_kernels_us"] == {"dropout_forward_kernel": 9.0}
