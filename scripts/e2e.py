"""End to end (#13): a workload's step time with and without a tuned DB, side by side; outputs bitwise.

    python scripts/e2e.py flex --db data/kernels/captured/flex/tuned.sqlite --out e2e.json

Worker processes build the same workload (scripts/workloads.py, same seed): `stock_a`, `stock_b` (and
`stock_c`, ... with `--stock-runs`), `hooked` (chronos.triton.enable() on an empty DB: the hook installed,
nothing to swap) and `tuned`
(chronos.triton.enable(db)), each enabling before anything compiles. Inductor compiles in the worker itself
(TORCHINDUCTOR_COMPILE_THREADS=1: its compile pool would never see the hook) with the FX-graph and
autograd caches off, so every Triton kernel goes through Triton's stages; the Inductor cache directory is
shared, so the autotuner's choices that stock_a makes first are read back by the other two (the same
configs, hence the same kernels and keys as stock). `hooked` separates what the hook costs by itself (its
cache directory, its compile-time work) from what the swapped kernels change. Then:

- outputs: each worker runs every phase once more and hashes what it returns (loss and every gradient,
  logits); the stock runs against each other say whether stock is deterministic, stock_a vs tuned whether
  the tuned run is bitwise equal; where stock differs from itself (float atomics), the tuned run is judged
  tensor by tensor against that spread (`spread`);
- time: `--rounds` rounds; in each, the workers take turns (order rotated per round, one at a time on the
  GPU), each running `--steps` synchronised steps of every phase. Per round: `speedup` = stock_a / tuned,
  `aa_control` = stock_a / stock_b (`aa_extra`: stock_a / stock_c, ...), `hook_cost` = stock_a / hooked,
  `swap_effect` = hooked / tuned (above 1: the second is faster); each reported as median with IQR and a
  bootstrap 95% CI over rounds. That interval does not cover the variance between worker processes (H200
  call p6: A/A 0.894 with nothing swapped): read a speedup against the A/A ratios of the same run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOOKED = ("hooked", "tuned")  # the roles that call chronos.triton.enable()


def roles(stock_runs: int = 2) -> tuple[str, ...]:
    """The worker roles: `stock_runs` stock processes (stock_a, stock_b, stock_c, ...), hooked, tuned."""
    return (*(f"stock_{chr(ord('a') + i)}" for i in range(stock_runs)), *HOOKED)


# ------------------------------------------------------------------ worker (one process per role)
def _digest(tensors) -> str:
    import torch

    h = hashlib.sha256()
    for t in tensors:
        t = t.detach().contiguous()
        h.update(f"{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).cpu().numpy().tobytes())
    return h.hexdigest()


def _load_workloads(path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("workloads", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_phases(module, workload: str) -> dict:
    """The workload's phases, built from the workloads module's WORKLOADS (registered) or PENDING dict."""
    return {**module.WORKLOADS, **getattr(module, "PENDING", {})}[workload]()


def worker(workload: str, role: str, db: str | None, workloads_py: Path) -> None:
    if role not in HOOKED and not role.startswith("stock_"):
        raise SystemExit(f"e2e worker: unknown role {role!r}")
    proto = os.fdopen(os.dup(1), "w")  # replies only; the workload's prints go to stderr
    os.dup2(2, 1)
    stats = None
    if role in HOOKED:
        import chronos.triton

        stats = chronos.triton.enable(db)
    import torch

    if os.environ.get("CHRONOS_E2E_DETERMINISTIC") == "1":  # --deterministic: no atomics where torch can
        torch.use_deterministic_algorithms(True, warn_only=True)
    torch.manual_seed(0)
    phases = build_phases(_load_workloads(workloads_py), workload)

    def reply(obj) -> None:
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    kept: dict[str, list] = {}  # the hashed outputs, until the coordinator says which it needs
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "warm":
            kept = _warm(phases, cmd["steps"])
            if role in HOOKED:
                import chronos.triton

                stats = chronos.triton.stats()
            reply({"digests": {name: _digest(outs) for name, outs in kept.items()}, "hook": stats})
        elif cmd["op"] == "keep":  # the phases where stock differs from itself: their outputs, to disk
            for name in cmd["phases"]:
                torch.save([t.cpu() for t in kept[name]], Path(cmd["dir"]) / f"{role}_{name}.pt")
            kept = {}
            reply({"ok": True})
        elif cmd["op"] == "time":
            kept = {}  # not held on the GPU while timing
            reply({"times": _time(phases, cmd["steps"])})  # steps: one count, or one per phase
        elif cmd["op"] == "stop":
            reply({"ok": True})
            return


def _warm(phases: dict, steps: int) -> dict:
    """Compile (and autotune) every phase, then run one more step of each: its outputs, to hash and, where
    stock differs from itself (float atomics), to compare against that spread."""
    import torch

    for fn in phases.values():
        for _ in range(steps):
            fn()
    torch.cuda.synchronize()
    return {name: [t.detach() for t in fn()] for name, fn in phases.items()}


def _time(phases: dict, steps: int | dict) -> dict:
    """Seconds per step of each phase, synchronised before and after."""
    import torch

    times = {}
    for name, fn in phases.items():
        n = steps[name] if isinstance(steps, dict) else steps
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        times[name] = (time.perf_counter() - t0) / n
    return times


def steps_per_phase(step_s: dict[str, float], min_steps: int, round_seconds: float) -> dict[str, int]:
    """Steps per phase so that each timed block lasts about `round_seconds`: a 3 ms flex step timed three
    times is at the mercy of one hiccup of the host (A/A spread 1.08 on the H200, 2026-12-02)."""
    return {p: max(min_steps, math.ceil(round_seconds / max(t, 1e-6))) for p, t in step_s.items()}


# ------------------------------------------------------------------ coordinator
class Worker:
    def __init__(self, args_: argparse.Namespace, role: str, env: dict, log: Path, db: Path):
        args = [sys.executable, __file__, args_.workload, "--worker", role, "--db", str(db),
                "--workloads", str(args_.workloads)]
        self.role, self.log = role, log.open("w")
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, env=env)

    def send(self, op: str, **kw) -> None:
        self.proc.stdin.write(json.dumps({"op": op, **kw}) + "\n")
        self.proc.stdin.flush()

    def recv(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"e2e worker {self.role} died (exit {self.proc.wait()}); see {self.log.name}")
        return json.loads(line)

    def ask(self, op: str, **kw) -> dict:
        self.send(op, **kw)
        return self.recv()


def summarize(ratios: list[float], seed: int = 0, resamples: int = 4000) -> dict:
    from chronos.measure.verdicts import median_summary

    return median_summary(ratios, seed, resamples)


def _bitwise(x, y) -> bool:
    import torch

    return x.shape == y.shape and torch.equal(x.contiguous().reshape(-1).view(torch.uint8),
                                              y.contiguous().reshape(-1).view(torch.uint8))


def _max_abs(x, y) -> float:
    return float((x.double() - y.double()).abs().max()) if x.numel() else 0.0


def spread(keep: Path, phase: str, stocks: tuple[str, ...] = ("stock_a", "stock_b")) -> dict:
    """Where stock differs from itself (float atomics), per output tensor. The stock runs and hooked (the
    hook on an empty DB swaps nothing) all use stock kernels. A tensor they all give bitwise alike is
    deterministic: the tuned run must give it bitwise. Elsewhere the tuned run's largest |stock_a - tuned|
    must not exceed the largest difference between stock_a and the other stock-kernel runs (the envelope;
    more stock runs, `--stock-runs`, estimate it better). The offenders are listed (tensor index in the
    phase's outputs, shape, kind, differences)."""
    import torch

    def load(role: str) -> list:
        return torch.load(keep / f"{role}_{phase}.pt", weights_only=True)

    a, others, t = load(stocks[0]), [load(r) for r in (*stocks[1:], "hooked")], load("tuned")
    offenders, deterministic, stock_max, tuned_max = [], 0, 0.0, 0.0
    for i, (x, z, *ys) in enumerate(zip(a, t, *others, strict=True)):
        envelope, got = max(_max_abs(x, y) for y in ys), _max_abs(x, z)
        stock_max, tuned_max = max(stock_max, envelope), max(tuned_max, got)
        if all(_bitwise(x, y) for y in ys):
            deterministic += 1
            if not _bitwise(x, z):
                offenders.append({"tensor": i, "shape": list(x.shape), "kind": "deterministic",
                                  "max_abs": got})
        elif got > envelope:
            offenders.append({"tensor": i, "shape": list(x.shape), "kind": "racy", "max_abs": got,
                              "stock_envelope": envelope})
    return {"within": not offenders, "tensors": len(a), "deterministic": deterministic,
            "offenders": offenders[:20], "max_abs_stock": stock_max, "max_abs_tuned": tuned_max}


def run(args: argparse.Namespace) -> dict:
    from chronos.triton.tuned_db import TunedDB  # the coordinator's only: stock workers import no Chronos

    work = Path(tempfile.mkdtemp(prefix=f"e2e_{args.workload}_"))
    base = {**os.environ, "TORCHINDUCTOR_COMPILE_THREADS": "1", "TORCHINDUCTOR_FX_GRAPH_CACHE": "0",
            "TORCHINDUCTOR_AUTOGRAD_CACHE": "0", "TORCHINDUCTOR_CACHE_DIR": str(work / "inductor")}
    if args.deterministic:
        base.update(CHRONOS_E2E_DETERMINISTIC="1", CUBLAS_WORKSPACE_CONFIG=":4096:8")
    logs = args.logs or args.out.parent
    logs.mkdir(parents=True, exist_ok=True)
    empty = work / "empty.sqlite"
    with TunedDB(empty):  # created with no entries: the `hooked` control
        pass
    R = roles(args.stock_runs)
    stocks = R[:args.stock_runs]
    workers = {role: Worker(args, role, {**base, "TRITON_CACHE_DIR": str(work / role)},
                            logs / f"e2e_{args.workload}_{role}.log", empty if role == "hooked" else args.db)
               for role in R}
    t0 = time.perf_counter()
    warm = {"stock_a": workers["stock_a"].ask("warm", steps=args.warmup)}  # autotunes first, alone
    for role in R[1:]:
        workers[role].send("warm", steps=args.warmup)
    warm.update({role: workers[role].recv() for role in R[1:]})
    compile_s = time.perf_counter() - t0
    dig = {role: warm[role]["digests"] for role in R}
    self_equal = {p: all(dig[s][p] == dig["stock_a"][p] for s in stocks) for p in dig["stock_a"]}
    unstable = [p for p, ok in self_equal.items() if not ok]
    keep = work / "outputs"
    keep.mkdir()
    for w in workers.values():
        w.ask("keep", phases=unstable, dir=str(keep))
    steps = steps_per_phase(workers["stock_a"].ask("time", steps=1)["times"], args.steps, args.round_seconds)
    times = {role: [] for role in R}
    for r in range(args.rounds):
        order = R[r % len(R):] + R[:r % len(R)]
        for role in order:
            times[role].append(workers[role].ask("time", steps=steps)["times"])
    for w in workers.values():
        w.ask("stop")
    step = {role: [sum(t.values()) for t in ts] for role, ts in times.items()}
    phases = list(times["stock_a"][0])

    def ratios(num: str, den: str) -> dict:
        return summarize([a / b for a, b in zip(step[num], step[den], strict=True)])

    def phase_ratios(num: str, den: str) -> dict:
        return {p: summarize([a[p] / b[p] for a, b in zip(times[num], times[den], strict=True)])
                for p in phases}

    result = {
        "workload": args.workload, "db": str(args.db), "steps": steps, "rounds": args.rounds,
        "deterministic_algorithms": args.deterministic,
        "compile_and_warm_s": round(compile_s, 1), "hook": warm["tuned"]["hook"],
        "hooked_outputs_equal": dig["stock_a"] == dig["hooked"],
        "stock_runs": args.stock_runs,
        "stock_deterministic": all(self_equal.values()),
        "outputs_equal": dig["stock_a"] == dig["tuned"],
        "phases_equal": {p: dig["stock_a"][p] == dig["tuned"][p] for p in dig["stock_a"]},
        "stock_self_equal": self_equal,
        "within_stock_spread": {p: spread(keep, p, stocks) for p in unstable},
        "speedup": ratios("stock_a", "tuned"), "aa_control": ratios("stock_a", "stock_b"),
        "aa_extra": {s: ratios("stock_a", s) for s in stocks[2:]},  # stock_a / stock_c, ...
        "hook_cost": ratios("stock_a", "hooked"), "swap_effect": ratios("hooked", "tuned"),
        "per_phase": phase_ratios("stock_a", "tuned"),
        "per_phase_hook_cost": phase_ratios("stock_a", "hooked"),
        "step_s": {role: sorted(v)[len(v) // 2] for role, v in step.items()},
        "times": times,
    }
    return result


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workload")
    p.add_argument("--db", type=Path, required=True)
    p.add_argument("--out", type=Path, default=Path("e2e.json"))
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=3, help="steps per phase per round, at least")
    p.add_argument("--round-seconds", type=float, default=0.25,
                   help="more steps for a short phase, so that each timed block lasts about this long")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--logs", type=Path, help="workers' logs (default: beside --out)")
    p.add_argument("--workloads", type=Path, default=Path(__file__).resolve().parent / "workloads.py",
                   help="the module whose WORKLOADS dict builds the workload (default: scripts/workloads.py)")
    p.add_argument("--deterministic", action="store_true",
                   help="workers run torch.use_deterministic_algorithms(True, warn_only=True): stock repeats "
                        "itself where torch has deterministic kernels, so more phases compare bitwise")
    p.add_argument("--stock-runs", type=int, default=2, choices=range(2, 9),
                   help="stock worker processes (stock_a, stock_b, ...): more estimate stock's own spread "
                        "and the A/A better")
    p.add_argument("--worker", help="(internal) the role of this worker process")
    args = p.parse_args(argv)
    if args.worker:
        return worker(args.workload, args.worker, str(args.db), args.workloads)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = run(args)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"e2e {args.workload}: speedup {result['speedup']['median']:.4f} "
          f"CI95 {result['speedup']['ci95']}, A/A {result['aa_control']['median']:.4f}, "
          f"hook cost {result['hook_cost']['median']:.4f} CI95 {result['hook_cost']['ci95']}, "
          f"outputs_equal {result['outputs_equal']}, stock_deterministic {result['stock_deterministic']}, "
          f"swapped {result['hook'] and result['hook'].get('swapped')}")


if __name__ == "__main__":
    main()
