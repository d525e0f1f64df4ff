"""Time the full training schedule on the CPU: BC (50 epochs) + DA-GRPO (450 epochs) over the 64 gemm_tile
kernels, answered from memory like the replay store.

    python benchmarks/bench_training.py [--grpo-epochs 450] [--bc-epochs 50] [--json out.json]

The cycles here come from a STAND-IN cost model (a made-up deterministic function of the kernel and the
action set), used ONLY to time the loop: its numbers mean nothing and are never reported as results. The
transforms, features, masks, PTX emission and the Evaluator are the real ones, so the per-variant work is
what a replay run pays; only the store lookup is replaced by arithmetic. The issue's target: <= 15 min.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import pstats
import sys
import time
from pathlib import Path

import torch

from chronos.actions import ACTION_NAMES, STOP, get_action_history
from chronos.config import BCConfig, GRPOConfig
from chronos.kernels.spec import load_module, load_specs
from chronos.measure.store import Record
from chronos.rl.bc import train_bc
from chronos.rl.env import TransformEnv
from chronos.rl.grpo import train_grpo

KERNELS = Path("data/kernels/gemm_tile")


def load_kernels(kernels_dir: Path) -> dict:
    """name -> (KernelSpec, root Module) for every spec in kernels_dir/specs.json."""
    specs_json = kernels_dir / "specs.json"
    return {s.kernel: (s, load_module(specs_json, s)) for s in load_specs(specs_json)}


def _u(*parts) -> float:
    """A deterministic pseudo-random number in [0, 1) from its arguments."""
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16) / 2**32


class StandInReplay:
    """MADE-UP cycles: base x product of per-(kernel, action) factors; a few sets are invalid."""

    def __init__(self):
        self.variants = 0

    def measure(self, spec, variants, *, baseline_ptx=None):
        out = []
        for v in variants:
            self.variants += 1
            cost = 1000.0 * (1 + _u(spec.kernel))
            for a in v.actions:
                cost *= 0.7 + 0.5 * _u(spec.kernel, a)
            bad = bool(v.actions) and _u(spec.kernel, *v.actions) < 0.02
            out.append(Record(kernel=spec.kernel, ptx_sha256=v.ptx_sha256, cubin_sha256="", gpu="stand-in",
                              driver="-", ptxas="-", config_hash="-", actions=tuple(v.actions), valid=not bad,
                              reason="wrong_output" if bad else "", cycles_median=cost, cycles_iqr=0.0))
        return out


def teacher_demos(env: TransformEnv) -> list[dict]:
    """Greedy demonstrations on the stand-in costs (for BC's timing only)."""
    demos = []
    for k in env.names:
        sp, key, cur = env.space(k), (), env.baseline(k).cycles
        for step in range(6):
            mask = sp.mask(key)
            cands = [sp.child(key, ACTION_NAMES[i]) for i in range(STOP) if mask[i] > 0.5]
            outs = env.evaluate(k, cands)
            best = min((o for o in outs if o.valid), key=lambda o: o.cycles, default=None)
            state = {"kernel": k, "features": sp.obs(key)[:25].tolist(), "mask": mask.tolist(),
                     "history": get_action_history(key)}
            if best is None or best.cycles >= cur * 0.995:
                demos.append({**state, "action": "stop"})
                break
            demos.append({**state, "action": next(a for a in best.actions if a not in key)})
            key, cur = best.actions, best.cycles
    return demos


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bc-epochs", type=int, default=50)
    ap.add_argument("--grpo-epochs", type=int, default=450)
    ap.add_argument("--profile", action="store_true", help="print the top of a cProfile of GRPO")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    torch.set_num_threads(max(1, min(4, torch.get_num_threads())))
    print("NOTE: cycles come from a made-up STAND-IN cost model, used only to time the training loop.")
    cfg = GRPOConfig(epochs=a.grpo_epochs, log_interval=max(1, a.grpo_epochs // 10))
    t0 = time.perf_counter()
    env = TransformEnv(load_kernels(KERNELS), StandInReplay(), cfg.env)
    demos = teacher_demos(env)
    t_demos = time.perf_counter() - t0
    print(f"{len(env.names)} kernels, {len(demos)} stand-in demonstrations ({t_demos:.1f} s, "
          "not part of the schedule)")

    t1 = time.perf_counter()
    policy, stats = train_bc(demos, BCConfig(epochs=a.bc_epochs))
    t_bc = time.perf_counter() - t1
    print(f"BC {a.bc_epochs} epochs: {t_bc:.1f} s")

    held = stats["heldout_kernels"]
    prof = cProfile.Profile() if a.profile else None
    t2 = time.perf_counter()
    if prof:
        prof.enable()
    train_grpo(policy, policy, env, cfg, heldout_kernels=held)
    if prof:
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    t_grpo = time.perf_counter() - t2
    sets = sum(len(env.space(k)._obs) for k in env.names)
    total = t_bc + t_grpo
    out = {"bc_epochs": a.bc_epochs, "grpo_epochs": a.grpo_epochs, "bc_s": t_bc, "grpo_s": t_grpo,
           "total_s": total, "projected_full_s": t_bc * 50 / a.bc_epochs + t_grpo * 450 / a.grpo_epochs,
           "states_cached": sets, "variants_measured": env.backend.variants, "target_s": 900,
           "cost_model": "stand-in (made-up), timing only"}
    print(f"GRPO {a.grpo_epochs} epochs: {t_grpo:.1f} s; {sets} states cached, "
          f"{env.backend.variants} variants")
    print(f"total {total:.1f} s; projected full schedule {out['projected_full_s'] / 60:.1f} min "
          "(target 15 min)")
    if a.grpo_epochs != 450:
        print("(projection scales the measured epochs linearly; caches fill early, so it overestimates)")
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
