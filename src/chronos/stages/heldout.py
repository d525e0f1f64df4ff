"""Stage `heldout` (#14): does a learned policy pick better transforms than the best fixed one, on a
workload it never saw? Leave-one-workload-out over the census.

    python -m chronos.stages.heldout --params params.yaml --kernels data/kernels --census data/census \
        --out reports/heldout.json --curves reports/heldout_curves.csv

Every number comes from recorded H200 comparisons (data/census: per kernel the baseline and every legal
single v2 action timed side by side, bit-exact verified); nothing is measured or estimated here. Per
family of `search.census` in turn held out, the other families' kernels train a one-step v2 policy
(chronos.rl.onestep: BC, then GRPO with the measured log time ratio as reward, `heldout` params), and on
the held-out kernels these choices are scored by what would deploy (log(1/ratio) where the census's
verdict was faster, else 0):
  policy   the policy's greedy choice (early-stopped where heldout.select_* name a grid: its BC epochs and
           GRPO stop epoch chosen by leave-one-family-out inside the training families, `selection`)
  beam     the best measured of the policy's `beam` most likely actions
  bc       the BC policy before GRPO
  fixed    the single action with the largest summed gain over the training families
  fixed_beam  (heldout.fixed_beam = k > 0) the k best actions of that ranking legal on the kernel, the
           best measured one kept: beam k without learning
  oracle   per kernel the census's best single action (its fastest contender: favoured by the winner's
           curse; `oracle_again` is that action's ratio in the census's second comparison beside the
           baseline alone)
and beside them greedy search, multi-step, from stage headroom's searches (`greedy_search`).
Totals over all held-out kernels: oracle_share = policy / oracle, gap_closed = (policy - fixed) /
(oracle - fixed), time_geomean = exp(mean gain) per method. Curves per fold and epoch go to --curves.

The census scores the oracle with the same comparison it was picked in (the best of ~30 contenders looks
better there than it is). So every held-out kernel's picks are also timed once more side by side, in one
fresh comparison of the baseline and each distinct pick (`side_by_side`; --backend gpu measures it into
the store, replay answers from there, a kernel the store lacks is listed, not scored): the totals
`measured` score every method, oracle included, on that comparison, where no pick was selected.

GRPO samples its actions, so a last-bit difference in a CPU's float arithmetic (another CPU model, another
torch build) can send training elsewhere after some epochs: retrained on another CPU, some picks differ
and their comparisons were never timed. `--record data/heldout/record.json` holds the picks a GPU call
timed; they are the ones scored, this run's own picks are kept beside them per kernel (`retrained`) and
the kernels where they differ are listed (`record.retrained_differ`).
"""

from __future__ import annotations

import csv
import json
import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from chronos.actions import resolve_space
from chronos.config_timing import HeldoutConfig
from chronos.errors import ConfigError
from chronos.features_v2 import space_features
from chronos.kernels.spec import load_module, load_specs
from chronos.search.runs import kernels_of
from chronos.stages.common import command_line, run_stage, write_json
from chronos.stages.measuring import add_backend_arguments, open_backend

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


def _specs(args, cfg) -> dict:
    """kernel -> (specs.json, KernelSpec) over the census's families."""
    return {s.kernel: (sj, s) for _, sj, s in kernels_of(args.kernels, cfg.search.census.families)}


def _arguments(ap) -> None:
    add_backend_arguments(ap)
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--census", type=Path, default=Path("data/census"))
    ap.add_argument("--headroom", type=Path, default=Path("data/headroom"),
                    help="stage headroom's searches: greedy search, the multi-step comparator")
    ap.add_argument("--out", type=Path, default=Path("reports/heldout.json"))
    ap.add_argument("--curves", type=Path, default=Path("reports/heldout_curves.csv"))
    ap.add_argument("--record", type=Path, metavar="RECORD.json",
                    help="the picks of record (data/heldout/record.json): picks a GPU call timed. They are "
                         "scored instead of this run's, which are kept beside them (`retrained`) and "
                         "compared (`record`): GRPO's sampled training is not bit-reproducible across CPUs")
    ap.add_argument("--picks", type=Path, metavar="HELDOUT.json",
                    help="only time the picks a run on another machine recorded, side by side (a GPU run of "
                         "what this CPU trained: torch builds may round differently), into --out")


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
            r["side_by_side"] = {"error": " ".join(str(e).split())[:300]}
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


def _measure_picks(args, cfg) -> int:
    rec = json.loads(args.picks.read_text())
    backend = open_backend(args, cfg)
    try:
        side_by_side(rec["kernels"], _specs(args, cfg), backend, cfg)
    finally:
        backend.close()
    done = [r for r in rec["kernels"] if "gain" in r["side_by_side"]]
    rec["measured"] = totals(done, side_by_side_gain)
    write_json(args.out, rec)
    print(f"heldout --picks: {len(done)}/{len(rec['kernels'])} timed; {json.dumps(rec['measured'])}")
    return 0


def _body(args, cfg) -> int:
    if args.picks:
        return _measure_picks(args, cfg)
    hcfg = cfg.heldout
    space, census_space = resolve_space(hcfg.space), resolve_space(cfg.search.census.space)
    if not set(space.names) <= set(census_space.names):
        raise ConfigError(f"heldout.space: {space.name} holds actions the census ({census_space.name}) "
                          "never measured")
    decisions = load_decisions(args.kernels, args.census, cfg.search.census.families, space)
    specs = _specs(args, cfg)
    families = [f for f in cfg.search.census.families if any(d.family == f for d in decisions)]
    rows, curves, per_family, selection = [], [], {}, {}
    record = record_kernels(json.loads(args.record.read_text()), space.name) if args.record else {}
    differ = []
    for fam in families:
        test = [d for d in decisions if d.family == fam]
        r, c, selection[fam] = run_fold(fam, [d for d in decisions if d.family != fam], test, hcfg, space)
        differ += apply_record(r, test, space, record)
        rows += r
        curves += c
        per_family[fam] = totals(r)
        t = per_family[fam]["time_geomean"]
        print(f"heldout {fam:16s} {len(test):3d} kernels: " + " ".join(f"{m} {v:.4f}" for m, v in t.items()),
              flush=True)
    backend = open_backend(args, cfg)
    try:
        side_by_side(rows, specs, backend, cfg)
        measured_with = backend.provenance()
    finally:
        backend.close()
    done = [r for r in rows if "gain" in r["side_by_side"]]
    greedy_search(rows, args.headroom)
    out = {"provenance": {"command": command_line("heldout", args.argv), "census": str(args.census),
                          "measured_with": measured_with},
           "params": {"space": space.name, **hcfg.__dict__}, "total": totals(rows), "families": per_family,
           "record": {"source": str(args.record), "kernels": sum(r["kernel"] in record for r in rows),
                      "retrained_differ": differ} if args.record else None,
           "measured": {**totals(done, side_by_side_gain),
                        "not_measured": sorted(r["kernel"] for r in rows if "error" in r["side_by_side"])},
           "families_measured": {f: totals([r for r in done if r["family"] == f], side_by_side_gain)
                                 for f in families},
           "greedy_search": {**greedy_totals(rows),
                             "max_steps": cfg.search.headroom.max_steps or cfg.search.greedy.max_steps,
                             "families": {f: greedy_totals([r for r in rows if r["family"] == f])
                                          for f in families}},
           "stability": stability(curves), "selection": selection, "kernels": rows}
    write_json(args.out, out)
    args.curves.parent.mkdir(parents=True, exist_ok=True)
    with args.curves.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(curves[0]) if curves else ["heldout"])
        w.writeheader()
        w.writerows({k: (round(v, 6) if isinstance(v, float) else v) for k, v in c.items()} for c in curves)
    if args.record:
        print(f"heldout: the record's picks scored on {out['record']['kernels']} kernels; this run's own "
              f"training picks otherwise on {len(differ)} of them (`retrained`)")
    for name in ("total", "measured"):
        print(f"heldout ({name}): {json.dumps({m: out[name][m] for m in ('policy', 'beam', 'bc')})} "
              f"time_geomean {json.dumps(out[name]['time_geomean'])}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_stage("heldout", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())
