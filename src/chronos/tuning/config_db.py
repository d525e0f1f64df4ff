"""Chronos v3's winners into the tuned DB (#28), from the compile-knob stages' parts. A confirmed, bit-exact
winner is a compile config (a knob value, a block move, or both), v2 PTX actions, or a config with PTX actions
on top. Its config becomes one entry of the `configs` table (chronos.triton.tuned_configs), deployed by
changing the config before Triton compiles; its PTX actions become one entry of the tuned PTX table keyed by
the PTX that config makes (stock's where there is none), so that at deployment the hook swaps in the
actions' PTX only where Triton, under the deployed config, produced exactly the variant that was measured
(TunedKey.code_key: a config's compile hash is not known offline, its PTX identity stands for it). A kernel
is left out, with why, when its winner was not bit-exact, or when nothing gives its source hash (the
capture's triton.json since #28, or scripts/make_block_variants.py's copy of the source).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

from chronos.errors import ChronosError
from chronos.tuning.ptxas import ptxas_mismatch, recorded_ptxas
from chronos.tuning.rebuild import config_root, variant_of
from chronos.tuning.shapes import shared_ptx
from chronos.tuning.winners import config_change, confirmed_winner, split_winner


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
    winner, why = confirmed_winner(row)
    if winner is None:
        return None, why
    if winner[0] is None:
        return None, f"its winner {'+'.join(winner[1])} is PTX actions alone (a tuned PTX entry)"
    return config_change(winner[0]), ""


def winner_ptx(folder: Path, spec, actions: list[str]) -> tuple[str, str]:
    """(the PTX the winner's config makes — stock's where it has none —, the winner's PTX): its root is its
    knob or block variant or walk's end, rebuilt as the stages built it, its PTX actions applied on top."""
    from chronos.ptx import emit, parse

    label, ptx_actions = split_winner(actions)
    root = config_root(folder, spec, label)
    if ptx_actions:
        return root.ptx, variant_of(folder, spec, actions, root).ptx
    module = parse(root.ptx)  # as the hook derives it: parsed and emitted, no action applied
    module.align_contract.update(spec.alignment)
    return root.ptx, emit(module)


DB_STAGES = ("knob_ptx", "knob_blocks", "knob_walk", "knob_shapes")
"""The stages whose parts the v3 DB is written from, in stage order (latest_parts' `folders`; knob_shapes'
parts only judge again the variant shared by several shapes: never a kernel's own winner)."""


def latest_parts(folders: list[Path]) -> list[Path]:
    """Per kernel its part of the latest stage that has one (`folders` in stage order: the joint step's
    parts, then the block step's, which measured beside the joint step's winner and supersedes it, then
    the walk's, which chose beside the block step's winner). A part of stage knob_shapes (`confirms`: it
    judges again the variant that stands for several shapes, chronos.tuning.shape_confirm) is never one."""
    found: dict[str, Path] = {}
    for folder in folders:
        for path in sorted(Path(folder).glob("*.json")):
            if "confirms" not in json.loads(path.read_text()):
                found[path.name] = path
    return [found[k] for k in sorted(found)]


def _json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def write_configs(folder: Path, parts: list[Path], db_path: Path, leave_out: frozenset[str] = frozenset(),
                  measured: dict[str, list[dict]] | None = None) -> dict:
    """Tuned-DB entries for the workload in `folder` from the stage part files `parts` (one per kernel:
    latest_parts): a config entry per winner with a compile config, a tuned PTX entry per
    winner with PTX actions; returns counts and the reason of every kernel left out. `leave_out`: PTX
    actions (leave_out_actions) whose winners are left out whole — a DB to time beside the full one, to see
    in the step what those actions do there (measured alone, the kernel without them was not the winner).
    `measured`: every stage's parts per kernel (shapes.measured_rows), where one variant that won at every
    shape of one stock PTX is looked for (chronos.tuning.shapes); `shared_variant`: kernel -> that variant
    and its ratio at the kernel's shape."""
    from chronos.kernels.spec import load_specs
    from chronos.triton.tuned_db import TunedDB

    raw_specs, knobs = json.loads((folder / "specs.json").read_text()), _json(folder / "knobs.json")
    ctx = {"folder": folder, "specs": {s["kernel"]: s for s in raw_specs},
           "spec_objs": {s.kernel: s for s in load_specs(folder / "specs.json")},
           "identity": _json(folder / "triton.json"), "knobs": knobs.get("kernels", {}),
           "versions": knobs.get("provenance", {}),
           "blocks": _json(folder / "blocks.json").get("kernels", {}), "ptxas": recorded_ptxas(folder)}
    out: dict = {"kernels": 0, "entries": 0, "ptx_entries": 0, "left_out": {}, "same_ptx": {},
                 "shared_variant": {}}
    rows = [(path, json.loads(path.read_text())) for path in parts]
    disagree, served, stand_ins = shared_ptx(rows, ctx["specs"], measured)
    alike = {k for part in stand_ins.values() for k in part["shapes"]}  # their own winners do not deploy
    with TunedDB(db_path) as db:
        for path, row in rows:
            out["kernels"] += 1
            # its PTX's entry, written for the first of them, serves it too (one left out leaves all out)
            first = served.get(row["kernel"])
            if first and (row["kernel"] in alike or not uses_left_out(row, leave_out)):
                if first in out["left_out"]:
                    out["left_out"][row["kernel"]] = out["left_out"][first]
                else:
                    out["same_ptx"][row["kernel"]] = first
                continue
            row = stand_ins.get(row["kernel"], row)  # one variant for every shape: its parts stand in
            try:
                why = (uses_left_out(row, leave_out) or disagree.get(row["kernel"])
                       or _put_winner(db, ctx, row, path.name, out))
            except ChronosError as e:
                why = str(e)
            if why:
                out["left_out"][row["kernel"]] = why
    for first, part in stand_ins.items():
        if first not in out["left_out"]:
            out["shared_variant"].update(part["shapes"])
    return out


def leave_out_actions(names: list[str]) -> frozenset[str]:
    """PTX action names, a v2 group's name standing for its members (l2_policy_streaming: every L2 policy
    on streaming loads); an unknown name raises, with the names there are."""
    from chronos.actions import V2

    out: set[str] = set()
    for n in names:
        if n in V2.groups:
            out.update(V2.groups[n])
        elif n in V2.index and n != "stop":
            out.add(n)
        else:
            raise ChronosError(f"--leave-out-actions: {n!r} is neither a v2 action nor a v2 group; groups: "
                               f"{' '.join(sorted(V2.groups))}; actions: {' '.join(V2.transforms)}")
    return frozenset(out)


def uses_left_out(row: dict, leave_out: frozenset[str]) -> str:
    """Why the row's confirmed winner is left out for using one of `leave_out`'s PTX actions, or ""."""
    winner = confirmed_winner(row)[0] if leave_out else None
    used = sorted(set(winner[1]) & leave_out) if winner else []
    return f"its winner uses {'+'.join(used)} (left out by --leave-out-actions)" if used else ""


def _put_winner(db, ctx: dict, row: dict, part: str, out: dict) -> str:
    """One part's winner into the DB (its config, then its PTX actions); why not, or ""."""
    winner, why = confirmed_winner(row)
    if winner is None:
        return why
    if why := ptxas_mismatch(ctx["ptxas"], row.get("provenance")):  # keyed by it, never looked up
        return f"{why} (a stale part: the knob stages measure it again)"
    spec, ident = ctx["specs"].get(row["kernel"]), ctx["identity"].get(row["kernel"], {})
    if spec is None:
        return "not in the capture's specs"
    label, ptx_actions = winner
    change = config_change(label) if label is not None else None
    if change is not None and "maxnreg" in change and not ident.get("qualname"):
        return _put_maxnreg_as_ptx(db, ctx, row, ident, (label, change, ptx_actions), part, out)
    made = None  # (root, tuned PTX), made once for a config+PTX winner
    if change is not None and ptx_actions:
        made = winner_ptx(ctx["folder"], ctx["spec_objs"][row["kernel"]], row["best"]["actions"])
        if why := _root_unlike_stock(ctx, row, label, made[0]):
            return why  # its config alone was not the winner: nothing of it deploys
    if change is not None:
        why = _put_config(db, ctx, row, spec, ident, change, part)
        if why:
            return why
        out["entries"] += 1
    if ptx_actions:
        why = _put_ptx(db, ctx, row, ident, (label, ptx_actions), part, made)
        if why:
            return why
        out["ptx_entries"] += 1
    return ""


def _put_maxnreg_as_ptx(db, ctx: dict, row: dict, ident: dict, winner: tuple[str, dict, list[str]],
                        part: str, out: dict) -> str:
    """An Inductor kernel's `maxnreg=N` winner as the PTX entry it equals. Inductor's autotuner never passes
    a config's maxnreg to Triton (_create_compile_options: under it stock's PTX ran, bert 2026-12-06), and
    Triton's maxnreg only writes `.maxnreg N` on the entry (ttg.maxnreg; every census variant of bert, gpt2
    and llama differs from stock by that line alone): the measured PTX is stock's with the register-budget
    action maxnreg_N first, then the winner's PTX actions, an entry keyed by stock's PTX, checked to remake
    exactly what was measured."""
    from chronos.actions import V2
    from chronos.kernels.spec import read_ptx
    from chronos.triton.rederive import derive
    from chronos.triton.tuned_db import ptx_identity_sha256

    label, change, ptx_actions = winner  # its config label, that label parsed, its PTX actions
    budget = f"maxnreg_{change['maxnreg']}"
    if set(change) != {"maxnreg", "kwargs"} or change["kwargs"] or budget not in V2.index:
        return (f"its config {label} sets maxnreg, which Inductor's autotuner does not pass to Triton "
                "(_create_compile_options), and no register-budget PTX action (maxnreg_32/64/128/255) alone "
                "makes its PTX: it would compile as stock")
    spec = ctx["spec_objs"][row["kernel"]]
    stock, (_, measured) = read_ptx(ctx["folder"] / "specs.json", spec), winner_ptx(
        ctx["folder"], spec, row["best"]["actions"])
    actions = [budget, *ptx_actions]
    if ptx_identity_sha256(derive(stock, actions, dict(spec.alignment))) != ptx_identity_sha256(measured):
        return f"its config {label} is not stock's PTX with {budget} ({'+'.join(actions)} makes other PTX)"
    why = _put_ptx(db, ctx, row, ident, (None, actions), part, (stock, measured), config=label)
    out["ptx_entries"] += not why
    return why


def _root_unlike_stock(ctx: dict, row: dict, label: str, root: str) -> str:
    """Why the PTX a config+PTX winner's entry is keyed by (`root`: the PTX its config `label` makes) can
    never be what Triton makes at deployment, or "": it was compiled unlike the kernel's stock PTX (another
    PTX ISA `.version`, another module file name in its `.loc` comments: stage knob_walk compiled configs so
    until 2026-12-06)."""
    from chronos.kernels.spec import read_ptx

    why = unlike(root, read_ptx(ctx["folder"] / "specs.json", ctx["spec_objs"][row["kernel"]]))
    return (f"its config {label}'s PTX was compiled unlike its stock PTX ({why}): its PTX entry would "
            "never be found at deployment, and the config alone was not the winner; compile the config "
            "again (stage knob_walk --compile) and measure it") if why else ""


def unlike(ptx: str, stock: str) -> str:
    """How two PTX modules of one kernel differ in what their compile environment writes: the PTX ISA
    `.version` and the module file named in `.loc` comments ("" where both agree)."""
    def env(text: str) -> tuple[str, set[str]]:
        version = re.search(r"^\.version\s+(\S+)", text, re.MULTILINE)
        return (version.group(1) if version else "?"), set(re.findall(r"//\s*([^\s:/]+\.py):\d", text))

    (v1, f1), (v2, f2) = env(ptx), env(stock)
    said = [f".version {v1} where stock has {v2}"] if v1 != v2 else []
    said += [f"source {sorted(f1)} where stock names {sorted(f2)}"] if f1 != f2 else []
    return "; ".join(said)


def _put_config(db, ctx: dict, row: dict, spec: dict, ident: dict, change: dict, part: str) -> str:
    from chronos.triton.tuned_configs import ConfigKey, KernelConfig, put_config

    stock = stock_config(ctx["folder"], spec, ctx["knobs"].get(spec["ptx"], {}))
    sha = source_sha256(ctx["folder"], ident, ctx["blocks"].get(spec["ptx"], {}))
    if stock is None:
        return "no stock config recorded"
    if sha is None:
        return "no source hash"
    tuned = {**stock, **{k: v for k, v in change.items() if k != "kwargs"},
             "kwargs": {**stock["kwargs"], **change["kwargs"]}}
    prov, versions, best = row.get("provenance", {}), ctx["versions"], row["best"]
    key = ConfigKey(ident.get("name") or spec["entry"], sha, prov.get("gpu", ""), versions.get("torch", ""),
                    versions.get("triton", ""))
    put_config(db, key, KernelConfig.from_json(stock), KernelConfig.from_json(tuned), best["ratio"],
               tuple(best["ci"]), {"bit_exact": True, "verdict": best["verdict"]},
               {"kernel": row["kernel"], "part": part, "measured": prov})
    return ""


def _put_ptx(db, ctx: dict, row: dict, ident: dict, winner: tuple[str | None, list[str]], part: str,
             made: tuple[str, str] | None = None, config: str | None = None) -> str:
    """The winner's PTX actions, keyed by the PTX its config makes (Triton's hash where stock is the root;
    a config's compile hash is unknown offline: "config:<label>", and the code key finds it). `made`: its
    (root, tuned PTX) where _put_winner made them already; `config`: the config label the entry stands for
    where its PTX actions replace it (_put_maxnreg_as_ptx), kept as `measured_as`: `config` is the one its
    actions go on top of, which `chronos tuned show` prints before them."""
    from chronos.triton.hook import CONFIG_KEY
    from chronos.triton.tuned_db import entry_names, make_key

    label, ptx_actions = winner
    spec = ctx["spec_objs"][row["kernel"]]
    best, prov = row["best"], row.get("provenance", {})
    name = ident.get("name")
    triton_hash = ident.get("hash") if label is None else f"{CONFIG_KEY}{label}"
    if not (name and triton_hash):
        return "no Triton identity (name, compile hash) in triton.json"
    if missing := [k for k in ("gpu", "driver", "ptxas") if not prov.get(k)]:
        return f"its part's provenance lacks {missing}"
    root, tuned = made or winner_ptx(ctx["folder"], spec, best["actions"])
    if entry_names(tuned) != [name]:
        return f"its PTX defines {entry_names(tuned)}, not {name}"
    key = make_key(triton_hash, root, name, gpu=prov["gpu"], driver=prov["driver"], ptxas=prov["ptxas"])
    db.put(key, ptx_actions, tuned, best["ratio"], tuple(best["ci"]),
           {"bit_exact": True, "verdict": best["verdict"], "config": label,
            **({"measured_as": config} if config else {})},  # the config its actions stand for (maxnreg)
           {"kernel": row["kernel"], "part": part, "alignment": dict(spec.alignment)})
    return ""
