"""The measurement worker: one process, one CUDA context, JSON lines on stdin/stdout.

    python -m chronos.measure.worker    (started by chronos.measure.pool; CUDA_VISIBLE_DEVICES picks the GPU)

Protocol (one JSON object per line; stdout carries nothing else, stray prints go to stderr):
  worker -> {"hello": {"gpu", "driver", "cc", "pid"}} once the context exists;
  parent -> {"id", "op": "measure", "spec", "config", "baseline": [sha, b64 cubin], "variant": [...],
             "cycles": [...] | null};
  worker -> {"id", "valid", "reason", "log", "time_ms"?, "cycles"?, "exit"?};
  parent -> {"id", "op": "rounds", "spec", "config", "baseline", "candidates": [[variant, cycles], ...],
            "rounds", "realloc"};
  worker -> {"id", "valid": true, "results": [{"valid", "reason", "log", "time_ms"?, "cycles"?}, ...]}
  parent -> {"id", "op": "compare", "spec", "config", "timing", "baseline", "contenders": [cubin, ...]};
  worker -> {"id", "valid": true, "contenders": [...], "primary", ...} (chronos.measure.timing.compare)
            (GpuRunner.measure_rounds), or a fault answer as above, which concerns the whole group.
After a sticky CUDA error the worker answers {"reason": "fault:<CUDA error name>", "exit": true} and exits
with status 3: its context is poisoned. Cubins travel base64-encoded; nothing is ever unpickled.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import traceback

from chronos.config import MeasureConfig
from chronos.kernels.spec import KernelSpec

STICKY_EXIT = 3


def encode_cubin(sha: str, cubin: bytes, launch=None) -> list:
    """A cubin as it travels to a worker: [sha, base64] and, for a variant with its own launch geometry
    (chronos.kernels.variant.Launch), its JSON third (what `_cubin` decodes)."""
    pair = [sha, base64.b64encode(cubin).decode()]
    return pair if launch is None else [*pair, launch.to_json()]


def _cubin(pair) -> tuple | None:
    """(sha, cubin) or (sha, cubin, Launch)."""
    if pair is None:
        return None
    if len(pair) > 2:
        from chronos.kernels.variant import Launch

        return pair[0], base64.b64decode(pair[1]), Launch.from_json(pair[2])
    return pair[0], base64.b64decode(pair[1])


def handle(runner, req: dict) -> dict:
    from chronos.errors import CudaFault

    rid = req.get("id")
    try:
        spec = KernelSpec.from_json(req["spec"])
        cfg = MeasureConfig(**req["config"])
        if req.get("op") == "compare":
            from chronos.config import TimingConfig
            from chronos.measure.timing import compare

            ans = compare(runner, spec, cfg, TimingConfig(**req["timing"]), _cubin(req["baseline"]),
                          [_cubin(c) for c in req["contenders"]])
            return {"id": rid, "valid": True, "reason": "", "log": "", **ans}
        if req.get("op") == "rounds":
            cands = [(_cubin(v), _cubin(c)) for v, c in req["candidates"]]
            results = runner.measure_rounds(spec, cfg, _cubin(req["baseline"]), cands, int(req["rounds"]),
                                           bool(req.get("realloc", False)))
            return {"id": rid, "valid": True, "reason": "", "log": "", "results": results}
        out = runner.measure(spec, cfg, _cubin(req["baseline"]), _cubin(req["variant"]),
                             _cubin(req.get("cycles")))
    except CudaFault as f:
        return {"id": rid, "valid": False, "reason": f"fault:{f.name}", "log": str(f), "exit": f.sticky}
    except Exception as e:  # noqa: BLE001 - any other failure is this variant's, reported with its traceback
        return {"id": rid, "valid": False, "reason": "worker_error", "log": f"{e}\n{traceback.format_exc()}"}
    return {"id": rid, **out}


def main() -> int:
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed (pycuda warnings, ...) goes to stderr, never into the protocol
    sys.stdout = sys.stderr

    def send(obj: dict) -> None:
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    from chronos.measure.runner import GpuRunner

    runner = GpuRunner(0)
    send({"hello": {**runner.info(), "pid": os.getpid()}})
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        if req.get("op") == "quit":
            break
        res = handle(runner, req)
        send({**res, "device": os.environ.get("CUDA_VISIBLE_DEVICES")})  # the GPU that measured it, recorded
        if res.get("exit"):
            os._exit(STICKY_EXIT)  # the context is poisoned: no cleanup through it
    runner.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
