"""How much of each captured workload's Triton GPU time the knob stages' selected kernels carry (#28 item 4).

    python scripts/selection_coverage.py [--per-family 24]

GPU time of a kernel = its launches in the capture (capture.json per_kernel) x its stock time per launch as
chronos tune measured it (tune-parts/<kernel>.json baseline time, side by side on the GPU named there). The
selection is the stages' own (chronos.search.headroom.selected: one kernel per entry name, the profile's
per-kernel times first where the profile has them). Kernels the tune did not time are counted apart.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from chronos.search.headroom import selected


def coverage(kernels: Path, workload: str, per_family: int) -> dict:
    folder = kernels / "captured" / workload
    capture = json.loads((folder / "capture.json").read_text())
    launches = {k["kernel"]: k["launches"] for k in capture["per_kernel"]}
    stock_ms = {}
    for part in (folder / "tune-parts").glob("*.json"):
        row = json.loads(part.read_text())
        if ms := row.get("baseline_ms") or (row.get("baseline") or {}).get("time_ms"):
            stock_ms[row["kernel"]] = ms
    chosen = [s.kernel for _, s in selected(kernels, f"captured/{workload}", per_family)]
    time_ms = {k: n * stock_ms[k] for k, n in launches.items() if k in stock_ms}
    total = sum(time_ms.values())
    top = sorted(time_ms, key=time_ms.get, reverse=True)[:per_family]
    return {"kernels": len(launches), "timed": len(time_ms), "selected": len(chosen),
            "selected_share": sum(time_ms.get(k, 0.0) for k in chosen) / total,
            "top_share": sum(time_ms[k] for k in top) / total,
            "top_not_selected": [k for k in top if k not in chosen][:5]}


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
