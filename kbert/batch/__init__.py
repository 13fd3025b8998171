"""Batch prediction (`tools/predict.py`'s engine): a pipeline over CSV / TSV / JSONL / text
files, written as JSON Lines in input order, with resume, time limits per call and a worker
process that a stuck call cannot hang (`run_prediction(PredictionConfig(...))`)."""

from kbert.batch.prediction import PredictionConfig, PredictionStopped, run_prediction

__all__ = ["PredictionConfig", "PredictionStopped", "run_prediction"]
