"""Bit-exact verification on the device, for side-by-side comparisons (chronos.measure.timing).

Inputs of each draw stay on the device and are restored with device copies before every run; the baseline's
outputs of each draw stay there too, and a contender's outputs are compared with them by a byte-compare
kernel that returns one count. Only a mismatch (or the baseline's own poison check, once per draw) brings
outputs to the host. At LLM sizes (outputs of 0.5-1 GB) this is milliseconds per contender instead of the
seconds a host round trip takes; the verdict is the same bit-for-bit rule as chronos.measure.inputs.
"""

from __future__ import annotations

import json

import numpy as np

from chronos.config import MeasureConfig
from chronos.errors import MeasureError
from chronos.kernels.spec import KernelSpec
from chronos.measure.inputs import NP_DTYPES, bit_mismatches, unwritten_error
from chronos.measure.numerics import WITHIN_TOLERANCE, Tolerance, difference

NEQ_ENTRY = "chronos_count_neq"
NEQ_THREADS = 256
NEQ_PTX = """.version 8.0
.target sm_89
.address_size 64
// out[0] += the number of bytes i < n with a[i] != b[i] (grid-stride; one atomic per thread)
.visible .entry chronos_count_neq(.param .u64 pa, .param .u64 pb, .param .u64 pn, .param .u64 pout)
{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<16>;
    ld.param.u64 %rd1, [pa];
    ld.param.u64 %rd2, [pb];
    ld.param.u64 %rd3, [pn];
    ld.param.u64 %rd4, [pout];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, %nctaid.x;
    mul.wide.u32 %rd5, %r1, %r2;
    cvt.u64.u32 %rd6, %r3;
    add.u64 %rd5, %rd5, %rd6;
    mul.wide.u32 %rd7, %r4, %r2;
    mov.u64 %rd8, 0;
$L_loop:
    setp.ge.u64 %p1, %rd5, %rd3;
    @%p1 bra $L_done;
    add.u64 %rd9, %rd1, %rd5;
    add.u64 %rd10, %rd2, %rd5;
    ld.global.u8 %r5, [%rd9];
    ld.global.u8 %r6, [%rd10];
    setp.ne.u32 %p2, %r5, %r6;
    selp.u64 %rd11, 1, 0, %p2;
    add.u64 %rd8, %rd8, %rd11;
    add.u64 %rd5, %rd5, %rd7;
    bra $L_loop;
$L_done:
    setp.eq.u64 %p1, %rd8, 0;
    @%p1 bra $L_ret;
    atom.global.add.u64 %rd12, [%rd4], %rd8;
$L_ret:
    ret;
}
"""


def helper_kernel(runner, ptx: str, entry: str, signature: str):
    """A small PTX helper (the byte compare, the spin guard) JIT-loaded once per worker and kept on the
    runner, prepared with its pycuda `signature`."""
    helpers = runner.__dict__.setdefault("helpers", {})
    if entry not in helpers:
        mod = runner._call(runner.drv.module_from_buffer, ptx.encode())
        fn = mod.get_function(entry)
        fn.prepare(signature)
        helpers[entry] = (mod, fn)
    return helpers[entry][1]


class DeviceDraws:
    """Per draw: the inputs and the baseline's outputs, on the device."""

    def __init__(self, runner, spec: KernelSpec, mcfg: MeasureConfig):
        self.r, self.spec, self.cfg = runner, spec, mcfg
        self.dev: dict[int, dict] = {}
        self.refs: dict[int, dict] = {}
        self.last: dict[str, np.ndarray] = {}  # a differing contender's outputs, from the last mismatches()
        self.count = None

    def restore(self, bufs: dict, d: int) -> None:
        r, drv, cfg = self.r, self.r.drv, self.cfg
        if d not in self.dev:
            host = r._inputs(self.spec, cfg.seed, d, cfg.poison_byte)
            self.dev[d] = {}
            for name, arr in host.items():
                self.dev[d][name] = r._call(drv.mem_alloc, max(arr.nbytes, 256))
                r._call(drv.memcpy_htod, self.dev[d][name], np.ascontiguousarray(arr))
        for a in self.spec.args:
            if a.kind != "buffer":
                continue
            if a.role in ("input", "inout"):
                r._call(drv.memcpy_dtod, bufs[a.name], self.dev[d][a.name], a.nbytes)
            else:
                r._call(drv.memset_d8, bufs[a.name], cfg.poison_byte, a.nbytes)

    def _launch(self, k, bufs: dict, args: list, d: int) -> None:
        self.restore(bufs, d)
        self.r._call(k.launch, args)
        self.r._call(self.r.ctx.synchronize)

    def _host(self, bufs: dict) -> dict[str, np.ndarray]:
        outs = {}
        for a in self.spec.outputs:
            outs[a.name] = np.empty(a.elements, dtype=NP_DTYPES[a.dtype])
            self.r._call(self.r.drv.memcpy_dtoh, outs[a.name], bufs[a.name])
        return outs

    def reference(self, k, bufs: dict, args: list, d: int) -> None:
        """Run the baseline on draw d, check it wrote its outputs (inputs.unwritten_error), keep them on the
        device."""
        r = self.r
        self._launch(k, bufs, args, d)
        host = self._host(bufs)
        if why := unwritten_error(self.spec, host, self.cfg.poison_byte):
            raise MeasureError(f"{self.spec.kernel}: the {why} (draw {d})")
        self.refs[d] = {"host": host}
        for a in self.spec.outputs:
            self.refs[d][a.name] = r._call(r.drv.mem_alloc, max(a.nbytes, 256))
            r._call(r.drv.memcpy_dtod, self.refs[d][a.name], bufs[a.name], a.nbytes)

    def mismatches(self, k, bufs: dict, args: list, d: int) -> dict[str, int]:
        """{output: differing elements} of contender k on draw d against the baseline; {} when bit-exact."""
        r = self.r
        self._launch(k, bufs, args, d)
        if self.count is None:
            self.count = r._call(r.drv.mem_alloc, 8)
        fn, differ = helper_kernel(r, NEQ_PTX, NEQ_ENTRY, "PPQP"), False
        for a in self.spec.outputs:
            r._call(r.drv.memset_d8, self.count, 0, 8)
            grid = max(1, min(65536, -(-a.nbytes // (NEQ_THREADS * 16))))
            r._call(fn.prepared_call, (grid, 1, 1), (NEQ_THREADS, 1, 1), np.uintp(int(bufs[a.name])),
                    np.uintp(int(self.refs[d][a.name])), np.uint64(a.nbytes), np.uintp(int(self.count)))
            n = np.zeros(1, dtype=np.uint64)
            r._call(r.drv.memcpy_dtoh, n, self.count)
            differ |= bool(n[0])
        if not differ:
            return {}
        self.last = self._host(bufs)  # what verify_all measures the difference of
        return bit_mismatches(self.refs[d]["host"], self.last)

    def free(self) -> None:
        ptrs = [p for d in self.dev.values() for p in d.values()]
        ptrs += [p for d in self.refs.values() for n, p in d.items() if n != "host"]
        self.r._free(ptrs + ([self.count] if self.count is not None else []))


def verify_all(spec: KernelSpec, mcfg: MeasureConfig, draws: DeviceDraws, base_k, ks: list, bufs: dict,
               args: list) -> list[dict]:
    """Per contender: valid, or the invalid verdict (outputs differ bitwise from the baseline's on a draw,
    with by how much: elements, ULP, absolute and relative error per output). In the tolerance mode
    (measure.tolerance) a contender within it on every draw stays valid, its reason `within_tolerance`."""
    tol = mcfg.tolerance_values()
    tolerance = Tolerance(*tol) if tol else None
    results = [{"valid": True, "reason": "", "log": ""} for _ in ks]
    for d in range(mcfg.input_draws):
        draws.reference(base_k, bufs, args, d)
        for i, k in enumerate(ks):
            if not results[i]["valid"] or not (bad := draws.mismatches(k, bufs, args, d)):
                continue
            ref, got = draws.refs[d]["host"], draws.last
            report = {a.name: difference(ref[a.name], got[a.name], a.dtype) for a in spec.outputs}
            if tolerance and all(tolerance.accepts(ref[a.name], got[a.name], a.dtype) for a in spec.outputs):
                worst = max(r["max_ulp"] for r in report.values())
                results[i] = {"valid": True, "reason": WITHIN_TOLERANCE,
                              "log": f"within {tolerance.label()} (max {worst} ULP on draw {d}): "
                                     f"{json.dumps(report, sort_keys=True)}"}
                continue
            log = (f"outputs differ bitwise from the baseline on draw {d}: {bad} (elements); "
                   f"{json.dumps(report, sort_keys=True)}")
            results[i] = {"valid": False, "reason": "wrong_output", "log": log}
    return results
