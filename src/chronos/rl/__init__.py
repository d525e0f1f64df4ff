"""Reinforcement learning: the policy, and (in later issues) the environment, BC and DA-GRPO."""
