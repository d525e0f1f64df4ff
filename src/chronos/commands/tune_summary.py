"""What `chronos tune` did not tune, and why: the list it prints on stderr at the end of every run and writes
to `<parts>/../tune-summary.json` (beside the parts folder, not in it: every *.json in the parts folder is a
kernel's part file, which the DB writer and the pipeline's stages read as such).

    {"dir": ..., "parts": ..., "selection": {"kernel": ..., "only": ...}, "selected": 7,
     "tuned_in_this_run": 5, "exit_status": 1,
     "not_tuned": [{"kernel": ..., "status": "failed", "why": "<the error>"}, ...]}

Statuses: `failed` (its error: in this run, or in an earlier one whose part file holds it), `skipped` (float
atomics: nothing can be verified bit-exactly), `left` (by --budget), `untuned` (no part file yet) and
`not_deployable` (faster, but no Triton identity in DIR/triton.json, so no tuned DB entry).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from chronos.tuning.deploy_rule import deploys
from chronos.tuning.parts import triton_identity

SUMMARY = "tune-summary.json"


def not_tuned(args: argparse.Namespace, selected: list, counts: dict) -> list[dict]:
    """Every selected kernel that is not tuned, or tuned faster but not deployable: kernel, status, why."""
    identity, out = triton_identity(args.dir), []
    for spec in selected:
        part = args.parts / f"{spec.kernel}.json"
        row = json.loads(part.read_text()) if part.is_file() else None
        if spec.kernel in counts.get("failed", {}):
            why = ("failed", counts["failed"][spec.kernel])
        elif spec.kernel in counts.get("left", []):
            why = ("left", "left by --budget: the next run tunes it")
        elif row is None:
            why = ("untuned", "no part file: not tuned yet")
        elif "error" in row:
            why = ("failed", f"in an earlier run (remove {part} to tune it again): {row['error']}")
        elif row.get("verdict") == "skipped":
            why = ("skipped", row.get("reason", ""))
        elif deploys(row) and spec.kernel not in (identity or {}):
            where = "no Triton identity in" if identity is not None else "no"
            why = ("not_deployable",
                   f"faster ({row['returned']}), but {where} {args.dir / 'triton.json'}: no tuned DB entry")
        else:
            continue
        out.append({"kernel": spec.kernel, "status": why[0], "why": why[1]})
    return out


def report_not_tuned(args: argparse.Namespace, selected: list, counts: dict) -> int:
    """The list of kernels not tuned, on stderr and in <parts>/../tune-summary.json; returns the exit
    status: 1 when a kernel failed in this run."""
    status = 1 if counts.get("failed") else 0
    rows = not_tuned(args, selected, counts)
    path = args.parts.parent / SUMMARY
    doc = {"dir": str(args.dir), "parts": str(args.parts),
           "selection": {"kernel": args.kernel, "only": args.only}, "selected": len(selected),
           "tuned_in_this_run": counts.get("done", 0), "exit_status": status, "not_tuned": rows}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{SUMMARY}.{os.getpid()}")  # shards may finish together: replaced whole
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, path)
    sys.stdout.flush()  # after the counts and the DB line, in a log of both streams too
    print(f"tune: {len(rows)} of {len(selected)} selected kernels not tuned or not deployable "
          f"(listed in {path}){':' if rows else ''}", file=sys.stderr)
    for r in rows:
        print(f"tune:   {r['kernel']:44s} {r['status']}: {' '.join(r['why'].split())[:200]}", file=sys.stderr)
    return status
