"""Loading models from elsewhere safely: what a file holds is checked before anything in it runs.

- SavedModels (`check_saved_model`, `load_saved_model`): `saved_model.pb` is read as a protocol
  buffer and refused when it holds anything kbert's own exports do not (file and Python ops,
  unbounded loops, oversized allocations, tables filled from the request; `saved_model.py`
  says what exactly), then a private copy of what was checked is loaded.
- `.keras` archives (`check_keras_archive`, `load_model`): Keras' safe mode, with every class
  the archive names checked against what kbert and Keras register, before Keras reads it.

kbert's own loaders (pipelines, `kbert.presets.load`, fine-tuning from a run) go through these.
"""

from kbert.untrusted.keras_archive import UnsafeModelError, check_keras_archive, load_model
from kbert.untrusted.saved_model import (
    UnsafeSavedModelError, check_saved_model, load_saved_model,
)

__all__ = ["UnsafeModelError", "UnsafeSavedModelError", "check_keras_archive",
           "check_saved_model", "load_model", "load_saved_model"]
