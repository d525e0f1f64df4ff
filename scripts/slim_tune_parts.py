"""Cut captured workloads' tune parts to what the knob stages' selection reads, for a device call's tree.

A device call carries the working tree (64 MiB at most); each captured workload's `tune-parts/` holds full
tune records, of which `search.knob_census.select: profile+measured_time` reads only the kernel and its
stock time per launch (chronos.kernels.profile.measured_gpu_ms). This rewrites every part as
{kernel, baseline_ms} and then checks that the per-kernel GPU times the selection weighs are unchanged, so
the GPU selects the same kernels as this machine. (2026-12-07d: a cut that kept a `baseline_ms` the parts did
not have left every kernel untimed on the GPU: the selection took other tail kernels there, and 11 selected
kernels went unmeasured.)

    python scripts/slim_tune_parts.py data/kernels/captured/bert data/kernels/captured/gpt2

Only for a device branch: the full parts are the tune's record on main.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from chronos.errors import ChronosError
from chronos.kernels.profile import measured_gpu_ms, part_stock_ms


def slim(folder: Path) -> int:
    """Rewrite the folder's tune parts as {kernel, baseline_ms}; the number rewritten. Raises where the
    selection's weights would change (nothing is written then)."""
    before = measured_gpu_ms(folder)
    texts = {p: p.read_text() for p in sorted((folder / "tune-parts").glob("*.json"))}
    rows = {p: json.loads(t) for p, t in texts.items()}
    cut = {p: {"kernel": r["kernel"], **({"baseline_ms": ms} if (ms := part_stock_ms(r)) else {})}
           for p, r in rows.items() if isinstance(r, dict) and "kernel" in r}
    for path, row in cut.items():
        path.write_text(json.dumps(row))
    if (after := measured_gpu_ms(folder)) != before:
        for path, text in texts.items():  # as they were, byte for byte
            path.write_text(text)
        raise ChronosError(f"{folder}: slimming would change the selection's kernel times "
                           f"({len(before)} timed before, {len(after)} after); parts restored")
    return len(cut)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path, help="data/kernels/captured/<workload> folders")
    for folder in ap.parse_args(argv).folders:
        print(f"{folder}: {slim(folder)} parts cut to kernel and stock time", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
