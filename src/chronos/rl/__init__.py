"""Reinforcement learning: the policy (policy), its checkpoints (checkpoint), the observation layout and the
greedy/beam decoders over a legality rule (decode), the Gymnasium env (env), behaviour cloning (bc) and
DA-GRPO (grpo)."""
