"""Do other block sizes make a stranger's hand-written Triton kernels faster? (#28 item 7: a model whose
norms, activations and loss run as hand-written Triton kernels.) attorch's committed capture carries
block-size variants built on a CPU from its vendored source (scripts/make_jit_block_variants.py: 28 of 30
stock PTX remade exactly, 78 variants, for 30 of its 36 launches); on a GPU each kernel's variants are
compared side by side with stock, bit-exact verified, PTX actions on top of a block winner, the winner
confirmed alone (chronos.search.knob_blocks, as stage knob_blocks does for the Inductor workloads).

    # a GPU host (bash scripts/device.sh experiments/attorch/blocks.py, ARGS="--store /tmp/b.sqlite")
    python experiments/attorch/blocks.py --store /tmp/attorch_blocks.sqlite

Writes experiments/attorch/blocks.json: per kernel the comparison rows and the confirmed speedup, and their
geomean. Status (2026-12-04): variants built, not measured (no GPU lent).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "data" / "library" / "attorch"
sys.path.insert(0, str(ROOT / "src"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--store", type=Path, default=Path("/tmp/attorch_blocks.sqlite"))
    p.add_argument("--out", type=Path, default=Path(__file__).with_suffix(".json"))
    args = p.parse_args()
    from chronos import config
    from chronos.errors import ChronosError
    from chronos.kernels.spec import load_specs
    from chronos.measure.backend import GpuBackend
    from chronos.measure.verdicts import geomean
    from chronos.search.knob_blocks import blocks_kernel, blocks_summary

    cfg = config.load(ROOT / "params.yaml")
    timing, min_gain = cfg.search.knob_census.timing_for(cfg.timing), cfg.search.greedy.min_gain
    manifest = json.loads((LIB / "blocks.json").read_text())["kernels"]
    rows = []
    with GpuBackend(args.store, cfg.measure) as be:
        for spec in load_specs(LIB / "specs.json"):
            if not (manifest.get(spec.ptx) or {}).get("remade_stock"):
                continue
            try:
                row = blocks_kernel(spec, LIB, None, be, timing, min_gain)
            except ChronosError as e:
                row = {"kernel": spec.kernel, "error": " ".join(str(e).split())[:400]}
            rows.append(row)
            print(f"{spec.kernel[:60]:60s} {row.get('error') or '+'.join(row['best']['actions']) or '-'} "
                  f"{row.get('speedup', 0):.4f}", flush=True)
        prov = be.provenance()
    summary = blocks_summary(rows)
    summary["time_geomean_all"] = geomean([r["speedup"] for r in rows if "speedup" in r]) if rows else None
    out = {"provenance": prov, "summary": summary, "kernels": rows}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
