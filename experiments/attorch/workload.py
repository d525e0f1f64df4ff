#!/usr/bin/env python3
"""An LLM-sized forward + backward workload of attorch's hand-written Triton kernels (issue 25 item 5).

attorch (MIT, github.com/BobMcDear/attorch) is vendored unmodified under third_party/attorch; this script
puts that directory on sys.path, so nothing needs installing besides torch and triton. Sizes default to a
Llama-3-8B-like layer: tokens = batch * seq = 4096, hidden 4096, FFN 14336 (3.5 x hidden).

Each op (see OPS) builds its attorch module, then runs --steps forward + backward passes on CUDA. An op
that fails prints its traceback to stderr and the others still run. The last line of stdout is one JSON
object with the status of every op requested; the exit status is 1 when any of them failed.

    python experiments/attorch/workload.py                          # every op, fp32
    python experiments/attorch/workload.py --dtype float16 --ops rms_norm,glu,cross_entropy

float16 follows attorch's own tests: fp16 inputs, fp32 parameters, run under torch.autocast('cuda')
(attorch's tests skip fp16 without autocast).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import sys
import time
import traceback
from pathlib import Path

# experiments/attorch/workload.py -> <repo>/third_party/attorch (holds the attorch/ package)
ATTORCH_DIR = Path(__file__).resolve().parents[2] / "third_party" / "attorch"

# Op name -> the attorch module(s) and Triton kernels it launches (forward; backward).
OPS = {
    "rms_norm": "RMSNorm: rms_norm_forward_kernel; rms_norm_backward_kernel",
    "layer_norm": "LayerNorm: layer_norm_forward_kernel; layer_norm_backward_kernel",
    "softmax": "Softmax over the vocab: softmax_forward_kernel; softmax_backward_kernel (log=False)",
    "log_softmax": "LogSoftmax over the vocab: softmax_forward_kernel; softmax_backward_kernel (log=True)",
    "glu": "GLU(act_func='silu') = SwiGLU: glu_forward_kernel; glu_backward_kernel",
    "silu": "SiLU: act_func_forward_kernel; act_func_backward_kernel (act_func='silu')",
    "gelu": "GELU: act_func_forward_kernel; act_func_backward_kernel (act_func='gelu')",
    "cross_entropy": ("CrossEntropyLoss: cross_entropy_loss_forward_kernel; "
                      "cross_entropy_loss_backward_kernel"),
    "nll": "NLLLoss: nll_loss_forward_kernel; nll_loss_backward_kernel",
    "dropout": "Dropout(p=0.1): dropout_forward_kernel; dropout_backward_kernel",
    "linear": "Linear x5 (qkv, o, gate_up, down, lm_head): linear_forward_kernel; backward is torch matmul",
    "linear_silu": "Linear(act_func='silu'): linear_forward_kernel; act_func_backward_kernel + torch matmul",
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Run attorch's Triton kernels forward + backward at LLM sizes on CUDA.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="ops:\n" + "\n".join(f"  {name:14s}{what}" for name, what in OPS.items()),
    )
    p.add_argument("--tokens", type=int, default=4096, help="rows = batch * seq (default 4096)")
    p.add_argument("--hidden", type=int, default=4096, help="model width (default 4096)")
    p.add_argument("--ffn", type=int, default=None, help="FFN width (default 3.5 * hidden = 14336)")
    # Vocabulary: attorch's cross entropy (and softmax) keep a whole row in registers, in one block of
    # next_power_of_2(vocab) columns with BLOCK_SIZE_BATCH = 1 row per program (the heuristic gives 1 for
    # any feat_dim >= 64), autotuned over num_warps 1..32. 32000 (Llama-2 / Mistral) pads to a 32768-wide
    # block, which compiles (upstream's own GPT-2 example runs it at 50257 -> 65536). Llama-3's 128256 would
    # need a 131072-wide block: 4096 fp32 values per thread at num_warps=1, i.e. massive spilling and very
    # long compiles for the autotuner's small-warp configs, so it is not the default.
    p.add_argument("--vocab", type=int, default=32000, help="vocabulary size (default 32000; see comment)")
    p.add_argument("--steps", type=int, default=2, help="forward + backward passes per op (default 2)")
    p.add_argument("--dtype", choices=["float32", "float16"], default="float32",
                   help="float16 = fp16 inputs under torch.autocast('cuda'), as attorch's tests do")
    p.add_argument("--ops", default=",".join(OPS),
                   help="comma-separated subset of the ops listed below (default: all)")
    p.add_argument("--seed", type=int, default=0, help="seed for torch and Python's random (dropout seeds)")
    args = p.parse_args(argv)

    args.ops = [op.strip() for op in args.ops.split(",") if op.strip()]
    unknown = [op for op in args.ops if op not in OPS]
    if unknown or not args.ops:
        p.error(f"unknown op(s) {unknown or args.ops!r}; choose from {', '.join(OPS)}")
    if args.ffn is None:
        args.ffn = args.hidden * 7 // 2
    for name in ("tokens", "hidden", "ffn", "vocab", "steps"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be positive")
    # attorch's kernels compute element offsets in 32-bit integers (row * stride, pid * BLOCK_SIZE): the
    # largest tensor here, tokens x max(vocab, 2 * ffn), must stay below 2**31 elements.
    largest = args.tokens * max(args.vocab, 2 * args.ffn, args.hidden)
    if largest >= 2**31:
        p.error(f"tokens x max(vocab, 2*ffn, hidden) = {largest} >= 2**31: attorch's 32-bit offsets overflow")
    return args


@dataclasses.dataclass
class Case:
    """One module call of an op: module(inp, *extra), then backward."""

    module: object
    inp: object
    extra: tuple = ()
    out_grad: object = None  # the random output gradient, drawn at the first step


class Workload:
    """Builds the inputs of each op and runs it forward + backward."""

    def __init__(self, args: argparse.Namespace, torch, attorch) -> None:
        self.a = args
        self.torch = torch
        self.attorch = attorch
        self.dtype = torch.float16 if args.dtype == "float16" else torch.float32

    # -- helpers ------------------------------------------------------------------------------------
    def x(self, *shape: int, requires_grad: bool = True):
        """A random input of the run's dtype (fp16 or fp32) on CUDA."""
        return self.torch.randn(shape, device="cuda", dtype=self.dtype, requires_grad=requires_grad)

    def autocast(self):
        return self.torch.autocast("cuda", enabled=self.dtype is self.torch.float16)

    def fwd_bwd(self, case: Case):
        """module(inp, *extra) under autocast, then backward: loss.backward() for a scalar output, else with
        a random output gradient, drawn once per case. Returns the forward output (detached)."""
        case.module.zero_grad(set_to_none=True)
        case.inp.grad = None
        with self.autocast():
            out = case.module(case.inp, *case.extra)
        if out.ndim == 0:
            out.backward()
        else:
            if case.out_grad is None:
                case.out_grad = self.torch.randn_like(out)
            out.backward(case.out_grad)
        return out.detach()

    # -- ops: each builds its modules and inputs (not timed) and returns the cases to run each step --------
    def op_rms_norm(self):
        return [Case(self.attorch.RMSNorm(self.a.hidden, eps=1e-5), self.x(self.a.tokens, self.a.hidden))]

    def op_layer_norm(self):
        return [Case(self.attorch.LayerNorm(self.a.hidden), self.x(self.a.tokens, self.a.hidden))]

    def op_softmax(self):
        return [Case(self.attorch.Softmax(dim=-1), self.x(self.a.tokens, self.a.vocab))]

    def op_log_softmax(self):
        return [Case(self.attorch.LogSoftmax(dim=-1), self.x(self.a.tokens, self.a.vocab))]

    def op_glu(self):
        # SwiGLU on the fused gate_up projection output [tokens, 2 * ffn]. attorch's GLU returns
        # first_half * act(second_half), so the second half plays Llama's gate and the first its up.
        return [Case(self.attorch.GLU(dim=-1, act_func="silu"), self.x(self.a.tokens, 2 * self.a.ffn))]

    def op_silu(self):
        return [Case(self.attorch.SiLU(), self.x(self.a.tokens, self.a.ffn))]

    def op_gelu(self):
        return [Case(self.attorch.GELU(), self.x(self.a.tokens, self.a.ffn))]

    def targets(self):
        return self.torch.randint(0, self.a.vocab, (self.a.tokens,), device="cuda")

    def op_cross_entropy(self):
        logits = self.x(self.a.tokens, self.a.vocab)
        return [Case(self.attorch.CrossEntropyLoss(), logits, (self.targets(),))]

    def op_nll(self):
        # attorch's NLL forward sizes its per-program partial sums as batch_dim // BLOCK_SIZE_BATCH (a
        # floor; the grid is a ceil), and BLOCK_SIZE_BATCH = next_power_of_2(tokens // 1024) capped at 128
        # when spatial_dim (1 here) < 64: a token count it does not divide would write past that buffer.
        from attorch.nll_loss_kernels import BLOCK_SIZE_BATCH_heuristic

        bsb = BLOCK_SIZE_BATCH_heuristic({"batch_dim": self.a.tokens, "spatial_dim": 1})
        if self.a.tokens % bsb:
            raise ValueError(f"attorch NLLLoss needs tokens divisible by its BLOCK_SIZE_BATCH ({bsb}); "
                             f"got --tokens {self.a.tokens}")
        # Realistic input: log-probabilities, made outside attorch so that this op runs only NLL kernels.
        logits = self.x(self.a.tokens, self.a.vocab, requires_grad=False).float()
        log_probs = self.torch.log_softmax(logits, dim=-1).to(self.dtype).requires_grad_()
        return [Case(self.attorch.NLLLoss(), log_probs, (self.targets(),))]

    def op_dropout(self):
        return [Case(self.attorch.Dropout(p=0.1).train(), self.x(self.a.tokens, self.a.hidden))]

    def op_linear(self):
        # Llama-3-8B's projections (no bias): q + k + v with GQA (8 of 32 heads for k and v -> hidden / 4
        # each), o, the fused gate_up, down and the LM head. Note attorch.Linear stores weight as
        # [in_features, out_features]. Each shape is its own autotune key (8 configs).
        h, f, kv = self.a.hidden, self.a.ffn, self.a.hidden // 4
        # qkv, o, gate_up, down, lm_head
        shapes = [(h, h + 2 * kv), (h, h), (h, 2 * f), (f, h), (h, self.a.vocab)]
        return [Case(self.attorch.Linear(n_in, n_out, bias=False), self.x(self.a.tokens, n_in))
                for n_in, n_out in shapes]

    def op_linear_silu(self):
        # The fused-activation path: linear_forward_kernel with act_func='silu' saves the pre-activation,
        # and backward launches act_func_backward_kernel before its torch matmuls.
        m = self.attorch.Linear(self.a.hidden, self.a.ffn, bias=False, act_func="silu")
        return [Case(m, self.x(self.a.tokens, self.a.hidden))]


def run_op(work: Workload, name: str, torch) -> dict:
    """Builds one op's cases, then runs them forward + backward --steps times; returns the op's summary
    entry. Never raises."""
    step_ms = []
    cases = outs = None
    try:
        torch.cuda.synchronize()
        cases = getattr(work, f"op_{name}")()
        for _ in range(work.a.steps):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            outs = [work.fwd_bwd(case) for case in cases]
            torch.cuda.synchronize()  # surface asynchronous CUDA errors inside this op's try
            step_ms.append((time.perf_counter() - t0) * 1e3)
        checksum = sum(float(o.float().sum()) for o in outs)
        if not math.isfinite(checksum):
            raise FloatingPointError(f"non-finite forward output (sum = {checksum})")
        # The first step includes compilation and autotuning; the last is (close to) steady state.
        return {"status": "ok", "first_step_ms": round(step_ms[0], 3), "last_step_ms": round(step_ms[-1], 3),
                "checksum": checksum}
    except Exception as e:  # noqa: BLE001 - one op failing must not hide the others
        print(f"[attorch workload] op {name} FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        traceback.print_exc()
        sys.stderr.flush()
        return {"status": "failed", "error": f"{type(e).__name__}: {e}"[:500]}
    finally:
        del cases, outs
        torch.cuda.empty_cache()  # a no-op until CUDA is initialised


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sys.path.insert(0, str(ATTORCH_DIR))

    summary = {"workload": "attorch", "tokens": args.tokens, "hidden": args.hidden, "ffn": args.ffn,
               "vocab": args.vocab, "dtype": args.dtype, "steps": args.steps, "ops": {}}
    try:
        import attorch
        import torch
    except Exception as e:  # noqa: BLE001 - still print the JSON line, every op failed
        traceback.print_exc()
        err = {"status": "failed", "error": f"import: {type(e).__name__}: {e}"[:500]}
        summary["ops"] = {name: dict(err) for name in args.ops}
    else:
        random.seed(args.seed)  # attorch draws its dropout seeds from Python's random
        torch.manual_seed(args.seed)
        work = Workload(args, torch, attorch)
        for name in args.ops:
            summary["ops"][name] = res = run_op(work, name, torch)
            print(f"[attorch workload] {name}: {res['status']}", file=sys.stderr, flush=True)

    failed = [name for name, res in summary["ops"].items() if res["status"] != "ok"]
    summary["failed"] = failed
    summary["ok"] = not failed
    print(json.dumps(summary), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
