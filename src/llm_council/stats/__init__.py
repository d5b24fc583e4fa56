"""Pure statistical functions over plain arrays: no I/O, no logging, no config.

Each function names its algorithm, documents its formula with a reference, and is tested
against an independent reference value (scipy, a published table, or a hand derivation).
"""
