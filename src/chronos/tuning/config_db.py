"""Tuned configs written from the compile-knob stages' parts (#28): every kernel whose confirmed winner is a
compile config alone (a knob value, a block move, or both: no PTX action on top) becomes one entry of the
tuned DB's `configs` table (chronos.triton.tuned_configs), deployed by changing the config before Triton
compiles. A kernel is left out, with why, when its winner holds a PTX action (that part deploys as tuned
PTX, not here), when its winner was not bit-exact, or when nothing gives its source hash (the capture's
triton.json since #28, or scripts/make_block_variants.py's copy of the source).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

from chronos.measure.numerics import bit_exact
from chronos.measure.verdicts import FASTER

KNOB = re.compile(r"^(num_warps|num_stages|maxnreg)=(\d+)$")
BLOCK = re.compile(r"^([XYZ]|R\d_)BLOCK=(\d+)$")


def config_change(label: str) -> dict | None:
    """"num_warps=8" / "XBLOCK=2048,num_warps=8" -> {"num_warps": 8, "kwargs": {"XBLOCK": 2048}}; None for a
    label that is not a compile config (a PTX action)."""
    out: dict = {"kwargs": {}}
    for part in label.split(","):
        if m := KNOB.match(part):
            out[m.group(1)] = int(m.group(2))
        elif m := BLOCK.match(part):
            out["kwargs"][part.split("=")[0]] = int(m.group(2))
        else:
            return None
    return out


def stock_config(folder: Path, spec: dict, knobs_entry: dict) -> dict | None:
    """The config the captured launch ran with: its constexprs (the capture notes them in the spec) and
    Triton's num_warps, num_stages and maxnreg (knobs.json's stock)."""
    m = re.search(r"constexprs (\{.*\})\s*$", spec.get("notes", ""))
    stock = knobs_entry.get("stock")
    if m is None or stock is None:
        return None
    return {"kwargs": json.loads(m.group(1)), "num_warps": stock["num_warps"],
            "num_stages": stock["num_stages"], "maxnreg": stock.get("maxnreg")}


def source_sha256(folder: Path, identity: dict, blocks_entry: dict) -> str | None:
    """The kernel's source hash as deployment computes it (sha256 of the JIT function's text)."""
    if identity.get("source_sha256"):
        return identity["source_sha256"]
    src = blocks_entry.get("source")
    if src and (folder / src).is_file():
        return hashlib.sha256(gzip.decompress((folder / src).read_bytes())).hexdigest()
    return None


def decision(row: dict) -> tuple[dict | None, str]:
    """(the winner's config change, "") or (None, why the row gives no config entry)."""
    best = row.get("best") or {}
    if best.get("verdict") != FASTER or not best.get("actions"):
        return None, "no confirmed winner"
    if len(best["actions"]) != 1 or (change := config_change(best["actions"][0])) is None:
        return None, f"its winner {'+'.join(best['actions'])} holds a PTX action (deploys as tuned PTX)"
    label = best["actions"][0]
    measured = [c for c in [*row.get("candidates", []), *row.get("blocks", [])]
                if c.get("action") == label or c.get("actions") == best["actions"]]
    if not measured or not all(bit_exact(c) for c in measured):
        return None, f"{label} was not bit-exact"
    return change, ""


def _json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def write_configs(folder: Path, parts: list[Path], db_path: Path) -> dict:
    """Config entries for the workload in `folder` from the stage part files `parts`; returns counts and
    the reason of every kernel left out."""
    from chronos.triton.tuned_configs import ConfigKey, KernelConfig, put_config
    from chronos.triton.tuned_db import TunedDB

    specs = {s["kernel"]: s for s in json.loads((folder / "specs.json").read_text())}
    identity = _json(folder / "triton.json")
    knobs, blocks = (_json(folder / f).get("kernels", {}) for f in ("knobs.json", "blocks.json"))
    versions = _json(folder / "knobs.json").get("provenance", {})
    out: dict = {"kernels": 0, "entries": 0, "left_out": {}}
    with TunedDB(db_path) as db:
        for path in parts:
            row = json.loads(path.read_text())
            out["kernels"] += 1
            change, why = decision(row)
            spec, ident = specs.get(row["kernel"]), identity.get(row["kernel"], {})
            stock = stock_config(folder, spec, knobs.get(spec["ptx"], {})) if spec and change else None
            sha = source_sha256(folder, ident, blocks.get(spec["ptx"], {})) if spec and change else None
            why = why or ("no stock config recorded" if stock is None else "no source hash" if sha is None
                          else "")
            if why:
                out["left_out"][row["kernel"]] = why
                continue
            tuned = {**stock, **{k: v for k, v in change.items() if k != "kwargs"},
                     "kwargs": {**stock["kwargs"], **change["kwargs"]}}
            prov = row.get("provenance", {})
            key = ConfigKey(ident.get("name") or spec["entry"], sha, prov.get("gpu", ""),
                            versions.get("torch", ""), versions.get("triton", ""))
            best = row["best"]
            put_config(db, key, KernelConfig.from_json(stock), KernelConfig.from_json(tuned), best["ratio"],
                       tuple(best["ci"]), {"bit_exact": True, "verdict": best["verdict"]},
                       {"kernel": row["kernel"], "part": path.name, "measured": prov})
            out["entries"] += 1
    return out
