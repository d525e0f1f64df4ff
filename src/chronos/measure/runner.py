"""The pycuda runner: load cubins, launch, verify bit-exactly, time with events, count cycles.

Runs inside a worker process (chronos.measure.worker), one CUDA context per process. pycuda is imported
when a GpuRunner is made, so CPU machines without pycuda can import this module. A sticky CUDA error
(700 illegal address, 716 misaligned, 719 launch failure, ...) poisons the context: it raises CudaFault
with sticky=True and the worker must exit.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from chronos.config import MeasureConfig
from chronos.errors import CudaFault, MeasureError
from chronos.kernels.spec import KernelSpec
from chronos.measure.inputs import (
    NP_DTYPES,
    bit_mismatches,
    draw_inputs,
    scalar_value,
    stats,
    unwritten_error,
)

# pycuda error text -> CUDA error name; the names that are not sticky leave the context usable.
_FAULTS = [
    ("misaligned address", "CUDA_ERROR_MISALIGNED_ADDRESS"),
    ("illegal memory access", "CUDA_ERROR_ILLEGAL_ADDRESS"),
    ("unspecified launch failure", "CUDA_ERROR_LAUNCH_FAILED"),
    ("illegal instruction", "CUDA_ERROR_ILLEGAL_INSTRUCTION"),
    ("hardware stack error", "CUDA_ERROR_HARDWARE_STACK_ERROR"),
    ("invalid program counter", "CUDA_ERROR_INVALID_PC"),
    ("address space", "CUDA_ERROR_INVALID_ADDRESS_SPACE"),
    ("timed out", "CUDA_ERROR_LAUNCH_TIMEOUT"),
    ("device-side assert", "CUDA_ERROR_ASSERT"),
    ("too many resources", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"),
    ("out of memory", "CUDA_ERROR_OUT_OF_MEMORY"),
    ("invalid argument", "CUDA_ERROR_INVALID_VALUE"),
    ("invalid value", "CUDA_ERROR_INVALID_VALUE"),
    ("no kernel image", "CUDA_ERROR_NO_BINARY_FOR_GPU"),
    ("device kernel image is invalid", "CUDA_ERROR_INVALID_IMAGE"),
]
NOT_STICKY = {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "CUDA_ERROR_OUT_OF_MEMORY", "CUDA_ERROR_INVALID_VALUE",
              "CUDA_ERROR_NO_BINARY_FOR_GPU", "CUDA_ERROR_INVALID_IMAGE"}
_TYPECODE = {"f32": "f", "f16": "H", "bf16": "H", "f64": "d", "i8": "b", "u8": "B", "i16": "h", "i32": "i",
             "u32": "I", "i64": "q", "u64": "Q"}


def classify(message: str) -> tuple[str, bool]:
    """(CUDA error name, sticky) for a pycuda error message. Unknown errors count as sticky (restart)."""
    low = message.lower()
    for needle, name in _FAULTS:
        if needle in low:
            return name, name not in NOT_STICKY
    return "CUDA_ERROR_UNKNOWN", True


def driver_version() -> str:
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
        if m := re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+\.\d+(?:\.\d+)?)", text):
            return m.group(1)
    except OSError:
        pass
    return "unknown"


def buffer_bytes(nbytes: int) -> int:
    """Bytes allocated for a buffer argument: at least 256, so every buffer is a whole aligned segment (the
    timing protocol demotes exactly these spans)."""
    return max(nbytes, 256)


def _launch_key(spec: KernelSpec) -> tuple:
    """What besides the cubin decides a launch and its outputs: the kernel (its name, which names its
    sizes), entry, grid, block, shared memory and argument layout."""
    return (spec.kernel, spec.entry, tuple(spec.grid), tuple(spec.block), spec.shared_bytes,
            tuple((a.kind, a.dtype, a.elements, a.value) for a in spec.args))


class _Kernel:
    """A loaded cubin's entry, prepared for fast launches."""

    def __init__(self, drv, cubin: bytes, spec: KernelSpec, extra_ptr: bool):
        self.module = drv.module_from_buffer(cubin)
        self.func = self.module.get_function(spec.entry)
        if spec.shared_bytes > 48 * 1024:
            self.func.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, spec.shared_bytes)
        pointers = ("buffer", "null", "alias")
        codes = "".join("P" if a.kind in pointers else _TYPECODE[a.dtype] for a in spec.args)
        self.func.prepare(codes + ("P" if extra_ptr else ""))
        self.spec = spec

    def launch(self, args: list, stream=None) -> None:
        s = self.spec
        self.func.prepared_async_call(s.grid, s.block, stream, *args, shared_size=s.shared_bytes)


class GpuRunner:
    """One CUDA context; measures variants of kernels (see `measure`)."""

    def __init__(self, device: int = 0):
        import pycuda.driver as drv

        self.drv = drv
        drv.init()
        self.dev = drv.Device(device)
        self.ctx = self.dev.make_context()
        self.kernels: dict[tuple, _Kernel] = {}  # (cubin sha, extra_ptr, launch geometry) -> kernel
        self.refs: dict[tuple, dict[str, np.ndarray]] = {}  # (baseline sha, spec, seed, draw) -> outputs
        self.draws: dict[tuple, dict[str, np.ndarray]] = {}  # (kernel, seed, draw, poison) -> inputs
        self.flush = None
        self.warmed = False
        self.rowmax = None

    def warm_up(self, seconds: float, nbytes: int = 256 << 20) -> None:
        """Keep the GPU busy for `seconds` before the first measurement, so that every measurement of a
        run sees the clocks the card settles at under load rather than its idle clocks (the first
        variants of a fresh process otherwise run while the clocks ramp up)."""
        import time

        buf = self._call(self.drv.mem_alloc, nbytes)
        try:
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                for _ in range(20):
                    self._call(self.drv.memset_d8_async, buf, 0x5A, nbytes)
                self._call(self.ctx.synchronize)
        finally:
            buf.free()

    def _inputs(self, spec: KernelSpec, seed: int, draw: int, poison_byte: int) -> dict[str, np.ndarray]:
        """Input draws are deterministic in (seed, draw): drawn once per kernel, reused by its variants."""
        key = (spec.kernel, seed, draw, poison_byte)
        if key not in self.draws:
            if len(self.draws) > 16:
                self.draws.clear()
            self.draws[key] = draw_inputs(spec, seed, draw, poison_byte)
        return self.draws[key]

    def info(self) -> dict:
        cc = self.dev.compute_capability()
        cuda = self.drv.get_driver_version()
        return {"gpu": str(self.dev.name()),
                "driver": f"{driver_version()} (CUDA {cuda // 1000}.{cuda % 1000 // 10})",
                "cc": f"{cc[0]}.{cc[1]}"}

    def close(self) -> None:
        self.ctx.pop()

    # ------------------------------------------------------------ plumbing
    def _call(self, fn, *a, **k):
        try:
            return fn(*a, **k)
        except self.drv.Error as e:
            name, sticky = classify(str(e))
            raise CudaFault(name, str(e), sticky=sticky) from e

    def _kernel(self, sha: str, cubin: bytes, spec: KernelSpec, extra_ptr: bool = False) -> _Kernel:
        # The key holds the launch geometry, not only the cubin: two kernels can share a cubin (Triton's
        # attention at kv 512 and 4096 differ only in runtime arguments) yet launch on different grids; a
        # key of the cubin alone launched the second with the first one's grid, reading out of bounds.
        key = (sha, extra_ptr, _launch_key(spec))
        if key not in self.kernels:
            if len(self.kernels) > 64:
                self.kernels.clear()
            self.kernels[key] = self._call(_Kernel, self.drv, cubin, spec, extra_ptr)
        return self.kernels[key]

    def _alloc(self, spec: KernelSpec) -> dict:
        bufs = {}
        for a in spec.args:
            if a.kind == "buffer":
                ptr = self._call(self.drv.mem_alloc, buffer_bytes(a.nbytes))
                if int(ptr) % 256:
                    raise MeasureError(f"{spec.kernel}: allocation of {a.name} not 256-byte aligned")
                bufs[a.name] = ptr
        return bufs

    def _args(self, spec: KernelSpec, bufs: dict) -> list:
        out = []
        for a in spec.args:
            if a.kind in ("buffer", "alias"):  # an alias points into its holder's allocation
                out.append(np.uintp(int(bufs[a.alias_of or a.name]) + (a.offset or 0)))
            elif a.kind == "null":
                out.append(np.uintp(0))
            else:
                out.append(scalar_value(a))
        return out

    def _upload(self, spec: KernelSpec, bufs: dict, inputs: dict, poison_byte: int) -> None:
        for a in spec.args:
            if a.kind != "buffer":
                continue
            if a.role in ("input", "inout"):
                self._call(self.drv.memcpy_htod, bufs[a.name], np.ascontiguousarray(inputs[a.name]))
            else:  # poison on the device: no host array, no copy
                self._call(self.drv.memset_d8, bufs[a.name], poison_byte, a.nbytes)

    def _run_once(self, k: _Kernel, spec, bufs, args, inputs, cfg) -> dict[str, np.ndarray]:
        self._upload(spec, bufs, inputs, cfg.poison_byte)
        self._call(k.launch, args)
        self._call(self.ctx.synchronize)
        outs = {}
        for a in spec.outputs:
            host = np.empty(a.elements, dtype=NP_DTYPES[a.dtype])
            self._call(self.drv.memcpy_dtoh, host, bufs[a.name])
            outs[a.name] = host
        return outs

    # ------------------------------------------------------------ measuring
    def measure(self, spec: KernelSpec, cfg: MeasureConfig, baseline: tuple[str, bytes],
                variant: tuple[str, bytes], cycles: tuple[str, bytes] | None) -> dict:
        """Verify `variant` against `baseline` (sha, cubin) on cfg.input_draws fresh draws, then time it
        and count its cycles with the instrumented cubin. Returns a plain-JSON dict."""
        self._warm_once(cfg)
        bufs = self._alloc(spec)
        try:
            return self._measure(spec, cfg, baseline, variant, cycles, bufs)
        finally:
            self._free(bufs.values())

    def _warm_once(self, cfg: MeasureConfig) -> None:
        if not self.warmed:  # once per process: a restarted worker warms up again
            self.warm_up(cfg.gpu_warmup_s)
            self.warmed = True

    def _free(self, ptrs) -> None:
        """Free device allocations, ignoring errors (the context may already be poisoned)."""
        for p in ptrs:
            try:
                p.free()
            except self.drv.Error:
                pass

    def _verify(self, spec, cfg, base_k: _Kernel, base_sha: str, var_k: _Kernel, bufs, args) -> dict | None:
        """None if the variant's outputs equal the baseline's bit for bit on every input draw, else the
        invalid verdict (the baseline's references are cached per draw)."""
        for d in range(cfg.input_draws):
            inputs = self._inputs(spec, cfg.seed, d, cfg.poison_byte)
            key = (base_sha, _launch_key(spec), cfg.seed, d, cfg.poison_byte)  # one cubin, many specs
            if key not in self.refs:
                ref = self._run_once(base_k, spec, bufs, args, inputs, cfg)
                if why := unwritten_error(spec, ref, cfg.poison_byte):
                    return {"valid": False, "reason": "unwritten_output", "log": f"{why} (draw {d})"}
                if len(self.refs) > 8:
                    self.refs.clear()
                self.refs[key] = ref
            got = self._run_once(var_k, spec, bufs, args, inputs, cfg)
            bad = bit_mismatches(self.refs[key], got)
            if bad:
                return {"valid": False, "reason": "wrong_output",
                        "log": f"outputs differ bitwise from the baseline on draw {d}: {bad} (elements)"}
        return None

    def _measure(self, spec, cfg, baseline, variant, cycles, bufs) -> dict:
        args = self._args(spec, bufs)
        base_k = self._kernel(baseline[0], baseline[1], spec)
        var_k = self._kernel(variant[0], variant[1], spec)
        bad = self._verify(spec, cfg, base_k, baseline[0], var_k, bufs, args)
        if bad:
            return bad
        self._upload(spec, bufs, self._inputs(spec, cfg.seed, 0, cfg.poison_byte), cfg.poison_byte)
        result = {"valid": True, "reason": "", "log": ""}
        result["time_ms"] = stats(self._time_samples(var_k, args, cfg, cfg.reps, cfg.warmup))
        if cycles is not None:
            cyc_k = self._kernel(cycles[0], cycles[1], spec, extra_ptr=True)
            result["cycles"] = stats(self._cycle_samples(cyc_k, spec, args, cfg, cfg.cycle_samples,
                                                         min(cfg.warmup, 3)))
        return result

    def measure_rounds(self, spec: KernelSpec, cfg: MeasureConfig, baseline: tuple[str, bytes],
                       candidates: list[tuple[tuple[str, bytes], tuple[str, bytes]]], rounds: int,
                       realloc: bool = False) -> list[dict]:
        """Several variants of one kernel measured side by side: each is verified bit-exactly against the
        baseline, then `rounds` rounds visit every valid one in a shuffled order for 1/rounds of the reps
        and cycle samples, on one set of buffers; statistics over the pooled samples. Slow drifts and the
        placement of one allocation then hit every candidate alike
        (experiments/measurement/repeat_protocol.py). With `realloc`, every round gets fresh buffers behind a
        spacer allocation of a seeded size, so the pooled samples average over placements in memory instead
        of sharing one."""
        import random

        self._warm_once(cfg)
        bufs = self._alloc(spec)
        try:
            args = self._args(spec, bufs)
            base_k = self._kernel(baseline[0], baseline[1], spec)
            out: list[dict] = []
            ks = []
            for variant, cycles in candidates:
                k = self._kernel(variant[0], variant[1], spec)
                bad = self._verify(spec, cfg, base_k, baseline[0], k, bufs, args)
                out.append(bad or {"valid": True, "reason": "", "log": ""})
                ks.append(None if bad else (k, self._kernel(cycles[0], cycles[1], spec, extra_ptr=True)))
            self._upload(spec, bufs, self._inputs(spec, cfg.seed, 0, cfg.poison_byte), cfg.poison_byte)
            reps, samples = max(1, cfg.reps // rounds), max(1, cfg.cycle_samples // rounds)
            times: list[list[float]] = [[] for _ in ks]
            cycles_: list[list[int]] = [[] for _ in ks]
            for r in range(rounds):
                rng = random.Random(cfg.seed * 7919 + r)
                order = [i for i, k in enumerate(ks) if k is not None]
                rng.shuffle(order)
                fresh, spacer = None, None
                if realloc and r:
                    spacer = self._call(self.drv.mem_alloc, 256 * rng.randrange(1, 8192))
                    fresh = self._alloc(spec)
                    self._upload(spec, fresh, self._inputs(spec, cfg.seed, 0, cfg.poison_byte),
                                 cfg.poison_byte)
                try:
                    argv = self._args(spec, fresh) if fresh else args
                    for i in order:
                        times[i] += self._time_samples(ks[i][0], argv, cfg, reps, 2)
                        cycles_[i] += self._cycle_samples(ks[i][1], spec, argv, cfg, samples, 2)
                finally:
                    self._free([*(fresh or {}).values(), *([spacer] if spacer else [])])
            for i, k in enumerate(ks):
                if k is not None:
                    out[i]["time_ms"], out[i]["cycles"] = stats(times[i]), stats(cycles_[i])
            return out
        finally:
            self._free(bufs.values())

    def _time_samples(self, k: _Kernel, args: list, cfg: MeasureConfig, reps: int,
                      warmup: int) -> list[float]:
        drv = self.drv
        if cfg.flush_l2 and self.flush is None:
            self.flush = self._call(drv.mem_alloc, cfg.l2_flush_bytes)
        for _ in range(warmup):
            self._call(k.launch, args)
        evs = [(drv.Event(), drv.Event()) for _ in range(reps)]
        for start, end in evs:
            if cfg.flush_l2:
                self._call(drv.memset_d8_async, self.flush, 0xA5, cfg.l2_flush_bytes)
            start.record()
            self._call(k.launch, args)
            end.record()
        self._call(self.ctx.synchronize)
        return [end.time_since(start) for start, end in evs]

    def _rowmax_kernel(self):
        """The row-maximum helper (chronos.measure.rowmax), JIT-loaded once and checked against numpy."""
        if self.rowmax is None:
            from chronos.measure import rowmax

            mod = self._call(self.drv.module_from_buffer, rowmax.PTX.encode())
            fn = mod.get_function(rowmax.ENTRY)
            fn.prepare("PPI")
            self.rowmax = (mod, fn, rowmax.THREADS)
            rows = np.random.default_rng(0).integers(-(1 << 40), 1 << 40, size=(7, 1000), dtype=np.int64)
            if not np.array_equal(self._rowmax(rows.size * 8, rows), rows.max(axis=1)):
                raise MeasureError("the GPU row-maximum helper disagrees with numpy")
        return self.rowmax

    def _rowmax(self, nbytes: int, rows: np.ndarray | None = None, buf=None, n: int = 0,
                cols: int = 0) -> np.ndarray:
        """Row maxima of an int64 [n, cols] matrix on the device (`buf`), or of `rows` uploaded first."""
        _, fn, threads = self._rowmax_kernel()
        owned = buf is None
        if owned:
            n, cols = rows.shape
            buf = self._call(self.drv.mem_alloc, nbytes)
            self._call(self.drv.memcpy_htod, buf, np.ascontiguousarray(rows))
        out = self._call(self.drv.mem_alloc, 8 * n)
        try:
            self._call(fn.prepared_call, (n, 1, 1), (threads, 1, 1), np.uintp(int(buf)), np.uintp(int(out)),
                       np.uint32(cols))
            host = np.empty(n, dtype=np.int64)
            self._call(self.drv.memcpy_dtoh, host, out)
            return host
        finally:
            out.free()
            if owned:
                buf.free()

    def _cycle_samples(self, k: _Kernel, spec: KernelSpec, args: list, cfg: MeasureConfig, samples: int,
                       warmup: int) -> list[int]:
        """`samples` instrumented launches; each thread writes its own %clock64 delta and the GPU takes the
        maximum over the threads of each launch: one value per launch."""
        per = spec.threads * 8
        batch = max(1, min(samples, cfg.max_cycle_buffer_bytes // per))
        buf = self._call(self.drv.mem_alloc, batch * per)
        maxima: list[int] = []
        try:
            for _ in range(warmup):
                self._call(k.launch, [*args, np.uintp(int(buf))])
            left = samples
            while left:
                n = min(batch, left)
                self._call(self.drv.memset_d8_async, buf, 0, n * per)
                for s in range(n):
                    self._call(k.launch, [*args, np.uintp(int(buf) + s * per)])
                maxima.extend(self._rowmax(n * per, buf=buf, n=n, cols=spec.threads).tolist())
                left -= n
        finally:
            self._free([buf])
        return maxima
