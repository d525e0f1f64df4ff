"""End to end in one process (#28 item 6): a workload's step time with its stock kernels, a second copy of
them (the A/A control) and its tuned kernels, alternating in one process (chronos.triton.kernel_sets).

    python scripts/e2e_one_process.py gpt2 --db data/kernels/captured/gpt2/tuned.sqlite --out e2e1.json

scripts/e2e.py compares worker processes, whose step times differ by up to ~10% with nothing swapped (H200,
A/A 0.894): its intervals cannot resolve a few percent. Here one process builds the workload, compiles
and autotunes it (Inductor in place: TORCHINDUCTOR_COMPILE_THREADS=1, FX-graph and autograd caches off,
fresh caches), keeps those stock launchers, then compiles every kernel again twice: with nothing deployed
(`stock_copy`) and with the DB deployed (`tuned`: its tuned configs and PTX). Outputs: each set runs every
phase once and hashes what it returns; stock vs stock_copy says whether stock is deterministic, stock vs
tuned whether the tuned kernels keep every bit. Time: `--rounds` rounds; in each the three sets take turns
(in an order drawn afresh per round), each running every phase for about `--round-seconds`; per round
`speedup` = stock / tuned and `aa` = stock / stock_copy over the summed step times (and per phase),
reported as median, IQR and a bootstrap 95% CI over rounds. `--anchors max_autotune coordesc`: Inductor's
tuners, each the workload built and compiled again with its options in the same process, take their turns
too; per anchor stock / anchor and anchor / tuned (Chronos v3 over it); `--anchor-draws N`: each tuner
compiled N times, caches of its own each (one compile is one draw of a tuner: scripts/e2e_anchors.py).
`--graphs`: each set and anchor times its CUDA graph of every phase (scripts/e2e_graphs.py: no host time
between launches), each graph checked to replay its eager step's bits; outputs are hashed from one RNG
state per phase. `--also NAME=DB`:
more tuned sets, each with its own DB (e.g. `chronos tune --leave-out-actions`: the DB less a class of
actions), timed beside the others, per set stock / it and tuned / it. Status: ran on
an H100 (2026-12-05: flex 1.0088x, A/A 1.0012, reports/h200_runs/2026-12-05-h100; with the anchors, flex
and bert, reports/h200_runs/2026-12-05b-h100); with --graphs and the anchors, all four workloads
(2026-12-06, reports/h200_runs/2026-12-06d-h100: step intervals within +-0.6%).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

import e2e_graphs
from e2e import _digest, _load_workloads, build_phases, steps_per_phase, summarize
from e2e_anchors import ANCHORS, anchor_runs, anchor_verdicts, build_anchors, draws_verdict

from chronos.errors import one_line
from chronos.measure.verdicts import round_ratios as ratios

SETS = ("stock", "stock_copy", "tuned")


def isolate() -> None:
    """Inductor compiles in this process (its compile workers would never see the hook), no cache serves a
    kernel that skipped Triton's stages."""
    scratch = Path(tempfile.mkdtemp(prefix="chronos-e2e1-"))
    os.environ.update({"TORCHINDUCTOR_COMPILE_THREADS": "1", "TORCHINDUCTOR_FX_GRAPH_CACHE": "0",
                       "TORCHINDUCTOR_AUTOGRAD_CACHE": "0", "TRITON_CACHE_DIR": str(scratch / "triton"),
                       "TORCHINDUCTOR_CACHE_DIR": str(scratch / "inductor")})


def timed(phases: dict, steps: dict) -> dict[str, float]:
    """Seconds per step of each phase, synchronised before and after."""
    import torch

    out = {}
    for name, fn in phases.items():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(steps[name]):
            fn()
        torch.cuda.synchronize()
        out[name] = (time.perf_counter() - t0) / steps[name]
    return out


def rounds(phases: dict, sets: dict, steps: dict, n: int, anchors: dict | None = None,
           replaced: dict | None = None) -> dict[str, list[dict]]:
    """Per set (and per anchor: its own compiled phases), per round, the seconds per step of each phase; all
    take turns, in an order drawn afresh each round. `replaced`: run name -> the phases it times instead
    (its CUDA graphs' replays, --graphs)."""
    from chronos.triton import kernel_sets

    runs = {s: (phases, ks) for s, ks in sets.items()} | {a: (ph, None) for a, ph in (anchors or {}).items()}
    runs |= {name: (ph, runs[name][1]) for name, ph in (replaced or {}).items()}
    times: dict[str, list[dict]] = {s: [] for s in runs}
    order = random.Random(0)
    for _ in range(n):
        # a fresh order each round: with a fixed rotation each set always follows the same one, and what
        # that one leaves behind (a cooler GPU after a slow set) biased the ratios (H100, 2026-12-05)
        for s in order.sample(list(runs), len(runs)):
            run, ks = runs[s]
            kernel_sets.use(ks or sets["stock"])  # an anchor's kernels are its own autotuners'
            times[s].append(timed(run, steps))
    kernel_sets.use(sets["stock"])
    return times


def run_each(phases: dict) -> None:
    """Every phase once, synchronised after."""
    import torch

    for fn in phases.values():
        fn()
    torch.cuda.synchronize()


def build_sets(db: Path, phases: dict) -> dict:
    """The warm-up's stock kernels, a second copy of them, and the tuned ones (the DB deployed); a JIT
    function's copies are compiled by running every phase once."""
    import chronos.triton
    from chronos.triton import kernel_sets

    def warm() -> None:
        run_each(phases)

    stock = kernel_sets.capture_stock()
    return {"stock": stock, "stock_copy": kernel_sets.build("stock_copy", stock, warm=warm),
            "tuned": kernel_sets.build("tuned", stock, db, chronos.triton.enable, chronos.triton.disable,
                                       warm=warm)}


def build_also(also: list[str], sets: dict, phases: dict) -> dict:
    """--also NAME=DB: each DB deployed into a tuned set of its own, added to `sets` (timed, its outputs
    hashed, like the others); per name the hook's stats for it (what of that DB deployed)."""
    import chronos.triton
    from chronos.triton import kernel_sets

    hooks = {}
    for item in also:
        name, sep, db = item.partition("=")
        if not sep or not name or name in sets or name in ANCHORS:
            raise SystemExit(f"e2e_one_process: --also {item!r}: expected NAME=DB with a NAME that is not "
                             f"one of {[*sets, *ANCHORS]}")
        sets[name] = kernel_sets.build(name, sets["stock"], Path(db), chronos.triton.enable,
                                       chronos.triton.disable, warm=lambda: run_each(phases))
        hooks[name] = {**chronos.triton.stats(), "configs_applied": sets[name].configs}
    return hooks


def also_verdicts(times: dict, phases: dict, hooks: dict, digests: dict) -> dict:
    """Per --also set: stock / it, and tuned / it (above 1: it is faster than the full DB's set), per step
    and per phase; the phases whose outputs differ from stock's; what of its DB deployed."""
    out = {}
    for name, hook in hooks.items():
        out[name] = {"speedup": summarize(ratios(times, "stock", name)),
                     "over_tuned": summarize(ratios(times, "tuned", name)),
                     "differing_phases": sorted(k for k in phases if digests["stock"][k] != digests[name][k]),
                     "per_phase": {ph: {"speedup": summarize(ratios(times, "stock", name, ph)),
                                        "over_tuned": summarize(ratios(times, "tuned", name, ph))}
                                   for ph in phases},
                     "hook": hook}
    return out


def kernel_count(sets: dict, workload: str) -> int:
    """Inductor autotuners and JIT functions the sets switch; none: the tuned set would be timed as stock."""
    n = len(sets["stock"].tuners) + len(sets["stock"].jit)
    if not n:
        raise SystemExit(f"e2e_one_process: {workload} ran no Triton kernel that a kernel set can switch "
                         "(no Inductor autotuner, no JIT function)")
    return n


def seeded_digests(phases: dict) -> dict[str, str]:
    """One step of every phase hashed, each from the same RNG state: a training step's dropout draws the
    same masks in every set (unseeded, bert's stock differed from its own copy by its masks alone)."""
    import torch

    out = {}
    for name, fn in phases.items():
        torch.manual_seed(0)
        out[name] = _digest(fn())
    return out


def outputs(phases: dict, sets: dict) -> tuple[dict, dict]:
    """Each set's outputs of one step of every phase, hashed; which phases differ between the sets (and
    every set's digests)."""
    from chronos.triton import kernel_sets

    digests = {}
    for s, ks in sets.items():
        kernel_sets.use(ks)
        digests[s] = seeded_digests(phases)
    kernel_sets.use(sets["stock"])
    differ = sorted(k for k in phases if digests["stock"][k] != digests["tuned"][k])
    unstable = sorted(k for k in phases if digests["stock"][k] != digests["stock_copy"][k])
    return {"stock_deterministic": not unstable, "tuned_bitwise": not differ, "differing_phases": differ,
            "stock_differing_phases": unstable}, digests


def verdicts(times: dict, phases: dict) -> dict:
    both = {"speedup": summarize(ratios(times, "stock", "tuned")),
            "aa": summarize(ratios(times, "stock", "stock_copy"))}
    both["per_phase"] = {ph: {"speedup": summarize(ratios(times, "stock", "tuned", ph)),
                              "aa": summarize(ratios(times, "stock", "stock_copy", ph))} for ph in phases}
    return both


def graphed(phases: dict, sets: dict, anchors: dict, digests: dict) -> tuple[dict, dict]:
    """Every run's phases as CUDA graph replays (e2e_graphs), whether one replay of each kept the eager
    step's bits, and which phases stayed eager."""
    import torch

    from chronos.triton import kernel_sets

    runs = {s: phases for s in sets} | anchors
    replaced, outs, eager = e2e_graphs.graph_runs(
        runs, lambda name: kernel_sets.use(sets.get(name, sets["stock"])))
    exact = e2e_graphs.replays_exact(replaced, outs, digests, _digest, lambda: torch.manual_seed(0))
    kernel_sets.use(sets["stock"])
    print(f"graphs: eager phases {eager or 'none'}; replays bit-exact {exact}", flush=True)
    return replaced, {"eager_phases": eager, "replays_exact": exact}


def deployed(hook: dict, configs: dict) -> str:
    """One line on what of the DB the tuned set runs: a run where nothing deployed times stock against
    stock, whatever its ratio, and says why per kernel (the hook's miss reasons)."""
    from chronos.triton.hook import CONFIG_ALONE

    swapped, entries = hook.get("swapped", 0), hook.get("entries", 0)
    line = f"deployed: {swapped} PTX sets swapped ({entries} in the DB), {len(configs)} configs applied"
    reasons = hook.get("reasons") or {}
    # a config+PTX winner whose PTX missed ran its config alone, not the winner that was measured; but the
    # hook names kernels, and one name can be several kernels (shapes, phases): a miss whose entry's config
    # is not the one applied under that name is another kernel's (llama rotary view_3, 2026-12-07), and
    # where a compile of that name was swapped too, the miss may be another kernel's (bert gelu_view_3)
    swapped_names = set(hook.get("swapped_names") or [])
    missed = sorted(n for n, r in reasons.items() if r.startswith(CONFIG_ALONE) and n in configs
                    and _same_config(_missed_label(r), configs[n]))
    if alone := [n for n in missed if n not in swapped_names]:
        line += f"; {len(alone)} of those configs ran without their PTX on top: {', '.join(alone)}"
    if unsure := [n for n in missed if n in swapped_names]:
        line += (f"; {len(unsure)} names both swapped and missed a config's PTX (several kernels of one "
                 f"name; which ran its config alone is not known by name): {', '.join(unsure)}")
    if swapped or configs:
        return line
    why = {name: one_line(r, 200) for name, r in reasons.items()}
    return f"{line}; NOTHING deployed: the tuned set ran stock's kernels; why: {json.dumps(why)}"


def _missed_label(reason: str) -> str:
    """The config label of the entry a CONFIG_ALONE miss names ("<CONFIG_ALONE> (<label>); stale key: ...")
    """
    from chronos.triton.hook import CONFIG_ALONE

    return reason.removeprefix(CONFIG_ALONE).strip().removeprefix("(").partition(");")[0]


def _same_config(label: str, applied: str) -> bool:
    """Whether the missed entry's config label is the config applied under that name ("{'XBLOCK': 16},
    num_warps=2", kernel_sets.build): every block and num_warps the label names, as applied."""
    import ast
    import re

    from chronos.tuning.winners import config_change

    change, m = config_change(label), re.match(r"^(\{.*\}), num_warps=(\d+)$", applied)
    if change is None or m is None:
        return True  # not comparable (a template's row blocks): the miss may be this config's
    kwargs, warps = ast.literal_eval(m.group(1)), int(m.group(2))
    return all(kwargs.get(k) == v for k, v in change["kwargs"].items()) and \
        change.get("num_warps", warps) == warps


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workload")
    p.add_argument("--db", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--round-seconds", type=float, default=0.5)
    p.add_argument("--workloads", type=Path, default=HERE / "workloads.py")
    p.add_argument("--anchors", nargs="*", default=[], choices=list(ANCHORS),
                   help="Inductor's tuners timed beside stock and Chronos v3, each its own compile")
    p.add_argument("--anchor-draws", type=int, default=1, metavar="N",
                   help="each tuner compiled N times, caches of its own each (scripts/e2e_anchors.py)")
    p.add_argument("--graphs", action="store_true",
                   help="time each set's CUDA graph of every phase (scripts/e2e_graphs.py), not Python steps")
    p.add_argument("--also", nargs="+", default=[], metavar="NAME=DB",
                   help="more tuned sets, each with its own DB deployed (e.g. the DB without some actions: "
                        "chronos tune --leave-out-actions), timed beside the others")
    args = p.parse_args()
    runs = anchor_runs(args.anchors, args.anchor_draws)  # refused before anything compiles
    isolate()
    import chronos.triton
    from chronos.triton import kernel_sets

    kernel_sets.track()
    import torch

    torch.manual_seed(0)
    workloads = _load_workloads(args.workloads)
    phases = build_phases(workloads, args.workload)
    for _ in range(2):  # compile, autotune, settle
        run_each(phases)
    sets = build_sets(args.db, phases)
    kernels, hook = kernel_count(sets, args.workload), chronos.triton.stats()
    also = build_also(args.also, sets, phases)
    built = {name: kernel_sets.jit_compiled(ks) for name, ks in sets.items()}
    same, digests = outputs(phases, sets)
    anchors, bitwise = build_anchors(workloads, args.workload, runs, digests, seeded_digests)
    replaced, graphs = graphed(phases, sets, anchors, digests) if args.graphs else (None, None)
    stock_steps = (replaced or {"stock": phases})["stock"]
    steps = steps_per_phase(timed(stock_steps, dict.fromkeys(phases, 3)), 3, args.round_seconds)
    times = rounds(phases, sets, steps, args.rounds, anchors, replaced)
    out = {"workload": args.workload, "db": str(args.db), "kernels": kernels,
           "timing": "cuda_graphs" if args.graphs else "python_steps", "graphs": graphs,
           "steps": steps, "configs_applied": sets["tuned"].configs, "hook": hook,
           "jit_compiled_after_build": {n: kernel_sets.jit_compiled(ks) - built[n] for n, ks in sets.items()},
           "outputs": same,
           **verdicts(times, phases), "anchors": anchor_verdicts(ratios, times, phases, bitwise),
           "anchor_draws": args.anchor_draws,
           "also": also_verdicts(times, phases, also, digests),
           "times": times, "provenance": {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                                          "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                          "command": " ".join(sys.argv)}}
    out["draws"] = draws_verdict(out["anchors"])
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: out[k] for k in ("kernels", "outputs", "speedup", "aa")}))
    print(deployed(hook, out["configs_applied"]))
    if late := {n: c for n, c in out["jit_compiled_after_build"].items() if c}:
        print(f"JIT kernels compiled after their set was built (the tuned set's without its PTX): {late}")
    for name, v in out["also"].items():
        print(f"{name}: stock/set {v['speedup']['median']:.4f} {v['speedup']['ci95']}, tuned/set "
              f"{v['over_tuned']['median']:.4f} {v['over_tuned']['ci95']}; "
              + deployed(v["hook"], v["hook"]["configs_applied"]))
    for a, v in out["anchors"].items():
        print(f"{a}: stock/anchor {v['speedup']['median']:.4f} {v['speedup']['ci95']}, anchor/v3 "
              f"{v['v3_over']['median']:.4f} {v['v3_over']['ci95']}, bitwise {v['bitwise']}")
    for tuner, d in out["draws"].items():
        print(f"{tuner}: {d['draws']} draws, stock/draw {d['step_speedup']}; v3 ahead of {d['v3_ahead']}, "
              f"behind {d['v3_behind']}, level with {d['v3_level']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
