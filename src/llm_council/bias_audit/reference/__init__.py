"""The reference design's bias_persistence, bias_aggregation and bias_amplification."""
