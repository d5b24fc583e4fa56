"""The audit for councils that are not ours: their stage shapes in, our records out (ADR 0039)."""
