"""`chronos optimize FILE.ptx --spec SPEC.json`: the optimize path for a standalone PTX file and its launch
contract (a KernelSpec as JSON: one object, or a list from which --kernel or the PTX's entry picks one).

Writes the chosen PTX (the input's own, re-emitted, when nothing is verifiably faster) and a JSON report (the
optimize path's row: baseline, every candidate with its time ratio, interval and verdict, what was returned).
A gemm_tile spec goes through the seed's cycle path; every other kernel through wall time.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from chronos.errors import ChronosError, SpecError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE.ptx")
    p.add_argument("--spec", required=True, type=Path, help="launch contract: a KernelSpec JSON (or a list)")
    p.add_argument("--kernel", help="which spec of a list (default: the one whose entry FILE defines)")
    p.add_argument("--backend", choices=("gpu", "replay", "auto"), default="auto")
    p.add_argument("--store", type=Path, default=Path("data/store/measurements.sqlite"),
                   help="measurement store (gpu: written; replay: read)")
    p.add_argument("--checkpoint", type=Path, default=Path("models/checkpoint_best.pt"))
    p.add_argument("--params", type=Path, default=Path("params.yaml"),
                   help="knobs (predict, search.greedy.min_gain, measure, timing); defaults if absent")
    p.add_argument("--out", type=Path, help="chosen PTX (default: FILE with .chronos.ptx)")
    p.add_argument("--report", type=Path, help="JSON report (default: FILE with .chronos.json)")


def _spec(path: Path, kernel: str | None, ptx: str):
    from chronos.kernels.spec import KernelSpec

    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise SpecError(f"cannot read the launch spec {path}: {e}") from e
    specs = [KernelSpec.from_json(d) for d in (raw if isinstance(raw, list) else [raw])]
    pick = [s for s in specs if (s.kernel == kernel if kernel else f".entry {s.entry}(" in ptx
                                 or f".entry {s.entry} (" in ptx)]
    if len(pick) != 1:
        names = ", ".join(s.kernel for s in specs[:8])
        raise SpecError(f"{path}: {len(pick)} specs match {kernel or 'the entry of the PTX'} (have: {names})")
    return pick[0]


def run(args: argparse.Namespace) -> int:
    from chronos.config import Config, load
    from chronos.kernels.spec import judged_in_cycles
    from chronos.optimize import optimize
    from chronos.optimize_time import optimize_time
    from chronos.ptx import parse
    from chronos.rl.checkpoint import load_model
    from chronos.search.atlas_replay import backend_with_atlas

    src = Path(args.file)
    try:
        ptx = src.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ChronosError(f"cannot read {src}: {e}") from e
    cfg = load(args.params) if args.params.is_file() else Config()
    spec = _spec(args.spec, args.kernel, ptx)
    module, policy = parse(ptx, file=str(src)), load_model(args.checkpoint, action_space=cfg.actions).eval()
    kw = {"max_steps": cfg.predict.max_steps, "min_gain": cfg.search.greedy.min_gain,
          "beam": cfg.predict.beam}
    with backend_with_atlas(args.backend, args.store, cfg.measure) as backend:
        if judged_in_cycles(spec):
            res = optimize(spec, module, backend, policy, **kw)
        else:
            res = optimize_time(spec, module, backend, policy, timing=cfg.timing, **kw)
        row = {**res.to_json(), "provenance": backend.provenance(), "input": str(src)}
    out = args.out or src.with_suffix(".chronos.ptx")
    report = args.report or src.with_suffix(".chronos.json")
    out.write_text(res.ptx)
    report.write_text(json.dumps(row, indent=1) + "\n")
    said = row.get("returned") or row.get("optimize", {}).get("returned", "?")
    print(f"{spec.kernel}: {row['verdict']} -> {said}; PTX {out}, report {report}")
    return 0
