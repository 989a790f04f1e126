"""Evaluation: evaluation.yaml questions, hit@k, per-branch ranks, the publication gate."""
