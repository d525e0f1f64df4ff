"""The in-process half of `chronos capture`: record every Triton kernel launch signature of a workload.

`start(out)` (or CHRONOS_CAPTURE=out, read by chronos.triton.bootstrap in every process) wraps the two places
a Triton kernel is launched from Python:
- `torch._inductor.runtime.triton_heuristics.CachingAutotuner.run` — torch.compile's kernels, which bypass
  Triton's own launcher and `launch_enter_hook` (PTX_NOTES); the grid comes from Inductor itself
  (`_interpret_args_grid`) and in-place arguments from its `mutated_arg_names`;
- `triton.runtime.jit.JITFunction.run` — every `kernel[grid](...)` of plain Triton code (with launch options,
  autotune and heuristics wrappers: chronos.triton.capture_launch).
Modules are patched as they are imported (chronos.triton.patch_on_import): the user's script needs no change.
The first launch of each distinct signature (kernel, grid, argument dtypes/shapes/strides, scalars, launch
options) writes one JSON record and, within byte caps, the tensors' contents before the launch. PTX and
metadata come from the fresh TRITON_CACHE_DIR that `chronos capture` gives every process (joined later:
commands.capture). Recording never breaks the workload, and never drops a launch silently: a launch not
recorded is counted per kernel and reason (drops/<pid>.json).
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import json
import math
import os
import sys
import threading
import traceback
from pathlib import Path

from chronos.errors import one_line
from chronos.triton import capture_launch as launch_opts
from chronos.triton.capture_source import save_source, triton_ptxas
from chronos.triton.capture_tensors import changed, is_tensor, span_view, tensor_desc, value_stats
from chronos.triton.patch_on_import import PatchOnImport

ENV_DIR = "CHRONOS_CAPTURE"
ENV_TENSOR_CAP = "CHRONOS_CAPTURE_TENSOR_BYTES"
ENV_TOTAL_CAP = "CHRONOS_CAPTURE_TOTAL_BYTES"
TENSOR_CAP = 64 << 20
TOTAL_CAP = 2 << 30

class Recorder:
    """Writes launch records under `out/launches`, captured tensors under `out/inputs`, counts at exit."""

    def __init__(self, out: Path, tensor_cap: int = TENSOR_CAP, total_cap: int = TOTAL_CAP):
        self.out = Path(out)
        self.tensor_cap, self.total_cap = tensor_cap, total_cap
        self.saved_bytes = 0
        self.counts: dict[str, int] = {}
        self.drops: dict[tuple[str, str], int] = {}  # (kernel, reason) -> launches not recorded
        self.failed: dict[str, tuple[str, str]] = {}  # signature whose record failed -> (kernel, reason)
        self.benchmark: dict[str, int] = {}  # kernel -> autotuner benchmark launches (not the workload's)
        self.lock = threading.Lock()
        for sub in ("launches", "inputs", "counts", "drops"):
            (self.out / sub).mkdir(parents=True, exist_ok=True)

    # ---------------------------------------------------------------- one launch
    def signature(self, kernel_id: str, grid, args: list) -> str:
        parts = [kernel_id, repr(tuple(grid) if grid is not None else None)]
        for a in args:
            if is_tensor(a):
                parts.append(f"T{a.dtype}{tuple(a.shape)}{tuple(a.stride())}{a.data_ptr() % 16 == 0}")
            else:
                parts.append(f"S{type(a).__name__}{a!r}")
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]

    def seen(self, sig: str) -> bool:
        with self.lock:
            first = sig not in self.counts
            self.counts[sig] = self.counts.get(sig, 0) + 1
        return not first

    def describe(self, sig: str, names: list[str], args: list, *, save: bool) -> list[dict]:
        """Per argument: what it is (dtype, shape, strides, span) and, for tensors, value statistics and,
        within the caps, the contents of the span it covers (before the launch)."""
        out = []
        for i, (name, a) in enumerate(zip(names, args)):
            if is_tensor(a):
                d = tensor_desc(a)
                if save and d["dtype"] is not None and not _capturing():
                    d.update(value_stats(a, d))
                    d["data"] = self._save(sig, i, a, d)
                out.append({"name": name, **d})
            elif a is None:
                out.append({"name": name, "kind": "none"})
            elif isinstance(a, (bool, int, float)):
                out.append(
                    {
                        "name": name,
                        "kind": "scalar",
                        "value": a if math.isfinite(float(a)) else repr(a),
                        "pytype": type(a).__name__,
                    }
                )
            else:
                out.append({"name": name, "kind": "other", "type": type(a).__name__})
        return out

    def _save(self, sig: str, i: int, t, d: dict) -> str | None:
        import numpy as np

        nbytes = d["elements"] * t.element_size()
        with self.lock:
            if nbytes > self.tensor_cap or self.saved_bytes + nbytes > self.total_cap:
                return None
            self.saved_bytes += nbytes
        span = span_view(t, d["elements"])
        host = span.detach().cpu()
        if host.dtype.is_floating_point and host.element_size() == 2:
            host = host.view(__import__("torch").int16)
        elif str(host.dtype) == "torch.bool":
            host = host.view(__import__("torch").uint8)
        rel = f"inputs/{sig}/{i}.npy"
        (self.out / rel).parent.mkdir(parents=True, exist_ok=True)
        arr = host.numpy()
        if d["dtype"] in ("f16", "bf16"):
            arr = arr.view(np.float16 if d["dtype"] == "f16" else np.uint16)
        np.save(self.out / rel, arr)
        return rel

    def save_source(self, fn) -> dict:
        return save_source(self.out, fn)

    def write(self, sig: str, record: dict) -> None:
        record = {"signature": sig, "pid": os.getpid(), "ptxas": triton_ptxas(), **record}
        path = self.out / "launches" / f"{sig}.json"
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record, indent=1, default=str) + "\n")
        os.replace(tmp, path)

    def drop(self, kernel: str, reason: str, sig: str | None = None) -> None:
        """One launch of `kernel` that is not recorded, and why; later launches of `sig` count here too."""
        with self.lock:
            self.drops[(kernel, reason)] = self.drops.get((kernel, reason), 0) + 1
            if sig is not None and sig not in self.failed:
                self.failed[sig] = (kernel, reason)
                if self.counts.get(sig) == 1:  # its first launch counts as dropped, not as recorded
                    del self.counts[sig]

    def first_launch(self, sig: str) -> bool:
        """Whether this launch is the first of `sig` (to record); a launch of a signature whose first launch
        was dropped is counted as a drop with it."""
        with self.lock:
            hit = self.failed.get(sig)
        if hit is not None:
            self.drop(*hit)
            return False
        return not self.seen(sig)

    def benchmarked(self, kernel: str) -> None:
        with self.lock:
            self.benchmark[kernel] = self.benchmark.get(kernel, 0) + 1

    def flush_counts(self) -> None:
        with self.lock:
            counts, drops, bench = dict(self.counts), dict(self.drops), dict(self.benchmark)
        pid = os.getpid()
        if counts:
            (self.out / "counts" / f"{pid}.json").write_text(json.dumps(counts, sort_keys=True) + "\n")
        if drops or bench:
            rows = [{"kernel": k, "reason": r, "launches": n} for (k, r), n in sorted(drops.items())]
            (self.out / "drops" / f"{pid}.json").write_text(
                json.dumps({"dropped": rows, "autotune_benchmark_launches": bench}, sort_keys=True) + "\n")

    def error(self, where: str, kernel: str, sig: str | None = None) -> None:
        """Recording `kernel` failed: the launch is a drop with the exception as its reason (the traceback
        goes to errors-<pid>.log), and the workload goes on."""
        exc = sys.exc_info()[1]
        reason = f"recording failed: {type(exc).__name__}: {one_line(exc, 300)}"
        self.drop(kernel, reason, sig)
        with open(self.out / f"errors-{os.getpid()}.log", "a") as f:
            f.write(f"== {where}\n{traceback.format_exc()}\n")


def _capturing() -> bool:
    """Inside a CUDA-graph capture nothing may synchronise: record the signature only."""
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.is_current_stream_capturing())


# ------------------------------------------------------------------ the two launch paths
def _inductor_run(orig):
    def run(self, *args, stream, **kwargs):
        rec = _STATE["recorder"]
        if rec is None or kwargs.get("benchmark_run"):
            return orig(self, *args, stream=stream, **kwargs)
        name, sig = getattr(self.fn, "__name__", "?"), None
        try:
            sig = rec.signature(f"inductor:{_inductor_identity(self)}", None, list(args))
            fresh = rec.first_launch(sig)
            names = _inductor_names(self, len(args))
            pre = rec.describe(sig, names, list(args), save=True) if fresh else None
        except Exception:  # noqa: BLE001 - recording must never break the workload
            rec.error(f"inductor {name}", name, sig)
            fresh = False
        result = orig(self, *args, stream=stream, **kwargs)
        if fresh:
            try:
                _record_inductor(rec, self, sig, args, pre)
            except Exception:  # noqa: BLE001
                rec.error(f"inductor {name}", name, sig)
        return result

    run.__chronos_capture__ = True
    return run


def _inductor_identity(autotuner) -> str:
    """The kernel an Inductor autotuner launches, the same in every process: its name and a hash of its
    source (Triton's compile hash is not: it folds in whichever ptxas the process met first). Without a
    source, the object's id (a name then differs from one capture to the next)."""
    src = getattr(autotuner.fn, "src", None)
    if not isinstance(src, str):
        return f"id{id(autotuner)}"
    return f"{autotuner.fn.__name__}:{hashlib.sha256(src.encode()).hexdigest()[:16]}"


def _inductor_names(autotuner, n: int) -> list[str]:
    """Names of the positional arguments Inductor passes (its signature minus declared constexprs)."""
    sig = list(autotuner.triton_meta.get("signature", {}))
    typed = autotuner.triton_meta.get("signature", {})
    names = [k for k in sig if typed[k] != "constexpr"]
    names += list(autotuner.inductor_meta.get("extra_launcher_args", ()))
    return names[:n] + [f"arg{i}" for i in range(len(names), n)]


def _record_inductor(rec: Recorder, autotuner, sig: str, args, pre: list[dict]) -> None:
    if len(autotuner.launchers) != 1:
        rec.drop(autotuner.fn.__name__, f"Inductor's autotuner still holds {len(autotuner.launchers)} "
                 "configs after the launch (which one ran is unknown)", sig)
        return
    launcher = autotuner.launchers[0]
    call_args, grid = autotuner._interpret_args_grid(args, launcher.config)
    pre = pre[: len(call_args)]
    mutated = set(autotuner.mutated_arg_names)
    for a in pre:
        if a["kind"] == "tensor":
            a["mutated"] = a["name"] in mutated or a["name"].startswith(("in_out_ptr", "out_ptr"))
            a["write_only"] = a["name"].startswith("out_ptr") and a["name"] not in mutated
    cfg = launcher.config
    rec.write(
        sig,
        {
            "source": "inductor",
            "cache_key": getattr(launcher, "cache_hash", None),
            "hash": None,
            "function": autotuner.fn.__name__,
            "grid": [int(g) for g in grid],
            "num_warps": cfg.num_warps,
            "num_stages": cfg.num_stages,
            "constexprs": dict(cfg.kwargs),
            "constants": launch_opts.plain_values(autotuner.triton_meta.get("constants", {})),
            "inductor_kernel": autotuner.inductor_meta.get("kernel_name"),
            "source_hash": autotuner.inductor_meta.get("backend_hash"),
            "args": pre,
            **rec.save_source(autotuner.fn),
        },
    )


def _jit_run(orig):
    def run(self, *args, grid, warmup, **kwargs):
        rec = _STATE["recorder"]
        if rec is None or warmup:
            return orig(self, *args, grid=grid, warmup=warmup, **kwargs)
        name = getattr(getattr(self, "fn", None), "__name__", "?")
        if launch_opts.benchmarking():  # the autotuner trying a config, not the workload's launch
            rec.benchmarked(name)
            return orig(self, *args, grid=grid, warmup=warmup, **kwargs)
        sig, fresh = None, False
        try:
            sig, g, values, options, names, vals = _jit_launch(rec, self, args, kwargs, grid)
            fresh = rec.first_launch(sig)
            if fresh and (why := launch_opts.unsupported(options)):
                rec.drop(name, why, sig)
                fresh = False
            pre = rec.describe(sig, names, vals, save=True) if fresh else None
            before = {
                i: span_view(v, pre[i]["elements"]).detach().to("cpu", copy=True)
                for i, v in enumerate(vals)
                if fresh and is_tensor(v) and pre[i].get("data") and not _capturing()
            }
            tuner = launch_opts.autotune_context()
        except Exception:  # noqa: BLE001
            rec.error(f"jit {name}", name, sig)
            fresh = False
        kernel = orig(self, *args, grid=grid, warmup=warmup, **kwargs)
        if fresh:
            try:
                _record_jit(rec, self, sig, kernel, g, values, options, pre, before, vals, tuner)
            except Exception:  # noqa: BLE001
                rec.error(f"jit {name}", name, sig)
        return kernel

    run.__chronos_capture__ = True
    return run


def _jit_launch(rec: Recorder, fn, args, kwargs: dict, grid):
    """One plain launch taken apart: (signature, grid, bound values, launch options, runtime argument
    names, their values)."""
    params, options = launch_opts.split_kwargs(fn, kwargs)
    bound = fn.signature.bind(*args, **params)
    bound.apply_defaults()
    values = dict(bound.arguments)
    g = grid(values) if callable(grid) else grid
    g = [int(x) for x in (tuple(g) + (1, 1))[:3]]
    constexpr = {p.name for p in fn.params if p.is_constexpr}
    names = [n for n in fn.arg_names if n not in constexpr]
    vals = [values[n] for n in names]
    ident = f"jit:{fn.fn.__module__}.{fn.fn.__qualname__}:{sorted(params)}:{sorted(options.items())!r}"
    sig = rec.signature(ident, g, vals + [values[n] for n in sorted(constexpr)])
    return sig, g, values, options, names, vals


def _record_jit(rec: Recorder, fn, sig, kernel, g, values, options, pre, before, vals, tuner) -> None:
    zeroed = set(tuner["reset_to_zero"]) if tuner else set()
    for i, a in enumerate(pre):
        # Which arguments a plain Triton kernel writes is not declared anywhere, and a rewrite of the same
        # values is invisible: every tensor is inout (restored before each run, compared after it), which
        # also replays an autotuner's restore_value; `changed` is what this launch showed. A reset_to_zero
        # argument was zeroed before the launch: its fresh draw is zeros too.
        if a["kind"] == "tensor":
            a["mutated"], a["write_only"] = True, False
            a["changed"] = changed(before[i], vals[i]) if i in before else None
            a["reset_to_zero"] = a["name"] in zeroed
    meta = kernel.metadata
    constexpr = {p.name for p in fn.params if p.is_constexpr}
    rec.write(sig, {"source": "jit", "cache_key": None, "hash": kernel.hash, "function": fn.fn.__name__,
                    "grid": g, "num_warps": meta.num_warps, "num_stages": meta.num_stages, "constants": {},
                    "constexprs": launch_opts.plain_values({n: values[n] for n in constexpr}),
                    "launch_options": launch_opts.plain_values(options), "autotune": tuner,
                    "source_hash": fn.cache_key, "args": pre, **rec.save_source(fn)})


def _patch_inductor(mod) -> None:
    cls = mod.CachingAutotuner
    if not getattr(cls.run, "__chronos_capture__", False):
        cls.run = _inductor_run(cls.run)


def _patch_jit(mod) -> None:
    cls = mod.JITFunction
    if not getattr(cls.run, "__chronos_capture__", False):
        cls.run = _jit_run(cls.run)


PATCHES = {"torch._inductor.runtime.triton_heuristics": _patch_inductor, "triton.runtime.jit": _patch_jit,
           "triton.runtime.autotuner": launch_opts.patch_autotuner}


_STATE: dict = {"recorder": None, "finder": None}


def start(out: str | Path, tensor_cap: int = TENSOR_CAP, total_cap: int = TOTAL_CAP) -> Recorder:
    """Record launches into `out` from now on (modules imported later are patched when they load)."""
    rec = Recorder(Path(out), tensor_cap, total_cap)
    _STATE["recorder"] = rec
    if _STATE["finder"] is None:
        _STATE["finder"] = PatchOnImport(PATCHES, _patch_failed)
        atexit.register(lambda: _STATE["recorder"] is not None and _STATE["recorder"].flush_counts())
    _STATE["finder"].install()
    return rec


def _patch_failed(module: str) -> None:
    """A launch path that could not be wrapped records nothing: say so in the capture, as a drop."""
    rec = _STATE["recorder"]
    if rec is not None:
        rec.error(f"patch {module}", f"(every launch through {module})")


def stop() -> None:
    rec = _STATE["recorder"]
    if rec is not None:
        rec.flush_counts()
    _STATE["recorder"] = None


def start_from_env() -> Recorder | None:
    """What the bootstrap sitecustomize calls in every Python process `chronos capture` starts."""
    out = os.environ.get(ENV_DIR)
    if not out or importlib.util.find_spec("torch") is None and importlib.util.find_spec("triton") is None:
        return None
    return start(
        out, int(os.environ.get(ENV_TENSOR_CAP, TENSOR_CAP)), int(os.environ.get(ENV_TOTAL_CAP, TOTAL_CAP))
    )
