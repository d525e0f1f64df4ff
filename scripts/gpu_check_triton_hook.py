"""Deploy check of chronos.triton on a GPU: a Triton kernel compiled and launched through the normal JIT,
with a tuned DB enabled, runs the Chronos PTX and gives bit-identical outputs. (GPU; a device check.)

    python scripts/gpu_check_triton_hook.py --out /tmp/hook            # both phases (two processes)

Phase `stock` (fresh Triton cache): launch the suite's row_max kernel (rowmax_f32_r64_c8192's sizes), keep
its outputs, its compile hash and stock PTX, and write a tuned DB whose entry holds the set the committed
evaluation returned for that kernel (st_cache_cs+reorder_cp+maxnreg_255, measured side by side: its time
ratio and interval come from reports/measure_triton_results.json). Phase `tuned` (a new process, so the
JIT's in-memory cache is empty): `chronos.triton.enable(db)`, the same launch, then stats() and a bitwise
comparison with the stock outputs. The two phases also time their kernel with triton.testing.do_bench, for
information only: they run in different processes, so that is no verdict (the verdict is the stored one).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

KERNEL, N_ROWS, N_COLS, BLOCK = "rowmax_f32_r64_c8192", 64, 8192, 2048


def _launch():
    import torch
    import triton.testing

    from chronos.kernels.triton_suite.kernels_simple import row_max_kernel

    x = torch.randn(N_ROWS, N_COLS, device="cuda", generator=torch.Generator("cuda").manual_seed(0))
    out = torch.empty(N_ROWS, device="cuda")
    compiled = row_max_kernel[(N_ROWS,)](x, out, N_COLS, N_COLS, BLOCK=BLOCK)
    torch.cuda.synchronize()
    ms = triton.testing.do_bench(lambda: row_max_kernel[(N_ROWS,)](x, out, N_COLS, N_COLS, BLOCK=BLOCK))
    return compiled, out.cpu().numpy(), ms


def stock(out: Path) -> dict:
    from chronos.ptx import emit, parse
    from chronos.search.space import realize
    from chronos.triton import TunedDB, hook, make_key

    compiled, outputs, ms = _launch()
    row = next(r for r in json.loads(Path("reports/measure_triton_results.json").read_text())
               ["tiers"]["triton"]["kernels"] if r["kernel"] == KERNEL)
    actions = row["returned"].split("+")
    best = next(c for c in [row["greedy"], *row["beam"]] if "+".join(c["actions"]) == row["returned"])
    stock_ptx = compiled.asm["ptx"]
    tuned = emit(realize(parse(stock_ptx), actions))
    key = make_key(compiled.metadata.hash, stock_ptx, compiled.metadata.name, gpu=hook.detect_gpu(),
                   driver=hook.detect_driver(), ptxas=hook.triton_ptxas_version(90))
    with TunedDB(out / "tuned.sqlite") as db:
        db.put(key, actions, tuned, best["ratio"], tuple(best["ci"]),
               {"bit_exact": True, "source": "reports/measure_triton_results.json", "draws": 2},
               {"kernel": KERNEL, "measured": row["measured_at"]})
    (out / "stock.bin").write_bytes(outputs.tobytes())
    return {"phase": "stock", "ms": ms, "actions": actions, "stored_ratio": best["ratio"], "ci": best["ci"],
            "stock_ptx_lines": stock_ptx.count("\n"), "tuned_differs": tuned != stock_ptx}


def tuned(out: Path) -> dict:
    import chronos.triton as ct

    ct.enable(out / "tuned.sqlite")
    compiled, outputs, ms = _launch()
    stock_bytes = (out / "stock.bin").read_bytes()
    return {"phase": "tuned", "ms": ms, "stats": ct.stats(), "bit_equal": outputs.tobytes() == stock_bytes,
            "maxnreg_in_ptx": ".maxnreg" in compiled.asm["ptx"], "n_regs": compiled.n_regs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--phase", choices=("stock", "tuned"))
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    if a.phase:
        print(json.dumps(stock(a.out) if a.phase == "stock" else tuned(a.out), default=str), flush=True)
        return 0
    for phase in ("stock", "tuned"):  # separate processes: the JIT's in-memory cache starts empty
        done = subprocess.run([sys.executable, __file__, "--out", str(a.out), "--phase", phase], check=False)
        if done.returncode:
            return done.returncode
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
