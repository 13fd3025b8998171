"""Checkpoint conversion between kbert and other BERT implementations."""
