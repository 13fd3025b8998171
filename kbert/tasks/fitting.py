"""`fit`, `evaluate` and `predict` on a task's raw inputs, through the model's preprocessor.

A task model with a `preprocessor` (`kbert.tasks.preprocessor`) takes texts, pairs, words or
questions, and labels as names, in Python lists, NumPy arrays, pandas columns or `tf.data`
datasets, as keras-hub's tasks do. They are encoded once, then read in batches grouped by
length (`kbert.tasks.length_groups`, the batches `tools/finetune.py` trains on): a batch is
cut to the shortest bucket length that holds its longest example, so short texts cost what
they are, not `sequence_length`. Model inputs (a dict with `token_ids`, or a dataset of them)
go to Keras as they are.
"""

import numpy as np

from kbert.tasks import preprocessor as base

DEFAULT_BATCH_SIZE = 32


def model_inputs(model, features):
    """The features `model` takes (DistilBERT has no `segment_ids`)."""
    return {name: value for name, value in features.items() if name in model.input}


def _flat(targets):
    import tensorflow as tf

    flat = tf.nest.flatten(targets)
    return {f"target_{i}": np.asarray(value) for i, value in enumerate(flat)}


def _packed(targets, flat):
    import tensorflow as tf

    return tf.nest.pack_sequence_as(targets, [flat[f"target_{i}"] for i in range(len(flat))])


class TextInputs:
    """Mixed into `kbert.tasks.Task`: the task's raw inputs in `fit`, `evaluate`, `predict`."""

    preprocessor = None

    def _takes_raw(self, x):
        return self.preprocessor is not None and x is not None and not base.is_token_ids(x)

    def _encode(self, x, y=None):
        if hasattr(x, "element_spec"):  # a tf.data dataset
            if y is not None:
                raise ValueError("A tf.data dataset holds its labels: give y=None.")
            x, y = base.from_dataset(x, self.preprocessor.example_rank)
        return self.preprocessor.encode(x, y, task=self)

    def _batches(self, encoded, batch_size, training, epochs=1):
        """The encoded inputs as a `tf.data` dataset of `(inputs, *targets)` batches grouped
        by length: for training the shuffled stream of `epochs` epochs, else the split in
        order of length."""
        from kbert.tasks import length_groups  # TensorFlow: not on `import kbert.tasks`

        preprocessor = self.preprocessor
        features = model_inputs(self, encoded.features)
        flat = _flat(encoded.targets)
        length = preprocessor.sequence_length
        if training:
            seed = int(np.random.randint(2**31 - 1))  # keras.utils.set_random_seed sets it
            data = length_groups.training_stream(
                features, flat, batch_size, length, seed, epochs,
                token_labels=preprocessor.per_token,
                merge=bool(getattr(self, "jit_compile", False)))
        else:
            data = length_groups.inference_stream(features, flat, batch_size, length,
                                                  token_labels=preprocessor.per_token)
        return data.map(lambda x, y: (x, *_packed(encoded.targets, y)))

    def fit(self, x=None, y=None, batch_size=None, epochs=1, validation_data=None,
            **kwargs):
        """`keras.Model.fit`; with a preprocessor, `x` may be the task's raw inputs (texts,
        pairs, words, questions) and `y` their labels (names or ids), or a `tf.data` dataset
        of both. An epoch then reads every row (an example; a window of a question) but the
        last `rows % batch_size` of its shuffle once, in batches grouped by length.
        `validation_data`: `(x, y)` in the same form, or a dataset."""
        if not self._takes_raw(x):
            return super().fit(x, y, batch_size=batch_size, epochs=epochs,
                               validation_data=validation_data, **kwargs)
        return super().fit(**self.raw_fit_arguments(x, y, batch_size, epochs, validation_data,
                                                    kwargs))

    def raw_fit_arguments(self, x, y, batch_size, epochs, validation_data, kwargs, what="fit"):
        """`keras.Model.fit`'s arguments for a fit on raw inputs `x` and labels `y` (or a
        dataset of both): the shuffled stream of `training_batches`, its steps per epoch, raw
        `validation_data` batched as `evaluate` batches it, and the other `kwargs`, less those
        given at the values kept anyway (`shuffle=True`, `validation_split=0.0`). One it
        cannot take (it shuffles and batches the inputs itself) is a ValueError naming it.
        `what` names the caller in errors."""
        given = [name for name in ("validation_split", "sample_weight", "steps_per_epoch",
                                   "shuffle", "class_weight")
                 if kwargs.get(name) is not None and not (
                     name == "validation_split" and kwargs[name] == 0.0) and not (
                     name == "shuffle" and kwargs[name] is True)]
        if given:
            raise ValueError(f"{what} on raw inputs shuffles and batches them itself: "
                             f"{given[0]}={kwargs[given[0]]!r} is not taken; give "
                             "validation_data, or encode the inputs yourself "
                             "(model.preprocessor.encode) and fit on token ids.")
        train, steps = self.training_batches(x, y, batch_size, epochs, what)
        if validation_data is not None:
            validation_data = self._validation(validation_data, batch_size or DEFAULT_BATCH_SIZE)
        return {**{k: v for k, v in kwargs.items() if k not in ("validation_split", "shuffle")},
                "x": train, "epochs": epochs, "steps_per_epoch": steps,
                "validation_data": validation_data, "shuffle": False}

    def training_batches(self, x, y=None, batch_size=None, epochs=1, what="fit"):
        """What `fit` trains on from raw inputs and labels (or a dataset of both), through the
        preprocessor: `(dataset, steps per epoch)`, the shuffled stream of `epochs` epochs in
        batches grouped by length, each epoch every row but the last `rows % batch_size`.
        `what` names the caller in errors."""
        encoded = self._encode(x, y)
        if encoded.targets is None:
            raise ValueError(f"{what} needs labels: give y (or a dataset of (x, y)).")
        rows = len(encoded.features["token_ids"])
        size = min(batch_size or DEFAULT_BATCH_SIZE, rows)  # fewer rows: one batch of them
        return self._batches(encoded, size, True, epochs), rows // size

    def _validation(self, data, batch_size):
        if base.is_token_ids(data[0] if isinstance(data, tuple) else data):
            return data
        if isinstance(data, tuple):
            if len(data) != 2:
                raise ValueError(f"validation_data on raw inputs is (x, y); got a tuple of "
                                 f"{len(data)} (sample weights are not taken).")
            encoded = self._encode(*data)
        else:
            encoded = self._encode(data)
        if encoded.targets is None:
            raise ValueError("validation_data needs labels: give (x, y).")
        return self._batches(encoded, batch_size, False)

    def evaluate(self, x=None, y=None, batch_size=None, **kwargs):
        """`keras.Model.evaluate`; with a preprocessor, on raw inputs and labels as `fit`
        takes them, in batches grouped by length."""
        if not self._takes_raw(x):
            return super().evaluate(x, y, batch_size=batch_size, **kwargs)
        return super().evaluate(self.labelled_batches(x, y, batch_size), **kwargs)

    def labelled_batches(self, x, y=None, batch_size=None):
        """What `evaluate` reads, as an iterable of `(inputs, targets)` batches (a `tf.data`
        dataset): raw inputs and labels through the preprocessor in batches grouped by
        length; token-id features and labels in batches of `batch_size` in order; a dataset
        of batches as it is."""
        if hasattr(x, "element_spec") and not self._takes_raw(x):
            return x
        if not self._takes_raw(x):
            import tensorflow as tf

            if y is None:
                raise ValueError("labelled_batches needs labels: give y.")
            return tf.data.Dataset.from_tensor_slices((x, y)).batch(
                batch_size or DEFAULT_BATCH_SIZE)
        encoded = self._encode(x, y)
        if encoded.targets is None:
            raise ValueError("evaluate needs labels: give y (or a dataset of (x, y)).")
        return self._batches(encoded, batch_size or DEFAULT_BATCH_SIZE, False)

    def predict(self, x, batch_size=None, **kwargs):
        """`keras.Model.predict`; with a preprocessor, on raw inputs, in batches grouped by
        length and given back in the order of `x`: the model's outputs (logits, embeddings),
        per-token outputs padded with zeros past each row's length to the preprocessor's
        `sequence_length` (no decoder reads them). Question answering gives a row per window
        of each question (`preprocessor.encode(...).rows_of`)."""
        if not self._takes_raw(x):
            return super().predict(x, batch_size=batch_size, **kwargs)
        from kbert.tasks import length_groups

        unknown = sorted(set(kwargs) - {"verbose"})
        if unknown:
            raise ValueError(f"predict on raw inputs batches them itself: {unknown[0]}= is not "
                             "taken; encode the inputs (model.preprocessor.encode) and "
                             "predict on token ids for it.")
        encoded = self._encode(x)
        return length_groups.predict(self, model_inputs(self, encoded.features),
                                     batch_size or DEFAULT_BATCH_SIZE,
                                     self.preprocessor.sequence_length,
                                     token_outputs=self.preprocessor.per_token)

