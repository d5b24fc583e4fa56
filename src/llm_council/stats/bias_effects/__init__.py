"""Bias effects estimated over many sessions: joint model, drift, favouritism, mimicry."""
