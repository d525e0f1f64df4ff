"""How much of each captured workload's Triton GPU time the knob stages' selected kernels carry (#28 item 4).

    python scripts/selection_coverage.py [--per-family 24]

GPU time of a kernel (chronos.kernels.profile.measured_gpu_ms) = its launches in the capture x its stock time
per launch as chronos tune measured it side by side. The selection is the stages' own
(chronos.search.headroom.selected, `profile`: one kernel per entry name, the profile's per-kernel times first
where the profile has them), beside the `measured_time` one (the heaviest kernels). Kernels the tune did not
time weigh nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from chronos.kernels.profile import measured_gpu_ms, time_share
from chronos.search.headroom import selected
from chronos.search.runs import kernels_of


def coverage(kernels: Path, workload: str, per_family: int) -> dict:
    family = f"captured/{workload}"
    weight = measured_gpu_ms(kernels / family)
    chosen = [s.kernel for _, s in selected(kernels, family, per_family)]
    top = [s.kernel for _, s in selected(kernels, family, per_family, "measured_time")]
    return {"kernels": len(list(kernels_of(kernels, [family]))), "timed": len(weight),
            "selected": len(chosen), "selected_share": time_share(weight, chosen),
            "top_share": time_share(weight, top), "top_not_selected": [k for k in top if k not in chosen]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernels", type=Path, default=ROOT / "data" / "kernels")
    p.add_argument("--per-family", type=int, default=24)
    args = p.parse_args()
    for w in ("llama", "gpt2", "bert", "flex"):
        c = coverage(args.kernels, w, args.per_family)
        print(f"{w:6s} {c['kernels']:3d} kernels ({c['timed']} timed by tune): the {c['selected']} selected "
              f"carry {c['selected_share']:.1%} of the timed GPU time; the {args.per_family} with the most "
              f"carry {c['top_share']:.1%}; largest left out: "
              + ", ".join(k[:48] for k in c["top_not_selected"][:3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
