"""The `chronos` command: environment check, PTX round-trip and re-emission, the optimize path for a file.

Every expected failure is a ChronosError; it is printed as one line on stderr with exit status 2, never
as a traceback.
"""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Sequence
from pathlib import Path

from chronos.commands import capture, optimize, run_deployed, tune
from chronos.errors import ChronosError, one_line

EXIT_OK, EXIT_DIFFER, EXIT_ERROR = 0, 1, 2


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ChronosError(f"cannot read {path}: {e}") from e


def cmd_doctor(args: argparse.Namespace) -> int:
    import chronos
    from chronos import toolchain

    rows: list[tuple[str, str]] = [
        ("python", f"{platform.python_version()} ({sys.executable})"),
        ("chronos", chronos.__version__),
    ]
    try:
        source, path = toolchain.find_ptxas_with_source()
        rows.append(("ptxas", f"{path} ({source}), version {toolchain.ptxas_version(path)}"))
    except ChronosError as e:
        rows.append(("ptxas", f"missing: {e}"))
    try:
        import pycuda  # noqa: F401

        rows.append(("pycuda", "importable"))
    except Exception as e:  # noqa: BLE001 - pycuda can fail with ImportError or OSError (no libcuda)
        rows.append(("pycuda", f"not importable ({type(e).__name__}: {e})".splitlines()[0]))
    rows.append(("gpu", toolchain.gpu_name() or "none"))
    try:
        import torch

        rows.append(("torch", torch.__version__))
    except ImportError as e:
        rows.append(("torch", f"missing ({e})"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    return EXIT_OK


def cmd_emit(args: argparse.Namespace) -> int:
    from chronos.ptx import emit, parse

    sys.stdout.write(emit(parse(_read(args.file), file=args.file)))
    return EXIT_OK


def cmd_roundtrip(args: argparse.Namespace) -> int:
    from chronos.ptx import emit, parse
    from chronos.toolchain import assemble, text_sections

    text = _read(args.file)
    out = emit(parse(text, file=args.file))
    before = text_sections(assemble(text, args.arch).cubin)
    after = text_sections(assemble(out, args.arch).cubin)
    if before == after:
        print(f"{args.file}: SASS identical for {args.arch} ({len(before)} .text sections)")
        return EXIT_OK
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    print(f"{args.file}: SASS differs for {args.arch} in {', '.join(changed)}")
    return EXIT_DIFFER


def cmd_tuned_show(args: argparse.Namespace) -> int:
    from chronos.triton import show

    print(show(args.db))  # a missing file, a folder or a non-DB is a TunedDBError naming it
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="chronos", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("doctor", help="show the toolchain, GPU and library versions Chronos finds")
    d.set_defaults(func=cmd_doctor)
    r = sub.add_parser("roundtrip", help="check that emit(parse(FILE)) assembles to the same SASS as FILE")
    r.add_argument("file", metavar="FILE")
    r.add_argument("--arch", default="sm_90", help="ptxas target, e.g. sm_90a, sm_90, sm_89 (default sm_90)")
    r.set_defaults(func=cmd_roundtrip)
    e = sub.add_parser("emit", help="print emit(parse(FILE))")
    e.add_argument("file", metavar="FILE")
    e.set_defaults(func=cmd_emit)
    o = sub.add_parser("optimize", help="the optimize path for one PTX file and its launch spec "
                                        "(measured on a GPU, or replayed from a store)")
    optimize.add_arguments(o)
    o.set_defaults(func=optimize.run)
    c = sub.add_parser("capture", help="run a workload and record every Triton kernel it launches as specs "
                                       "(chronos capture --out DIR -- CMD ...)")
    capture.add_arguments(c)
    c.set_defaults(func=capture.run)
    tu = sub.add_parser("tune", help="tune a directory of kernels into per-kernel results and a tuned DB")
    tune.add_arguments(tu)
    tu.set_defaults(func=tune.run)
    rn = sub.add_parser("run", help="run a command with a tuned DB deployed in every Python process it "
                                    "starts (chronos run --db DB -- CMD ...)")
    run_deployed.add_arguments(rn)
    rn.set_defaults(func=run_deployed.run)
    t = sub.add_parser("tuned", help="the tuned DB that chronos.triton deploys from")
    tsub = t.add_subparsers(dest="tuned_command", required=True)
    ts = tsub.add_parser("show", help="list a tuned DB's entries: kernel, actions, time ratio tuned/stock "
                                      "[99%% CI] (<1 = faster), GPU")  # argparse %-formats help: %% is a %
    ts.add_argument("db", metavar="DB", help="a tuned DB file (chronos tune --db writes one)")
    ts.set_defaults(func=cmd_tuned_show)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ChronosError as e:
        msg = one_line(e)  # one line, whatever the message holds
        print(f"chronos: error: {msg}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
