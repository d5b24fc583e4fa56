"""Agreement and reliability among judges: kappa, Krippendorff's alpha, effective judges."""
