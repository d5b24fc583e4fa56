"""Special functions and distribution tails in numpy, the bottom layer of the statistics."""
