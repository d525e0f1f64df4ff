"""scripts/e2e_one_process.py's pieces on this CPU (#28 item 6): outputs hashed per kernel set say whether
stock is deterministic and the tuned set bitwise equal; ratios pair the sets round by round."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from chronos.triton.kernel_sets import KernelSet

ROOT = Path(__file__).resolve().parents[1]


def test_a_run_that_deployed_nothing_says_so_and_why():
    mod = _script()
    why = {"glu_forward_kernel": "stale key: ptxas is\n'12.8.93' here"}
    stale = {"swapped": 0, "entries": 7, "reasons": why}
    line = mod.deployed(stale, {})
    assert line.startswith("deployed: 0 PTX sets swapped (7 in the DB), 0 configs applied; NOTHING deployed")
    assert "stale key: ptxas is '12.8.93' here" in line
    some = mod.deployed({**stale, "swapped": 4}, {})
    assert some == "deployed: 4 PTX sets swapped (7 in the DB), 0 configs applied"
    assert "NOTHING" not in mod.deployed(stale, {"triton_tem_fused_flex_attention_0": "num_warps=4"})
    from chronos.triton.hook import CONFIG_ALONE

    alone = {"swapped": 1, "entries": 3, "reasons": {"k": f"{CONFIG_ALONE} (num_warps=2); stale key: ..."}}
    assert mod.deployed(alone, {"k": "{}, num_warps=2"}).endswith("1 of those configs ran without their "
                                                                   "PTX on top: k")
    assert "without" not in mod.deployed(alone, {})  # its config did not deploy: stock ran
    other = {**alone, "reasons": {"k": f"{CONFIG_ALONE} (num_warps=4); stale key: ..."}}
    assert "without" not in mod.deployed(other, {"k": "{}, num_warps=2"})  # another kernel's entry missed
    both = {**alone, "swapped_names": ["k"]}  # a kernel of that name was swapped: the miss may be another's
    line = mod.deployed(both, {"k": "{}, num_warps=2"})
    assert "ran without" not in line and line.endswith("which ran its config alone is not known by name): k")


def _script():
    sys.path.insert(0, str(ROOT / "scripts"))
    spec = importlib.util.spec_from_file_location("e2e_one_process", ROOT / "scripts" / "e2e_one_process.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _anchors():
    _script()
    import e2e_anchors

    return e2e_anchors


def test_each_draw_of_a_tuner_compiles_under_its_options_with_caches_of_its_own(monkeypatch):
    """--anchor-draws 2: coordesc and coordesc_draw2, each built in an Inductor cache directory of its own
    (a draw would otherwise be served the first one's benchmarked choices), judged each against stock."""
    import os

    mod = _anchors()
    assert mod.anchor_runs(["max_autotune", "coordesc"], 2) == ["max_autotune", "max_autotune_draw2",
                                                                "coordesc", "coordesc_draw2"]
    with pytest.raises(SystemExit, match="at least 1"):
        mod.anchor_runs(["coordesc"], 0)
    seen = []

    def build(workloads, workload):
        seen.append((os.environ["TORCHINDUCTOR_CACHE_DIR"], torch.compile(len)))
        return {"train": lambda: None}

    monkeypatch.setattr(mod, "build_phases", build)
    monkeypatch.setattr(torch, "compile", lambda *a, **k: k.get("options"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    digests = {"stock": {"train": "s"}}
    built, bitwise = mod.build_anchors(None, "w", ["coordesc", "coordesc_draw2"], digests,
                                       lambda phases: {"train": "s"})
    assert set(built) == {"coordesc", "coordesc_draw2"} and bitwise == dict.fromkeys(built, True)
    outside = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    assert len({d for d, _ in seen}) == 2 and all(d != outside for d, _ in seen)
    assert [o for _, o in seen] == [mod.ANCHORS["coordesc"] | {"trace.debug_dir": d} for d, _ in seen]
    v = {"speedup": {"median": 1.02}, "v3_over": {"ci95": [0.97, 0.99]}}
    w = {"speedup": {"median": 0.99}, "v3_over": {"ci95": [1.01, 1.03]}}
    got = mod.draws_verdict({"coordesc": v, "coordesc_draw2": w, "max_autotune": v})
    assert got == {"coordesc": {"draws": 2, "step_speedup": [1.02, 0.99], "v3_ahead": 1, "v3_behind": 1,
                                "v3_level": 0}}  # a tuner drawn once has no verdict over draws


def test_outputs_tell_a_tuned_set_that_changed_bits_from_one_that_did_not(monkeypatch):
    mod = _script()
    current = {"set": "stock"}
    sets = {s: KernelSet(s) for s in mod.SETS}
    import chronos.triton.kernel_sets as ks

    monkeypatch.setattr(ks, "use", lambda s: current.update(set=s.name))
    phases = {"train": lambda: [torch.ones(4)],
              "decode": lambda: [torch.ones(4) * (1.5 if current["set"] == "tuned" else 1.0)]}
    got, digests = mod.outputs(phases, sets)
    assert got == {"stock_deterministic": True, "tuned_bitwise": False, "differing_phases": ["decode"],
                   "stock_differing_phases": []}
    assert set(digests) == set(mod.SETS) and set(digests["stock"]) == {"train", "decode"}


def test_digests_start_each_phase_from_one_rng_state_so_dropout_masks_agree_between_sets():
    mod = _script()
    phases = {"train": lambda: [torch.rand(8)]}
    assert mod.seeded_digests(phases) == mod.seeded_digests(phases)


def test_compiled_with_gives_every_torch_compile_inside_the_options_and_restores_it():
    mod = _anchors()
    seen = []
    plain = torch.compile
    try:
        torch.compile = lambda *a, **k: seen.append(k) or a[0]
        with mod.compiled_with(mod.ANCHORS["coordesc"]):
            torch.compile(len, options={"other": 1})
        assert seen == [{"options": {"other": 1, "max_autotune": True, "coordinate_descent_tuning": True}}]
        assert torch.compile is not plain and torch.compile(len) is len  # restored to the stand-in
    finally:
        torch.compile = plain


def test_anchors_take_their_turns_and_are_judged_against_stock_and_the_tuned_set(monkeypatch):
    """An anchor's own phases run in the rounds (the kernel sets stay on stock); its verdicts pair it with
    stock (its speedup) and with the tuned set (Chronos v3 over it), round by round."""
    mod = _script()
    import chronos.triton.kernel_sets as ks

    used = []
    monkeypatch.setattr(ks, "use", lambda s: used.append(s.name))
    clock = {"t": 0.0}
    monkeypatch.setattr(mod.time, "perf_counter", lambda: clock["t"])
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    cost = {"stock": 1.0, "stock_copy": 1.0, "tuned": 0.8, "max_autotune": 0.9}

    def phase(name):
        def run():
            clock["t"] += cost[name if name in cost else used[-1]]
        return run

    sets = {s: KernelSet(s) for s in mod.SETS}
    phases = {"train": phase("set")}
    anchors = {"max_autotune": {"train": phase("max_autotune")}}
    times = mod.rounds(phases, sets, {"train": 1}, 4, anchors)
    assert {k: len(v) for k, v in times.items()} == dict.fromkeys((*mod.SETS, "max_autotune"), 4)
    got = mod.anchor_verdicts(mod.ratios, times, phases, {"max_autotune": False})["max_autotune"]
    assert got["speedup"]["median"] == pytest.approx(1.0 / 0.9)
    assert got["v3_over"]["median"] == pytest.approx(0.9 / 0.8) and got["bitwise"] is False
    assert used[-1] == "stock"


def test_an_also_set_is_built_from_its_own_db_timed_and_judged_against_stock_and_the_tuned_set(monkeypatch):
    """--also NAME=DB: a set of its own (its DB enabled while it is built), in the rounds like the others;
    its verdicts pair it with stock and with the full DB's tuned set, and say which phases changed bits.
    A name that is not NAME=DB, or one the run already has, is refused."""
    mod = _script()
    import chronos.triton
    import chronos.triton.kernel_sets as ks

    built = []
    monkeypatch.setattr(ks, "build",
                        lambda name, stock, db, *a, **k: built.append((name, db)) or KernelSet(name))
    monkeypatch.setattr(chronos.triton, "stats", lambda: {"swapped": 3, "entries": 5})
    sets = {s: KernelSet(s) for s in mod.SETS}
    hooks = mod.build_also(["no_l2=/tmp/less.sqlite"], sets, {})
    assert built == [("no_l2", Path("/tmp/less.sqlite"))] and set(sets) == {*mod.SETS, "no_l2"}
    assert hooks["no_l2"]["swapped"] == 3 and hooks["no_l2"]["configs_applied"] == {}
    for bad in (["no_l2"], ["tuned=/tmp/x.sqlite"], ["coordesc=/tmp/x.sqlite"], ["=/tmp/x.sqlite"]):
        with pytest.raises(SystemExit, match="expected NAME=DB"):
            mod.build_also(bad, {s: KernelSet(s) for s in mod.SETS}, {})
    times = {"stock": [{"p": 1.0}, {"p": 1.0}], "tuned": [{"p": 0.9}, {"p": 0.9}],
             "no_l2": [{"p": 0.8}, {"p": 0.8}]}
    digests = {"stock": {"p": "a"}, "no_l2": {"p": "b"}}
    got = mod.also_verdicts(times, {"p": None}, hooks, digests)["no_l2"]
    assert got["speedup"]["median"] == pytest.approx(1.25)
    assert got["over_tuned"]["median"] == pytest.approx(0.9 / 0.8) and got["differing_phases"] == ["p"]
    assert got["per_phase"]["p"]["speedup"]["median"] == pytest.approx(1.25)


def test_ratios_pair_the_sets_per_round_over_the_summed_step_or_one_phase():
    mod = _script()
    times = {"stock": [{"a": 1.0, "b": 1.0}, {"a": 1.1, "b": 0.9}],
             "tuned": [{"a": 0.5, "b": 1.5}, {"a": 1.0, "b": 1.0}]}
    assert mod.ratios(times, "stock", "tuned") == [1.0, 1.0]
    assert mod.ratios(times, "stock", "tuned", "a") == [2.0, pytest.approx(1.1)]


NO_CXX = not (shutil.which("g++") or shutil.which("c++"))


@pytest.mark.skipif(NO_CXX, reason="Inductor's CPU code needs a C++ compiler")
def test_an_anchor_compiles_afresh_where_a_second_stock_model_reuses_stock_s_graph(tmp_path, monkeypatch):
    """Why compiled_with passes options rather than patching Inductor's config: dynamo serves a second model
    of the same class from the first one's graph; a compile with other options is a backend of its own."""
    from torch._dynamo.utils import counters

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    mod = _anchors()

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, x):
            return torch.relu(self.lin(x)) * 2

    x = torch.randn(4, 8)
    torch._dynamo.reset()
    torch.compile(Net())(x)
    first = counters["stats"]["unique_graphs"]
    torch.compile(Net())(x)
    assert counters["stats"]["unique_graphs"] == first  # served from the first one's graph
    with mod.compiled_with({"max_autotune": True}):
        anchor = torch.compile(Net())
    anchor(x)
    assert counters["stats"]["unique_graphs"] == first + 1
    for draw in (2, 3):  # --anchor-draws: the same tuner again, each draw compiled afresh
        with mod.own_caches() as own, mod.compiled_with({"max_autotune": True} | own):
            torch.compile(Net())(x)
        assert counters["stats"]["unique_graphs"] == first + draw
    torch._dynamo.reset()


class _Graph:
    def __init__(self, log, name):
        self.log, self.name = log, name

    def replay(self):
        self.log.append(self.name)


def test_graph_runs_replace_each_phase_by_its_sets_graph_and_leave_a_failing_phase_eager_for_all(monkeypatch):
    """A phase captures once per run with that run's kernels in use; where one run's capture fails the
    phase stays eager in every run (a mixed comparison would time graphs against Python steps)."""
    _script()
    import e2e_graphs

    in_use, log = [], []

    def capture(fn):
        fn()
        if fn.__name__ == "decode" and in_use[-1] == "tuned":
            raise RuntimeError("operation not permitted when stream is capturing\nmore")
        return _Graph(log, f"{in_use[-1]}/{fn.__name__}"), [torch.ones(1)]

    monkeypatch.setattr(e2e_graphs, "capture", capture)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)

    def train():
        return None

    def decode():
        return None

    runs = {r: {"train": train, "decode": decode} for r in ("stock", "tuned")}
    replaced, outs, eager = e2e_graphs.graph_runs(runs, in_use.append)
    assert eager == {"decode": "tuned: RuntimeError: operation not permitted when stream is capturing"}
    assert replaced["stock"]["decode"] is decode and set(outs["tuned"]) == {"train"}
    replaced["tuned"]["train"]()
    replaced["stock"]["train"]()
    assert log == ["tuned/train", "stock/train"]
    digests = {r: {"train": "same" if r == "stock" else "other"} for r in runs}
    exact = e2e_graphs.replays_exact(replaced, outs, digests, lambda t: "same", lambda: None)
    assert exact == {"stock": {"train": True}, "tuned": {"train": False}}


def test_a_workload_whose_kernels_no_set_switches_is_refused_not_timed_against_itself():
    mod = _script()
    sets = {s: KernelSet(s) for s in mod.SETS}  # no autotuner, no JIT function registered
    with pytest.raises(SystemExit, match=r"attorch_lm ran no Triton kernel that a kernel set can switch"):
        mod.kernel_count(sets, "attorch_lm")
    sets["stock"].jit[1] = {}  # a hand-written kernel's cache (attorch_lm's)
    sets["stock"].tuners.append(object())
    assert mod.kernel_count(sets, "attorch_lm") == 2
