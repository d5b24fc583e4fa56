"""Adapters that audit outside council apps where their users run them (ADR 0058)."""
