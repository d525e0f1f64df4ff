"""The tuned DB written from a tune's part files: one DB entry per faster, confirmed kernel that has a Triton
identity."""

from __future__ import annotations

from pathlib import Path

from chronos.measure.numerics import WITHIN_TOLERANCE
from chronos.tuning.deploy_rule import deploys
from chronos.tuning.parts import read_part, returned_candidate, triton_identity


def write_db(dir_: Path, parts: Path, db_path: Path) -> dict:
    """Faster kernels with a Triton identity -> tuned DB entries; returns counts."""
    from chronos.kernels.spec import load_specs, read_ptx_file
    from chronos.triton.tuned_db import TunedDB, make_key

    identity = triton_identity(dir_) or {}
    alignment = {s.kernel: s.alignment for s in load_specs(dir_ / "specs.json")}
    rows = [read_part(p) for p in sorted(parts.glob("*.json"))]
    counts = {"kernels": len(rows), "faster": 0, "not_confirmed": 0, "entries": 0, "no_identity": 0}
    with TunedDB(db_path) as db:
        for row in rows:
            if not deploys(row):
                counts["not_confirmed"] += row.get("returned", "baseline") != "baseline"
                continue
            counts["faster"] += 1
            ident = identity.get(row["kernel"])
            if ident is None:
                counts["no_identity"] += 1
                continue
            best = returned_candidate(row)
            stock = read_ptx_file(dir_ / ident["stock_ptx"])
            tuned = (parts / f"{row['kernel']}.ptx").read_text()
            prov = row["provenance"]
            key = make_key(ident["hash"], stock, ident["name"], gpu=prov["gpu"], driver=prov["driver"],
                           ptxas=prov["ptxas"])
            db.put(key, best["actions"], tuned, best["ratio"], tuple(best["ci"]), verification(row, best),
                   {"measured_at": row.get("measured_at", ""), "kernel": row["kernel"],
                    "alignment": alignment.get(row["kernel"], {})})  # deployment re-derives under it
            counts["entries"] += 1
    return counts


def verification(row: dict, best: dict) -> dict:
    """What the entry's verification was: bit-exact, or within the tolerance the tune was run with (its
    ULP report from the verification log)."""
    out = {"bit_exact": best.get("reason") != WITHIN_TOLERANCE, "draws": row["verified_draws"],
           "verdict": best["verdict"], "captured_inputs": row.get("captured_inputs", [])}
    if not out["bit_exact"]:
        out.update(tolerance=row.get("tolerance"), numerics=best.get("log", ""))
    return out
