"""Worker processes, one per GPU, with a watchdog: a hang, a crash or a poisoned context costs one variant.

`WorkerPool.run(jobs, on_result)` sends each job (a JSON-able request) to a free worker and calls
`on_result(job, answer)` as answers come (so callers can store them at once). When a worker does not
answer within the watchdog, dies (SIGKILL, segfault), prints a line that is not protocol JSON, or exits
after a sticky CUDA error, only that job gets an invalid answer ("timeout", "worker_died", or the worker's
own "fault:<name>"); the worker is killed if needed and restarted, and the run goes on.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence

from chronos.errors import MeasureError, PoolError, WorkerDied, WorkerTimeout

WORKER_ARGV = (sys.executable, "-m", "chronos.measure.worker")


class WorkerHandle:
    """One worker process, its stdout reader thread and a tail of its stderr."""

    def __init__(self, argv: Sequence[str], gpu: int, startup_timeout_s: float):
        self.argv, self.gpu, self.startup_timeout_s = tuple(argv), gpu, startup_timeout_s
        self.proc: subprocess.Popen | None = None
        self.lines: queue.Queue = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=40)
        self.info: dict = {}
        self.starts = 0

    def start(self) -> dict:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=os.environ.get("CHRONOS_GPU_MAP", str(self.gpu)),
                   PYTHONUNBUFFERED="1")
        if "CHRONOS_GPU_MAP" not in os.environ and "CUDA_VISIBLE_DEVICES" in os.environ:
            visible = os.environ["CUDA_VISIBLE_DEVICES"].split(",")
            env["CUDA_VISIBLE_DEVICES"] = visible[self.gpu] if self.gpu < len(visible) else visible[0]
        self.lines = queue.Queue()
        self.proc = subprocess.Popen(list(self.argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env, bufsize=1)
        self.starts += 1
        proc, lines = self.proc, self.lines
        threading.Thread(target=self._pump_out, args=(proc, lines), daemon=True).start()
        threading.Thread(target=self._pump_err, args=(proc,), daemon=True).start()
        try:
            hello = self._read(self.startup_timeout_s)
        except MeasureError as e:
            self.kill()
            raise PoolError(f"worker {self.gpu} did not start: {e}; stderr: {self.stderr_tail()}") from e
        if "hello" not in hello:
            self.kill()
            raise PoolError(f"worker {self.gpu} sent {hello!r} instead of hello")
        self.info = hello["hello"]
        return self.info

    @staticmethod
    def _pump_out(proc, lines: queue.Queue) -> None:
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)  # EOF: the process is gone

    def _pump_err(self, proc) -> None:
        for line in proc.stderr:
            self.stderr.append(line.rstrip("\n"))

    def stderr_tail(self, n: int = 12) -> str:
        return "\n".join(list(self.stderr)[-n:])

    def _read(self, timeout: float) -> dict:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise WorkerTimeout(f"no answer within {timeout:g} s") from None
        if line is None:
            code = self.proc.wait(timeout=10) if self.proc else None
            raise WorkerDied(f"worker exited (status {code})")
        try:
            obj = json.loads(line)
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            raise WorkerDied(f"worker wrote a line that is not protocol JSON: {line[:200]!r}")
        return obj

    def request(self, msg: dict, timeout: float) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        try:
            self.proc.stdin.write(json.dumps(msg) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise WorkerDied(f"cannot write to worker: {e}") from e
        return self._read(timeout)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()  # SIGKILL this worker (by its handle, never by name)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass

    def close(self) -> None:
        if self.alive():
            try:
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()


class WorkerPool:
    """`gpus` workers; `run` feeds them jobs from one queue, one thread per worker."""

    def __init__(self, gpus: int = 1, *, argv: Sequence[str] = WORKER_ARGV, watchdog_s: float = 60.0,
                 startup_timeout_s: float = 120.0, max_restarts: int = 1000):
        self.workers = [WorkerHandle(argv, g, startup_timeout_s) for g in range(gpus)]
        self.watchdog_s = watchdog_s
        self.max_restarts = max_restarts
        self.restarts = 0
        self.events: list[str] = []  # human-readable log of timeouts, deaths, restarts

    def start(self) -> dict:
        infos = [w.start() for w in self.workers]
        return infos[0]

    @property
    def info(self) -> dict:
        return self.workers[0].info

    def _one(self, w: WorkerHandle, job: dict, timeout: float | None) -> dict:
        try:
            ans = w.request(job, timeout or self.watchdog_s)
        except WorkerTimeout as e:
            w.kill()
            self._restart(w, f"job {job.get('id')}: timeout ({e}); worker killed")
            return {"id": job.get("id"), "valid": False, "reason": "timeout",
                    "log": f"watchdog: {e}; worker killed and restarted"}
        except WorkerDied as e:
            tail = w.stderr_tail()
            w.kill()
            self._restart(w, f"job {job.get('id')}: worker died ({e})")
            return {"id": job.get("id"), "valid": False, "reason": "worker_died", "log": f"{e}\n{tail}"}
        if ans.get("id") != job.get("id"):
            w.kill()
            self._restart(w, f"job {job.get('id')}: answer for {ans.get('id')!r}")
            return {"id": job.get("id"), "valid": False, "reason": "worker_died",
                    "log": f"worker answered the wrong job: {ans.get('id')!r}"}
        if ans.get("exit"):
            try:
                w.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                w.kill()
            self._restart(w, f"job {job.get('id')}: {ans.get('reason')} (context poisoned)")
        return ans

    def _restart(self, w: WorkerHandle, why: str) -> None:
        self.events.append(f"{time.strftime('%H:%M:%S')} gpu {w.gpu}: {why}")
        self.restarts += 1
        if self.restarts > self.max_restarts:
            raise PoolError(f"more than {self.max_restarts} worker restarts; last: {why}")
        w.start()

    def run(self, jobs: Iterable[dict], on_result: Callable[[dict, dict], None],
            timeout_of: Callable[[dict], float] | None = None,
            worker_of: Callable[[dict], int] | None = None) -> None:
        """Send every job; `jobs` may be a generator fed while the run goes (compile-as-you-go). With
        `worker_of`, a job goes to worker `worker_of(job) % len(workers)` (its GPU) instead of the first
        free one."""
        n = len(self.workers)
        queues = [queue.Queue(maxsize=2) for _ in range(n)] if worker_of else [queue.Queue(maxsize=2 * n)] * n
        errors: list[BaseException] = []

        def serve(w: WorkerHandle, q: queue.Queue) -> None:
            while True:
                job = q.get()
                if job is None:
                    return
                try:
                    ans = self._one(w, job, timeout_of(job) if timeout_of else None)
                    on_result(job, ans)
                except BaseException as e:  # noqa: BLE001 - surfaced to the caller below
                    errors.append(e)

        threads = [threading.Thread(target=serve, args=(w, q), daemon=True)
                   for w, q in zip(self.workers, queues, strict=True)]
        for t in threads:
            t.start()
        try:
            for job in jobs:
                if errors:
                    break
                queues[worker_of(job) % n if worker_of else 0].put(job)
        finally:
            for q in queues:  # one stop per worker (the shared queue gets n)
                q.put(None)
            for t in threads:
                t.join()
        if errors:
            raise errors[0]

    def close(self) -> None:
        for w in self.workers:
            w.close()
