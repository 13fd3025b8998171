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
    """Through `serving_ids`: the same labels (read from the export's graph), scores and
    options as the Keras model; what the export cannot serve is refused."""
    from kbert.export import export_saved_model

    keras_pipe = pipelines("text-classification", CLASSIFIER)
    path = str(tmp_path / "classifier")
    export_saved_model(keras_pipe.source.runner.model, path, keras_pipe.tokenizer,
                       sequence_length=16)
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
    """An export's kind comes from what `serving_ids` returns, its casing from the vocabulary
    written beside it (read by kbert.loading)."""
    from kbert.pipelines import saved_model_source as saved

    assert saved._kind({"start_logits": 0, "end_logits": 0}, {}) == "question_answerer"
    assert saved._kind({"label": 0, "probabilities": 0, "logits": 0}, {}) == "text_classifier"
    assert saved._kind({"score": 0}, {}) == "text_classifier"
    assert saved._kind({"logits": 0}, {}) == "token_classifier"
    assert saved._kind({"sequence_output": 0}, {"fill_mask": 0}) == "backbone"
    with pytest.raises(ValueError, match="no kbert export"):
        saved._kind({"something": 0}, {"serving_default": 0})
    assert saved._kind({"logits": 0, "scores": 0}, {}) == "extractive_summarizer"
    with pytest.raises(ValueError, match="an extractive summarizer's from an earlier kbert"):
        saved._kind({"scores": 0}, {})
    # A summarizer's mark: its windows and length, checked against the model's positions.
    import tensorflow as tf

    def marked(*constant):
        serving_ids = tf.function(lambda: tf.constant(list(constant))).get_concrete_function()
        return type("Loaded", (), {"signatures": {"serving_ids": serving_ids}})

    # (An export from before `segments` existed states none: sentence, as it was; so does
    # one by sentence now, which the kbert before `segments` reads.)
    from kbert.tasks.extractive_summarization.serving import summary_mark

    assert summary_mark("first", 16, "sentence") == ("kbert", "summary windows first length 16")
    assert saved._summary_settings(marked("kbert", "summary windows first length 16"), "m",
                                   24) == ("first", "sentence", 16)
    assert saved._summary_settings(marked(
        "kbert", "summary windows all length 24 segments paragraph"), "m", 24) == (
        "all", "paragraph", 24)
    for constant, error in [(("kbert", "summary windows first"), "lacks the mark"),
                            (("kbert", "summary windows last length 16"), "windows 'last'"),
                            (("kbert", "summary windows all length 16 segments word"),
                             "segments by 'word'"),
                            (("kbert", "summary windows all length 32"), "of 32 tokens")]:
        with pytest.raises(ValueError, match=error):
            saved._summary_settings(marked(*constant), "m", 24)
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
