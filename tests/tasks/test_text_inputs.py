"""Task models that take text, as a Keras user writes it: `kbert.load(spec, task=...,
label_names=...)`, then `fit` / `evaluate` / `predict` on Python lists of strings, pairs,
words with tags, questions with SQuAD answers, and `save` -> `kbert.load` of the `.keras`
file (`kbert.tasks.preprocessor`, `kbert.tasks.fitting`, `kbert.loading.task_models`).
On the tiny transformers checkpoints of tests/fixtures/hf_tasks."""

from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert import convert
from kbert.tasks.text_classification.features import encode_classification
from kbert.tokenizers import load_tokenizer_json, saving

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf_tasks"
JSON_FIXTURES = FIXTURES.parent / "tokenizer_json"
TEXTS = ["A lovely, quiet café.", "Awful.", "It was not good at all, sadly, and too long.",
         "Great fun!", "The plot is thin but the music is wonderful to hear.", "Meh."]
# A task a tiny model learns in a few steps: the label is whether "good" is in the text.
TOY = [("good film", "POSITIVE"), ("bad film", "NEGATIVE"), ("a good one", "POSITIVE"),
       ("a bad one", "NEGATIVE"), ("good and fun", "POSITIVE"), ("bad and dull", "NEGATIVE"),
       ("so good", "POSITIVE"), ("so bad", "NEGATIVE")] * 4


def _load(name, **kwargs):
    return kbert.load(str(FIXTURES / name), **kwargs).model


@pytest.mark.parametrize("name", ["bert_seq_single", "albert_seq_single",
                                  "roberta_seq_single", "distil_bert_seq_single"])
def test_predict_on_text_is_the_model_on_its_token_ids(name):
    """A fine-tuned checkpoint comes with its preprocessor; predict(texts), in batches cut to
    their length and put back in order, is the model on the texts padded to the
    preprocessor's length (another path through attention: within 1e-5)."""
    model = _load(name)
    assert model.preprocessor is not None
    assert model.preprocessor.tokenizer is not None
    features = encode_classification(TEXTS, model.preprocessor.tokenizer,
                                     model.preprocessor.sequence_length).features
    expected = model.predict({k: v for k, v in features.items() if k in model.input},
                             verbose=0)
    np.testing.assert_allclose(model.predict(TEXTS, batch_size=4), expected, atol=1e-5)
    np.testing.assert_allclose(model.predict(np.array(TEXTS, object)), expected, atol=1e-5)
    by_layer = model.preprocessor(TEXTS)
    for key, value in features.items():
        np.testing.assert_array_equal(by_layer[key].numpy(), value)


def test_pairs_and_their_forms():
    model = _load("bert_nli")
    firsts, seconds = TEXTS[:3], TEXTS[3:]
    by_dict = model.predict({"text": firsts, "text_pair": seconds})
    by_tuples = model.predict(list(zip(firsts, seconds)))
    np.testing.assert_allclose(by_dict, by_tuples, atol=1e-6)
    singles = model.predict(firsts)
    assert not np.allclose(by_dict, singles, atol=1e-4)  # the second text is read


def test_fit_on_names_learns_and_saves_whole(tmp_path):
    """fit(texts, label names) with validation, evaluate, predict; the .keras file reloads
    through kbert.load with its tokenizer and labels, and predicts the same (1e-6)."""
    keras.utils.set_random_seed(0)
    model = _load("bert_token", task="text-classification",
                  label_names=["NEGATIVE", "POSITIVE"], sequence_length=16)
    assert type(model).__name__ == "TextClassifier"
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    texts, labels = [t for t, _ in TOY], [label for _, label in TOY]
    before = model.evaluate(texts, labels, return_dict=True, verbose=0)
    history = model.fit(texts, labels, epochs=8, batch_size=8,
                        validation_data=(texts[:8], labels[:8]), verbose=0)
    assert len(history.history["val_loss"]) == 8
    after = model.evaluate(texts, labels, return_dict=True, verbose=0)
    assert after["loss"] < before["loss"] / 2, (before, after)
    assert after["accuracy"] == 1.0
    path = tmp_path / "classifier.keras"
    model.save(path)
    loaded = kbert.load(path)
    assert loaded.kind == "keras_file" and loaded.label_names == ["NEGATIVE", "POSITIVE"]
    assert loaded.tokenizer.identity() == model.preprocessor.tokenizer.identity()
    np.testing.assert_allclose(loaded.model.predict(texts), model.predict(texts), atol=1e-6)
    # tf.data datasets of (text, label), batched or not, are the same data.
    dataset = tf.data.Dataset.from_tensor_slices((texts, labels))
    for data in (dataset, dataset.batch(5)):
        np.testing.assert_allclose(model.evaluate(data, verbose=0), [after["loss"],
                                                                     after["accuracy"]],
                                   atol=1e-5)


def test_token_classification_on_words_and_tags():
    tags = ["O", "B-PER", "I-PER"]
    model = _load("bert_seq_single", task="ner", label_names=tags, sequence_length=16)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    words = [["John", "Smith", "went", "home"], ["Mary", "is", "here"]] * 4
    labels = [["B-PER", "I-PER", "O", "O"], ["B-PER", "O", "O"]] * 4
    before = model.evaluate(words, labels, verbose=0)[0]
    model.fit(words, labels, epochs=3, batch_size=4, verbose=0)
    assert model.evaluate(words, labels, verbose=0)[0] < before
    logits = model.predict(words[:2])
    assert logits.shape == (2, 16, 3)
    read = model.preprocessor.encode(words[:2]).details
    read.label_names = tags
    assert [len(t) for t in read.word_predictions(logits)] == [4, 3]
    ids = [[tags.index(t) for t in sentence] for sentence in labels]
    np.testing.assert_allclose(model.evaluate(words, ids, verbose=0),
                               model.evaluate(words, labels, verbose=0), atol=1e-6)


def test_question_answering_on_questions_and_squad_answers():
    model = _load("bert_qa", sequence_length=32)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    x = {"question": ["Who went home?", "Where is Mary?"],
         "context": ["John Smith went home.", "Mary is here, in Paris, today."]}
    y = [{"text": ["John Smith"], "answer_start": [0]}, {"text": "Paris", "answer_start": 17}]
    model.fit(x, y, epochs=1, batch_size=2, verbose=0)
    outputs = model.predict(x)
    assert set(outputs) == {"start_logits", "end_logits"}
    assert outputs["start_logits"].shape == (2, 32)
    assert model.preprocessor.encode(x).rows_of.tolist() == [0, 1]
    with pytest.raises(ValueError, match="does not match the context"):
        model.fit(x, [{"text": ["Paris"], "answer_start": [0]}, None], verbose=0)


def test_embeddings_of_texts():
    model = _load("bert_seq_single", task="sentence-embeddings")
    embeddings = model.predict(TEXTS)
    assert embeddings.shape == (len(TEXTS), 24)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = model.fit(TEXTS, embeddings[::-1], epochs=1, batch_size=3, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_bad_labels_and_settings_say_what_is_allowed():
    model = _load("bert_seq_single")
    model.compile()
    with pytest.raises(ValueError, match=r"unknown label 'GOOD'; expected one of \['NEGATIVE'"):
        model.fit(TEXTS[:2], ["GOOD", "NEGATIVE"], verbose=0)
    with pytest.raises(ValueError, match="2 texts but 1 labels"):
        model.fit(TEXTS[:2], ["NEGATIVE"], verbose=0)
    with pytest.raises(ValueError, match="fit needs labels"):
        model.fit(TEXTS[:2], verbose=0)
    with pytest.raises(ValueError, match="is not a label.*id in \\[0, 3\\)"):
        model.fit(TEXTS[:2], [0, 7], verbose=0)
    with pytest.raises(ValueError, match="expected a non-empty string"):
        model.predict(["fine", ""])
    with pytest.raises(ValueError, match="validation_split=0.2 is not taken"):
        model.fit(TEXTS[:2], [0, 1], validation_split=0.2, verbose=0)
    with pytest.raises(ValueError, match="holds a fine-tuned text_classifier head"):
        _load("bert_seq_single", task="text-classification", num_labels=2)
    with pytest.raises(ValueError, match="needs its classes"):
        _load("bert_token", task="text-classification")
    with pytest.raises(ValueError, match="has none"):
        _load("bert_token", task="question-answering", num_labels=2)


def test_a_task_model_runs_the_pipelines_with_its_own_tokenizer():
    model = _load("bert_seq_single")
    answers = kbert.pipeline("text-classification", model=model)(TEXTS[:2])
    best = model.predict(TEXTS[:2]).argmax(-1)
    assert [a["label"] for a in answers] == [model.label_names[i] for i in best]


def test_token_ids_still_go_in_as_they_are():
    model = _load("bert_seq_single")
    features = encode_classification(TEXTS, model.preprocessor.tokenizer, 32).features
    np.testing.assert_allclose(model.predict(features, verbose=0), model.predict(TEXTS),
                               atol=1e-5)


@pytest.mark.parametrize("name", ["bert_token", "albert_token", "roberta_token",
                                  "modern_bert", "mm_bert"])
def test_every_tokenizer_kind_saves_and_reads_back(name, tmp_path):
    if (JSON_FIXTURES / name).is_dir():
        tokenizer = load_tokenizer_json(JSON_FIXTURES / name)
    else:
        tokenizer = convert.load_tokenizer(str(FIXTURES / name))
    tokenizer.split_special_tokens = False
    saving.write(tokenizer, str(tmp_path))
    again = saving.read(saving.settings(tokenizer), str(tmp_path))
    assert type(again) is type(tokenizer)
    assert again.identity() == tokenizer.identity()
    assert again.split_special_tokens is False
    mask = tokenizer.vocabulary[tokenizer.mask_id]
    text = tf.constant([f"Hello, World! Café déjà-vu. {mask}"])
    assert again.tokenize(text).to_list() == tokenizer.tokenize(text).to_list()


def test_a_hub_id_reads_the_hub_cache_and_says_how_to_fetch_otherwise(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ValueError, match=r"hf download someone/tiny-sst2"):
        kbert.load("someone/tiny-sst2")
    repo = tmp_path / "models--someone--tiny-sst2"
    snapshot = repo / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    for file in (FIXTURES / "bert_seq_single").iterdir():
        (snapshot / file.name).symlink_to(file)  # the cache's own links to its blobs
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    loaded = kbert.load("someone/tiny-sst2")
    assert loaded.label_names == ["NEGATIVE", "NEUTRAL", "POSITIVE"]
    assert loaded.model.predict(TEXTS[:2]).shape == (2, 3)


def test_multi_label_and_regression_labels():
    multi = _load("bert_seq_multi")
    multi.compile()
    names = multi.label_names
    by_names = [[names[0], names[2]], [names[1]]]
    hot = np.zeros((2, len(names)), np.float32)
    hot[0, [0, 2]] = hot[1, 1] = 1
    np.testing.assert_allclose(multi.evaluate(TEXTS[:2], by_names, verbose=0),
                               multi.evaluate(TEXTS[:2], hot, verbose=0), atol=1e-6)
    np.testing.assert_allclose(multi.evaluate(TEXTS[:2], [[0, 2], [1]], verbose=0),
                               multi.evaluate(TEXTS[:2], hot, verbose=0), atol=1e-6)
    with pytest.raises(ValueError, match="Multi-hot labels are 0 or 1"):
        multi.evaluate(TEXTS[:2], hot * 2, verbose=0)
    scores = _load("bert_seq_regression")
    scores.compile()
    history = scores.fit(TEXTS[:4], [0.5, 3.0, 4.2, 1.0], batch_size=2, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    with pytest.raises(ValueError, match="regression's labels are numbers"):
        scores.evaluate(TEXTS[:2], ["high", "low"], verbose=0)
    fresh = _load("bert_token", task="text-classification", num_labels=1)
    assert fresh.problem_type == "regression"  # as transformers' num_labels=1


def test_fit_reads_datasets_small_data_and_refuses_what_it_does_not_take():
    model = _load("distil_bert_seq_single")  # no segment_ids
    model.compile()
    data = tf.data.Dataset.from_tensor_slices((TEXTS, ["NEGATIVE", "POSITIVE"] * 3)).batch(4)
    assert len(model.fit(data, epochs=2, verbose=0).history["loss"]) == 2
    # Fewer rows than a batch: one batch of them.
    assert model.fit(TEXTS[:2], [0, 2], batch_size=32, verbose=0).history["loss"]
    for name, value in (("shuffle", False), ("steps_per_epoch", 1),
                        ("sample_weight", np.ones(2)), ("class_weight", {0: 1.0})):
        with pytest.raises(ValueError, match=f"{name}=.* is not taken"):
            model.fit(TEXTS[:2], [0, 2], verbose=0, **{name: value})
    with pytest.raises(ValueError, match="validation_data on raw inputs is \\(x, y\\)"):
        model.fit(TEXTS[:2], [0, 2], validation_data=(TEXTS[:2], [0, 2], [1, 1]), verbose=0)
    with pytest.raises(ValueError, match="steps= is not taken"):
        model.predict(TEXTS, steps=1)


def test_each_preprocessor_saves_with_its_model(tmp_path):
    """Token classification and question answering (its doc_stride) reload whole from
    .keras; a checkpoint written by save_kbert reloads with a preprocessor of its own."""
    x = {"question": ["Where is Mary?"],
         "context": [" ".join(["Mary is here, in Paris, today."] * 8)]}
    reader = _load("bert_qa", sequence_length=32)
    reader.set_preprocessor(type(reader.preprocessor)(
        reader.preprocessor.tokenizer, sequence_length=32, doc_stride=8))
    windows = reader.preprocessor.encode(x).rows_of
    assert len(windows) > 2 and set(windows.tolist()) == {0}  # one question, many windows
    tagger = _load("bert_token")
    words = [["John", "Smith", "went", "home"]]
    for model, inputs in ((reader, x), (tagger, words)):
        path = tmp_path / f"{model.name}.keras"
        model.save(path)
        with pytest.raises(ValueError, match="num_labels do not apply"):
            kbert.load(path, num_labels=2)
        again = kbert.load(path).model
        assert again.preprocessor.get_config() == model.preprocessor.get_config()
        assert str(again.predict(inputs)) == str(model.predict(inputs))
    convert.save_kbert(tagger, str(tmp_path / "kbert_format"),
                             vocabulary=tagger.preprocessor.tokenizer)
    again = kbert.load(str(tmp_path / "kbert_format")).model
    np.testing.assert_allclose(again.predict(words), tagger.predict(words), atol=1e-6)


def test_the_layer_packs_pairs_in_the_graph():
    model = _load("bert_nli")
    pairs = [("A cat.", "A dog."), ("Rain today.", "Sun tomorrow.")]
    as_rows = model.preprocessor(pairs)
    as_dict = model.preprocessor({"text": [a for a, _ in pairs],
                                  "text_pair": [b for _, b in pairs]})
    for key in as_rows:
        np.testing.assert_array_equal(as_rows[key].numpy(), as_dict[key].numpy())
    assert (as_rows["segment_ids"].numpy() == 1).any()
