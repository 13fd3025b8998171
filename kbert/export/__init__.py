"""Export: SavedModels with string signatures (backbones, pretrainers and the fine-tuned task
models of `kbert.tasks`) and TFLite models with the tokenizer inside (`export_tflite`).
Loading what others made, SavedModels and `.keras` files, is `kbert.untrusted`."""

from kbert.export.multitask import export_multitask_saved_model
from kbert.export.saved_model import export_saved_model
from kbert.export.tflite import export_tflite

__all__ = ["export_multitask_saved_model", "export_saved_model", "export_tflite"]
