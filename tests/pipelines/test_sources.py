"""What `model=` takes (a checkpoint directory, a kbert model object with its tokenizer, a
preset name, a SavedModel directory), and the refusals: the wrong task for a model names the
architecture found and the tasks it serves."""

import pytest

import kbert
from tests.pipelines import reference
from tests.pipelines.reference import FIXTURES

CLASSIFIER = "hf_tasks/bert_seq_single"


def test_wrong_task_for_a_checkpoint_names_what_it_is_and_serves():
    with pytest.raises(ValueError) as caught:
        kbert.pipeline("token-classification", model=str(FIXTURES / CLASSIFIER))
    message = str(caught.value)
    assert "BertForSequenceClassification" in message
    assert "text" in message and "classif" in message


def test_wrong_task_for_a_model_object(pipelines):
    classifier = pipelines("text-classification", CLASSIFIER)
    model, tokenizer = classifier.source.runner.model, classifier.tokenizer
    with pytest.raises(ValueError, match="serves text-classification, zero-shot-classification"
                                         ", feature-extraction"):
        kbert.pipeline("question-answering", model=model, tokenizer=tokenizer)
    with pytest.raises(ValueError, match="tokenizer"):
        kbert.pipeline("text-classification", model=model)
    # The object itself gives what its checkpoint gives.
    same = kbert.pipeline("text-classification", model=model, tokenizer=tokenizer)
    reference.assert_same(same("A great movie!", top_k=None),
                          classifier("A great movie!", top_k=None))


@pytest.mark.parametrize("task, model", [("text-classification", CLASSIFIER),
                                         ("fill-mask", "hf_tiny/distil_bert")])
def test_a_checkpoint_is_read_once(monkeypatch, task, model):
    """The model and its tokenizer come from one read of the directory."""
    from kbert import convert

    reads = []
    reader = convert._READERS["hf"]
    monkeypatch.setitem(convert._READERS, "hf",
                        lambda path, **kwargs: reads.append(path) or reader(path, **kwargs))
    kbert.pipeline(task, model=str(FIXTURES / model))
    assert len(reads) == 1, reads


def test_refusals_name_the_bad_value(pipelines):
    with pytest.raises(ValueError, match="Unknown task 'translation'"):
        kbert.pipeline("translation", model=str(FIXTURES / CLASSIFIER))
    with pytest.raises(ValueError, match="needs model="):
        kbert.pipeline("text-classification")
    with pytest.raises(ValueError, match="does not exist and is not a preset name"):
        kbert.pipeline("text-classification", model="no/such/dir")
    # A hub id not in the local hub cache: how to fetch it, and where kbert looks.
    with pytest.raises(ValueError, match="hf download distilbert-base-uncased-finetuned-sst-2"):
        kbert.pipeline("text-classification",
                       model="distilbert-base-uncased-finetuned-sst-2-english")
    with pytest.raises(ValueError, match="fill-mask and feature-extraction"):
        kbert.pipeline("text-classification", model="bert_tiny")  # nothing downloaded
    classifier = pipelines("text-classification", CLASSIFIER)
    with pytest.raises(TypeError, match="no option 'aggregation_strategy'"):
        classifier("text", aggregation_strategy="first")
    with pytest.raises(ValueError, match="function_to_apply 'relu'"):
        classifier("text", function_to_apply="relu")
    with pytest.raises(ValueError, match="text_pair"):
        classifier([["a", "b"]])


@pytest.mark.slow
def test_saved_model_gives_what_the_checkpoint_gives(pipelines, tmp_path):
    """Through `serving_ids`: the same labels (read from the export's export.json), scores
    and options as the Keras model; what the export cannot serve is refused."""
    keras_pipe = pipelines("text-classification", CLASSIFIER)
    path = str(tmp_path / "classifier")
    keras_pipe.export(path)
    saved = kbert.pipeline("text-classification", model=path)
    assert saved.source.label_names == ["NEGATIVE", "NEUTRAL", "POSITIVE"]
    texts = ["A great movie!", {"text": "bad", "text_pair": "awful food"}]
    reference.assert_same(saved(texts, top_k=None), keras_pipe(texts, top_k=None))
    # An exported task model returns its predictions, not the backbone's hidden states.
    for task in ("feature-extraction", "question-answering"):
        with pytest.raises(ValueError, match="serves text-classification, "
                                             "zero-shot-classification.$"):
            saved.source.check_serves(task)


def test_what_a_saved_model_directory_says(tmp_path):
    """An export's kind and labels come from its export.json (a SavedModel without one is
    refused, naming what to do), its casing from the vocabulary written beside it (read by
    kbert.loading)."""
    from kbert.pipelines import saved_model_source as saved

    import keras
    import tensorflow as tf

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "##s"]
    bare = tmp_path / "bare"  # a SavedModel that is not a kbert export
    layer = keras.layers.Dense(2)
    layer.build((None, 3))
    archive = keras.export.ExportArchive()
    archive.track(layer)
    archive.add_endpoint("serving_default", layer, [tf.TensorSpec([None, 3], tf.float32)])
    archive.write_out(str(bare), verbose=False)
    (bare / "vocab.txt").write_text("\n".join(words) + "\n")
    with pytest.raises(ValueError, match="has no export.json: pipelines run kbert's exports"
                                         ".*Export the model again with kbert.export"):
        saved.from_saved_model(str(bare), None, "text-classification", trusted=True)
    # The tokenizer: kbert.loading's reading of the files beside it.
    tokenizer_of = lambda path: kbert.loading.SavedModelSource(path).tokenizer()  # noqa: E731
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "##s"]
    (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n")
    assert tokenizer_of(str(tmp_path)).lowercase
    (tmp_path / "vocab.txt").write_text("\n".join(words + ["Paris"]) + "\n")
    assert not tokenizer_of(str(tmp_path)).lowercase
    with pytest.raises(ValueError, match="no tokenizer files beside it \\(vocab.txt, "
                                         "spiece.model"):
        tokenizer_of(str(tmp_path / "missing"))
