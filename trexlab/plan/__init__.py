"""Validated run plans, and running them: one RunPlan per CLI run or sweep point, repetitions (adaptive,
resumed), campaigns, the lab-time estimate."""
