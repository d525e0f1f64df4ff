"""scripts/prune_wheel.py: a wheel keeps everything but the model folders it was not asked for, and its
RECORD names exactly the files that stay."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from prune_wheel import prune


def test_only_the_kept_model_folders_stay_and_record_matches(tmp_path):
    names = ["transformers/__init__.py", "transformers/models/__init__.py", "transformers/models/auto/a.py",
             "transformers/models/gpt2/m.py", "transformers/models/t5/m.py", "transformers/utils/x.py"]
    wheel = tmp_path / "transformers-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for n in names:
            z.writestr(n, f"# {n}\n")
        z.writestr("transformers-1.0.dist-info/RECORD",
                   "".join(f"{n},sha256=x,1\n" for n in names) + "transformers-1.0.dist-info/RECORD,,\n")
    out = prune(wheel, tmp_path / "out", ("auto", "gpt2"))
    with zipfile.ZipFile(out) as z:
        got = set(z.namelist())
        record = {line.split(",")[0] for line in z.read("transformers-1.0.dist-info/RECORD").decode().split()}
    assert "transformers/models/t5/m.py" not in got
    assert got == (set(names) - {"transformers/models/t5/m.py"}) | {"transformers-1.0.dist-info/RECORD"}
    assert record == got
