"""The tuning library behind `chronos tune` and the pipeline's tune stages: one kernel's side-by-side
comparison and its confirmation (`kernel`), the part files and what a part returned (`parts`), the rule for
what deploys (`deploy_rule`), the tuned DB written from the parts (`db`) and the ptxas that Triton deploys
with (`ptxas`). Nothing here reads command-line arguments: the command is chronos.commands.tune."""
