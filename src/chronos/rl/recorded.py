"""Recorded training: the committed outputs of a training run, replayed while its inputs are unchanged.

BC, GRPO and the held-out folds train in float32 on the CPU; another CPU (another SIMD path in torch's
kernels) rounds the last bits differently, and GRPO's sampling turns those bits into other policies after
some epochs. So that the pipeline reproduces its committed reports byte for byte on any CPU, a training
stage first looks in its record (`data/recorded_training/<stage>/`): when the record's key equals the key
of this run's inputs (the params blocks the training reads and the sha256 of its input files), the recorded
outputs are copied (each checked against its recorded sha256) instead of training anew. Any changed input
(`dvc exp run -S grpo.lr=…`, new demonstrations) trains; `--retrain` trains regardless, `--record-training`
writes what was trained as the new record. What the key leaves out, on purpose: the training code and the
measurement store (which only grows); after changing either, run the stage with `--retrain --record-training`.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import time
from pathlib import Path

import torch

from chronos.errors import ChronosError

RECORD_FILE = "record.json"


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


NOT_CONTENT = (".snakemake_timestamp",)
"""Files a tool leaves in an input folder that are not its content (Snakemake marks a directory output with
an empty `.snakemake_timestamp`; .dvcignore and .gitignore leave it out too): a folder's key ignores them."""


def folder_sha256(path: Path, patterns: tuple[str, ...] = ("**/*",)) -> str:
    """sha256 over the relative names and contents of the files under `path` matching `patterns` (sorted),
    NOT_CONTENT left out."""
    h = hashlib.sha256()
    for p in sorted({q for pattern in patterns for q in Path(path).glob(pattern)
                     if q.is_file() and q.name not in NOT_CONTENT}):
        h.update(f"{p.relative_to(path)}\0{file_sha256(p)}\n".encode())
    return h.hexdigest()


def training_key(inputs: dict) -> str:
    """sha256 of the inputs (params blocks as plain data, input files by their sha256)."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=list).encode()).hexdigest()


def _trained_on() -> dict:
    return {"cpu": platform.processor() or platform.machine(), "python": platform.python_version(),
            "torch": str(torch.__version__), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


class RecordedTraining:
    """One stage's record: `record.json` ({key, inputs, trained_on, files: {name: sha256}}) and the files."""

    def __init__(self, root: Path, stage: str):
        self.folder = Path(root) / stage
        self.stage = stage

    def _meta(self) -> dict | None:
        path = self.folder / RECORD_FILE
        if not path.is_file():
            return None
        try:
            meta = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise ChronosError(f"recorded training {path} is unreadable: {e}") from None
        if not isinstance(meta, dict) or not isinstance(meta.get("files"), dict) or "key" not in meta:
            raise ChronosError(f"recorded training {path} is not a record (key, files)")
        return meta

    def matches(self, key: str) -> dict | None:
        """The record's metadata when its key is `key`, else None."""
        meta = self._meta()
        return meta if meta is not None and meta["key"] == key else None

    def verified(self, meta: dict, name: str) -> Path:
        """The recorded file `name`, checked against its sha256 in the record."""
        src = self.folder / name
        if name not in meta["files"] or not src.is_file():
            raise ChronosError(f"recorded training {self.folder}: {name} is missing (rerun the stage "
                               "with --retrain --record-training)")
        if file_sha256(src) != meta["files"][name]:
            raise ChronosError(f"recorded training {src} does not match its sha256 in {RECORD_FILE} "
                               "(changed or damaged): restore it, or rerun the stage with --retrain "
                               "--record-training")
        return src

    def replay(self, key: str, outputs: dict[str, Path]) -> dict | None:
        """Copy the recorded files named in `outputs` (record name -> output path) when the key matches; each
        must hash to its recorded sha256. Returns the record's metadata, or None (nothing copied)."""
        meta = self.matches(key)
        if meta is None:
            return None
        for name, out in outputs.items():
            src = self.verified(meta, name)
            Path(out).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, out)
        return meta

    def save(self, key: str, inputs: dict, outputs: dict[str, Path], trained_on: dict | None = None) -> None:
        """Make the files of `outputs` (record name -> path) this stage's record, under `key`."""
        self.folder.mkdir(parents=True, exist_ok=True)
        files = {}
        for name, path in outputs.items():
            shutil.copyfile(path, self.folder / name)
            files[name] = file_sha256(self.folder / name)
        meta = {"stage": self.stage, "key": key, "inputs": inputs, "trained_on": trained_on or _trained_on(),
                "files": files}
        (self.folder / RECORD_FILE).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")

    def describe(self, meta: dict) -> str:
        on = meta.get("trained_on", {})
        return (f"replayed the recorded training {self.folder} (key {meta['key'][:12]}, trained on "
                f"{on.get('cpu', '?')} with torch {on.get('torch', '?')} on {on.get('date', '?')[:10]}); "
                "--retrain trains anew")


def add_recorded_arguments(ap, stage: str) -> None:
    ap.add_argument("--recorded", type=Path, default=Path("data/recorded_training"),
                    help=f"records of training runs ({stage}'s in RECORDED/{stage}): replayed while this "
                         "run's inputs equal the record's")
    ap.add_argument("--retrain", action="store_true", help="train even when the record matches")
    ap.add_argument("--record-training", dest="write_record", action="store_true",
                    help="make what this run trained the stage's record")
