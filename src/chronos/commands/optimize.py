"""`chronos optimize FILE.ptx --spec SPEC.json`: the optimize path for a standalone PTX file and its launch
contract (a KernelSpec as JSON: one object, or a list from which --kernel or the PTX's entry picks one).

Writes the chosen PTX (the input's own, re-emitted, when nothing is verifiably faster) and a JSON report (the
optimize path's row: baseline, every candidate with its time ratio, interval and verdict, what was returned),
by default in the current directory: FILE may sit in a pipeline's input folder, where a new file would make
the next run redo its jobs. A gemm_tile spec goes through the seed's cycle path; every other kernel through
wall time. A kernel the backend could not measure (a replay miss) writes nothing and exits 1.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from chronos.errors import ChronosError, SpecError

EXIT_UNMEASURED = 1
"""Some kernel failed (not measured); 2 stays cli.main's for a ChronosError (bad input, usage)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE.ptx")
    p.add_argument("--spec", required=True, type=Path, help="launch contract: a KernelSpec JSON (or a list)")
    p.add_argument("--kernel", help="which spec of a list (default: the one whose entry FILE defines)")
    p.add_argument("--backend", choices=("gpu", "replay", "auto"), default="auto")
    p.add_argument("--store", type=Path, default=Path("data/store/measurements.sqlite"),
                   help="measurement store (gpu: written; replay: read)")
    p.add_argument("--checkpoint", type=Path,
                   help="the policy (default: ./models/checkpoint_best.pt where it exists, else the one "
                        "shipped with chronos)")
    p.add_argument("--params", type=Path, default=Path("params.yaml"),
                   help="knobs (predict, search.greedy.min_gain, measure, timing); defaults if absent")
    p.add_argument("--out", type=Path,
                   help="chosen PTX (default: FILE's name with .chronos.ptx, in the current directory, not "
                        "beside FILE)")
    p.add_argument("--report", type=Path,
                   help="JSON report (default: FILE's name with .chronos.json, in the current directory)")


def _spec(path: Path, kernel: str | None, ptx: str, src: Path):
    from chronos.kernels.spec import KernelSpec

    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise SpecError(f"cannot read the launch spec {path}: {e}") from e
    specs = [KernelSpec.from_json(d) for d in (raw if isinstance(raw, list) else [raw])]
    pick = [s for s in specs if (s.kernel == kernel if kernel else f".entry {s.entry}(" in ptx
                                 or f".entry {s.entry} (" in ptx)]
    if not pick:
        names = ", ".join(s.kernel for s in specs[:8])
        raise SpecError(f"{path}: 0 specs match {kernel or 'the entry of the PTX'} (have: {names})")
    if len(pick) > 1:
        raise SpecError(_ambiguous(path, kernel, src, pick))
    return pick[0]


def _ambiguous(path: Path, kernel: str | None, src: Path, pick: list) -> str:
    """Several specs share an entry (one Triton kernel at several shapes): only the user knows which."""
    names = ", ".join(s.kernel for s in pick[:12]) + (", ..." if len(pick) > 12 else "")
    if kernel:
        return f"{path}: {len(pick)} specs are named {kernel}; kernel names in a spec list must be unique"
    return (f"{path}: {len(pick)} specs match the entry of {src} ({pick[0].entry}): {names}; "
            "pass --kernel NAME to pick one")


def _unmeasured(args: argparse.Namespace, kernel: str, row: dict) -> str:
    """One line: which kernel and variant the backend could not measure, why, and the command that would."""
    variant = "+".join(row.get("final_set") or []) or "baseline"
    repro = shlex.join(["chronos", "optimize", str(args.file), "--spec", str(args.spec), "--kernel", kernel,
                        "--backend", "gpu", "--store", str(args.store), "--checkpoint", str(args.checkpoint),
                        "--params", str(args.params)])
    # the error's own repro names a pipeline stage (and optimize truncates it): this command replaces it
    why = " ".join(str(row.get("error", "")).split()).split(" (reproduce: ")[0]
    return (f"chronos: error: {kernel} (policy's set {variant}) not measured on backend {args.backend}: "
            f"{why}; reproduce on a GPU machine: {repro}")


def _outputs(args: argparse.Namespace, src: Path) -> tuple[Path, Path]:
    """--out and --report, by default FILE's name in the current directory (FILE's folder may be a pipeline
    input: a file written there makes the next run redo its jobs); absolute, so the printed paths are."""
    out = args.out or Path(src.with_suffix(".chronos.ptx").name)
    report = args.report or Path(src.with_suffix(".chronos.json").name)
    out, report = out.resolve(), report.resolve()
    _writable(out, "--out")
    _writable(report, "--report")
    return out, report


PTX_LIMIT = 2 << 20
"""Bytes of PTX `chronos optimize` takes: 5x the largest kernel captured (FlexAttention's backward, 0.4 MB);
its transforms and ptxas scale with the text (a 5 MB file took 15 minutes)."""


def _read_input(src: Path) -> str:
    from chronos.kernels.spec import read_ptx_file

    if src.is_file() and src.stat().st_size > PTX_LIMIT:
        raise ChronosError(f"{src.resolve()} is {src.stat().st_size} bytes; chronos optimize takes PTX up to "
                           f"{PTX_LIMIT} bytes (one kernel: the largest captured is 0.4 MB)")
    return read_ptx_file(src)


def _writable(path: Path, flag: str) -> None:
    if path.is_dir() or not path.parent.is_dir():
        why = "is a folder" if path.is_dir() else "its folder does not exist"
        raise ChronosError(f"{flag} {path}: {why}")


def _default_checkpoint() -> Path:
    """The repository's policy when run from a checkout, else the copy shipped in the package, so that the
    command works from any directory."""
    from chronos.defaults import policy_path

    local = Path("models/checkpoint_best.pt")
    return local if local.is_file() else policy_path()


def run(args: argparse.Namespace) -> int:
    from chronos.config import Config, load
    from chronos.optimize import optimize_kernel
    from chronos.ptx import parse
    from chronos.rl.checkpoint import load_model
    from chronos.search.atlas_replay import backend_with_atlas

    src = Path(args.file)
    ptx = _read_input(src)
    out, report = _outputs(args, src)  # checked before the work, not after it
    cfg = load(args.params) if args.params.is_file() else Config()
    spec = _spec(args.spec, args.kernel, ptx, src)
    args.checkpoint = args.checkpoint or _default_checkpoint()
    module, policy = parse(ptx, file=str(src)), load_model(args.checkpoint, action_space=cfg.actions).eval()
    with backend_with_atlas(args.backend, args.store, cfg.measure) as backend:
        res = optimize_kernel(spec, module, backend, policy, cfg)
        row = {**res.to_json(), "provenance": backend.provenance(), "input": str(src)}
    if row["verdict"] == "unmeasured":
        print(_unmeasured(args, spec.kernel, row), file=sys.stderr)
        return EXIT_UNMEASURED
    out.write_text(res.ptx)
    report.write_text(json.dumps(row, indent=1) + "\n")
    said = row.get("returned") or row.get("optimize", {}).get("returned", "?")
    print(f"{spec.kernel}: {row['verdict']} -> {said}; PTX {out}, report {report}")
    return 0
