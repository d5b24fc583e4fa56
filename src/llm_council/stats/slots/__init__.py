"""Display-slot (position) effects: per-session tests, slot-adjusted fits, profiles."""
