"""The default workflow profile (issue #11): a plain `snakemake --cores all` after an interrupted run reruns
the unfinished jobs instead of stopping with IncompleteFilesException. The profile must sit where Snakemake
looks for it: profiles/default/ next to the Snakefile (workflow/profiles/ is only searched when the
Snakefile lives in workflow/)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_plain_snakemake_picks_up_rerun_incomplete(monkeypatch):
    cli = pytest.importorskip("snakemake.cli")
    monkeypatch.chdir(ROOT)
    _, args = cli.parse_args(["--cores", "all"])
    assert args.rerun_incomplete
    _, args = cli.parse_args(["--cores", "all", "--workflow-profile", "none"])
    assert not args.rerun_incomplete  # so it is the profile that sets it
