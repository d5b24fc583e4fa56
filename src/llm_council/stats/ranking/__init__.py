"""Rankings: Bradley-Terry strengths, rank points, score/rank consistency."""
