"""The `chronos` command: one-line errors with exit 2, doctor, emit and roundtrip, --help everywhere."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from chronos.cli import build_parser, main

from .test_toolchain import TINY

MALFORMED = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(\n{\n\tret\n"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """The CLI as a user runs it: a fresh interpreter, so a traceback would really show."""
    return subprocess.run([sys.executable, "-m", "chronos.cli", *args], capture_output=True, text=True,
                          check=False, timeout=300)


@pytest.mark.parametrize("command", ["emit", "roundtrip"])
def test_malformed_ptx_is_one_line_exit_2(tmp_path, command):
    bad = tmp_path / "bad.ptx"
    bad.write_text(MALFORMED)
    r = run_cli(command, str(bad))
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("chronos: error: "), r.stderr
    assert "bad.ptx" in lines[0]  # the parse error names the file


def test_missing_file_exit_2(tmp_path, capsys):
    assert main(["emit", str(tmp_path / "nope.ptx")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("chronos: error: cannot read") and err.count("\n") == 1


def test_bad_arch_exit_2(tmp_path, capsys):
    f = tmp_path / "k.ptx"
    f.write_text(TINY)
    assert main(["roundtrip", str(f), "--arch", "volta"]) == 2
    assert "bad arch" in capsys.readouterr().err


def test_doctor(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    for key in ("python", "chronos", "ptxas", "pycuda", "gpu", "torch"):
        assert any(line.startswith(key) for line in out.splitlines()), key


def test_doctor_without_ptxas(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("CHRONOS_PTXAS", str(tmp_path / "missing"))
    assert main(["doctor"]) == 0
    assert "missing" in capsys.readouterr().out


def test_emit_prints_ptx(tmp_path, capsys):
    f = tmp_path / "k.ptx"
    f.write_text(TINY)
    assert main(["emit", str(f)]) == 0
    out = capsys.readouterr().out
    assert ".entry add1" in out and ".target sm_90" in out


def test_roundtrip_same(tmp_path, capsys, ptxas):
    f = tmp_path / "k.ptx"
    f.write_text(TINY)
    assert main(["roundtrip", str(f), "--arch", "sm_90"]) == 0
    assert "identical" in capsys.readouterr().out


def test_roundtrip_differ(tmp_path, capsys, ptxas, monkeypatch):
    import chronos.ptx

    f = tmp_path / "k.ptx"
    f.write_text(TINY)
    real_emit = chronos.ptx.emit
    monkeypatch.setattr(chronos.ptx, "emit", lambda m: real_emit(m).replace("add.s32", "sub.s32"))
    assert main(["roundtrip", str(f)]) == 1
    assert ".text.add1" in capsys.readouterr().out


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Every command path of `parser`, walked through its subparsers: a command added later is covered."""
    yield path
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


@pytest.mark.parametrize("command", list(_commands(build_parser())), ids=lambda c: " ".join(("chronos", *c)))
def test_every_command_has_a_help(command, capsys):
    """argparse %-formats help texts when it prints them: a bare % (say "99% CI") crashed `--help` with
    "ValueError: unsupported format character" (issue 25)."""
    with pytest.raises(SystemExit) as done:
        main([*command, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: {' '.join(('chronos', *command))}")


def test_the_command_walk_reaches_sub_subcommands():
    assert {("tuned",), ("tuned", "show"), ("optimize",)} <= set(_commands(build_parser()))
