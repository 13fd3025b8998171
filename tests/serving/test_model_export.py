"""`model.export(path)` of a task model (`kbert.export`): the SavedModel's `serving_default`
answers as the task's pipeline answers on 200 inputs (transformers' keys and ranking),
`serving_ids` gives the model's raw outputs, `export.json` says what the export is, and
`kbert.pipeline(task, model=path)` reads it back. On the tiny transformers checkpoints of
tests/fixtures/hf_tasks."""

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.serving import metadata
from tests.pipelines import reference
from tests.pipelines.test_export import _answer, _calls

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf_tasks"
WORDS = ("John Smith went to Paris with Mary on Monday . the film was good , bad , quiet , "
         "lovely and too long ; Berlin café naïve 1984 U.S. Dr. Who ?").split()


def _texts(count, seed=0):
    """`count` texts of 1 to 24 words, drawn (seeded) from WORDS."""
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(1, 25))) for _ in range(count)]


def _served(path, task, inputs, options=None):
    """The export's answers to `inputs`, in the pipeline's form (what a TF Serving client
    does with the response: tests/pipelines/test_export.py)."""
    loaded = tf.saved_model.load(str(path))
    calls, placement = _calls(task, inputs, options or {})
    results = [{k: v.numpy() for k, v in loaded.signatures[name](
        **{k: tf.constant(v) for k, v in args.items()}).items()} for name, args in calls]
    return _answer(task, inputs, options or {}, results, placement)


CASES = {
    "text-classification": ("bert_seq_single", {}),
    "token-classification": ("bert_token", {}),
    "question-answering": ("bert_qa", {}),
    "sentence-embeddings": ("bert_seq_single", {"task": "sentence-embeddings"}),
}


@pytest.mark.parametrize("task", [
    "text-classification",
    *(pytest.param(t, marks=pytest.mark.slow) for t in CASES if t != "text-classification")])
def test_model_export_answers_as_its_pipeline(task, tmp_path):
    name, load_options = CASES[task]
    model = kbert.load(str(FIXTURES / name), **load_options).model
    path = model.export(tmp_path / "export")
    pipe = kbert.pipeline(task, model=model)
    texts = _texts(200)
    if task == "question-answering":
        inputs = {"question": [f"Who is {t.split()[0]}?" for t in texts[:100]],
                  "context": texts[100:]}
        reference.assert_same(_served(path, task, inputs), pipe(**inputs), "200",
                              tolerance=1e-5)
    else:
        reference.assert_same(_served(path, task, texts), pipe(texts), "200", tolerance=1e-5)

    meta = metadata.read(path)
    assert (meta["task"], meta["runtime"], meta["model"]) == (
        task, "saved_model", kbert.tasks.registry.of_model(model).name)
    assert meta["label_names"] == getattr(model, "label_names", None)
    assert meta["max_length"] == pipe.max_length
    assert set(meta["signatures"]) >= {"serving_default", "serving_ids"}
    # serving_ids: the model's raw outputs on ids made elsewhere.
    if task != "question-answering":
        features = model.preprocessor.encode(texts[:3]).features
        loaded = tf.saved_model.load(str(path))
        raw = loaded.signatures["serving_ids"](
            **{k: tf.cast(features[k], tf.int32) for k in model.input})
        expected = model.predict({k: features[k] for k in model.input}, verbose=0)
        np.testing.assert_allclose(next(iter(raw.values())).numpy(), expected, atol=1e-5)
    # Read back by kbert.pipeline through export.json and serving_ids.
    again = kbert.pipeline(task, model=str(path))
    if task == "question-answering":
        few = {"question": inputs["question"][:5], "context": inputs["context"][:5]}
        reference.assert_same(again(**few), pipe(**few), "read back", tolerance=1e-5)
    else:
        reference.assert_same(again(texts[:5]), pipe(texts[:5]), "read back", tolerance=1e-5)


@pytest.mark.slow
def test_a_summarizer_exports_as_its_pipeline_on_200_documents(tmp_path):
    """The fifth task model: an ExtractiveSummarizer (tiny, no preprocessor: its tokenizer
    given) chooses the pipeline's sentences in the graph, on 200 documents of 1 to 9
    sentences, and reads back through export.json."""
    from kbert.tasks import ExtractiveSummarizer
    from tests.tasks.test_extractive_summarizer import VOCABULARY, WORDS, tokenizer
    from tests.tasks._checks import tiny_backbone

    tok = tokenizer()
    model = ExtractiveSummarizer(tiny_backbone("bert", vocabulary_size=len(VOCABULARY)))
    path = model.export(tmp_path / "summarizer", tokenizer=tok)
    rng = np.random.default_rng(2)
    documents = [" ".join(" ".join(rng.choice(WORDS, size=rng.integers(2, 8))).capitalize()
                          + "." for _ in range(rng.integers(1, 10))) for _ in range(200)]
    pipe = kbert.pipeline("summarization", model=model, tokenizer=tok)
    out = tf.saved_model.load(str(path)).signatures["serving_default"](
        text=tf.constant(documents))
    for row, [answer] in enumerate(pipe(documents)):
        count = int(out["num_sentences"][row])
        assert [s.decode() for s in out["sentences"].numpy()[row, :count]] == [
            " ".join(s["text"].split()) for s in answer["sentences"]], row
        np.testing.assert_allclose(out["scores"].numpy()[row, :count],
                                   [s["score"] for s in answer["sentences"]], atol=1e-5)
    assert metadata.read(path)["task"] == "summarization"
    again = kbert.pipeline("summarization", model=str(path))
    reference.assert_same(again(documents[:5]), pipe(documents[:5]), "read back",
                          tolerance=1e-5)


@pytest.mark.slow
def test_a_task_model_exports_its_backbone_as_feature_extraction(tmp_path):
    """task="feature-extraction" runs the task model's backbone: the export's raw outputs
    and export.json are the backbone's. Keras' own arguments of Model.export pass."""
    model = kbert.load(str(FIXTURES / "bert_seq_single")).model
    path = model.export(tmp_path / "features", task="feature-extraction", verbose=False)
    meta = metadata.read(path)
    assert (meta["task"], meta["model"], meta["label_names"]) == (
        "feature-extraction", "backbone", None)
    assert set(meta["signatures"]["serving_ids"]["outputs"]) == {"sequence_output",
                                                                 "pooled_output"}
    texts = _texts(3, seed=3)
    reference.assert_same(_served(path, "feature-extraction", texts),
                          kbert.pipeline("feature-extraction", model=model)(texts),
                          "features", tolerance=1e-5)
    with pytest.raises(ValueError, match="input_signature is for Keras' own export"):
        model.export(tmp_path / "x", input_signature=[])


def test_options_formats_and_what_kbert_export_refuses(tmp_path):
    model = kbert.load(str(FIXTURES / "bert_seq_single")).model
    path = kbert.export(model, tmp_path / "top2", top_k=2)
    texts = _texts(4, seed=1)
    reference.assert_same(_served(path, "text-classification", texts, {"top_k": 2}),
                          kbert.pipeline("text-classification", model=model)(texts, top_k=2),
                          "top_k=2", tolerance=1e-5)
    assert metadata.read(path)["options"] == {"top_k": 2}
    # The options an export fixed are the pipeline's defaults on it; a call overrides them.
    on_export = kbert.pipeline("text-classification", model=str(path))
    reference.assert_same(on_export(texts), kbert.pipeline("text-classification", model=model)(
        texts, top_k=2), "defaults", tolerance=1e-5)
    assert len(on_export(texts[0], top_k=1)) == 1

    tflite = model.export(tmp_path / "model.tflite", format="tflite", quantize="dynamic",
                          truncation=True)
    meta = metadata.read(tflite)
    assert (meta["runtime"], meta["task"], meta["quantize"]) == (
        "tflite", "text-classification", "dynamic")
    assert meta["label_names"] == model.label_names

    keras_own = model.export(str(tmp_path / "keras"), format="tf_saved_model", verbose=False)
    assert keras_own is None or keras_own  # Keras' export: ids in, no export.json
    assert metadata.read(tmp_path / "keras") is None

    with pytest.raises(ValueError, match="format='coreml'; allowed: 'saved_model', 'tflite', "
                                         "'onnx'"):
        kbert.export(model, tmp_path / "x", format="coreml")
    with pytest.raises(ValueError, match="quantize='dynamic' is for format='tflite'"):
        kbert.export(model, tmp_path / "x", quantize="dynamic")
    with pytest.raises(TypeError, match="kbert.export takes a pipeline or a kbert model"):
        kbert.export(object(), tmp_path / "x")
    pipe = kbert.pipeline("text-classification", model=model)
    with pytest.raises(ValueError, match="A pipeline has its task and tokenizer"):
        kbert.export(pipe, tmp_path / "x", task="zero-shot-classification")


def test_a_tokenizer_with_ids_past_the_models_table_is_refused(tmp_path):
    """A tokenizer whose ids run past the model's embedding table is refused before anything
    is traced, in both formats (a smaller one, as DeBERTa-v3's padded table, is fine)."""
    from tests.helpers import TINY
    from tests.tokenizers.test_alignment import tiny_tokenizer

    tokenizer = tiny_tokenizer()
    config = kbert.models.BertConfig(**{**TINY, "vocabulary_size":
                                        tokenizer.vocabulary_size - 1})
    small = kbert.tasks.TextClassifier(kbert.models.build("bert", config, head=None),
                                       num_classes=2)
    for format in ("saved_model", "tflite"):
        with pytest.raises(ValueError, match=f"The tokenizer has {tokenizer.vocabulary_size} "
                                             f"tokens but the model's vocabulary_size is "
                                             f"{tokenizer.vocabulary_size - 1}"):
            kbert.export(small, str(tmp_path / f"m.{format}"), format=format,
                         tokenizer=tokenizer, truncation=True)
    assert not list(tmp_path.iterdir())
