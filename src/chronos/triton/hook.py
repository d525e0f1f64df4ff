"""Deploy Chronos-tuned PTX inside Triton: a stage hook swaps the PTX that ptxas assembles; nothing is timed.

`enable()` installs `triton.knobs.runtime.add_stages_inspection_hook` (Triton >= 3.6), which wraps the NVIDIA
backend's `ptx` stage: Triton makes its stock PTX, the hook builds the strict `TunedKey` (Triton's compile
hash, the stock PTX, the entry name, GPU, driver, Triton's ptxas, Chronos and action-space versions) and
returns, on a hit, the PTX the entry's actions make of that stock PTX (chronos.triton.rederive: the DB holds
decisions, not code) when it is the variant the entry recorded (exact, or on `TunedKey.code_key`: the same
stock PTX, GPU, driver and ptxas under another Triton hash, which Triton 3.6 computes differently in different
processes) whose interface (entry name, parameters, launch bounds, shared memory, target) equals the stock
one, the stock PTX otherwise; anything that fails while deploying (ptxas included) deploys stock. The DB is
read once, at enable(): lookups and the cache directory then describe the same content, even if the file grows
meanwhile.

Caching: Triton 3.6 leaves the hook out of its compile cache key, so a warm cache would serve stock cubins to
a tuned run (and tuned ones to a stock run): enable() points Triton's cache at `<cache>/chronos-<digest[:16]>`
(DB content, GPU, driver: chronos.triton.deploy_cache) and disable() restores it. Triton >= 3.7 asks the hook
(called without arguments) for a (key, hash) pair: the key goes into the compile hash, which must stay the
stock one that the tuned key records, so Chronos answers an empty key and relies on its directory; the hash
goes into the JIT's in-memory cache, and Chronos answers the DB content hash. On 3.6 a kernel that a
JITFunction already compiled in this process stays in that in-memory cache: enable before the first launch.
"""

from __future__ import annotations

import ctypes
import os
import re
import threading
from pathlib import Path

from chronos.errors import ChronosError, ToolchainError
from chronos.toolchain import gpu_name, ptxas_version
from chronos.triton import deploy_configs
from chronos.triton.deploy_cache import cache_digest, isolate_cache, restore_cache
from chronos.triton.patch_on_import import after_init
from chronos.triton.rederive import DeriveError, tuned_ptx
from chronos.triton.tuned_configs import config_entries
from chronos.triton.tuned_db import Entry, TunedDB, TunedKey, content_hash, entry_names, make_key

ENV_DB = "CHRONOS_TUNED"
"""Path of the tuned DB when enable() is given none."""
CONFIG_KEY = "config:"  # a PTX entry on a tuned config is keyed config:<label> (no compile hash offline)
CONFIG_ALONE = "its PTX on top of a tuned config missed: where that config deployed, it runs alone"
ENV_KEEP_MISSED = "CHRONOS_KEEP_MISSED_PTX"
"""A folder: the stock PTX of each compile that missed an entry of its kernel's name (a stale key) goes
there, to diff offline against the DB's root (why the PTX under a deployed config was not the one timed)."""
MODES = ("deploy", "strict")
"""deploy: fall back to the stock PTX on a miss or a refusal; strict: raise TunedMissError (CI, audits)."""
TUNED_MARK = "chronos_tuned_entry"
"""Metadata field of a binary compiled from tuned PTX (the entry's key); Triton stores it in its cache."""


class TunedMissError(ChronosError):
    """strict mode: a kernel compiled without a usable tuned entry (missing, stale key or refused)."""


# ------------------------------------------------------------------ deploy environment (monkeypatchable)
def detect_gpu() -> str:
    """The current CUDA device's name as the measurement workers record it, or "unknown"."""
    name = None
    try:
        import torch

        if torch.cuda.is_available():
            name = str(torch.cuda.get_device_name(torch.cuda.current_device()))
    except Exception:  # noqa: BLE001 - no usable torch CUDA: try pycuda, then give up
        name = None
    return name or gpu_name() or "unknown"


def detect_driver() -> str:
    """The driver as the measurement workers record it ("580.95.05 (CUDA 13.0)"), or "unknown"."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        version = ctypes.c_int()
        if lib.cuDriverGetVersion(ctypes.byref(version)) != 0:
            return "unknown"
    except (OSError, AttributeError):
        return "unknown"
    from chronos.measure.runner import driver_version

    return f"{driver_version()} (CUDA {version.value // 1000}.{version.value % 1000 // 10})"


def triton_ptxas_version(arch: int) -> str:
    """Version of the ptxas Triton runs for `arch` now: its bundled one, or TRITON_PTXAS_PATH, which
    Inductor sets to torch's ptxas before its first compile; so it is asked at each compile, not once."""
    from triton.backends.nvidia.compiler import get_ptxas

    return ptxas_version(get_ptxas(arch).path)  # cached per path by chronos.toolchain


# ------------------------------------------------------------------ what a swap must keep
_PARAMS = re.compile(r"\.entry[ \t]+[\w$]+[ \t]*\((.*?)\)", re.DOTALL)
_LAUNCH = re.compile(r"^[ \t]*\.(?:reqntid|maxntid|reqnctapercluster|explicitcluster|maxclusterrank)\b.*$",
                     re.MULTILINE)
_SHARED = re.compile(r"^[ \t]*(?:\.extern[ \t]+)?\.shared\b.*$", re.MULTILINE)
_TARGET = re.compile(r"^[ \t]*\.(?:version|target|address_size)\b.*$", re.MULTILINE)


def _interface(ptx: str) -> dict[str, list[str]]:
    """What Triton's metadata and launcher already fixed before the PTX stage; a swap must not change it."""
    norm = lambda items: [" ".join(s.split()) for s in items]
    return {"entry": entry_names(ptx), "parameters": norm(_PARAMS.findall(ptx)),
            "launch bounds": norm(_LAUNCH.findall(ptx)), "shared memory": norm(_SHARED.findall(ptx)),
            "target": norm(_TARGET.findall(ptx))}


def refusal(stock_ptx: str, tuned_ptx: str) -> str | None:
    """Why `tuned_ptx` must not replace `stock_ptx`, or None when it may."""
    stock, tuned = _interface(stock_ptx), _interface(tuned_ptx)
    differ = [k for k in stock if stock[k] != tuned[k]]
    if differ:
        return (f"tuned PTX changes the kernel's {', '.join(differ)} "
                f"(entry {tuned['entry']} vs {stock['entry']})")
    return None


# ------------------------------------------------------------------ the hook
class _Session:
    """One enable(): the DB snapshot, the deploy environment, the chained hook, the counts."""

    def __init__(self, path: str, entries: list[Entry], mode: str, env: dict, prev):
        self.path, self.mode, self.prev = path, mode, prev
        self.entries = {e.key.key(): e for e in entries}
        self.by_code = {e.key.code_key(): e for e in entries}  # the newest entry per code key wins
        self.content = content_hash(entries)
        self.env = dict(env)  # gpu, driver, ptxas: None = detect at the first compile
        self.active = True
        self.lock = threading.Lock()
        self.names: dict[str, list[str]] = {"swapped": [], "missed": [], "rejected": [], "cached": [],
                                            "cached_stock": []}
        self.compiled: set[str] = set()  # Triton hashes compiled (through the hook) in this process
        self.stock_of: dict[str, str] = {}  # Triton hash -> stock PTX, between a swap and its ptxas stage
        self.reasons: dict[str, str] = {}
        self.cache_dir = ""
        self.saved_cache: tuple = ()

    def __call__(self, *args):
        """Triton's hook: (backend, stages, options, language, capability), or no arguments (>= 3.7) for the
        keys it folds into its caches. The earlier hook runs first, so its stages are the ones wrapped."""
        if not args:
            return self.cache_key()
        if self.prev is not None:
            self.prev(*args)
        backend, stages = args[0], args[1]
        target = getattr(backend, "target", None)
        if self.active and getattr(target, "backend", None) == "cuda" and "ptx" in stages:
            make_ptx = stages["ptx"]
            stages["ptx"] = lambda src, metadata: self.choose(make_ptx(src, metadata), metadata, target.arch)
            if "cubin" in stages:
                make_cubin = stages["cubin"]
                stages["cubin"] = lambda src, metadata: self.assemble(make_cubin, src, metadata)

    def assemble(self, make_cubin, ptx: str, metadata: dict):
        """Triton's ptxas stage; a tuned PTX it refuses is assembled stock instead, with why."""
        with self.lock:
            stock = self.stock_of.pop(metadata.get("hash"), None)
        if stock is None or TUNED_MARK not in metadata:
            return make_cubin(ptx, metadata)
        try:
            return make_cubin(ptx, metadata)
        except Exception as e:  # noqa: BLE001 - ptxas refused the tuned PTX: stock, with why
            metadata.pop(TUNED_MARK, None)
            name = str(metadata.get("name", "?"))
            with self.lock:
                if name in self.names["swapped"]:
                    self.names["swapped"].remove(name)
            self._record("rejected", name, f"ptxas refused the tuned PTX, ran stock: {str(e)[:300]}")
            return make_cubin(stock, metadata)

    def cache_key(self) -> tuple[str, str]:
        """(key, hash) for Triton >= 3.7. Triton folds `key` into the compile hash, which the tuned key holds
        as a hook-free compile records it: Chronos adds nothing there (its cache directory keeps the file
        caches apart). `hash` keys the JIT's in-memory kernel cache: the DB content goes there, so a kernel
        launched before enable() is compiled again, not reused stock."""
        ours = self.content if self.active else ""
        prev_key, prev_hash = self.prev() if self.prev is not None else ("", "")
        return prev_key, (f"{prev_hash}-{ours}" if prev_hash else ours)

    def key(self, stock_ptx: str, metadata: dict, arch: int) -> TunedKey:
        with self.lock:
            for what, detect in (("gpu", detect_gpu), ("driver", detect_driver)):
                if self.env.get(what) is None:
                    self.env[what] = detect()
            ptxas = self.env.get("ptxas") or triton_ptxas_version(arch)  # sm_100+ runs another ptxas
        return make_key(metadata["hash"], stock_ptx, metadata["name"], gpu=self.env["gpu"],
                        driver=self.env["driver"], ptxas=ptxas)

    def choose(self, stock_ptx: str, metadata: dict, arch: int) -> str:
        """The PTX ptxas will assemble: the tuned one on a valid hit, the stock one otherwise. Whatever goes
        wrong while choosing (a PTX the parser refuses, an entry that does not re-derive) deploys stock for
        this kernel with the reason: a DB never breaks the user's compile."""
        try:
            return self._choose(stock_ptx, metadata, arch)
        except TunedMissError:
            raise
        except Exception as e:  # noqa: BLE001 - any deploy failure: stock, with why
            metadata.pop(TUNED_MARK, None)
            self._record("rejected", str(metadata.get("name", "?")), f"deploy failed, ran stock: {e!r}")
            return stock_ptx

    def _choose(self, stock_ptx: str, metadata: dict, arch: int) -> str:
        key = self.key(stock_ptx, metadata, arch)
        with self.lock:
            self.compiled.add(metadata["hash"])
        entry = self.entries.get(key.key()) or self.by_code.get(key.code_key())
        if entry is None:
            why = self._why_missed(key)
            self._record("missed", key.kernel, why)
            if "stale key: " in why and (folder := os.environ.get(ENV_KEEP_MISSED)):  # one of its name
                keep_missed(Path(folder), key, stock_ptx)
            return stock_ptx
        try:
            ptx = tuned_ptx(stock_ptx, entry)  # remade from the user's stock PTX: the DB holds no code
        except DeriveError as e:
            self._record("rejected", key.kernel, str(e))
            return stock_ptx
        reason = refusal(stock_ptx, ptx)
        if reason:
            self._record("rejected", key.kernel, reason)
            return stock_ptx
        note = "" if entry.key.triton_hash == key.triton_hash else (
            f"Triton's hash is {key.triton_hash[:16]} here, {entry.key.triton_hash[:16]} where it was tuned; "
            "the stock PTX, GPU, driver and ptxas are the same (TunedKey.code_key)")
        self._record("swapped", key.kernel, note)
        metadata[TUNED_MARK] = entry.key.key()  # kept with the binary: a later cache hit says it is tuned
        with self.lock:
            self.stock_of[metadata["hash"]] = stock_ptx  # what assemble() falls back to
        return ptx

    def loaded(self, kernel) -> None:
        """A kernel Triton loaded (compiled here or served by its cache). One not compiled in this process
        came from the cache: with the tuned mark it runs tuned (`cached`), else stock (`cached_stock`)."""
        digest = getattr(kernel, "hash", None)
        if not self.active or digest in self.compiled:
            return
        tuned = getattr(kernel.metadata, TUNED_MARK, None)
        with self.lock:
            self.names["cached" if tuned else "cached_stock"].append(str(kernel.metadata.name))
            self.compiled.add(digest)

    def _why_missed(self, key: TunedKey) -> str:
        same = [e.key for e in self.entries.values() if e.key.kernel == key.kernel]
        if not same:
            return f"no entry for kernel {key.kernel}"
        nearest = min(same, key=lambda k: len(key.differences(k)))
        diff = key.differences(nearest)
        stale = "stale key: " + "; ".join(f"{f} is {a!r} here, {b!r} in the DB" for f, (a, b) in diff.items())
        label = nearest.triton_hash.removeprefix(CONFIG_KEY)
        return f"{CONFIG_ALONE} ({label}); {stale}" if label != nearest.triton_hash else stale

    def _record(self, outcome: str, name: str, reason: str) -> None:
        with self.lock:
            self.names[outcome].append(name)
            if reason:
                self.reasons[name] = reason
        if reason and outcome != "swapped" and self.mode == "strict":
            raise TunedMissError(f"{outcome} {name} with tuned DB {self.path}: {reason}",
                                 repro=f"chronos.triton.tuned_db.show({self.path!r})")

    def stats(self) -> dict:
        with self.lock:
            counts = {k: len(v) for k, v in self.names.items()}
            names = {f"{k}_names": list(v) for k, v in self.names.items()}
            return {"enabled": self.active, "db": self.path, "mode": self.mode, "entries": len(self.entries),
                    "content_hash": self.content, "cache_dir": self.cache_dir, **counts, **names,
                    "reasons": dict(self.reasons), "configs": deploy_configs.stats()}


# ------------------------------------------------------------------ Triton plumbing
def _triton():
    """triton.knobs, refusing a Triton without the stage hook or whose cache would mix stock and tuned."""
    try:
        import triton
        from triton import knobs
    except ImportError as e:
        raise ToolchainError("chronos.triton needs Triton >= 3.6 (pip install triton==3.6.0)") from e
    version = getattr(triton, "__version__", "?")
    if not hasattr(getattr(knobs, "runtime", None), "add_stages_inspection_hook"):
        raise ToolchainError(f"Triton {version} has no knobs.runtime.add_stages_inspection_hook: deploying "
                             "tuned PTX needs Triton >= 3.6 (pip install triton==3.6.0)")
    from triton.runtime.cache import FileCacheManager

    manager = knobs.cache.manager_class
    if manager is not None and not issubclass(manager, FileCacheManager):
        # Chronos keeps tuned binaries apart by cache folder; a remote or custom manager could store a tuned
        # cubin under the stock compile hash and hand it to a process that never enabled Chronos
        raise ToolchainError(f"Triton {version} with cache manager {manager.__name__} "
                             "(TRITON_CACHE_MANAGER): Chronos deploys only over Triton's file cache, whose "
                             "folder it keys by the DB, GPU and driver; unset TRITON_CACHE_MANAGER for runs "
                             "with a tuned DB")
    return knobs


def _folds_hook_key(version: str) -> bool:
    """Triton >= 3.7 folds the hook's key into its caches."""
    m = re.match(r"(\d+)\.(\d+)", version)
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= (3, 7)


_STATE: dict[str, _Session | None] = {"session": None, "last": None}


def _load(db) -> tuple[str, list[Entry], list]:
    """(path, tuned PTX entries, tuned config entries) of the DB."""
    if isinstance(db, TunedDB):
        return str(db.path), db.entries(), config_entries(db)
    path = db if db is not None else os.environ.get(ENV_DB)
    if not path:
        raise ChronosError(f"no tuned DB: pass enable(db=...) or set {ENV_DB}=/path/to/tuned.sqlite")
    # TunedDB refuses a missing file, a folder, a device or a non-DB with one TunedDBError naming its
    # absolute path; stats() and strict-mode errors name that path too
    with TunedDB(Path(path), readonly=True) as handle:
        return str(handle.path), handle.entries(), config_entries(handle)


def enable(db: str | Path | TunedDB | None = None, *, mode: str = "deploy", gpu: str | None = None,
           driver: str | None = None, ptxas: str | None = None) -> dict:
    """Deploy the tuned DB `db` (or $CHRONOS_TUNED) into every later Triton compile of this process.
    gpu/driver/ptxas override what is detected (tests, or a compile host that deploys elsewhere).
    Replaces an earlier enable(); chains a hook that someone else installed. Returns stats()."""
    if mode not in MODES:
        raise ChronosError(f"unknown mode {mode!r}; one of {', '.join(MODES)}")
    knobs = _triton()
    path, entries, configs = _load(db)
    disable()
    deploy_configs.enable(configs, lambda: _config_env(gpu), lambda m: None)
    session = _Session(path, entries, mode, {"gpu": gpu, "driver": driver, "ptxas": ptxas},
                       prev=knobs.runtime.add_stages_inspection_hook)
    session.cache_dir, session.saved_cache = isolate_cache(knobs, cache_digest(session.content, gpu, driver))
    knobs.runtime.add_stages_inspection_hook = session
    _STATE["session"] = session
    _count_loads()
    return session.stats()


def _config_env(gpu: str | None) -> dict:
    """What a tuned config must have been measured under: this GPU, torch and Triton."""
    import triton

    try:
        import torch

        torch_version = str(torch.__version__)
    except ImportError:
        torch_version = ""
    return {"gpu": gpu or detect_gpu(), "torch": torch_version, "triton": triton.__version__}


def _count_loads() -> None:
    """Wrap Triton's CompiledKernel once, so that every loaded kernel reaches the session (cache hits
    skip the stage hook: without this a warm cache would report 0 swapped while tuned binaries run)."""
    from triton.compiler import compiler

    after_init(compiler.CompiledKernel, "__chronos_count__", _loaded)


def _loaded(kernel) -> None:
    session = _STATE["session"]
    if session is not None:
        try:
            session.loaded(kernel)
        except Exception:  # noqa: BLE001, S110 - counting must never break a load
            pass


def disable() -> None:
    """Stop swapping; restore the previous hook and Triton's cache dir. A hook chained on top of ours after
    enable() stays installed, ours inside it becomes a pass-through."""
    deploy_configs.disable()
    session = _STATE["session"]
    if session is None:
        return
    from triton import knobs

    session.active = False
    if knobs.runtime.add_stages_inspection_hook is session:
        knobs.runtime.add_stages_inspection_hook = session.prev
    restore_cache(knobs, session.saved_cache)
    _STATE["session"], _STATE["last"] = None, session


def keep_missed(folder: Path, key: TunedKey, stock_ptx: str) -> None:
    """<kernel>-<its PTX identity, 12 hex>.ptx in `folder` (ENV_KEEP_MISSED); never breaks a compile."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{key.kernel}-{key.stock_ptx_sha256[:12]}.ptx").write_text(stock_ptx)
    except OSError:
        pass


def stats() -> dict:
    """Counts and names of the kernels swapped, missed and rejected since the last enable(), with reasons."""
    session = _STATE["session"] or _STATE["last"]
    if session is None:
        outcomes = ("swapped", "missed", "rejected", "cached", "cached_stock")  # the keys a session reports
        return {"enabled": False, **dict.fromkeys(outcomes, 0), **{f"{k}_names": [] for k in outcomes},
                "reasons": {}, "configs": deploy_configs.stats()}
    return session.stats()
