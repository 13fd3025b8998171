"""kbert.serving.export_tflite and pipeline.export_tflite: TFLite models with the tokenizer
inside, run in ai-edge-litert's interpreter with tensorflow-text's kernels registered.

Float models give the SavedModel's outputs (labels equal, numbers within 1e-4) on the same
strings, hostile ones included (a backbone's `export_saved_model`; a task model's
`model.export`, whose `serving_default` answers as its pipeline, texts cut to the TFLite
model's length, and whose `serving_ids` gives the raw logits on kbert's ids of them);
dynamic-range int8 gives the same top label on at least 99% of a held-out set of 300 strings;
float16 runs; no model holds an op outside TFLite's built-ins and tensorflow-text's kernels
(read from the flatbuffer)."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import kbert.models
from kbert import tasks
from kbert.serving import export_saved_model, export_tflite
from kbert.serving.tflite import tokenization_differences
from kbert.serving.runtimes import interpreter
from kbert.serving.runtimes import TEXT_OPS, check_ops, custom_ops, model_ops
from kbert.tokenizers import WordPieceTokenizer
from tests.tasks.question_answering.test_features import sentence_piece_tokenizer
from tests.tokenizers.test_alignment import TINY_VOCABULARY, tiny_tokenizer
from tests.helpers import TINY

ROOT = Path(__file__).resolve().parents[2]
SEQUENCE_LENGTH = 24
# Empty, whitespace only, CJK, emoji (with a skin tone), accents composed and decomposed,
# punctuation glued to words, a text far longer than the model, 10,000 characters.
HOSTILE = [
    "", "   \t\n ", "東京都 日本", "😀 🚀 emoji 👍🏽!", "Héllo naïve café École Ωmega Müller",
    "e\u0301te\u0301 \u00e9t\u00e9", "Paris!!! (the city)... new-york's 1990s",
    "x" * 10000, ("the new york city is big " * 400)[:10000], "Ünïcödé ÀÉÎÕÜ ąčęėįšųūž",
]
WORDS = ["the", "new", "york", "is", "in", "city", "big", "muller", "cafe", "bar", "tokyo",
         "paris", "what", "where", "who", "1990", "東", "京", "日本", "café", "naïve", "😀",
         "Über", "!", ",", "...", "(", ")"]


def held_out(count, seed):
    """`count` texts of 1 to 30 words: vocabulary words, random lower-case words, accents,
    CJK, emoji and punctuation (none of the characters whose ids differ in TFLite)."""
    rng = np.random.default_rng(seed)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    texts = []
    for _ in range(count):
        words = [WORDS[rng.integers(len(WORDS))] if rng.random() < 0.6 else
                 "".join(rng.choice(letters, rng.integers(1, 9))) for _ in
                 range(rng.integers(1, 31))]
        texts.append(" ".join(words))
    return texts


def backbone(family, tokenizer, max_sequence_length=64):
    config = kbert.models.FAMILIES[family].config(
        **{**TINY, "vocabulary_size": tokenizer.vocabulary_size,
           "max_sequence_length": max_sequence_length})
    return kbert.models.build(family, config, head=None)


def randomized(model, seed):
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        weight.assign(rng.normal(0.0, 0.3, weight.shape).astype(weight.dtype))
    return model


KEYWORDS = ["tokyo", "paris", "york"]


def topics(count, seed):
    """`count` held-out-like texts, each with one keyword inserted at random, and the
    keyword's index: what the tiny classifier learns."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for text in held_out(count, seed):
        words = [w for w in text.split() if w not in KEYWORDS]
        label = int(rng.integers(len(KEYWORDS)))
        words.insert(int(rng.integers(len(words) + 1)), KEYWORDS[label])
        texts.append(" ".join(words))
        labels.append(label)
    return texts, np.array(labels)


def centred_classifier(tokenizer, texts, seed=0):
    """A tiny classifier with random weights whose output bias is centred on `texts`: the
    [CLS] vectors of a random model differ little, and uncentred every text would get the
    same label. (Near ties everywhere: fine for float32, not for int8.)"""
    from kbert.tasks.text_classification.features import classification_dataset

    model = randomized(tasks.TextClassifier(backbone("bert", tokenizer), num_classes=3,
                                            label_names=["a", "b", "c"]), seed)
    logits = np.concatenate([np.asarray(model(f)) for f in classification_dataset(
        texts, tokenizer, SEQUENCE_LENGTH, 64)])
    bias = next(w for w in model.classifier.weights  # the output layer's
                if w.path.endswith("bias") and w.shape == (model.num_classes,))
    bias.assign(bias - logits.mean(axis=0))
    return model


def classifier(tokenizer, seed=0, max_sequence_length=64, epochs=12):
    """A tiny classifier trained briefly (400 texts) to tell which keyword a text holds: its
    labels vary and its probabilities are mostly far from a tie, as a fine-tuned model's."""
    import keras

    from kbert.tasks.text_classification.features import classification_dataset

    keras.utils.set_random_seed(seed)
    model = tasks.TextClassifier(backbone("bert", tokenizer, max_sequence_length),
                                 num_classes=3, label_names=["tokyo", "paris", "new york"])
    texts, labels = topics(400, seed=100 + seed)
    features = next(iter(classification_dataset(texts, tokenizer, SEQUENCE_LENGTH, 400)))
    model.compile(optimizer=keras.optimizers.Adam(5e-3), jit_compile=False,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(features, labels, batch_size=16, epochs=epochs, verbose=0)
    return model


def run(path, **inputs):
    """The TFLite model's `serving_default` on `inputs` (numpy arrays)."""
    return interpreter(path).get_signature_runner("serving_default")(**inputs)


_LOADED = {}


def loaded(path):
    """`tf.saved_model.load(path)`, once per path (each test writes its own)."""
    path = str(path)
    if path not in _LOADED:
        _LOADED[path] = tf.saved_model.load(path)
    return _LOADED[path]


def saved(path, signature="serving_default", **inputs):
    return {k: v.numpy() for k, v in loaded(path).signatures[signature](
        **{k: tf.constant(v) for k, v in inputs.items()}).items()}


def raw(path, tokenizer, *texts, sequence_length=SEQUENCE_LENGTH):
    """A task export's `serving_ids` (the model's raw outputs) on kbert's ids of `texts` (one
    array of strings, or two: pairs), packed in Python to `sequence_length` as TFLite packs
    them (a pair trimmed longest first)."""
    features = tokenizer.pack([tokenizer.tokenize(tf.constant(t)) for t in texts],
                              sequence_length)
    signature = loaded(path).signatures["serving_ids"]
    return {k: v.numpy() for k, v in signature(
        **{k: features[k] for k in signature.structured_input_signature[1]}).items()}


def class_scores(outputs, names):
    """A text-classification export's answers with top_k=None (`label`, `score` [B, classes],
    best first) as scores [B, classes] in `names`' order."""
    index = {name.encode(): i for i, name in enumerate(names)}
    scores = np.zeros((len(outputs["score"]), len(names)), np.float32)
    for row, (labels, values) in enumerate(zip(outputs["label"], outputs["score"])):
        assert sorted(labels.tolist()) == sorted(index), labels  # every class, once
        scores[row, [index[label] for label in labels]] = values
    return scores


def strings(texts):
    return np.array([t.encode("utf-8") for t in texts], dtype=object)


def assert_only_allowed_ops(path):
    ops = model_ops(Path(path).read_bytes())
    assert not [op for op in ops if op.startswith("Flex")], ops
    assert set(custom_ops(Path(path).read_bytes())) <= TEXT_OPS, ops
    assert "FastWordpieceTokenizeWithOffsets" in ops or "FastWordpieceTokenize" in ops or \
        not any(op.startswith("Fast") for op in ops)


# A classifier's pipeline export: every class's score, texts cut as the TFLite model cuts them.
ANSWERS = dict(top_k=None, truncation=True, max_length=SEQUENCE_LENGTH)


def exported(tmp, model, tokenizer):
    """`model`'s SavedModel (its pipeline's: `model.export`; a classifier's with ANSWERS, an
    embedder's cut to the model's length) and float TFLite model under `tmp`: their paths."""
    model.export(str(tmp / "saved"), tokenizer=tokenizer,
                 **(ANSWERS if isinstance(model, tasks.TextClassifier) else {}))
    export_tflite(model, str(tmp / "float.tflite"), tokenizer, sequence_length=SEQUENCE_LENGTH)
    return tmp / "saved", tmp / "float.tflite"


def test_float_classifier_equals_the_saved_model_on_hostile_strings(tmp_path):
    tokenizer = tiny_tokenizer()
    texts = held_out(50, seed=1)
    saved_path, path = exported(tmp_path, centred_classifier(tokenizer, texts), tokenizer)
    texts = strings(HOSTILE + texts)
    ours = run(path, text=texts)
    theirs = saved(saved_path, text=texts)
    assert list(ours["label"]) == list(theirs["label"][:, 0])
    probabilities = class_scores(theirs, ["a", "b", "c"])
    np.testing.assert_array_equal(ours["label_id"], probabilities.argmax(-1))
    np.testing.assert_allclose(ours["probabilities"], probabilities, atol=1e-4)
    np.testing.assert_allclose(ours["logits"], raw(saved_path, tokenizer, texts)["logits"],
                               atol=1e-4)
    assert len(set(ours["label_id"])) == 3  # the labels vary: the comparison means something
    assert_only_allowed_ops(path)


@pytest.mark.slow
def test_quantized_classifiers(tmp_path, capsys):
    """On a briefly trained classifier and 300 held-out strings: float32 within 1e-4 of the
    SavedModel; dynamic int8 the same top label on >= 99%; float16 within 1e-2. The
    largest probability differences are printed."""
    tmp, tokenizer = tmp_path, tiny_tokenizer()
    model = classifier(tokenizer)
    saved_path, float_path = exported(tmp, model, tokenizer)
    texts = strings(topics(300, seed=1)[0])
    probabilities = class_scores(saved(saved_path, text=texts), model.label_names)
    theirs = {"probabilities": probabilities, "label_id": probabilities.argmax(-1)}
    counts = np.bincount(theirs["label_id"], minlength=3)
    assert counts.min() >= 0.1 * len(texts), counts  # every label is a real share
    float_size = float_path.stat().st_size
    ours = run(float_path, text=texts)
    np.testing.assert_allclose(ours["probabilities"], theirs["probabilities"], atol=1e-4)
    for quantize in ("dynamic", "float16"):
        path = tmp / f"{quantize}.tflite"
        export_tflite(model, str(path), tokenizer, quantize=quantize,
                      sequence_length=SEQUENCE_LENGTH)
        assert_only_allowed_ops(path)
        ours = run(path, text=texts)
        agreement = float(np.mean(ours["label_id"] == theirs["label_id"]))
        difference = float(np.abs(ours["probabilities"] - theirs["probabilities"]).max())
        with capsys.disabled():
            print(f"\n{quantize}: {path.stat().st_size} bytes (float32 {float_size}); "
                  f"top label agrees on {agreement:.2%} of {len(texts)} held-out texts; "
                  f"largest probability difference {difference:.4g}")
        assert agreement >= 0.99
        assert path.stat().st_size < float_size
        if quantize == "float16":
            assert difference < 1e-2


def test_ops_outside_tflite_and_tensorflow_text_are_refused(tmp_path):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def lower(text):
        return {"lower": tf.strings.lower(text)}

    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [lower.get_concrete_function()])
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS,
                                           tf.lite.OpsSet.SELECT_TF_OPS]
    flatbuffer = converter.convert()
    assert "FlexStringLower" in model_ops(flatbuffer)
    with pytest.raises(ValueError, match="FlexStringLower"):
        check_ops(flatbuffer)


def test_tokenization_differences_are_the_documented_ones():
    """The TFLite tokenizer (tensorflow-text's normaliser) gives kbert's ids on the hostile
    texts' characters, and differs where export_tflite's docstring says."""
    tokenizer = tiny_tokenizer()
    assert tokenization_differences(tokenizer, sorted(set("".join(HOSTILE)))) == []
    # Controls (kbert deletes them; spaces in TFLite), private use, unassigned and U+FFFD (kept in
    # TFLite), NFKC compatibility characters and full case folding (uncased). Format
    # characters (zero-width space, soft hyphen) are deleted by both.
    documented = ["\x00", "\x07", "\ue000", "\u0378", "\ufffd", "\ufb01", "\uff21",
                  "\u00df"]
    assert tokenization_differences(tokenizer, documented + ["\u200b", "\u00ad"]) == \
        documented
    cased = WordPieceTokenizer(TINY_VOCABULARY + ["\u8eca"], lowercase=False)
    # Cased: kbert composes (NFC), which maps a CJK compatibility ideograph to its unified
    # twin; the TFLite tokenizer does not.
    assert tokenization_differences(cased, ["\uf902", "a", "\u00e9"]) == ["\uf902"]


@pytest.mark.slow
def test_backbones_text_in_and_ids_in(tmp_path):
    """DistilBERT (no segments, no pooler) text in equals its SavedModel; ALBERT with ids in
    equals the Keras model."""
    tokenizer = tiny_tokenizer()
    distil = randomized(backbone("distil_bert", tokenizer), 3)
    export_saved_model(distil, str(tmp_path / "saved"), tokenizer,
                       sequence_length=SEQUENCE_LENGTH)
    export_tflite(distil, str(tmp_path / "distil.tflite"), tokenizer,
                  sequence_length=SEQUENCE_LENGTH)
    texts = strings(HOSTILE)
    ours = run(tmp_path / "distil.tflite", text=texts)
    theirs = saved(tmp_path / "saved", text=texts)
    assert set(ours) == {"sequence_output", "padding_mask"} == set(theirs)
    np.testing.assert_array_equal(ours["padding_mask"], theirs["padding_mask"])
    np.testing.assert_allclose(ours["sequence_output"], theirs["sequence_output"], atol=1e-4)
    assert_only_allowed_ops(tmp_path / "distil.tflite")

    sp = sentence_piece_tokenizer()
    albert = randomized(backbone("albert", sp), 4)
    export_tflite(albert, str(tmp_path / "albert.tflite"), sequence_length=SEQUENCE_LENGTH)
    rng = np.random.default_rng(0)
    ids = rng.integers(5, sp.vocabulary_size, (3, SEQUENCE_LENGTH)).astype(np.int32)
    mask = (np.arange(SEQUENCE_LENGTH)[None] < np.array([[24], [9], [2]])).astype(np.int32)
    inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}
    ours = run(tmp_path / "albert.tflite", **inputs)
    theirs = albert(inputs)
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(ours[name], np.asarray(theirs[name]), atol=1e-4)
    assert custom_ops((tmp_path / "albert.tflite").read_bytes()) == []


@pytest.mark.slow
def test_classifier_pairs_equal_the_saved_model(tmp_path):
    """`serving_pairs`: round-robin trimming of every mix of short and long segments gives
    kbert's packing of the pairs (fine-tuning's: BERT's longest first, B on ties), and the
    SavedModel's logits (`serving_ids`) on those ids. (The pipeline export's `serving_pairs`
    cuts a pair as transformers' tokenizer does, not always as BERT's data did.)"""
    tokenizer = tiny_tokenizer()
    texts = held_out(40, seed=4)
    model = centred_classifier(tokenizer, texts, seed=2)
    saved_path, path = exported(tmp_path, model, tokenizer)
    firsts = strings(HOSTILE + texts[:20])
    seconds = strings(list(reversed(HOSTILE)) + texts[20:])
    runner = interpreter(path).get_signature_runner("serving_pairs")
    ours = runner(text_a=firsts, text_b=seconds)
    logits = raw(saved_path, tokenizer, firsts, seconds)["logits"]
    np.testing.assert_allclose(ours["logits"], logits, atol=1e-4)
    probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(ours["probabilities"], probabilities, atol=1e-4)
    assert ours["label"].tolist() == [model.label_names[i].encode()
                                      for i in probabilities.argmax(-1)]
    assert_only_allowed_ops(path)


@pytest.mark.slow
def test_multi_label_regression_and_embedder_equal_their_saved_models(tmp_path):
    tokenizer = tiny_tokenizer()
    models = {
        "multi_label": tasks.TextClassifier(backbone("distil_bert", tokenizer), num_classes=4,
                                            problem_type="multi_label"),
        "regression": tasks.TextClassifier(backbone("electra", tokenizer),
                                           problem_type="regression"),
        "embedder": tasks.TextEmbedder(backbone("bert", tokenizer), pooling="mean",
                                       normalize=True),
    }
    texts = strings(HOSTILE + held_out(20, seed=3))
    for seed, (name, model) in enumerate(models.items()):
        saved_path, path = exported(tmp_path / name, randomized(model, seed), tokenizer)
        ours, theirs = run(path, text=texts), saved(saved_path, text=texts)
        ids = raw(saved_path, tokenizer, texts)  # the raw outputs on kbert's ids
        if name == "embedder":  # the SavedModel cuts to the model's 64 tokens, TFLite to 24
            assert set(ours) == set(theirs) == set(ids) == {"embedding"}
            np.testing.assert_allclose(ours["embedding"], ids["embedding"], atol=1e-4)
            lengths = tokenizer.tokenize(tf.constant(texts)).row_lengths().numpy()
            short = np.flatnonzero(lengths <= SEQUENCE_LENGTH - 2)  # not cut by either
            assert len(short) > 10
            np.testing.assert_allclose(ours["embedding"][short], theirs["embedding"][short],
                                       atol=1e-4)
        elif name == "regression":  # the raw value (problem_type "regression" stated)
            assert set(ours) == {"score"} and theirs["label"][:, 0].tolist() == \
                [b"LABEL_0"] * len(texts)
            np.testing.assert_allclose(ours["score"], theirs["score"][:, 0], atol=1e-4)
            np.testing.assert_allclose(ours["score"], ids["logits"][:, 0], atol=1e-4)
        else:  # multi-label: sigmoids
            names = [f"LABEL_{i}" for i in range(4)]
            probabilities = class_scores(theirs, names)
            np.testing.assert_allclose(ours["probabilities"], probabilities, atol=1e-4)
            np.testing.assert_allclose(ours["logits"], ids["logits"], atol=1e-4)
            assert ours["label"].tolist() == theirs["label"][:, 0].tolist()
            # TFLite: every name, the chosen (above 0.5) first, the first num_labels.
            chosen = [[names[i].encode() for i in np.flatnonzero(row > 0.5)]
                      for row in probabilities]
            assert ours["num_labels"].tolist() == [len(row) for row in chosen]
            for row, labels in enumerate(chosen):
                assert ours["labels"][row].tolist()[:len(labels)] == labels
                assert sorted(ours["labels"][row].tolist()) == [n.encode() for n in names]
            assert 0 < ours["num_labels"].sum() < 4 * len(texts)  # some chosen, not all
        assert_only_allowed_ops(path)


def test_what_tflite_cannot_follow_is_refused(tmp_path):
    tokenizer = tiny_tokenizer()
    model = tasks.TextClassifier(backbone("bert", tokenizer), num_classes=2)
    with pytest.raises(ValueError, match="quantize='int4'; allowed: None"):
        export_tflite(model, str(tmp_path / "m.tflite"), tokenizer, quantize="int4")
    with pytest.raises(ValueError, match=r"sequence_length must be an integer in \[3, 64\]"):
        export_tflite(model, str(tmp_path / "m.tflite"), tokenizer, sequence_length=65)
    literals = WordPieceTokenizer(TINY_VOCABULARY, split_special_tokens=False)
    with pytest.raises(ValueError, match="split_special_tokens=False"):
        export_tflite(model, str(tmp_path / "m.tflite"), literals)
    sp = sentence_piece_tokenizer()
    with pytest.raises(ValueError, match="SentencePieceTokenizer .ALBERT. cannot go inside"):
        export_tflite(backbone("albert", sp), str(tmp_path / "m.tflite"), sp)
    with pytest.raises(ValueError, match="label_names is for a TextClassifier"):
        export_tflite(backbone("bert", tokenizer), str(tmp_path / "m.tflite"), tokenizer,
                      label_names=["a"])
    assert not (tmp_path / "m.tflite").exists()


def test_pipeline_refusals(tmp_path):
    from tests.pipelines.conftest import load_pipeline

    pipe = load_pipeline("text-classification", "hf_tasks/bert_seq_single")
    with pytest.raises(ValueError, match="truncation=False: a TFLite model cannot refuse"):
        pipe.export_tflite(str(tmp_path / "p.tflite"))
    zero_shot = load_pipeline("zero-shot-classification", "hf_tasks/bert_nli")
    with pytest.raises(ValueError, match="fixes its labels at export"):
        export_tflite(zero_shot, str(tmp_path / "p.tflite"))
    assert not (tmp_path / "p.tflite").exists()


@pytest.mark.slow
def test_text_classification_pipeline_equals_its_saved_model(tmp_path):
    from tests.pipelines.conftest import load_pipeline

    pipe = load_pipeline("text-classification", "hf_tasks/bert_seq_single")
    options = dict(top_k=None, truncation=True)
    export_tflite(pipe, str(tmp_path / "p.tflite"), **options)
    pipe.export(str(tmp_path / "saved"), **options)
    texts = HOSTILE + ["A great movie!", "Awful.", "It was fine, I guess."]
    ours = run(tmp_path / "p.tflite", text=strings(texts))
    theirs = saved(tmp_path / "saved", text=strings(texts))
    assert ours["label"].tolist() == theirs["label"].tolist()
    np.testing.assert_allclose(ours["score"], theirs["score"], atol=1e-4)
    called = pipe(texts, **options)
    assert [[d["label"].encode() for d in row] for row in called] == ours["label"].tolist()
    assert_only_allowed_ops(tmp_path / "p.tflite")


def readme_blocks():
    """The Python blocks of docs/devices.md: (export, classify)."""
    text = (ROOT / "docs" / "devices.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, re.S)


@pytest.mark.slow
def test_readme_run_on_a_device(tmp_path):
    """docs/devices.md's two snippets as written: the export (on a tiny classifier of
    max_sequence_length 128), then the classification in a process without kbert (the
    interpreter is ai-edge-litert's; tensorflow-text only registers its kernels)."""
    export, classify = readme_blocks()
    tokenizer = tiny_tokenizer()
    model = classifier(tokenizer, seed=5, max_sequence_length=128, epochs=2)
    namespace = {"classifier": model, "tokenizer": tokenizer}
    exec_in(tmp_path, export, namespace)
    result = subprocess.run([sys.executable, "-c", classify + GUARD], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    printed = result.stdout.strip().splitlines()
    expected = pipeline_labels(model, tokenizer, ["A great movie!", "Awful."])
    assert printed[-1] == str(expected)


GUARD = """
import sys
assert not any(m.split(".")[0] in ("kbert", "keras_hub") for m in sys.modules)
"""


def exec_in(directory, code, namespace):
    import os

    before = os.getcwd()
    os.chdir(directory)
    try:
        exec(code, namespace)
    finally:
        os.chdir(before)


def pipeline_labels(model, tokenizer, texts):
    """The labels the text-classification pipeline gives `texts` on `model`."""
    return [answer["label"] for answer in
            kbert.pipeline("text-classification", model=model, tokenizer=tokenizer)(texts)]


def test_readme_has_the_snippets():
    export, classify = readme_blocks()
    assert "export_tflite(" in export and "get_signature_runner" in classify
