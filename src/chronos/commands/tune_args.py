"""`chronos tune`'s arguments made whole before any work: defaults filled in, every path absolute, and every
input a user can get wrong (a pattern, a profile, an action set, a folder) refused with one line that names
it, instead of a traceback halfway through a run."""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path

from chronos.errors import ChronosError


def resolve_paths(args: argparse.Namespace) -> None:
    """The defaults filled in and every path argument made absolute, in place; then `check_args`."""
    from chronos.defaults import params_path, policy_path

    d = args.dir = args.dir.resolve()
    args.parts = (args.parts or d / "tune-parts").resolve()
    args.store = (args.store or d / "measurements.sqlite").resolve()
    args.checkpoint = (args.checkpoint or policy_path()).resolve()
    args.params = (args.params or params_path()).resolve()
    args.db, args.order_by = (p and p.resolve() for p in (args.db, args.order_by))
    if args.ptxas and os.sep in args.ptxas:  # a path; 'triton' or a bare name (looked up on PATH) stays
        args.ptxas = str(Path(args.ptxas).resolve())
    check_args(args)


def check_args(args: argparse.Namespace) -> None:
    from chronos.actions import ACTION_NAMES

    if not (args.dir / "specs.json").is_file():
        raise ChronosError(f"{args.dir} holds no specs.json: pass a folder that chronos capture wrote (or "
                           "one with a specs.json and its PTX files)")
    if args.parts.exists() and not args.parts.is_dir():
        raise ChronosError(f"--parts {args.parts} is a file, not a folder")
    if args.only:
        try:
            re.compile(args.only)
        except re.error as e:
            raise ChronosError(f"--only {args.only!r} is not a regular expression: {e}") from None
    transforms = [a for a in ACTION_NAMES if a != "stop"]
    for fixed in args.fixed:
        if unknown := [a for a in fixed.split("+") if a and a not in transforms]:
            raise ChronosError(f"--fixed {fixed!r}: unknown action(s) {', '.join(unknown)}; the actions are "
                               f"{' '.join(transforms)}")
    if args.budget is not None and not args.budget >= 0:  # 0: start no kernel (write --db from parts)
        raise ChronosError(f"--budget {args.budget}: a number of seconds, 0 or more")
    if args.order_by:
        args.profile = read_profile(args.order_by)


def read_profile(path: Path) -> dict:
    """A workload profile (--order-by): a JSON object whose `phases` hold `triton_kernels_us`."""
    try:
        profile = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ChronosError(f"--order-by {path}: not a readable JSON profile ({e})") from None
    if not isinstance(profile, dict) or not isinstance(profile.get("phases", {}), dict):
        raise ChronosError(f"--order-by {path}: not a workload profile (a JSON object with 'phases', as "
                           "scripts/workloads.py --profile writes)")
    return profile
