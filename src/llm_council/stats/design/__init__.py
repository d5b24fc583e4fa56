"""Design matrices and least squares: the additive model, absorbed effects, projections."""
