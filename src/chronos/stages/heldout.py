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
import sys
from pathlib import Path

from chronos.actions import resolve_space
from chronos.errors import ConfigError
from chronos.rl.heldout import (
    apply_record,
    greedy_search,
    greedy_totals,
    load_decisions,
    record_kernels,
    side_by_side,
    side_by_side_gain,
    stability,
    totals,
    train_folds,
    training_inputs,
)
from chronos.rl.recorded import RecordedTraining, add_recorded_arguments
from chronos.search.runs import kernels_of
from chronos.stages.common import command_line, run_stage, write_json
from chronos.stages.measuring import add_backend_arguments, open_backend


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
    add_recorded_arguments(ap, "heldout")
    ap.add_argument("--picks", type=Path, metavar="HELDOUT.json",
                    help="only time the picks a run on another machine recorded, side by side (a GPU run of "
                         "what this CPU trained: torch builds may round differently), into --out")


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


def _report(args, cfg, space, families, rows, curves, per_family, selection, record, differ,
            measured_with) -> dict:
    """heldout.json: provenance, params, totals (census and side by side), greedy search, stability, rows."""
    hcfg = cfg.heldout
    done = [r for r in rows if "gain" in r["side_by_side"]]
    return {"provenance": {"command": command_line("heldout", args.argv), "census": str(args.census),
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
    inputs = training_inputs(hcfg, space, families, args.census, args.kernels)
    folds = train_folds(decisions, families, hcfg, space, inputs, RecordedTraining(args.recorded, "heldout"),
                        retrain=args.retrain, write_record=args.write_record)
    for fam in families:
        test = [d for d in decisions if d.family == fam]
        r, c, selection[fam] = folds[fam]
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
    greedy_search(rows, args.headroom)
    out = _report(args, cfg, space, families, rows, curves, per_family, selection, record, differ,
                  measured_with)
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
