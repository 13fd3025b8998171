"""Task SavedModels (kbert.serving.export_saved_model on kbert.tasks models): in a fresh process
with only TensorFlow and tensorflow-text they predict what the Keras model predicts, decoded
by kbert.data in Python (logits and probabilities to 1e-5; labels, words, entity spans,
answers and offsets exactly)."""

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import kbert.models
from kbert import tasks
from kbert.tasks.question_answering.data import QuestionExample
from kbert.tasks.question_answering.features import encode_questions
from kbert.serving import export_saved_model
from kbert.tasks.text_classification.features import classification_dataset
from kbert.tasks.token_classification import decode as tagging
from kbert.tasks.token_classification import serving as tagging_signatures
from kbert.tasks.token_classification.data import encode_tagging
from kbert.tokenizers import words_graph as word_alignment
from kbert.tokenizers.alignment import Word, align_texts, split_words
from kbert.tokenizers.packing import pack_segments
from tests.tasks.question_answering.test_features import CONTEXTS, sentence_piece_tokenizer
from tests.tokenizers.test_alignment import TRICKY_TEXT, tiny_tokenizer
from tests.helpers import TINY

SEQUENCE_LENGTH = 32
# Accents (composed and decomposed), CJK, emoji, runs of every kind of whitespace,
# zero-width and NUL characters inside words, text longer than the sequence.
TEXTS = [TRICKY_TEXT, *CONTEXTS[1:], "the new york city is big", "x\x00y \x00 café\u200b!", "a"]
PAIRS_B = ["Where is Paris?", "東京", "", "e\u0301", "the city", "b", TRICKY_TEXT]
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]
QUESTIONS = ["Where is Tokyo?", "Who is the big café owner in the city of Paris at 1990?",
             "what?", "where is the city", "Is it?", "new york"]
ANSWER_CONTEXTS = [TRICKY_TEXT, *CONTEXTS[1:], "", "tokyo"]
# Windows of 21 to 25 pieces (questions of at most 8) repeating 13: a new one every 8 to 12.
QA = dict(doc_stride=13, max_question_length=8)
QA_V2 = dict(QA, n_best=3, max_answer_length=4, version_2=True)

FRESH = """
import pickle, sys
import tensorflow as tf
import tensorflow_text  # registers the tokenizer's ops
calls = pickle.load(open(sys.argv[1], "rb"))
results = {}
for name, (path, signature, inputs) in calls.items():
    loaded = tf.saved_model.load(path)
    args = {key: tf.constant(value) for key, value in inputs.items()}
    results[name] = {key: value.numpy() for key, value in
                     loaded.signatures[signature](**args).items()}
pickle.dump(results, open(sys.argv[2], "wb"))
assert not any(m.split(".")[0] in ("kbert", "keras_hub") for m in sys.modules)
print("OK", "kbert" in sys.modules)
"""


def tiny_backbone(family, tokenizer):
    config = kbert.models.FAMILIES[family].config(
        **{**TINY, "vocabulary_size": tokenizer.vocabulary_size, "max_sequence_length": 64})
    return kbert.models.build(family, config, head=None)


def build(task, family, tokenizer, seed, **kwargs):
    """A tiny task model with random weights, fixed by `seed` (std 0.3: logits far apart,
    no near ties for float32 noise to flip)."""
    model = tasks.TASKS[task](tiny_backbone(family, tokenizer), **kwargs)
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        weight.assign(rng.normal(0.0, 0.3, weight.shape).astype(weight.dtype))
    if task == "text_classifier":
        # Centred on the test texts: the [CLS] vectors of a random model differ little, so
        # that without it every text gets the same label.
        features = next(iter(classification_dataset(TEXTS, tokenizer, SEQUENCE_LENGTH, 64)))
        bias = next(w for w in model.classifier.weights  # the output layer's
                    if w.path.endswith("bias") and w.shape == (model.num_classes,))
        bias.assign(bias - np.mean(np.asarray(model(features)), axis=0))
    return model


def utf8(texts):
    return np.array([t.encode() for t in texts], dtype=object)


def numpy(x):
    return tf.nest.map_structure(lambda v: np.asarray(v, np.float32), x)


def keras_answers(model, examples):
    """kbert.data's windows (QA's stride and question length) and the Keras model's logits."""
    encoded = encode_questions(examples, tiny_tokenizer(), SEQUENCE_LENGTH, **QA)
    return encoded, numpy(model({k: encoded.features[k] for k in model.input}))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Every task exported, the Keras references, and the fresh process's outputs."""
    tmp = tmp_path_factory.mktemp("tasks")
    tokenizer = tiny_tokenizer()
    models = {
        "classifier": build("text_classifier", "bert", tokenizer, 1,
                            label_names=["negative", "neutral", "positive"]),
        "multi_label": build("text_classifier", "bert", tokenizer, 2, num_classes=4,
                             problem_type="multi_label"),
        "regression": build("text_classifier", "electra", tokenizer, 3,
                            problem_type="regression"),
        "tagger": build("token_classifier", "bert", tokenizer, 4, label_names=TAGS),
        "answerer": build("question_answerer", "distil_bert", tokenizer, 5),
        "answerer_v2": build("question_answerer", "bert", tokenizer, 6),
        "embedder": build("text_embedder", "bert", tokenizer, 7, pooling="mean",
                          normalize=True),
    }
    examples = [QuestionExample(str(i), q, c)
                for i, (q, c) in enumerate(zip(QUESTIONS, ANSWER_CONTEXTS))]
    # A threshold in the widest space between the questions' null - best differences (away
    # from float noise): some answers are "", some not.
    encoded, out = keras_answers(models["answerer_v2"], examples)
    answers = encoded.decode(out["start_logits"], out["end_logits"], n_best=3,
                             max_answer_length=4, version_2=True, null_threshold=1e9)
    gaps = sorted(a["null_score"] - a["score"] for a in answers.values() if a["text"])
    widest = max(range(1, len(gaps) - 2), key=lambda i: gaps[i + 1] - gaps[i])
    assert gaps[widest + 1] - gaps[widest] > 1e-3
    null_threshold = (gaps[widest] + gaps[widest + 1]) / 2
    options = {"tagger": dict(tag_scheme="IOB2"), "answerer": QA,
               "answerer_v2": dict(QA_V2, null_threshold=null_threshold)}
    paths = {}
    for name, model in models.items():
        paths[name] = str(tmp / name)
        export_saved_model(model, paths[name], tokenizer, sequence_length=SEQUENCE_LENGTH,
                           **options.get(name, {}))
    features = next(iter(classification_dataset(TEXTS, tokenizer, SEQUENCE_LENGTH,
                                                batch_size=64)))
    ids = {k: v.numpy() for k, v in features.items()}
    contexts = {"question": utf8(QUESTIONS), "context": utf8(ANSWER_CONTEXTS)}
    calls = {
        "classifier": ("classifier", "serving_default", {"text": utf8(TEXTS)}),
        "classifier_pairs": ("classifier", "serving_pairs",
                             {"text_a": utf8(TEXTS), "text_b": utf8(PAIRS_B)}),
        "classifier_ids": ("classifier", "serving_ids", ids),
        "multi_label": ("multi_label", "serving_default", {"text": utf8(TEXTS)}),
        "regression": ("regression", "serving_default", {"text": utf8(TEXTS)}),
        "tagger": ("tagger", "serving_default", {"text": utf8(TEXTS + ["", " \t\u200b"])}),
        "tagger_ids": ("tagger", "serving_ids", ids),
        "answerer": ("answerer", "serving_default", contexts),
        "answerer_v2": ("answerer_v2", "serving_default", contexts),
        "embedder": ("embedder", "serving_default", {"text": utf8(TEXTS)}),
        "embedder_one": ("embedder", "serving_default", {"text": utf8(TEXTS[-1:])}),
    }
    calls = {name: (paths[model], signature, inputs)
             for name, (model, signature, inputs) in calls.items()}
    with open(tmp / "calls.pkl", "wb") as f:
        pickle.dump(calls, f)
    result = subprocess.run(
        [sys.executable, "-c", FRESH, str(tmp / "calls.pkl"), str(tmp / "out.pkl")],
        capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
        timeout=600, cwd=tmp)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "OK False" in result.stdout
    with open(tmp / "out.pkl", "rb") as f:
        outputs = pickle.load(f)
    return {"models": models, "outputs": outputs, "paths": paths, "ids": ids,
            "examples": examples, "null_threshold": null_threshold}


def strings(values):
    return [v.decode("utf-8") for v in np.ravel(values)]


@pytest.mark.slow
def test_text_classifier(exported):
    model, out = exported["models"]["classifier"], exported["outputs"]
    names = ["negative", "neutral", "positive"]
    logits = numpy(model(exported["ids"]))
    probabilities = tf.nn.softmax(logits).numpy()
    for name in ("classifier", "classifier_ids"):
        np.testing.assert_allclose(out[name]["logits"], logits, atol=1e-5, rtol=0)
        np.testing.assert_allclose(out[name]["probabilities"], probabilities, atol=1e-5, rtol=0)
        assert out[name]["label_id"].tolist() == probabilities.argmax(-1).tolist()
        assert strings(out[name]["label"]) == [names[i] for i in probabilities.argmax(-1)]
    assert len(set(probabilities.argmax(-1))) > 1  # the labels vary: the test can fail
    # Pairs, packed as kbert.data packs them (its reader refuses the empty text_b here).
    tokenizer = tiny_tokenizer()
    packed = pack_segments(tokenizer, [tokenizer.tokenize(utf8(TEXTS)), tokenizer.tokenize(
        utf8(PAIRS_B))], SEQUENCE_LENGTH)
    expected = tf.nn.softmax(numpy(model(packed))).numpy()
    np.testing.assert_allclose(out["classifier_pairs"]["probabilities"], expected, atol=1e-5,
                               rtol=0)
    assert strings(out["classifier_pairs"]["label"]) == [names[i] for i in expected.argmax(-1)]


@pytest.mark.slow
def test_multi_label_and_regression(exported):
    out = exported["outputs"]
    ids = exported["ids"]
    probabilities = tf.sigmoid(numpy(exported["models"]["multi_label"](ids))).numpy()
    np.testing.assert_allclose(out["multi_label"]["probabilities"], probabilities, atol=1e-5,
                               rtol=0)
    chosen = probabilities > 0.5
    assert 0 < chosen.sum() < chosen.size
    for row, labels, count in zip(chosen, out["multi_label"]["labels"],
                                  out["multi_label"]["num_labels"]):
        expected = [f"LABEL_{i}" for i in np.flatnonzero(row)]
        assert strings(labels) == expected + [""] * (len(row) - len(expected))
        assert count == len(expected)
    score = numpy(exported["models"]["regression"](ids))[:, 0]
    assert sorted(out["regression"]) == ["score"]
    np.testing.assert_allclose(out["regression"]["score"], score, atol=1e-5, rtol=0)


@pytest.mark.slow
def test_token_classifier_entities_with_character_offsets(exported):
    model, out = exported["models"]["tagger"], exported["outputs"]["tagger"]
    texts = TEXTS + ["", " \t\u200b"]
    encoded = encode_tagging(texts, tiny_tokenizer(), SEQUENCE_LENGTH)
    encoded.label_names = TAGS
    logits = numpy(model(encoded.features))
    np.testing.assert_allclose(exported["outputs"]["tagger_ids"]["logits"],
                               numpy(model(exported["ids"])), atol=1e-5, rtol=0)
    probabilities = tf.nn.softmax(logits).numpy()
    word_tags = encoded.word_predictions(logits)
    entities = encoded.entities(logits, "IOB2")
    assert encoded.truncated_words > 0 and sum(map(len, entities)) > 10
    for row, text in enumerate(texts):
        words = split_words(text)
        count = int(out["num_words"][row])
        assert strings(out["words"][row][:count]) == [w.text for w in words]
        assert out["word_starts"][row][:count].tolist() == [w.start for w in words]
        assert out["word_ends"][row][:count].tolist() == [w.end for w in words]
        assert strings(out["word_tags"][row][:count]) == [t or "" for t in word_tags[row]]
        # Each word's score: its tag's probability at its first piece.
        positions = {int(w): p for p, w in enumerate(encoded.word_ids[row]) if w >= 0}
        scores = np.array([probabilities[row, positions[i]].max() if i in positions else 0.0
                           for i in range(len(words))])
        np.testing.assert_allclose(out["word_scores"][row][:count], scores, atol=1e-5, rtol=0)
        n = int(out["num_entities"][row])
        got = list(zip(strings(out["entity_types"][row][:n]),
                       out["entity_starts"][row][:n].tolist(),
                       out["entity_ends"][row][:n].tolist(),
                       strings(out["entity_texts"][row][:n])))
        assert got == [tuple(e) for e in entities[row]]
        for entity, score in zip(entities[row], out["entity_scores"][row][:n]):
            inside = [i for i, w in enumerate(words) if entity.start <= w.start < entity.end]
            np.testing.assert_allclose(score, scores[inside].mean(), atol=1e-5)
            assert text[entity.start : entity.end] == entity.text
        assert (out["entity_starts"][row][n:] == -1).all()
        assert all(s == b"" for s in out["entity_texts"][row][n:])


@pytest.mark.slow
def test_question_answerer_answers_from_the_original_context(exported):
    out = exported["outputs"]
    examples = exported["examples"]
    for name, options in (("answerer", dict(QA)), ("answerer_v2", dict(
            QA_V2, null_threshold=exported["null_threshold"]))):
        decode = {k: options[k] for k in ("n_best", "max_answer_length", "version_2",
                                          "null_threshold") if k in options}
        encoded, logits = keras_answers(exported["models"][name], examples)
        assert sum(w.example_index == 0 for w in encoded.windows) >= 3  # a long context
        answers = list(encoded.decode(logits["start_logits"], logits["end_logits"],
                                      **decode).values())
        got = out[name]
        assert strings(got["answer"]) == [a["text"] for a in answers]
        assert got["start"].tolist() == [a["start"] for a in answers]
        assert got["end"].tolist() == [a["end"] for a in answers]
        np.testing.assert_allclose(got["score"], [a["score"] for a in answers], atol=1e-5,
                                   rtol=0)
        for answer, example in zip(answers, examples):
            assert example.context[answer["start"] : answer["end"]] == answer["text"]
        if name == "answerer_v2":
            np.testing.assert_allclose(got["null_score"], [a["null_score"] for a in answers],
                                       atol=1e-5, rtol=0)
            texts = [a["text"] for a in answers]
            # The threshold splits them (and the empty context has no span at all).
            assert texts.count("") >= 3 and len(texts) - texts.count("") >= 2, texts
        else:
            assert "null_score" not in got
            assert answers[4]["text"] == "" and got["score"][4] == -np.inf  # empty context
            # An answer that starts or ends inside a word: cut by its pieces' characters.
            assert any({a["start"], a["end"]} - {b for w in split_words(e.context)
                                                 for b in (w.start, w.end)}
                       for a, e in zip(answers, examples) if a["text"])


@pytest.mark.slow
def test_text_embedder_and_graph_ops(exported):
    from tensorflow.core.protobuf import saved_model_pb2

    model, out = exported["models"]["embedder"], exported["outputs"]
    expected = numpy(model(exported["ids"]))
    np.testing.assert_allclose(out["embedder"]["embedding"], expected, atol=1e-5, rtol=0)
    np.testing.assert_allclose(out["embedder_one"]["embedding"], expected[-1:], atol=1e-5,
                               rtol=0)
    for name in ("tagger", "answerer_v2"):
        saved = saved_model_pb2.SavedModel()
        saved.ParseFromString(Path(exported["paths"][name], "saved_model.pb").read_bytes())
        graph = saved.meta_graphs[0].graph_def
        ops = {node.op for node in graph.node}
        for function in graph.library.function:
            ops |= {node.op for node in function.node_def}
        assert "FastWordpieceTokenizeWithOffsets" in ops
        assert not ops & {"PyFunc", "PyFuncStateless", "EagerPyFunc", "ReadFile"}
        assert (Path(exported["paths"][name]) / "vocab.txt").exists()


def test_graph_words_and_pieces_match_text_spans():
    """The in-graph word split, wordpieces and piece spans equal kbert.tokenizers.alignment'
    (uncased, cased and SentencePiece tokenizers; offsets in code points)."""
    rng = np.random.default_rng(0)
    alphabet = [*"ab É\u0301é,.東京😀\u200b\x00\t\u3000ΣİﬁIJ-", "\u00a0", "\U0001F3FB"]
    texts = TEXTS + ["", "   ", "\u200b", "ΑΣ Σ İstanbul ﬁne ™"] + [
        "".join(rng.choice(alphabet, 12)) for _ in range(20)]
    # A new SentencePiece tokenizer: the cached one's TensorFlow resource may belong to a
    # context that an earlier test reset.
    for tokenizer in (tiny_tokenizer(True), tiny_tokenizer(False),
                      sentence_piece_tokenizer.__wrapped__()):
        aligned = tf.function(lambda x: word_alignment.align(
            word_alignment.valid_utf8(x), tokenizer))(tf.constant(utf8(texts)))
        words, pieces = aligned["words"], aligned["pieces"]
        splits, piece_splits = words["row_splits"].numpy(), pieces.row_splits.numpy()
        spans = np.stack([aligned["piece_starts"].numpy(), aligned["piece_ends"].numpy()], 1)
        for row, expected in enumerate(align_texts(texts, tokenizer)):
            lo, hi = splits[row], splits[row + 1]
            got = [Word(t, s, e) for t, s, e in zip(
                strings(words["text"][lo:hi]), words["start"][lo:hi].numpy().tolist(),
                words["end"][lo:hi].numpy().tolist())]
            assert got == expected.words, texts[row]
            first, last = piece_splits[lo], piece_splits[hi]
            assert pieces.flat_values[first:last].numpy().tolist() == expected.piece_ids.tolist()
            np.testing.assert_array_equal(spans[first:last], expected.piece_spans,
                                          err_msg=repr(texts[row]))


def test_entity_decoding_matches_kbert_data():
    rng = np.random.default_rng(0)
    schemes = {"IOB2": TAGS, "BIOES": ["O", "B-PER", "I-PER", "E-PER", "S-PER", "S-LOC",
                                       "B-LOC", "E-LOC", "I-LOC"],
               "BILOU": ["O", "B-X", "I-X", "L-X", "U-X", "U-Y", "MISC"]}
    for scheme, names in schemes.items():
        prefixes, types, type_names = tagging_signatures.tag_tables(names, scheme)
        lengths = [0, 1, 5, 17, 30, 2]
        tags = [rng.integers(0, len(names), n) for n in lengths]
        flat = np.concatenate(tags).astype(np.int32)
        rows = np.repeat(np.arange(len(lengths)), lengths).astype(np.int32)
        row_splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        first, last, _ = tagging_signatures.decode_entities(
            tf.gather(prefixes, flat), tf.gather(types, flat), rows, row_splits)
        got = [(type_names[types[flat[f]]], int(f), int(l) + 1)
               for f, l in zip(first.numpy(), last.numpy())]
        expected = []
        for row, row_tags in enumerate(tags):
            words = [Word("w", row_splits[row] + i, row_splits[row] + i + 1)
                     for i in range(len(row_tags))]
            expected += [(e.type, e.start, e.end) for e in tagging.decode_entities(
                [names[t] for t in row_tags], words, scheme)]
        assert got == expected, scheme


def test_bad_arguments(tmp_path):
    tokenizer = tiny_tokenizer()
    backbone = tiny_backbone("bert", tokenizer)
    path = str(tmp_path / "x")
    with pytest.raises(ValueError, match="`tag_scheme` is for a TokenClassifier, not a "
                                         "TextClassifier"):
        export_saved_model(tasks.TextClassifier(backbone, num_classes=2), path, tokenizer,
                           tag_scheme="BIOES")
    with pytest.raises(ValueError, match="exports with its tag names"):
        export_saved_model(tasks.TokenClassifier(backbone, num_classes=3), path, tokenizer)
    with pytest.raises(ValueError, match="'E-PER' is not of the IOB2 scheme"):
        export_saved_model(tasks.TokenClassifier(backbone, label_names=["O", "E-PER"]), path,
                           tokenizer)
    with pytest.raises(ValueError, match="max_question_length=64 leaves no room"):
        export_saved_model(tasks.QuestionAnswerer(backbone), path, tokenizer,
                           sequence_length=32)
    with pytest.raises(ValueError, match=r"doc_stride=21 \(the pieces a window repeats from "
                                         r"the one before\) must be smaller than the window's "
                                         r"context length after the longest question, 21 "
                                         r"pieces \(sequence_length=32 minus "
                                         r"max_question_length=8 and 3 special tokens\)"):
        export_saved_model(tasks.QuestionAnswerer(backbone), path, tokenizer,
                           sequence_length=32, max_question_length=8, doc_stride=21)
    with pytest.raises(ValueError, match="version_2: for task models"):
        export_saved_model(backbone, path, tokenizer, version_2=True)
    with pytest.raises(ValueError, match="2 label_names for a model of 3 classes"):
        export_saved_model(tasks.TextClassifier(backbone, num_classes=3), path, tokenizer,
                           label_names=["a", "b"])
