"""Tests, intervals, pooling and multiplicity control that every family shares."""
