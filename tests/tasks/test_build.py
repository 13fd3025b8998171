import pytest

import kbert.tasks
from kbert.tasks import (
    QuestionAnswerer, TextClassifier, TextEmbedder, TokenClassifier, family_of,
)
from tests.tasks import _checks
from tests.tasks._checks import FAMILIES, tiny_backbone


def test_build_by_name_and_pipeline_alias():
    backbone = tiny_backbone("bert")
    assert isinstance(kbert.tasks.build("text_classifier", backbone, num_classes=2),
                      TextClassifier)
    assert isinstance(kbert.tasks.build("ner", backbone, num_classes=3), TokenClassifier)
    assert isinstance(kbert.tasks.build("question-answering", backbone), QuestionAnswerer)
    embedder = kbert.tasks.build("sentence-embeddings", backbone, pooling="cls")
    assert isinstance(embedder, TextEmbedder) and embedder.pooling == "cls"
    assert embedder.backbone is backbone
    # feature-extraction is the backbone's hidden states, as in transformers: no task model.
    with pytest.raises(ValueError, match="feature-extraction .backbone. has no task model.*"
                                         "build 'text_embedder' .'sentence-embeddings'.."):
        kbert.tasks.build("feature-extraction", backbone, pooling="cls")
    with pytest.raises(ValueError, match="Unknown task 'summarization'. Known: text_classifier"):
        kbert.tasks.build("summarization", backbone)


def test_family_of_every_backbone():
    assert [family_of(tiny_backbone(family)) for family in FAMILIES] == list(FAMILIES)


@pytest.mark.slow
def test_every_task_and_family_under_jax():
    """A forward pass of every task on every family; one train step (jitted) of every task,
    each on another family, so that every family trains once too."""
    stdout = _checks.run_under_jax(
        """
        features, _ = random_batch()
        rng = np.random.default_rng(0)
        labels = {
            "text_classifier": np.array([0, 1, 2, 1]),
            "token_classifier": rng.integers(0, 3, (4, 16)),
            "question_answerer": {"start_positions": np.array([1, 2, 0, 3]),
                                  "end_positions": np.array([2, 2, 0, 5])},
            "text_embedder": rng.normal(size=(4, 32)).astype("float32"),
        }
        kwargs = {"text_classifier": {"num_classes": 3}, "token_classifier": {"num_classes": 3},
                  "question_answerer": {}, "text_embedder": {"normalize": True}}
        shapes = {"text_classifier": (4, 3), "token_classifier": (4, 16, 3),
                  "question_answerer": (4, 16), "text_embedder": (4, 32)}
        families, tasks = list(kbert.models.FAMILIES), list(kbert.tasks.TASKS)
        for i, family in enumerate(families):
            sizes = {**TINY, **TINY_FAMILY.get(family, {})}  # run_under_jax defines it
            config = kbert.models.FAMILIES[family].config(**sizes)
            for j, task in enumerate(tasks):
                backbone = kbert.models.build(family, config, head=None)
                model = kbert.tasks.build(task, backbone, **kwargs[task])
                x = {k: v for k, v in features.items() if k in model.input}
                out = model(x)
                for value in (out.values() if isinstance(out, dict) else [out]):
                    assert tuple(value.shape) == shapes[task], (family, task, value.shape)
                if (i + j) % len(tasks):
                    continue
                model.compile(optimizer=keras.optimizers.Adam(1e-2))
                table = backbone.token_embedding.embeddings
                before = keras.ops.convert_to_numpy(table).copy()
                logs = model.train_on_batch(x, labels[task], return_dict=True)
                assert np.isfinite(logs["loss"]), (family, task, logs)
                assert not np.allclose(before, keras.ops.convert_to_numpy(table)), (family, task)
                print("TRAINED", family, task, sorted(logs))
        """
    )
    assert stdout.count("TRAINED") == len(kbert.models.FAMILIES), stdout  # one task each


@pytest.mark.parametrize("task, old_module", [
    ("text_classifier", "kbert.tasks.text_classifier"),
    ("token_classifier", "kbert.tasks.token_classifier"),
    ("question_answerer", "kbert.tasks.question_answerer"),
    ("sentence-embeddings", "kbert.tasks.text_embedder"),
])
def test_a_config_that_names_the_module_before_the_task_folders_loads(task, old_module):
    """The task models moved into kbert/tasks/<task>/model.py: a .keras file saved before
    names the old module, and its registered name still finds the class."""
    import keras

    kwargs = {"num_classes": 2} if task in ("text_classifier", "token_classifier") else {}
    model = kbert.tasks.build(task, tiny_backbone("bert"), **kwargs)
    config = keras.saving.serialize_keras_object(model)
    assert config["module"] != old_module
    restored = keras.saving.deserialize_keras_object({**config, "module": old_module})
    assert type(restored) is type(model)
