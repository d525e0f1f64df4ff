"""Leave-one-workload-out evaluation over the census (stage `heldout` is its shell): one-step decisions
from the census, each family's fold trained on the others (chronos.rl.onestep), its picks scored by what
would deploy, timed again side by side, and totalled per method. The method and the output format are
described in chronos.stages.heldout.
"""

from __future__ import annotations

import json
import math
import tempfile
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from chronos.config import HeldoutConfig
from chronos.errors import one_line
from chronos.features.v2 import space_features
from chronos.kernels.spec import load_module, load_specs
from chronos.rl.recorded import RecordedTraining, folder_sha256, training_key

METHODS = ("policy", "beam", "bc", "fixed", "oracle")
FIXED_BEAM = "fixed_beam"
SHARED = ("policy", "beam", "bc", FIXED_BEAM)
"""The methods whose share of the oracle and of the fixed-to-oracle gap is reported."""


def methods_in(scored: dict) -> tuple[str, ...]:
    """METHODS, and fixed_beam after them where a row's actions or gains hold it (heldout.fixed_beam)."""
    return (*METHODS, FIXED_BEAM) if FIXED_BEAM in scored else METHODS


def picks_of(actions: dict, method: str) -> list[str]:
    """A method's picks in a row's `actions`: beam and fixed_beam have several, every other method one."""
    return actions[method] if method in ("beam", FIXED_BEAM) else [actions[method]]


def distinct_picks(actions: dict) -> list[str]:
    """Every method's picks, each once, stop left out, in methods_in order: the contenders of the kernel's
    side-by-side comparison (their order is part of its store key)."""
    return list(dict.fromkeys(a for m in methods_in(actions) for a in picks_of(actions, m) if a != "stop"))


def apply_record(rows: list[dict], decisions: list, space, record: dict) -> list[str]:
    """Where `record` (kernel -> actions per method) has a row's kernel, the row's methods it holds take the
    record's picks, scored on the census like this run's; this run's picks and gains move to `retrained`.
    Returns the kernels whose retrained picks differ from the record."""
    from chronos.rl.onestep import deployed_gain

    by_kernel = {d.kernel: d for d in decisions}
    differ = []
    for r in rows:
        rec = record.get(r["kernel"])
        if rec is None:
            continue
        if any(r["actions"].get(m) != a for m, a in rec.items()):
            differ.append(r["kernel"])
        r["retrained"] = {"actions": r["actions"], "gain": r["gain"]}
        r["actions"] = {**r["actions"], **rec}
        d = by_kernel[r["kernel"]]
        r["gain"] = {m: deployed_gain(d, [space.index[a] for a in picks_of(r["actions"], m)])
                     for m in methods_in(r["actions"])}
    return differ


def record_kernels(record: dict, space: str) -> dict:
    """The record's picks (kernel -> actions per method) for a run of `space`: the file's own `kernels`
    where its `space` (v2 unless named) is that, else its `spaces[space]` section, else none."""
    if record.get("space", "v2") == space:
        return record["kernels"]
    return record.get("spaces", {}).get(space, {}).get("kernels", {})


def side_by_side_gain(row: dict) -> dict:
    return row["side_by_side"]["gain"]


def load_decisions(kernels: Path, census: Path, families, space) -> list:
    """One chronos.rl.onestep.Decision per census part, in family order."""
    from chronos.rl.onestep import decision

    out = []
    for family in families:
        specs = {s.kernel: s for s in load_specs(kernels / family / "specs.json")}
        for part in sorted((census / family).glob("*.json")):
            search = json.loads(part.read_text())
            spec, base = specs[search["kernel"]], search["baseline"]
            info = {"registers": base.get("registers"), "spills": base.get("spills")}
            feats = space_features(load_module(kernels / family / "specs.json", spec), space, launch=spec,
                                   ptxas_info=info)
            d = decision(spec.kernel, family, feats, search["trace"][0]["candidates"], space)
            d.extra = {"again": search["best"]}
            out.append(d)
    return out


def fixed_action(train: list) -> int:
    """The action with the largest summed deploy gain over `train` (stop when none gains)."""
    total = np.nansum(np.stack([d.gain for d in train]), axis=0)
    return int(np.argmax(total))


def fixed_ranking(train: list) -> list[int]:
    """Every action but stop by summed deploy gain over `train`, largest first (ties: lower index first)."""
    from chronos.actions import STOP

    total = np.nansum(np.stack([d.gain for d in train]), axis=0)
    return [int(a) for a in np.argsort(-total, kind="stable") if a != STOP]


def legal_top(d, ranking: list[int], k: int) -> list[int]:
    """The first k actions of `ranking` that were measured on decision d (stop where none was)."""
    from chronos.actions import STOP

    return [a for a in ranking if not np.isnan(d.reward[a])][:k] or [STOP]


def _mean_gain(policy, ds: list) -> float:
    from chronos.rl.onestep import choose, deployed_gain

    return float(np.mean([deployed_gain(d, p) for d, p in zip(ds, choose(policy, ds), strict=True)]))


def run_fold(family: str, train: list, test: list, cfg: HeldoutConfig, space):
    """Train on `train`, score on `test` -> (per-kernel rows, curves, the policy's selected setting: BC
    epochs, GRPO stop epoch, and with heldout.select_* the inner folds' gains). (Torch and the RL stack
    load here only: --picks on a GPU machine needs neither.)"""
    from chronos.rl import onestep

    best_action, choose, deployed_gain = onestep.best_action, onestep.choose, onestep.deployed_gain

    fixed = fixed_action(train)
    bc = choose(onestep.train_bc(train, cfg, space), test)

    def probe(p):
        return {"train_gain": _mean_gain(p, train), "heldout_gain": _mean_gain(p, test)}

    chosen, inner = (onestep.select_by_inner_folds(train, cfg, space)
                     if cfg.select_bc_epochs and cfg.select_stops else ((cfg.bc_epochs, cfg.epochs), {}))
    policy, curves = onestep.train_stopped(train, replace(cfg, bc_epochs=chosen[0]), space, chosen[1], probe)
    selected = {"bc_epochs": chosen[0], "stop": chosen[1],
                "inner_gain": {f"{b},{e}": round(g, 6) for (b, e), g in sorted(inner.items())}}
    picks, beams = choose(policy, test), choose(policy, test, cfg.beam)
    ranking = fixed_ranking(train) if cfg.fixed_beam else []
    rows = []
    for d, p, k, b in zip(test, picks, beams, bc, strict=True):
        best = best_action(d)
        again = d.extra["again"]
        rows.append({
            "family": family, "kernel": d.kernel,
            "actions": {"policy": space.names[p[0]], "beam": [space.names[a] for a in k],
                        "bc": space.names[b[0]], "fixed": space.names[fixed], "oracle": space.names[best]},
            "gain": {"policy": deployed_gain(d, p), "beam": deployed_gain(d, k), "bc": deployed_gain(d, b),
                     "fixed": deployed_gain(d, [fixed]), "oracle": deployed_gain(d, [best])},
            "oracle_again": {k2: again.get(k2) for k2 in ("actions", "ratio", "ci", "verdict")},
        })
        if ranking:
            top = legal_top(d, ranking, cfg.fixed_beam)
            rows[-1]["actions"][FIXED_BEAM] = [space.names[a] for a in top]
            rows[-1]["gain"][FIXED_BEAM] = deployed_gain(d, top)
    return rows, [{"heldout": family, **c} for c in curves], selected


def side_by_side(rows: list[dict], specs: dict, backend, cfg) -> None:
    """Each row's distinct picks timed again beside the baseline in one comparison (chronos.search.timed);
    the row gains `side_by_side`: per method the gain that comparison gives its picks, or an error."""
    from chronos.errors import ChronosError
    from chronos.search.timed import TimedEvaluator, time_row

    for r in rows:
        picks = distinct_picks(r["actions"])
        specs_json, spec = specs[r["kernel"]]
        try:
            ev = TimedEvaluator(spec, load_module(specs_json, spec), backend,
                                cfg.search.census.timing_for(cfg.timing), cfg.search.greedy.min_gain)
            cmp, idx = ev.compare([(a,) for a in picks])
        except ChronosError as e:
            r["side_by_side"] = {"error": one_line(e, 300)}
            continue
        rows_ = {a: time_row(cmp, i, ev.timing, ev.min_gain) for a, i in zip(picks, idx, strict=True)
                 if i is not None}
        gain = {a: -math.log(x["ratio"]) if x["verdict"] == "faster" else 0.0 for a, x in rows_.items()}
        r["side_by_side"] = {
            "gain": {m: max([gain.get(a, 0.0) for a in picks_of(r["actions"], m)] + [0.0])
                     for m in methods_in(r["actions"])},
            "ratio": {a: x.get("ratio") for a, x in rows_.items()},
            "verdict": {a: x["verdict"] for a, x in rows_.items()},
            "measured_at": cmp.provenance.get("created_at", "")}


def greedy_search(rows: list[dict], headroom: Path) -> None:
    """Greedy search in time (stage headroom: up to search.greedy.max_steps v2 actions, no learning) as the
    multi-step comparator. Each row gains `greedy_search` (None where headroom has no search): the set it
    found and what that deploys, scored in the search's own last comparison (the set beside the baseline
    and the last step's extensions), not in the side-by-side comparison of the other methods' picks."""
    for r in rows:
        part = headroom / r["family"] / f"{r['kernel']}.json"
        best = json.loads(part.read_text())["best"] if part.is_file() else None
        won = bool(best and best["actions"]) and best.get("verdict") == "faster"
        r["greedy_search"] = best and {"actions": best["actions"], "ratio": best.get("ratio"),
                                       "verdict": best.get("verdict"),
                                       "gain": -math.log(best["ratio"]) if won else 0.0}


def greedy_totals(rows: list[dict]) -> dict:
    searched = [r["greedy_search"] for r in rows if r.get("greedy_search")]
    gains = [g["gain"] for g in searched]
    return {"kernels": len(searched), "multi_step": sum(len(g["actions"]) > 1 for g in searched),
            "time_geomean": math.exp(sum(gains) / len(gains)) if gains else None}


def totals(rows: list[dict], key=lambda r: r["gain"]) -> dict:
    """Summed gains per method (`key(row)`: the census's, or the side-by-side comparison's), the policy's
    (and beam's, bc's) share of the oracle and of the fixed->oracle gap, and per method the geomean
    speedup exp(mean gain)."""
    methods = methods_in(key(rows[0])) if rows else METHODS
    s = {m: sum(key(r)[m] for r in rows) for m in methods}
    out = {"kernels": len(rows), "gain": s,
           "time_geomean": {m: math.exp(s[m] / len(rows)) if rows else None for m in methods}}
    for m in (m for m in SHARED if m in methods):
        out[m] = {"oracle_share": s[m] / s["oracle"] if s["oracle"] > 0 else None,
                  "gap_closed": (s[m] - s["fixed"]) / (s["oracle"] - s["fixed"])
                  if s["oracle"] - s["fixed"] > 1e-12 else None}
    return out


def stability(curves: list[dict]) -> dict:
    """Per fold: the training gain of the greedy choice at the last epoch against its best over the run,
    and the entropy at the start and the end (a collapse to stop shows as both falling)."""
    out = {}
    for fold in sorted({c["heldout"] for c in curves}):
        cs = [c for c in curves if c["heldout"] == fold]
        best = max(c["train_gain"] for c in cs)
        out[fold] = {"epochs": len(cs), "final_train_gain": cs[-1]["train_gain"], "best_train_gain": best,
                     "final_over_best": cs[-1]["train_gain"] / best if best > 0 else None,
                     "entropy_first": cs[0]["entropy"], "entropy_last": cs[-1]["entropy"],
                     "final_heldout_gain": cs[-1]["heldout_gain"]}
    return out


def training_inputs(cfg: HeldoutConfig, space, families: list[str], census: Path, kernels: Path) -> dict:
    """What the folds' training reads: the params, the census and the kernels' specs and PTX (the key of the
    recorded training, chronos.rl.recorded)."""
    return {"heldout": asdict(cfg), "space": space.name, "families": families,
            "census": folder_sha256(census, ("**/*.json",)),
            "kernels": {f: folder_sha256(kernels / f, ("specs.json", "*.ptx", "ptx/*")) for f in families}}


def train_folds(decisions: list, families: list[str], cfg: HeldoutConfig, space, inputs: dict,
                recorded: RecordedTraining, *, retrain: bool = False, write_record: bool = False) -> dict:
    """family -> run_fold's (rows, curves, selection): replayed from the recorded training while `inputs`
    equal the record's (training is not bit-reproducible across CPUs), else trained here."""
    key = training_key(inputs)
    if not retrain and (meta := recorded.matches(key)):
        print(f"heldout: {recorded.describe(meta)}")
        return json.loads(recorded.verified(meta, "folds.json").read_text())
    folds = {}
    for fam in families:
        test = [d for d in decisions if d.family == fam]
        folds[fam] = run_fold(fam, [d for d in decisions if d.family != fam], test, cfg, space)
    if write_record:
        with tempfile.TemporaryDirectory() as scratch:  # the record keeps its own copy
            tmp = Path(scratch) / "folds.json"
            tmp.write_text(json.dumps(folds) + "\n")
            recorded.save(key, inputs, {"folds.json": tmp})
    return json.loads(json.dumps(folds))  # as replayed: JSON types, so both paths write the same bytes
