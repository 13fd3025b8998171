"""Export and safe loading: SavedModels with string signatures (backbones, pretrainers and
the fine-tuned task models of `kbert.tasks`), `.keras` files."""

from kbert.convert.keras_archive import UnsafeModelError, check_keras_archive, load_model
from kbert.export.saved_model import export_saved_model

__all__ = ["UnsafeModelError", "check_keras_archive", "export_saved_model", "load_model"]
