"""Reviewer leniency, effects and noise variances, estimated from past or pooled scores."""
