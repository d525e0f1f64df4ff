"""Per corpus family: how many of the 20 transforms are legal on average, and why the others are refused.

    python experiments/action_space/legality_census.py

Families: the 64 gemm_tile kernels (sm_90), the nvcc corpus and the Triton corpus (tests/corpus/), the
33-kernel Triton suite (data/kernels/triton/) and the captured workloads (data/kernels/captured/<w>/, one
entry per distinct PTX) when present. Needs ptxas (register budgets are decided by it).
`--only captured` limits it to families whose name contains that text.
"""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

from chronos.kernels.gemm_tile import GEMM_TILE_SHAPES, gemm_tile_ptx
from chronos.kernels.spec import read_ptx_file
from chronos.ptx import parse
from chronos.transforms import TRANSFORM_NAMES, refusals

ROOT = Path(__file__).resolve().parents[2]


def _families() -> dict[str, list[tuple[str, str]]]:
    fams: dict[str, list[tuple[str, str]]] = defaultdict(list)
    fams["gemm_tile"] = [(f"gemm_tile{s}", gemm_tile_ptx(*s)) for s in GEMM_TILE_SHAPES]
    for p in sorted((ROOT / "tests/corpus").glob("*/*.ptx")):
        fams[f"corpus/{p.parent.name}"].append((p.name, p.read_text()))
    for p in sorted((ROOT / "data/kernels/triton").glob("*.ptx")):
        fams["triton_suite"].append((p.name, p.read_text()))
    for p in sorted((ROOT / "data/kernels/captured").glob("*/ptx/*.ptx*")):
        fams[f"captured/{p.parent.parent.name}"].append((p.name, read_ptx_file(p)))
    return fams


def _category(reason: str) -> str:
    """Collapse a refusal message to its kind (drop kernel-specific numbers and ptxas details)."""
    reason = re.sub(r"\(group \w+\)", "", reason)
    reason = re.sub(r"ptxas refuses \.maxnreg \d+ for \w+: .*", "ptxas refuses the budget", reason)
    reason = re.sub(r"\.maxnreg \d+", ".maxnreg N", reason)
    reason = re.sub(r"the \w\w schedule", "the schedule", reason)
    reason = re.sub(r"\.(cs|cg|ca|cv|wt|wb)\b", ".<cop>", reason)
    return reason.strip()


def main() -> None:
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else ""
    for fam, kernels in _families().items():
        if only not in fam:
            continue
        legal_counts, why = [], Counter()
        per_action = Counter()
        for name, text in kernels:
            refused = refusals(parse(text, file=name))
            legal_counts.append(len(TRANSFORM_NAMES) - len(refused))
            per_action.update(a for a in TRANSFORM_NAMES if a not in refused)
            why.update(_category(r) for r in refused.values())
        n = len(kernels)
        print(f"\n== {fam}: {n} kernels, {sum(legal_counts) / n:.1f} of 20 transforms legal on average "
              f"(min {min(legal_counts)}, max {max(legal_counts)})")
        print("   legal on: " + ", ".join(f"{a} {per_action[a]}/{n}" for a in TRANSFORM_NAMES))
        for reason, count in why.most_common():
            print(f"   refused {count:4d}x  {reason}")


if __name__ == "__main__":
    main()
