"""Per-session tests of reviewer bias (leniency, self-preference) on the additive model."""
