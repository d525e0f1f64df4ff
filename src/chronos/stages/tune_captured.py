"""Stage `tune_captured`: `chronos tune` of every captured workload again, from the measurement store, and
checked against what the H200 recorded.

    python -m chronos.stages.tune_captured --params params.yaml --captured data/kernels/captured \
        --store data/store/measurements.sqlite --out reports/tune_captured.json [--backend gpu|replay|auto]

A workload's record is its `tune-parts/` (workflow/captured/Snakefile: one part per kernel, measured side
by side on the GPU) and `tune-policy.pt`, the checkpoint whose candidates were measured: the pipeline's own
policy may since have been retrained (`dvc exp run -S grpo.epochs=...`), and its candidates were never
measured. On replay every recorded kernel is tuned once more: the policy predicts its candidates
on this CPU, the store answers each comparison, and the row must equal the record, the predicted
log-probabilities to LOGP_TOLERANCE (printed to 4 decimals, they differ in the last one between CPU builds
of torch), every other float to FLOAT_RTOL (a bootstrap interval's bound differs in its last bit between
numpy releases: 1.0013890278442166 against ...68). Kernels the record lacks (left by a call's budget) are
listed, never guessed. A disagreement is recorded with the fields that differ and the stage exits 1: a
committed tune result that the store cannot reproduce is a bug, not a number. The tuned DB that deployment
reads is not kept in git; it is written from the record, and `db` says how many entries it holds.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

from chronos.errors import ChronosError
from chronos.kernels.spec import load_specs, read_ptx
from chronos.progress import progress
from chronos.report.captured import tune_summary
from chronos.stages.common import EXIT_OK, EXIT_PARTIAL, command_line, run_stage, write_json
from chronos.stages.measuring import add_backend_arguments, open_backend

LOGP_TOLERANCE = 2e-3
FLOAT_RTOL = 1e-9
# facts of the device run that a replay on a clone cannot re-derive: which captured arguments (git-ignored
# inputs) a tune verified on, the confirmations a re-confirmation on them replaced, and what it verified on
RECORD_ONLY = ("captured_inputs", "confirm_history", "confirm_inputs")


def _arguments(ap) -> None:
    ap.add_argument("--captured", type=Path, default=Path("data/kernels/captured"))
    ap.add_argument("--out", type=Path, default=Path("reports/tune_captured.json"))
    ap.add_argument("--only", help="regex on workload names")
    add_backend_arguments(ap)


def differences(replayed, recorded, path: str = "") -> list[str]:
    """Where two part rows differ (dotted paths); `logp` values within LOGP_TOLERANCE are equal, other
    floats within FLOAT_RTOL (relative); strings, verdicts and action lists exactly."""
    if isinstance(replayed, dict) and isinstance(recorded, dict):
        return [d for k in sorted(set(replayed) | set(recorded)) if not (path == "" and k in RECORD_ONLY)
                for d in differences(replayed.get(k), recorded.get(k), f"{path}.{k}")]
    if isinstance(replayed, list) and isinstance(recorded, list) and len(replayed) == len(recorded):
        return [d for i, (a, b) in enumerate(zip(replayed, recorded, strict=True))
                for d in differences(a, b, f"{path}[{i}]")]
    if path.endswith(".logp") and isinstance(replayed, float) and isinstance(recorded, float):
        return [] if abs(replayed - recorded) <= LOGP_TOLERANCE else [path]
    if isinstance(replayed, float) and isinstance(recorded, float):
        return [] if math.isclose(replayed, recorded, rel_tol=FLOAT_RTOL) else [path]
    return [] if replayed == recorded else [path or "."]


def replay_workload(d: Path, backend, cfg) -> dict:
    """Every kernel of workload folder `d` that its record holds, tuned again with the record's policy and
    compared with the record."""
    from chronos.ptx.atomics import float_atomics
    from chronos.rl.checkpoint import load_model
    from chronos.tuning.kernel import tune_one

    if not (d / "tune-policy.pt").is_file():
        raise ChronosError(f"{d}: a tune record without tune-policy.pt (the checkpoint it was tuned with)")
    policy = load_model(d / "tune-policy.pt").eval()

    records = {p.stem: json.loads(p.read_text()) for p in sorted((d / "tune-parts").glob("*.json"))}
    specs = load_specs(d / "specs.json")
    rows, disagree = [], {}
    for spec in progress([s for s in specs if s.kernel in records], desc=f"tune {d.name}", unit="kernel"):
        rec = records[spec.kernel]
        if rec.get("verdict") == "skipped":  # float atomics: the check is that the PTX still has them
            racy = float_atomics(read_ptx(d / "specs.json", spec))
            row = rec if racy else {"kernel": spec.kernel, "verdict": "not skipped: no float atomics"}
        else:
            row, _ = tune_one(spec, d / "specs.json", backend, policy, cfg, confirm="confirm" in rec)
        if diff := differences(row, rec):
            disagree[spec.kernel] = diff[:8]
        rows.append({"kernel": spec.kernel, "returned": row.get("returned", row.get("verdict")),
                     "speedup_time": row.get("speedup_time"), "verdict": row.get("verdict")})
    return {"summary": tune_summary([records[r["kernel"]] for r in rows]), "recorded": len(records),
            "db": db_counts(d),
            "not_recorded": sorted(s.kernel for s in specs if s.kernel not in records),
            "agrees_with_record": len(rows) - len(disagree), "disagreements": disagree, "kernels": rows}


def db_counts(d: Path) -> dict:
    """The tuned DB that deployment reads, written from the record (it is not kept in git) into a scratch
    file: how many faster kernels became entries, how many lacked a Triton identity."""
    import tempfile

    from chronos.tuning.db import write_db

    with tempfile.TemporaryDirectory() as tmp:
        return write_db(d, d / "tune-parts", Path(tmp) / "tuned.sqlite")


def _body(args, cfg) -> int:
    dirs = [d for d in sorted(args.captured.iterdir()) if (d / "tune-parts").is_dir()
            and (not args.only or re.search(args.only, d.name))]
    if not dirs:
        raise ChronosError(f"{args.captured}: no workload has a tune record (tune-parts/)")
    backend = open_backend(args, cfg)
    try:
        workloads = {d.name: replay_workload(d, backend, cfg) for d in dirs}
        provenance = {"backend": type(backend).__name__, "measured_with": backend.provenance(),
                      "command": command_line("tune_captured", args.argv)}
    finally:
        backend.close()
    write_json(args.out, {"workloads": workloads, "provenance": provenance}, indent=1, sort_keys=True)
    for w, r in workloads.items():
        print(f"tune_captured {w}: {r['agrees_with_record']}/{len(r['kernels'])} replayed as recorded, "
              f"{len(r['not_recorded'])} not recorded; {json.dumps(r['summary'])}")
    return EXIT_PARTIAL if any(r["disagreements"] for r in workloads.values()) else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    return run_stage("tune_captured", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())
