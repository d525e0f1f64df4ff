"""Does a second compile knob add to the first? (#28, item 4's local search around the best) For every kernel
whose single knob value the census confirmed faster (data/knob_census), the pairs of that value with every
value of the other knobs, recompiled from the committed TTIR, beside stock and the single winner in one
side-by-side comparison (bit-exact verified); the fastest pair that beats stock is judged again in a
comparison of its own beside stock and the single winner.

    # any machine with Triton 3.6 and a ptxas for PTX ISA 9.0 (no GPU): the pair variants
    TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas python experiments/action_space/knob_pairs.py build
    # a GPU host: measured into a fresh store, the result beside this script (knob_pairs.json)
    python experiments/action_space/knob_pairs.py measure --store /tmp/pairs.sqlite

Status (2026-12-04): built on a CPU machine (25 kernels, 103 pair variants, 1 that Triton could not compile:
knob_pairs/pairs.json); not measured yet: no GPU was lent for the rest of that session.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent / "knob_pairs"
sys.path.insert(0, str(ROOT / "src"))

from chronos.search.headroom import selected
from chronos.search.knob_ptx import knob_winner

FAMILIES = ("captured/llama", "captured/gpt2", "captured/bert", "captured/flex")
PAIRED = {"num_warps": (1, 2, 4, 8, 16), "maxnreg": (64, 128, 168, 255), "num_stages": (2, 3, 4)}


def winners():
    for family in FAMILIES:
        folder = ROOT / "data/kernels" / family
        manifest = json.loads((folder / "knobs.json").read_text())["kernels"]
        for _, spec in selected(ROOT / "data/kernels", family, 24):
            knob = knob_winner(ROOT / "data/knob_census", family, spec.kernel)
            if knob:
                yield family, folder, spec, manifest[spec.ptx], knob


def build() -> None:
    from chronos.triton.recompile import ptx_version_of, recompile

    out = {}
    for family, folder, spec, entry, knob in winners():
        k1, v1 = knob.split("=")
        meta = json.loads((folder / entry["ttir"].replace(".ttir.gz", ".json")).read_text())
        ttir = HERE / "tmp.ttir"
        ttir.parent.mkdir(parents=True, exist_ok=True)
        ttir.write_bytes(gzip.decompress((folder / entry["ttir"]).read_bytes()))
        stock = gzip.decompress((folder / spec.ptx).read_bytes()).decode()
        version = ptx_version_of(stock)
        pairs = []
        for k2, values in PAIRED.items():
            if k2 == k1 or (k2 == "num_stages" and "tem_" not in spec.kernel):
                continue
            for v2 in values:
                if v2 == entry["stock"].get(k2):
                    continue
                label = f"{k1}={v1},{k2}={v2}"
                try:
                    b = recompile(ttir, meta, {k1: int(v1), k2: v2}, ptx_version=version)
                except Exception as e:  # noqa: BLE001 - a pair Triton cannot compile is a result
                    pairs.append({"label": label, "error": " ".join(str(e).split())[:200]})
                    continue
                rel = f"{family.split('/')[1]}/{spec.kernel[:80]}/{k1}-{v1}_{k2}-{v2}.ptx.gz"
                (HERE / rel).parent.mkdir(parents=True, exist_ok=True)
                (HERE / rel).write_bytes(gzip.compress(b.ptx.encode(), 9, mtime=0))
                pairs.append({"label": label, "ptx": rel, "num_warps": b.num_warps, "shared": b.shared})
        out[spec.kernel] = {"family": family, "knob": knob, "pairs": pairs}
        print(f"{spec.kernel[:60]:60s} {knob:14s} {sum('ptx' in p for p in pairs)} pairs", flush=True)
    ttir.unlink(missing_ok=True)
    (HERE / "pairs.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


def measure(store: Path) -> None:
    from chronos import config
    from chronos.kernels.spec import read_ptx_file
    from chronos.kernels.variant import Launch, Variant
    from chronos.measure.backend import GpuBackend
    from chronos.measure.verdicts import FASTER, geomean
    from chronos.search.knob_census import knob_variants
    from chronos.search.timed import time_row

    cfg = config.load(ROOT / "params.yaml")
    timing, min_gain = cfg.search.knob_census.timing_for(cfg.timing), cfg.search.greedy.min_gain
    plan = json.loads((HERE / "pairs.json").read_text())
    rows = []
    with GpuBackend(store, cfg.measure) as be:
        for family, folder, spec, _, knob in winners():
            item = plan[spec.kernel]
            single = next(v for v in knob_variants(folder, spec)[0] if v.actions == (knob,))
            stock = Variant(spec, read_ptx_file(folder / spec.ptx), ())
            pairs = [Variant(spec, read_ptx_file(HERE / p["ptx"]), (p["label"],),
                             launch=Launch((32 * p["num_warps"], 1, 1), p["shared"]))
                     for p in item["pairs"] if "ptx" in p]
            cmp = be.compare(spec, [stock, single, *pairs], timing)
            cands = [time_row(cmp, i, timing, min_gain) for i in range(1, 2 + len(pairs))]
            best_single = be.compare(spec, [stock, single], timing)
            row = {"family": family, "kernel": spec.kernel, "knob": knob, "candidates": cands,
                   "single": time_row(best_single, 1, timing, min_gain), "pair": None}
            won = [(c, v) for c, v in zip(cands[1:], pairs, strict=True) if c["verdict"] == FASTER]
            if won:
                _c, v = min(won, key=lambda cv: cv[0]["ratio"])
                again = be.compare(spec, [stock, single, v], timing)  # the pair beside both, alone
                row["pair"] = {"label": v.actions[0], "vs_stock": time_row(again, 2, timing, min_gain),
                               "vs_single": time_row(again, 2, timing, min_gain, against=1)}
            rows.append(row)
            p = row["pair"]
            print(f"{spec.kernel[:55]:55s} {knob:14s} single {1 / row['single']['ratio']:.4f} "
                  + (f"pair {p['label']} {1 / p['vs_stock']['ratio']:.4f} ({p['vs_single']['verdict']} than "
                     f"single)" if p else "no pair faster"), flush=True)
        prov = be.provenance()

    def speedup(r, pair: bool):
        if pair and r["pair"] and r["pair"]["vs_stock"]["verdict"] == FASTER \
                and r["pair"]["vs_single"]["verdict"] == FASTER:
            return 1 / r["pair"]["vs_stock"]["ratio"]
        return 1 / r["single"]["ratio"] if r["single"]["verdict"] == FASTER else 1.0

    summary = {"kernels": len(rows), "single_geomean": geomean([speedup(r, False) for r in rows]),
               "best_of_single_and_pair_geomean": geomean([speedup(r, True) for r in rows]),
               "pair_beats_single": sum(speedup(r, True) != speedup(r, False) for r in rows)}
    print(json.dumps(summary))
    (HERE.parent / "knob_pairs.json").write_text(json.dumps({"provenance": prov, "summary": summary,
                                                              "kernels": rows}, indent=1) + "\n")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("step", choices=("build", "measure"))
    p.add_argument("--store", type=Path, default=Path("/tmp/knob_pairs.sqlite"))
    args = p.parse_args()
    build() if args.step == "build" else measure(args.store)
    return 0


if __name__ == "__main__":
    sys.exit(main())
