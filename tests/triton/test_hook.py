"""Deploying tuned PTX through Triton's stage hook, on a CPU: Triton compiles for sm_90 with its own ptxas."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import chronos.triton as ct
from chronos.errors import ChronosError, ToolchainError
from chronos.triton import deploy_cache, hook
from chronos.triton.rederive import derive
from chronos.triton.tuned_db import TunedDB, TunedDBError, make_key, ptx_identity_sha256

from .test_tuned_db import NOT_A_DB, assert_one_clear_error, not_a_db

GPU, DRIVER = "NVIDIA H200", "580.95.05 (CUDA 13.0)"
SIGNATURE = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"}


@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


def compile_add(fn=add_kernel, block: int = 128):
    return triton.compile(ASTSource(fn=fn, signature=SIGNATURE, constexprs={"BLOCK": block}),
                          target=GPUTarget("cuda", 90, 32))


def compile_into_capture_cache(tmp_path, monkeypatch):
    """(a capture folder, add_kernel compiled into that capture's Triton cache), as `chronos capture` gives
    every process of a workload."""
    out = tmp_path / "cap"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(out / ".triton_cache"))
    with triton.knobs.cache.scope():
        return out, compile_add()


ACTIONS = ["maxnreg_64", "cache_cg"]


def tune(stock_ptx: str) -> str:
    """A real variation that Triton's ptxas assembles: what a register budget and L2-only (.cg) loads make
    of the stock PTX (the entry's actions, which deployment re-derives)."""
    assert ".reqntid 128\n" in stock_ptx and "ld.global.b32" in stock_ptx
    return derive(stock_ptx, ACTIONS, {})


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A fresh Triton cache, Triton's knobs restored afterwards, the deploy GPU and driver injected."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(hook.ENV_DB, raising=False)
    monkeypatch.setattr(hook, "detect_gpu", lambda: GPU)
    monkeypatch.setattr(hook, "detect_driver", lambda: DRIVER)
    with triton.knobs.cache.scope(), triton.knobs.runtime.scope():
        yield tmp_path
        ct.disable()


@pytest.fixture
def stock(env):
    return compile_add()


def make_db(path: Path, stock, tuned_ptx: str, **key_fields) -> Path:
    fields = {"gpu": GPU, "driver": DRIVER, "ptxas": hook.triton_ptxas_version(90), **key_fields}
    key = make_key(stock.metadata.hash, stock.asm["ptx"], stock.metadata.name, **fields)
    with TunedDB(path) as db:
        db.put(key, ACTIONS, tuned_ptx, 0.8, (0.75, 0.85), {"bit_exact": True}, {})
    return path


def test_a_matching_entry_is_what_ptxas_assembles(env, stock):
    tuned = tune(stock.asm["ptx"])
    ct.enable(make_db(env / "t.sqlite", stock, tuned))  # gpu, driver injected; Triton's ptxas detected
    k = compile_add()
    assert k.asm["ptx"] == tuned and k.asm["cubin"] != stock.asm["cubin"]
    s = ct.stats()
    assert (s["swapped"], s["missed"], s["rejected"], s["swapped_names"]) == (1, 0, 0, ["add_kernel"])


def test_a_stale_key_falls_back_to_stock(env, stock):
    db = make_db(env / "t.sqlite", stock, tune(stock.asm["ptx"]), driver="570.86.15 (CUDA 12.8)")
    ct.enable(db)
    assert compile_add().asm["ptx"] == stock.asm["ptx"]
    s = ct.stats()
    assert (s["swapped"], s["missed"], s["missed_names"]) == (0, 1, ["add_kernel"])
    assert ("driver is '580.95.05 (CUDA 13.0)' here, '570.86.15 (CUDA 12.8)' in the DB"
            in s["reasons"]["add_kernel"])
    ct.enable(db, mode="strict")
    with pytest.raises(ct.TunedMissError, match="missed add_kernel.*driver"):
        compile_add(block=256)  # another specialisation: not in the (new) cache yet


def test_a_stale_key_s_stock_ptx_is_kept_where_asked_to_diff_against_the_db_s_root(env, stock, monkeypatch):
    """CHRONOS_KEEP_MISSED_PTX: the PTX of a compile that missed an entry of its kernel's name is written
    there (named by kernel and PTX identity); a kernel with no entry at all is not kept."""
    kept = env / "missed"
    monkeypatch.setenv(hook.ENV_KEEP_MISSED, str(kept))
    other = make_db(env / "other.sqlite", stock, tune(stock.asm["ptx"]), driver="570.86.15 (CUDA 12.8)")
    ct.enable(other)
    compile_add(block=64)
    (path,) = kept.iterdir()
    assert path.name.startswith("add_kernel-") and "BLOCK" not in path.name
    assert ptx_identity_sha256(path.read_text()).startswith(path.name.removesuffix(".ptx").split("-")[1])

    @triton.jit
    def other_kernel(x, y, out, n, BLOCK: tl.constexpr):
        tl.store(out + tl.arange(0, BLOCK), tl.load(x + tl.arange(0, BLOCK)))

    compile_add(fn=other_kernel)
    assert len(list(kept.iterdir())) == 1  # "no entry for kernel other_kernel": nothing to diff


def test_a_miss_of_ptx_keyed_by_a_config_says_that_config_runs_alone(env, stock, monkeypatch):
    """An entry whose actions sit on a tuned config is keyed `config:<label>` with the PTX that config makes;
    a compile whose PTX is not that root misses, and the reason says the config (if deployed) runs alone."""
    other = compile_add(block=256)  # stands for the PTX the config made where it was measured
    key = make_key("config:num_warps=8", other.asm["ptx"], other.metadata.name, gpu=GPU, driver=DRIVER,
                   ptxas=hook.triton_ptxas_version(90))
    with TunedDB(env / "c.sqlite") as db:
        db.put(key, ACTIONS, tune(other.asm["ptx"]), 0.8, (0.75, 0.85), {"bit_exact": True}, {})
    monkeypatch.setenv(hook.ENV_KEEP_MISSED, str(env / "missed"))
    ct.enable(env / "c.sqlite")
    assert compile_add(block=64).asm["ptx"] != tune(other.asm["ptx"])
    why = ct.stats()["reasons"]["add_kernel"]
    assert why.startswith(hook.CONFIG_ALONE + " (num_warps=8); stale key: ") and "stock_ptx_sha256" in why
    assert [p.name.split("-")[0] for p in (env / "missed").iterdir()] == ["add_kernel"]  # kept to diff


def test_another_triton_hash_over_the_same_stock_ptx_still_swaps_and_says_so(env, stock):
    """Triton 3.6's hash depends on which ptxas version the process cached first (on the H200, capture's
    compile workers and an in-place compile hashed the same PTX differently): the stock PTX's identity,
    with GPU, driver and ptxas, is what must match; the hash difference is reported."""
    tuned = tune(stock.asm["ptx"])
    key = make_key("0" * 64, stock.asm["ptx"], stock.metadata.name, gpu=GPU, driver=DRIVER,
                   ptxas=hook.triton_ptxas_version(90))
    with TunedDB(env / "t.sqlite") as db:
        db.put(key, ACTIONS, tuned, 0.8, (0.75, 0.85), {"bit_exact": True}, {})
    ct.enable(env / "t.sqlite", mode="strict")  # a swap with a note is not a miss
    assert compile_add().asm["ptx"] == tuned
    s = ct.stats()
    assert s["swapped_names"] == ["add_kernel"] and "0000000000000000 where it was tuned" in \
        s["reasons"]["add_kernel"]
    ct.enable(env / "t.sqlite")
    assert compile_add(block=256).asm["ptx"] != tuned  # other code: the PTX differs, no entry
    assert ct.stats()["missed_names"] == ["add_kernel"]


@pytest.mark.parametrize("forge", [
    lambda t: t.replace(".reqntid 128\n", ".reqntid 256\n"),  # another launch interface
    lambda t: t.replace(".reqntid 128\n", "// .reqntid 128\n.reqntid 256\n"),  # the old one behind a comment
    lambda t: t.replace("add.f32", "sub.f32"),  # another kernel's body under the same interface
    lambda t: t[:t.index("{", t.index(".entry"))] + "{\n\tret;\n}\n",  # no body at all
    lambda t: t.replace("{\n", "{ .shared .align 16 .b8 pad[49152];\n", 1),  # shared memory on the { line
], ids=["reqntid", "commented", "sub_for_add", "empty", "shared"])
def test_an_entry_whose_ptx_is_not_what_its_actions_make_deploys_stock(env, stock, forge):
    """The DB holds decisions: whatever PTX an entry carries, only its actions remade on the user's own
    stock PTX can run, and only when that equals the variant the entry recorded."""
    forged = forge(tune(stock.asm["ptx"]))
    assert forged != tune(stock.asm["ptx"])
    ct.enable(make_db(env / "t.sqlite", stock, forged))
    assert compile_add().asm["ptx"] == stock.asm["ptx"]
    s = ct.stats()
    assert (s["swapped"], s["rejected"]) == (0, 1)
    assert "not what its actions maxnreg_64+cache_cg make of this stock PTX" in s["reasons"]["add_kernel"]


def test_a_tuned_ptx_that_ptxas_refuses_is_assembled_stock(env, stock, monkeypatch):
    bad = tune(stock.asm["ptx"]).replace("ret;", "bogus.instruction %r1;\n\tret;")
    monkeypatch.setattr(hook, "tuned_ptx", lambda stock_ptx, entry: bad)
    ct.enable(make_db(env / "t.sqlite", stock, tune(stock.asm["ptx"])))
    k = compile_add()
    assert k.asm["cubin"] == stock.asm["cubin"] and hook.TUNED_MARK not in k.metadata._asdict()
    s = ct.stats()
    assert (s["swapped"], s["rejected"]) == (0, 1) and "ptxas refused" in s["reasons"]["add_kernel"]


def test_any_failure_while_choosing_deploys_stock(env, stock, monkeypatch):
    def broken(stock_ptx, entry):
        raise RuntimeError("parser crashed")

    monkeypatch.setattr(hook, "tuned_ptx", broken)
    ct.enable(make_db(env / "t.sqlite", stock, tune(stock.asm["ptx"])))
    assert compile_add().asm["ptx"] == stock.asm["ptx"]
    assert "deploy failed, ran stock: RuntimeError('parser crashed')" in ct.stats()["reasons"]["add_kernel"]


def test_a_hook_installed_before_still_runs(env, stock):
    seen = []

    def earlier(*args):
        if not args:  # Triton >= 3.7 asks for a cache key first
            return "", ""
        _, stages, _, _, capability = args
        seen.append((list(stages), capability))
        make_ptx = stages["ptx"]
        stages["ptx"] = lambda src, md: seen.append("ptx") or make_ptx(src, md)

    triton.knobs.runtime.add_stages_inspection_hook = earlier
    tuned = tune(stock.asm["ptx"])
    ct.enable(make_db(env / "t.sqlite", stock, tuned))
    assert compile_add().asm["ptx"] == tuned
    assert seen == [(["ttir", "ttgir", "llir", "ptx", "cubin"], 90), "ptx"]
    ct.disable()
    assert triton.knobs.runtime.add_stages_inspection_hook is earlier


def test_stock_and_tuned_kernels_never_share_a_cache_dir(env, stock):
    base = triton.knobs.cache.dir
    tuned = tune(stock.asm["ptx"])
    state = ct.enable(make_db(env / "t.sqlite", stock, tuned))
    digest = deploy_cache.cache_digest(state["content_hash"], None, None)
    assert state["cache_dir"] == os.path.join(base, f"chronos-{digest[:16]}")
    assert triton.knobs.cache.dir == os.environ["TRITON_CACHE_DIR"] == state["cache_dir"]
    assert compile_add().asm["ptx"] == tuned  # the stock cubin sits in `base`, under the same Triton hash
    again = compile_add()  # a cache hit: no stage runs, the tuned cubin comes back
    assert again.asm["ptx"] == tuned and ct.stats()["swapped"] == 1
    assert any(p.suffix == ".cubin" for p in Path(state["cache_dir"]).rglob("*"))
    ct.disable()
    assert triton.knobs.cache.dir == base == os.environ["TRITON_CACHE_DIR"]
    assert compile_add().asm["ptx"] == stock.asm["ptx"]


@pytest.mark.skipif(hook._folds_hook_key(triton.__version__), reason="Triton >= 3.7 asks the hook for a key")
def test_triton_36_serves_the_stock_cubin_to_a_hook_from_a_shared_cache(env, stock):
    """Why enable() moves the cache: the hook alone, in the stock cache, never sees the kernel."""
    calls = []
    triton.knobs.runtime.add_stages_inspection_hook = lambda *a: calls.append(a)
    assert compile_add().asm["ptx"] == stock.asm["ptx"] and calls == []


def test_the_key_for_triton_37_caches(env, stock):
    """Triton >= 3.7 folds `key` into the compile hash (which the tuned key records hook-free) and `hash`
    into the JIT's in-memory cache."""
    state = ct.enable(make_db(env / "t.sqlite", stock, tune(stock.asm["ptx"])))
    assert triton.knobs.runtime.add_stages_inspection_hook() == ("", state["content_hash"])
    ct.disable()
    triton.knobs.runtime.add_stages_inspection_hook = lambda *a: ("theirs", "h") if not a else None
    state = ct.enable(env / "t.sqlite")
    assert triton.knobs.runtime.add_stages_inspection_hook() == ("theirs", f"h-{state['content_hash']}")


def test_the_key_ignores_where_the_kernel_source_lives(env):
    """Triton writes the source's absolute path into the PTX's debug sections; its hash ignores it: so must
    the stock-PTX hash, or a kernel tuned in one checkout would never hit in another."""
    src = "import triton\nimport triton.language as tl\n\n\n" + _source_of_add()
    kernels = []
    for where in ("a", "b"):
        (env / where).mkdir()
        (env / where / "kmod.py").write_text(src)
        spec = importlib.util.spec_from_file_location(f"kmod_{where}", env / where / "kmod.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        with triton.knobs.compilation.scope():
            triton.knobs.compilation.always_compile = True  # else b is a's cache hit, with a's paths
            kernels.append(compile_add(module.add_kernel))
    a, b = kernels
    assert a.metadata.hash == b.metadata.hash and a.asm["ptx"] != b.asm["ptx"]
    assert ptx_identity_sha256(a.asm["ptx"]) == ptx_identity_sha256(b.asm["ptx"])


def _source_of_add() -> str:
    import inspect

    return inspect.getsource(add_kernel.fn)


def test_the_db_comes_from_chronos_tuned(env, stock, monkeypatch):
    with pytest.raises(ChronosError, match="CHRONOS_TUNED"):
        ct.enable()
    monkeypatch.setenv(hook.ENV_DB, str(make_db(env / "t.sqlite", stock, tune(stock.asm["ptx"]))))
    assert ct.enable(gpu=GPU, driver=DRIVER, ptxas="0.0")["entries"] == 1
    assert compile_add().asm["ptx"] == stock.asm["ptx"]  # the injected ptxas version misses
    assert "ptxas is '0.0' here" in ct.stats()["reasons"]["add_kernel"]
    with pytest.raises(ChronosError, match="unknown mode"):
        ct.enable(mode="measure")


@pytest.mark.parametrize("what", NOT_A_DB)
def test_enable_on_what_is_no_tuned_db_is_one_clear_error(env, monkeypatch, what):
    """A text file, an empty file, a folder, /dev/null or a typo'd path: one TunedDBError with the absolute
    path and what is wrong, not a chained sqlite3 traceback; the process keeps its stock Triton."""
    given, absolute = not_a_db(env, monkeypatch, what)
    hook_before = triton.knobs.runtime.add_stages_inspection_hook
    with pytest.raises(TunedDBError) as raised:
        ct.enable(given)
    assert_one_clear_error(raised.value, absolute, what)
    assert triton.knobs.runtime.add_stages_inspection_hook is hook_before and not ct.stats()["enabled"]


def test_enable_without_the_hook_api_is_a_clear_error(env, monkeypatch):
    monkeypatch.delitem(triton.knobs.runtime.__dict__, "add_stages_inspection_hook", raising=False)
    monkeypatch.delattr(type(triton.knobs.runtime), "add_stages_inspection_hook")
    with pytest.raises(ToolchainError, match="no knobs.runtime.add_stages_inspection_hook.*Triton >= 3.6"):
        ct.enable(env / "t.sqlite")
    monkeypatch.setitem(sys.modules, "triton", None)
    with pytest.raises(ToolchainError, match="needs Triton >= 3.6"):
        ct.enable(env / "t.sqlite")


def test_the_key_takes_the_ptxas_triton_runs_at_each_compile(env, monkeypatch):
    """Inductor sets TRITON_PTXAS_PATH (torch's ptxas) after the process started, often after enable():
    the key must name the ptxas of this compile, not the one Triton had when the first kernel compiled."""
    from chronos.toolchain import find_ptxas, ptxas_version

    ours = str(find_ptxas())
    if ptxas_version(ours) == hook.triton_ptxas_version(90):
        pytest.skip("Chronos's ptxas is Triton's own here: nothing to tell apart")
    monkeypatch.setenv("TRITON_PTXAS_PATH", ours)
    stock_ours = compile_add()
    db = make_db(env / "t.sqlite", stock_ours, tune(stock_ours.asm["ptx"]), ptxas=ptxas_version(ours))
    monkeypatch.delenv("TRITON_PTXAS_PATH")
    ct.enable(db)
    compile_add(block=256)  # compiled with Triton's own ptxas: a miss
    monkeypatch.setenv("TRITON_PTXAS_PATH", ours)
    assert compile_add().asm["ptx"] == tune(stock_ours.asm["ptx"])
    assert ct.stats()["swapped_names"] == ["add_kernel"]


def test_a_warm_cache_never_serves_a_tuned_binary_to_another_driver(env, stock):
    """A second process that claims another driver, sharing the DB and Triton's cache folder, gets a folder
    of its own: its compile goes through the hook, whose key check deploys stock."""
    db = make_db(env / "t.sqlite", stock, tune(stock.asm["ptx"]))
    first = ct.enable(db, gpu=GPU, driver=DRIVER)
    assert compile_add().asm["ptx"] == tune(stock.asm["ptx"])  # tuned, and cached in first's folder
    other = ct.enable(db, gpu=GPU, driver="590.1 (CUDA 13.1)")
    assert other["cache_dir"] != first["cache_dir"]
    assert compile_add().asm["ptx"] == stock.asm["ptx"]
    s = ct.stats()
    assert (s["swapped"], s["cached"], s["missed"]) == (0, 0, 1) and "driver" in s["reasons"]["add_kernel"]


def test_a_remote_or_custom_cache_manager_is_refused_on_every_triton(env, stock, monkeypatch):
    """A tuned cubin stored by a remote cache under the stock compile hash would reach processes that never
    enabled Chronos: enable() refuses any manager but Triton's file cache, whatever the Triton version."""
    from triton.runtime.cache import CacheManager

    class Remote(CacheManager):  # a stand-in for RemoteCacheManager (which needs a server)
        pass

    monkeypatch.setattr(triton.knobs.cache, "manager_class", Remote)
    db = make_db(env / "t.sqlite", stock, tune(stock.asm["ptx"]))
    with pytest.raises(ToolchainError, match="cache manager Remote"):
        ct.enable(db)
