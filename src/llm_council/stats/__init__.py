"""Pure statistical functions over plain arrays: no I/O, no logging, no config.

Each function names its algorithm, documents its formula with a reference, and is tested
against an independent reference value (scipy, a published table, or a hand derivation).

The modules are grouped by family, in layers that import only downwards (ADR 0067):
``numerics`` (special functions, distribution tails); ``inference`` (tests, pooling,
multiplicity) and ``design`` (design matrices, least squares); ``reviewers`` (reviewer
effects and noise); then the families, which never import each other: ``sessions``,
``slots``, ``monitor``, ``reliability``, ``ranking``, ``bias_effects``.
"""
