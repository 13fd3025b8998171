import pytest

import kbert.tasks
from kbert.tasks import (
    QuestionAnswerer, TextClassifier, TextEmbedder, TokenClassifier, family_of,
)
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
    with pytest.raises(ValueError, match="Unknown task 'translation'. Known: text_classifier"):
        kbert.tasks.build("translation", backbone)


def test_family_of_every_backbone():
    assert [family_of(tiny_backbone(family)) for family in FAMILIES] == list(FAMILIES)


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
