"""The anytime-valid monitor of reviewer bias over a stream of sessions."""
