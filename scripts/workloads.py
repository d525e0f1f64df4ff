"""Real workloads for `chronos capture` (#13): transformers' model definitions at LLM sizes, random weights,
under torch.compile, and one workload where Triton carries most of the time (FlexAttention).

    chronos capture --out data/kernels/captured/llama -- python scripts/workloads.py llama

Each workload is a dict of phases, each a function that runs one step and returns the tensors to compare
(scripts/e2e.py: bitwise, stock vs tuned). Capture runs every phase twice (the second step launches the
same kernels: launch counts, not new kernels): llama, gpt2 — a training step (forward + backward), prefill,
and decode of 4 tokens against a KV cache (batch 4); bert — a masked-LM training step and an inference
forward; flex — FlexAttention forward + backward with a causal and a sliding-window block mask, and its
decode shape (8 query tokens). `--profile` prints each phase's Triton share of GPU time (torch.profiler).

PENDING holds workloads defined and captured but not yet registered (#28 item 7): flex_decode_long
(FlexAttention decode, batch 1-8, context 32768) and attorch_lm (a decoder of attorch's hand-written Triton
kernels). `scripts/device.sh pending` captures and tunes them.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from chronos.config.workloads import NAMES, workload
from chronos.config.workloads import PENDING as PENDING_REGISTRY


def _transformers_model(config: str, model: str, **sizes):
    """A transformers model class with random weights at the given sizes (SDPA attention); returns the model
    and its vocabulary size."""
    import transformers

    cfg = getattr(transformers, config)(attn_implementation="sdpa", **sizes)
    return getattr(transformers, model)(cfg), cfg.vocab_size


def _llama():
    return _transformers_model("LlamaConfig", "LlamaForCausalLM", hidden_size=4096, intermediate_size=14336,
                               num_attention_heads=32, num_key_value_heads=8, num_hidden_layers=2,
                               vocab_size=128256, max_position_embeddings=8192)


def _gpt2():
    return _transformers_model("GPT2Config", "GPT2LMHeadModel", n_embd=1600, n_head=25, n_layer=2,
                               vocab_size=50257, n_positions=2048)


def _bert():
    return _transformers_model("BertConfig", "BertForMaskedLM", hidden_size=1024, num_attention_heads=16,
                               intermediate_size=4096, num_hidden_layers=2, vocab_size=30522,
                               max_position_embeddings=512)


def _loss_and_grads(loss, model) -> list:
    """A training step's outputs to compare: the loss and every gradient (taken, then cleared)."""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    model.zero_grad(set_to_none=True)
    return [loss.detach(), *grads]


def causal_lm(build, seq: int, batch: int = 1):
    """Phases of a decoder: train step, prefill, decode 4 tokens (batch 4) against the prefill's cache."""
    model, vocab = build()
    model = model.to("cuda", torch.bfloat16)
    step = torch.compile(model)
    ids = torch.randint(0, vocab, (batch, seq), device="cuda")

    def train():
        model.train()
        out = step(input_ids=ids, labels=ids)
        out.loss.backward()
        return _loss_and_grads(out.loss, model)

    @torch.no_grad()
    def prefill():
        model.eval()
        return [step(input_ids=ids, use_cache=False).logits]

    @torch.no_grad()
    def decode():
        model.eval()
        prompt = torch.randint(0, vocab, (4, 512), device="cuda")
        out = model(input_ids=prompt, use_cache=True)  # the cache, eager
        past, tok, seen = out.past_key_values, out.logits[:, -1:].argmax(-1), []
        for _ in range(4):
            out = step(input_ids=tok, past_key_values=past, use_cache=True)
            logp = torch.log_softmax(out.logits[:, -1:].float(), -1)
            past, tok = out.past_key_values, logp.argmax(-1)
            seen.append(logp)
        return seen

    return {"train": train, "prefill": prefill, "decode": decode}


def bert():
    model, vocab = _bert()
    model = model.to("cuda", torch.bfloat16)
    step = torch.compile(model)
    ids = torch.randint(0, vocab, (8, 512), device="cuda")

    def train():
        model.train()
        loss = step(input_ids=ids, labels=ids).loss
        loss.backward()
        return _loss_and_grads(loss, model)

    @torch.no_grad()
    def inference():
        model.eval()
        return [step(input_ids=ids).logits]

    return {"train": train, "inference": inference}


def flex():
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    attn = torch.compile(flex_attention)
    b, h, s, d = 1, 32, 4096, 128
    q, k, v = (
        torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3)
    )
    causal = create_block_mask(lambda b_, h_, qi, ki: qi >= ki, None, None, s, s)
    window = create_block_mask(lambda b_, h_, qi, ki: (qi >= ki) & (qi - ki <= 1024), None, None, s, s)

    qd = torch.randn(8, h, 8, d, device="cuda", dtype=torch.bfloat16)
    kd, vd = (torch.randn(8, h, 8192, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))

    def train():
        outs = []
        for mask in (causal, window):
            for t in (q, k, v):
                t.grad = None
            out = attn(q, k, v, block_mask=mask)
            out.sum().backward()
            outs += [out.detach(), q.grad, k.grad, v.grad]
        return outs

    @torch.no_grad()
    def decode():
        return [attn(qd, kd, vd)]

    return {"train": train, "decode": decode}


def flex_decode_long(batches=(1, 2, 4, 8), context: int = 32768, window: int = 4096):
    """Decode with FlexAttention against long KV caches (#28 item 7): one new token per sequence at
    Llama-3-8B's attention geometry (32 query heads over 8 KV heads, d 128), batch 1, 2, 4 and 8, a context of
    32768, over the whole cache and over a sliding window of its last 4096 positions. Static shapes: each
    batch size is its own compiled kernel, as a server's fixed decode batch would be."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    # a compile per batch size and mask: 8 here, Dynamo's default limit, past which it runs eagerly
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
    attn = torch.compile(flex_attention, dynamic=False)
    hq, hkv, d = 32, 8, 128
    caches = {b: [torch.randn(b, hkv, context, d, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
              for b in batches}
    queries = {b: torch.randn(b, hq, 1, d, device="cuda", dtype=torch.bfloat16) for b in batches}
    recent = create_block_mask(lambda b_, h_, qi, ki: ki >= context - window, None, None, 1, context)

    @torch.no_grad()
    def decode():
        return [attn(queries[b], *caches[b], block_mask=mask, enable_gqa=True)
                for b in batches for mask in (None, recent)]

    return {"decode": decode}


def attorch_lm(hidden: int = 2048, heads: int = 16, ffn: int = 5632, layers: int = 2, vocab: int = 32000,
               batch: int = 2, seq: int = 2048):
    """A Llama-like decoder whose norms, projections, SwiGLU and loss are attorch's hand-written Triton
    kernels (#28 item 7; third_party/attorch, unmodified, MIT): attorch.RMSNorm, attorch.Linear, attorch.GLU
    (silu), attorch.CrossEntropyLoss; attention is torch's SDPA (causal, no rotary). fp32 parameters and
    fp16 autocast, as attorch's own tests run it; no torch.compile: every Triton kernel is attorch's."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "third_party" / "attorch"))
    import attorch  # needs a CUDA device at import (its autotune configs read the capability)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn_norm, self.ffn_norm = attorch.RMSNorm(hidden), attorch.RMSNorm(hidden)
            self.qkv = attorch.Linear(hidden, 3 * hidden, bias=False)
            self.out = attorch.Linear(hidden, hidden, bias=False)
            self.gate_up = attorch.Linear(hidden, 2 * ffn, bias=False)
            self.swiglu = attorch.GLU(act_func="silu")
            self.down = attorch.Linear(ffn, hidden, bias=False)

        def forward(self, x):
            b, s, _ = x.shape
            qkv = self.qkv(self.attn_norm(x)).view(b, s, 3, heads, hidden // heads).permute(2, 0, 3, 1, 4)
            a = torch.nn.functional.scaled_dot_product_attention(*qkv, is_causal=True)
            x = x + self.out(a.transpose(1, 2).reshape(b, s, hidden))
            return x + self.down(self.swiglu(self.gate_up(self.ffn_norm(x))))

    embed = torch.nn.Embedding(vocab, hidden, device="cuda")
    blocks = torch.nn.ModuleList(Block() for _ in range(layers))
    norm, head, loss_fn = attorch.RMSNorm(hidden), attorch.Linear(hidden, vocab, bias=False), \
        attorch.CrossEntropyLoss()
    model = torch.nn.ModuleList([embed, blocks, norm, head])
    ids = torch.randint(0, vocab, (batch, seq + 1), device="cuda")

    def logits():
        x = embed(ids[:, :-1])
        for block in blocks:
            x = block(x)
        return head(norm(x))

    def train():
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(logits().view(-1, vocab), ids[:, 1:].reshape(-1))
        loss.backward()
        return _loss_and_grads(loss, model)

    @torch.no_grad()
    def inference():
        with torch.autocast("cuda", dtype=torch.float16):
            return [logits()]

    return {"train": train, "inference": inference}


WORKLOADS = {
    "llama": lambda: causal_lm(_llama, 2048),
    "gpt2": lambda: causal_lm(_gpt2, 1024, batch=4),
    "bert": bert,
    "flex": flex,
}
# the definitions of the registry's workloads (chronos.config.workloads), name for name
assert tuple(WORKLOADS) == NAMES, (tuple(WORKLOADS), NAMES)
# Defined and capturable (`chronos capture ... -- python scripts/workloads.py NAME`), not yet registered: a
# registered workload is searched by every measuring stage, which needs its capture measured on a GPU first.
PENDING = {"flex_decode_long": flex_decode_long, "attorch_lm": attorch_lm}
assert tuple(PENDING) == tuple(w.name for w in PENDING_REGISTRY), (tuple(PENDING), PENDING_REGISTRY)

BUILDS = {**WORKLOADS, **PENDING}  # every workload this script builds, by name


def jit_names() -> set[str]:
    """The names of the Triton JIT functions defined in this process: a hand-written kernel (attorch's
    rms_norm_forward_kernel) launches under its own name, which the profiler reports as it is."""
    import gc

    from triton.runtime.jit import JITFunction

    names = set()
    for o in gc.get_objects():
        try:
            if isinstance(o, JITFunction):
                names.add(o.fn.__name__)
        except ReferenceError:  # a weak proxy whose object is gone (isinstance reaches through it)
            continue
    return names


def triton_share(fn) -> dict:
    """GPU time of one call of `fn` by kernel origin (torch.profiler): Triton kernels vs everything else."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    triton_us = other_us = 0.0
    per_kernel: dict[str, float] = {}
    hand_written = jit_names()
    for ev in prof.key_averages():
        us = ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total
        # Inductor's kernels and templates (triton_poi_/_red_/_per_/_tem_), and hand-written ones by name
        if ev.key.startswith("triton") or ev.key in hand_written:
            triton_us += us
            per_kernel[ev.key] = per_kernel.get(ev.key, 0.0) + us
        else:
            other_us += us
    total = triton_us + other_us
    # per Triton kernel (its entry name): where tuning time pays (chronos tune --order-by profile.json)
    return {"triton_us": triton_us, "total_us": total, "triton_share": triton_us / total if total else 0.0,
            "triton_kernels_us": dict(sorted(per_kernel.items(), key=lambda kv: -kv[1]))}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workload", choices=sorted(BUILDS))
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--profile-out", type=Path, help="write the profile with its provenance here (implies "
                                                     "--profile): chronos tune --order-by reads it")
    args = p.parse_args()
    args.profile = args.profile or args.profile_out is not None
    torch.manual_seed(0)
    phases = BUILDS[args.workload]()
    if tuple(phases) != workload(args.workload).phases:
        raise SystemExit(f"workloads.py {args.workload}: phases {tuple(phases)} are not the registry's "
                         f"{workload(args.workload).phases} (chronos.config.workloads)")
    report = {}
    for name, fn in phases.items():
        t0 = time.perf_counter()
        for _ in range(args.steps):
            fn()
        torch.cuda.synchronize()
        report[name] = {"seconds": round(time.perf_counter() - t0, 2)}
        if args.profile:
            report[name].update(triton_share(fn))
        print(f"workload {args.workload} {name}: {report[name]}", flush=True)
    print(json.dumps({"workload": args.workload, "phases": report}))
    if args.profile_out:
        args.profile_out.write_text(json.dumps({"workload": args.workload, "phases": report,
                                                "provenance": _provenance()}, indent=1) + "\n")


def _provenance() -> dict:
    import platform
    import sys

    import triton

    try:
        import transformers
        tf = transformers.__version__
    except ImportError:
        tf = "absent"
    return {"gpu": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "versions": f"triton {triton.__version__} torch {torch.__version__} transformers {tf} "
                        f"python {platform.python_version()}",
            "command": " ".join(sys.argv),
            "what": "torch.profiler CUDA time of one call of each phase after --steps steps; "
                    "triton_share = kernels named triton* / all"}


if __name__ == "__main__":
    main()
