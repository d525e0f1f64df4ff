"""Whether a tuned set deploys: one rule for `chronos tune` (it writes the tuned DB) and the `captured`
stage (it counts what deploys). A leaf module, so that the stage's code dependencies stay small."""

from __future__ import annotations


def confirmation(row: dict) -> dict:
    """A tune part's confirming comparison (tuning.kernel.confirm_one); a part measured before confirmations
    existed counts as confirmed by its one comparison."""
    return row.get("confirm") or {"verdict": "faster"}


def deploys(row: dict) -> bool:
    """A part's set deploys when it was returned and, where a confirmation was measured, confirmed faster."""
    return row.get("returned", "baseline") != "baseline" and confirmation(row)["verdict"] == "faster"
