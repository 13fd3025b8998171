"""A RoBERTa TextClassifier's SavedModel (its pipeline's: `model.export`) packs pairs as
RoBERTa packs them (<s> A </s></s> B </s>), as the text-classification pipeline does:
`serving_pairs` gives the pipeline's scores."""

import numpy as np
import pytest
import tensorflow as tf

from tests.pipelines.conftest import load_pipeline
from tests.pipelines.reference import FIXTURES

NAME = "hf_tasks/roberta_seq_single"
MODEL = str(FIXTURES / NAME)
OPTIONS = {"top_k": None}  # every label's score
PAIRS = [("Paris is nice in the spring.", "London is not."),
         ("A lovely, quiet café.", "I liked it."),
         ("The food was cold", "and the service slow, very slow indeed."),
         ("yes", "no")]


@pytest.fixture(scope="module")
def export_dir(pipeline_export):
    """The checkpoint's model and tokenizer, and `model.export(path, top_k=None)` (made once
    per run: `pipeline_export`)."""
    pipe = load_pipeline("text-classification", NAME)
    path = pipeline_export("text-classification", NAME, OPTIONS)
    return pipe.source.runner.model, pipe.tokenizer, path


@pytest.fixture(scope="module")
def exported(export_dir):
    model, tokenizer, path = export_dir
    # Plain TensorFlow: what TF Serving runs (kbert's check is tested in tests/export).
    return model, tokenizer, tf.saved_model.load(path)


def pipeline_probabilities(labels, inputs):
    """kbert.pipeline("text-classification") on the fixture: [inputs, labels]."""
    pipe = load_pipeline("text-classification", NAME)
    rows = [{s["label"]: s["score"] for s in pipe(x, **OPTIONS)} for x in inputs]
    return np.array([[row[label] for label in labels] for row in rows])


def served_probabilities(labels, out):
    """The export's answers (`label`, `score` [B, labels], best first): [B, labels]."""
    rows = [{label.decode(): score for label, score in zip(names, scores)}
            for names, scores in zip(out["label"].numpy(), out["score"].numpy())]
    assert all(sorted(row) == sorted(labels) for row in rows)
    return np.array([[row[label] for label in labels] for row in rows])


def test_serving_pairs_gives_the_pipelines_probabilities(exported):
    model, tokenizer, loaded = exported
    out = loaded.signatures["serving_pairs"](
        text=tf.constant([a for a, _ in PAIRS]), text_pair=tf.constant([b for _, b in PAIRS]))
    want = pipeline_probabilities(model.label_names,
                                  [{"text": a, "text_pair": b} for a, b in PAIRS])
    got = served_probabilities(model.label_names, out)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
    # One separator (the old packing) gives other probabilities: the test can fail.
    ids = tokenizer.tokenize(tf.constant([a for a, _ in PAIRS] + [b for _, b in PAIRS]))
    n = len(PAIRS)
    one = tf.concat([tf.fill([n, 1], tokenizer.cls_id), ids[:n], tf.fill([n, 1],
                     tokenizer.sep_id), ids[n:], tf.fill([n, 1], tokenizer.sep_id)], 1)
    logits = model({"token_ids": one.to_tensor(tokenizer.pad_id),
                    "padding_mask": tf.ones_like(one).to_tensor(0)}, training=False)
    assert np.abs(tf.nn.softmax(logits).numpy() - want).max() > 1e-4


def test_serving_default_gives_the_pipelines_probabilities_on_single_texts(exported):
    model, _, loaded = exported
    texts = [a for a, _ in PAIRS]
    out = loaded.signatures["serving_default"](text=tf.constant(texts))
    want = pipeline_probabilities(model.label_names, texts)
    np.testing.assert_allclose(served_probabilities(model.label_names, out), want, atol=1e-5,
                               rtol=0)


def test_the_saved_model_is_a_pipelines_model_as_its_checkpoint(export_dir):
    """kbert.pipeline(model=<the SavedModel>) reads RoBERTa's tokenizer beside it (vocab.json,
    merges.txt and the tokenizer_config.json saying add_prefix_space=false) through
    kbert.loading, and answers as the pipeline on the checkpoint (trusted: the check of
    RoBERTa's exports is tested in tests/untrusted)."""
    import kbert
    from tests.pipelines import reference

    _, _, path = export_dir
    saved = kbert.pipeline("text-classification", model=path, trusted=True)
    texts = [PAIRS[0][0], PAIRS[3][0], {"text": PAIRS[1][0], "text_pair": PAIRS[1][1]}]
    checkpoint = load_pipeline("text-classification", NAME)
    reference.assert_same(saved(texts, top_k=None), checkpoint(texts, top_k=None))
    # The export states the model's longest input (RoBERTa's position table has two more
    # rows); a text longer than it is cut to it, as from the checkpoint.
    assert saved.max_length == checkpoint.max_length
    long_text = " ".join([PAIRS[0][0]] * 200)
    reference.assert_same(saved(long_text, truncation=True, top_k=None),
                          checkpoint(long_text, truncation=True, top_k=None))
