"""Export and safe loading: SavedModels with string signatures (backbones, pretrainers and
the fine-tuned task models of `kbert.tasks`), `.keras` files; SavedModels from elsewhere are
checked before anything in them runs (`load_saved_model`); TFLite models with the tokenizer
inside (`export_tflite`)."""

from kbert.convert.keras_archive import UnsafeModelError, check_keras_archive, load_model
from kbert.export.saved_model import export_saved_model
from kbert.export.saved_model_check import (
    UnsafeSavedModelError, check_saved_model, load_saved_model,
)
from kbert.export.tflite import export_tflite

__all__ = ["UnsafeModelError", "UnsafeSavedModelError", "check_keras_archive",
           "check_saved_model", "export_saved_model", "export_tflite", "load_model",
           "load_saved_model"]
