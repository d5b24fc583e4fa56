"""The offline simulated council: members, reviewers and judges with known, configurable biases."""
