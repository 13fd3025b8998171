"""kbert.serving.export_saved_model: signatures checked in a fresh TensorFlow-only process."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from kbert import presets
from kbert.serving import export_saved_model
from kbert.serving.saved_model import tokenize_with_masks
from kbert.tokenizers.packing import pack_segments as pack

ROOT = Path(__file__).resolve().parents[2]
SEQUENCE_LENGTH = 32
LONG = " ".join(["Return the number of items in a container, or raise an error."] * 40)
TEXTS = ["Return the number of items in a container.", "", "\xff\xfe not UTF-8", LONG,
         "A single word", "résumé naïve café"]
PAIRS_B = ["It is a list.", "Only the second one", "", LONG, "", "x"]
MASKED = ["Return the [MASK] of items in a [MASK].", "No mask here.", "",
          "[MASK]", LONG + " [MASK]", "[MASK] [MASK] [MASK] [MASK] [MASK] [MASK] [MASK] [MASK] "
          "[MASK] [MASK]"]


def as_bytes(texts):
    return [t.encode("latin-1") if t.startswith("\xff") else t.encode() for t in texts]


@pytest.fixture(scope="module")
def exported(tmp_path_factory, stdlib_vocab_file):
    from kbert.tokenizers import WordPieceTokenizer

    tmp = tmp_path_factory.mktemp("export")
    tokenizer = WordPieceTokenizer(stdlib_vocab_file)  # tests/conftest.py: learned once per run
    model = presets.load("bert_tiny", head="pretrainer", weights=None,
                         vocabulary_size=tokenizer.vocabulary_size, max_sequence_length=64)
    path = str(tmp / "saved_model")
    export_saved_model(model, path, tokenizer, sequence_length=SEQUENCE_LENGTH, top_k=4,
                       max_masks=8)
    return model, tokenizer, path


def keras_reference(model, tokenizer):
    """What the Keras model gives for the test inputs (ids packed eagerly in Python)."""
    backbone = model.backbone

    def encode(segments):
        inputs = pack(tokenizer, segments, SEQUENCE_LENGTH)
        out = backbone(inputs)
        return {"sequence_output": np.asarray(out["sequence_output"]),
                "pooled_output": np.asarray(out["pooled_output"]),
                "padding_mask": inputs["padding_mask"].numpy(), "inputs": inputs}

    texts, pairs_b = tf.constant(as_bytes(TEXTS)), tf.constant(as_bytes(PAIRS_B))
    single = encode([tokenizer.tokenize(texts)])
    pairs = encode([tokenizer.tokenize(texts), tokenizer.tokenize(pairs_b)])
    ids = single.pop("inputs")
    pairs.pop("inputs")
    masked = pack(tokenizer, [tokenize_with_masks(tokenizer, tf.constant(MASKED))],
                  SEQUENCE_LENGTH)
    return single, pairs, ids, masked


FRESH = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # registers the tokenizer's ops
path, inputs, out = sys.argv[1:]
spec = json.load(open(inputs))
loaded = tf.saved_model.load(path)
results = {}
for name, args in spec.items():
    kwargs = {key: tf.constant([v.encode("latin-1") if v.startswith("\\xff") else v.encode()
                                for v in value]) if isinstance(value[0], str)
              else tf.constant(value, tf.int32) for key, value in args.items()}
    for key, value in loaded.signatures[name](**kwargs).items():
        value = value.numpy()
        results[f"{name}/{key}"] = value.astype(bytes) if value.dtype == object else value
np.savez(out, **results)
# keras may come in with tensorflow (its dependency); kbert and keras-hub must not.
assert not any(m.split(".")[0] in ("kbert", "keras_hub") for m in sys.modules)
print("OK", sorted(loaded.signatures))
"""


@pytest.mark.slow
def test_a_fresh_tensorflow_process_gives_the_keras_outputs(exported, tmp_path):
    model, tokenizer, path = exported
    single, pairs, ids, masked = keras_reference(model, tokenizer)
    many = ["Return the number of items."] * 1000
    spec = {
        "serving_default": {"text": TEXTS},
        "serving_pairs": {"text_a": TEXTS, "text_b": PAIRS_B},
        "serving_ids": {k: v.numpy().tolist() for k, v in ids.items()},
        "fill_mask": {"text": MASKED},
    }
    (tmp_path / "inputs.json").write_text(json.dumps(spec))
    # A batch of a thousand, and batches of one.
    many_spec = {"serving_default": {"text": many}, "fill_mask": {"text": many[:1]},
                 "serving_pairs": {"text_a": TEXTS[:1], "text_b": PAIRS_B[:1]},
                 "serving_ids": {k: v.numpy()[:1].tolist() for k, v in ids.items()}}
    (tmp_path / "many.json").write_text(json.dumps(many_spec))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    for name in ("inputs", "many"):
        result = subprocess.run(
            [sys.executable, "-c", FRESH, path, str(tmp_path / f"{name}.json"),
             str(tmp_path / f"{name}.npz")], capture_output=True, text=True, env=env,
            timeout=300, cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "OK ['fill_mask', 'serving_default', 'serving_ids', 'serving_pairs']" in result.stdout
    out = np.load(tmp_path / "inputs.npz")

    for name, expected in (("serving_default", single), ("serving_pairs", pairs)):
        for key in ("sequence_output", "pooled_output"):
            np.testing.assert_allclose(out[f"{name}/{key}"], expected[key], atol=1e-5)
        np.testing.assert_array_equal(out[f"{name}/padding_mask"], expected["padding_mask"])
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(out[f"serving_ids/{key}"], single[key], atol=1e-5)
    # Truncation: the long text fills every position; the empty one is [CLS] [SEP].
    assert single["padding_mask"][3].sum() == SEQUENCE_LENGTH
    assert single["padding_mask"][1].sum() == 2
    assert ids["token_ids"][1, :2].numpy().tolist() == [tokenizer.cls_id, tokenizer.sep_id]

    # fill_mask against the Keras model's softmax at the mask positions.
    token_ids = masked["token_ids"].numpy()
    num_masks = out["fill_mask/num_masks"]
    assert num_masks.tolist() == [2, 0, 0, 1, 0, 8]  # the long text's mask was truncated away
    positions = np.zeros((len(MASKED), 8), "int32")
    for row in range(len(MASKED)):
        found = np.flatnonzero(token_ids[row] == tokenizer.mask_id)[:8]
        positions[row, :len(found)] = found
    logits = model({**{k: v.numpy() for k, v in masked.items()},
                    "mask_positions": positions})["mlm_logits"]
    probabilities = tf.nn.softmax(tf.cast(logits, tf.float32)).numpy()
    for row in range(len(MASKED)):
        for m in range(8):
            ids_out = out["fill_mask/token_ids"][row, m]
            if m >= num_masks[row]:
                assert (ids_out == -1).all() and (out["fill_mask/scores"][row, m] == 0).all()
                assert (out["fill_mask/tokens"][row, m] == b"").all()
                continue
            expected = np.argsort(-probabilities[row, m])[:4]
            np.testing.assert_allclose(out["fill_mask/scores"][row, m],
                                       probabilities[row, m][expected], atol=1e-5)
            assert [t.decode() for t in out["fill_mask/tokens"][row, m]] == [
                tokenizer.vocabulary[i] for i in ids_out]
    # "[MASK]" in the text is the mask id, and the words around it are tokenized as usual.
    first = token_ids[0][token_ids[0] != tokenizer.pad_id].tolist()
    words = tokenizer.tokenize(["Return the", "of items in a", "."]).to_list()
    assert first == [tokenizer.cls_id, *words[0], tokenizer.mask_id, *words[1],
                     tokenizer.mask_id, *words[2], tokenizer.sep_id]

    many_out = np.load(tmp_path / "many.npz")
    assert many_out["serving_default/sequence_output"].shape == (1000, SEQUENCE_LENGTH, 128)
    np.testing.assert_allclose(many_out["serving_default/pooled_output"][999],
                               many_out["serving_default/pooled_output"][0], atol=1e-6)
    np.testing.assert_allclose(many_out["serving_pairs/pooled_output"],
                               pairs["pooled_output"][:1], atol=1e-5)
    np.testing.assert_allclose(many_out["serving_ids/pooled_output"],
                               single["pooled_output"][:1], atol=1e-5)
    assert many_out["fill_mask/num_masks"].tolist() == [0]


@pytest.mark.slow
def test_saved_model_cli_lists_the_signatures(exported):
    _, _, path = exported
    cli = shutil.which("saved_model_cli") or str(Path(sys.executable).parent / "saved_model_cli")
    result = subprocess.run([cli, "show", "--dir", path, "--all"], capture_output=True,
                            text=True, timeout=300,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode == 0, result.stderr[-3000:]
    listing = result.stdout
    expected = {
        "serving_default": (["text"], ["sequence_output", "pooled_output", "padding_mask"]),
        "serving_pairs": (["text_a", "text_b"],
                          ["sequence_output", "pooled_output", "padding_mask"]),
        "serving_ids": (["token_ids", "segment_ids", "padding_mask"],
                        ["sequence_output", "pooled_output"]),
        "fill_mask": (["text"], ["tokens", "token_ids", "scores", "num_masks"]),
    }
    for name, (inputs, outputs) in expected.items():
        section = listing.split(f"signature_def['{name}']:")[1].split("signature_def[")[0]
        for key in inputs:
            assert f"inputs['{key}']" in section, (name, key)
        for key in outputs:
            assert f"outputs['{key}']" in section, (name, key)


@pytest.mark.slow
def test_the_graph_has_no_python_or_file_ops(exported):
    from tensorflow.core.protobuf import saved_model_pb2

    _, _, path = exported
    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString(Path(path, "saved_model.pb").read_bytes())
    graph = saved.meta_graphs[0].graph_def
    ops = {node.op for node in graph.node}
    for function in graph.library.function:
        ops |= {node.op for node in function.node_def}
    assert "FastWordpieceTokenizeWithOffsets" in ops  # the tokenizer is in the graph
    assert not ops & {"PyFunc", "PyFuncStateless", "EagerPyFunc", "ReadFile", "WriteFile"}


@pytest.mark.slow
def test_bad_arguments(exported):
    model, tokenizer, path = exported
    with pytest.raises(ValueError, match="sequence_length=65 is longer than the model's "
                                         "max_sequence_length=64"):
        export_saved_model(model, path + "_x", tokenizer, sequence_length=65)
    with pytest.raises(ValueError, match="`top_k` must be an integer >= 1, got 0"):
        export_saved_model(model, path + "_x", tokenizer, top_k=0)
    with pytest.raises(TypeError, match=r"takes a backbone \(BertBackbone, AlbertBackbone, ...\) or a pretrainer"):
        export_saved_model(object(), path, tokenizer)


@pytest.mark.slow
def test_a_model_without_segments_or_pooler(exported, tmp_path):
    """DistilBERT: serving_ids takes no segment_ids and nothing returns pooled_output; its
    masked-LM head still gives fill_mask."""
    _, tokenizer, _ = exported
    model = presets.load("distil_bert_base", weights=None, num_layers=1, hidden_size=32,
                         num_heads=2, intermediate_size=64, max_sequence_length=64,
                         vocabulary_size=tokenizer.vocabulary_size)
    path = str(tmp_path / "distil")
    export_saved_model(model, path, tokenizer, sequence_length=SEQUENCE_LENGTH)
    loaded = tf.saved_model.load(path)
    outputs = loaded.signatures["serving_default"](text=tf.constant(["A single word"]))
    assert sorted(outputs) == ["padding_mask", "sequence_output"]
    inputs = pack(tokenizer, [tokenizer.tokenize(tf.constant(["A single word"]))],
                  SEQUENCE_LENGTH)
    by_ids = loaded.signatures["serving_ids"](token_ids=inputs["token_ids"],
                                              padding_mask=inputs["padding_mask"])
    expected = model.backbone({k: inputs[k] for k in ("token_ids", "padding_mask")})
    np.testing.assert_allclose(by_ids["sequence_output"].numpy(),
                               np.asarray(expected["sequence_output"]), atol=1e-5)
    np.testing.assert_allclose(outputs["sequence_output"].numpy(),
                               by_ids["sequence_output"].numpy(), atol=1e-6)
    filled = loaded.signatures["fill_mask"](text=tf.constant(["Return the [MASK]."]))
    assert filled["num_masks"].numpy().tolist() == [1]


@pytest.mark.slow
def test_albert_with_its_sentencepiece_tokenizer(tmp_path):
    """The SentencePiece model is a constant of the graph, like the WordPiece one; the
    export equals the imported ALBERT (made by transformers: tests/fixtures/make_hf_tiny.py)."""
    import kbert.convert

    checkpoint = kbert.convert.read(ROOT / "tests" / "fixtures" / "hf_tiny" / "albert")
    model, tokenizer = checkpoint.build(), checkpoint.tokenizer()
    path = str(tmp_path / "albert")
    export_saved_model(model, path, tokenizer, sequence_length=16)
    assert (Path(path) / "spiece.model").read_bytes() == checkpoint.sentencepiece_model
    assert not (Path(path) / "vocab.txt").exists()
    loaded = tf.saved_model.load(path)
    texts = ["the word was in the way", "Naïve  café"]
    outputs = loaded.signatures["serving_default"](text=tf.constant(texts))
    inputs = pack(tokenizer, [tokenizer.tokenize(tf.constant(texts))], 16)
    expected = model.backbone(inputs)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(outputs[key].numpy(), np.asarray(expected[key]), atol=1e-5)
    filled = loaded.signatures["fill_mask"](text=tf.constant(["the [MASK] was in the way"]))
    assert filled["num_masks"].numpy().tolist() == [1]
    masked = pack(tokenizer, [tokenize_with_masks(tokenizer, tf.constant(
        ["the [MASK] was in the way"]))], 16)
    masked = {k: v.numpy() for k, v in masked.items()}
    assert masked["token_ids"][0, :3].tolist() == [tokenizer.cls_id, tokenizer.token_to_id(
        "▁the"), tokenizer.mask_id]
    logits = np.asarray(model({**masked, "mask_positions": np.array([[2]], "int32")})[
        "mlm_logits"])[0, 0]
    ids = filled["token_ids"].numpy()[0, 0]
    assert ids.tolist() == np.argsort(-logits)[:len(ids)].tolist()


@pytest.mark.slow
def test_mobile_bert_from_transformers(tmp_path):
    """MobileBERT's trigram window, bottlenecks and widened MLM table in a SavedModel: the
    export equals the MobileBertForPreTraining that transformers made
    (tests/fixtures/make_hf_mobile_bert.py), fill_mask included."""
    import kbert.convert

    checkpoint = kbert.convert.read(ROOT / "tests" / "fixtures" / "hf_tiny" / "mobile_bert")
    model, tokenizer = checkpoint.build(), checkpoint.tokenizer()
    path = str(tmp_path / "mobile_bert")
    export_saved_model(model, path, tokenizer, sequence_length=16)
    loaded = tf.saved_model.load(path)
    texts = ["the word was in the way", "she said they had many of them then"]
    outputs = loaded.signatures["serving_default"](text=tf.constant(texts))
    inputs = pack(tokenizer, [tokenizer.tokenize(tf.constant(texts))], 16)
    expected = model.backbone(inputs)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(outputs[key].numpy(), np.asarray(expected[key]), atol=1e-5)
    filled = loaded.signatures["fill_mask"](text=tf.constant(["the [MASK] was in the way"]))
    masked = pack(tokenizer, [tokenize_with_masks(tokenizer, tf.constant(
        ["the [MASK] was in the way"]))], 16)
    masked = {k: v.numpy() for k, v in masked.items()}
    logits = np.asarray(model({**masked, "mask_positions": np.array([[2]], "int32")})[
        "mlm_logits"])[0, 0]
    ids = filled["token_ids"].numpy()[0, 0]
    assert ids.tolist() == np.argsort(-logits)[:len(ids)].tolist()


def test_byte_pair_masks_take_the_space_before_them(tmp_path):
    """fill_mask's tokenization with a byte-level BPE: "the [MASK] of" is "Ġthe" <mask> "Ġof",
    the mask standing for a whole "Ġword" as in training (not "Ġthe" "Ġ" <mask>); the
    tokenizer's files are vocab.json and merges.txt."""
    from kbert.tokenizers.files import write_tokenizer_files
    from kbert.tokenizers import BytePairTokenizer, tokenizer_types
    from kbert.tokenizers.vocab_learning import learn_byte_pair_vocabulary

    sentences = [b"Return the value %d of the attribute." % i for i in range(100)]
    vocabulary, merges = learn_byte_pair_vocabulary(tf.data.Dataset.from_tensor_slices(
        sentences), 300, add_prefix_space=True)
    tokenizer = BytePairTokenizer(vocabulary, merges, add_prefix_space=True)
    ids = tokenize_with_masks(tokenizer, tf.constant(
        ["Return the [MASK] of the attribute.", "Return the  \t[MASK]"])).to_list()
    tokens = [[tokenizer.id_to_token(i) for i in row] for row in ids]
    assert tokens[0] == ["\u0120Return", "\u0120the", "<mask>", "\u0120of", "\u0120the",
                         "\u0120attribute", "."]
    assert tokens[1] == ["\u0120Return", "\u0120the", "<mask>"]
    write_tokenizer_files(tokenizer, str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["merges.txt", "vocab.json"]
    again = tokenizer_types.load(str(tmp_path / "vocab.json"), lowercase=False)
    assert (again.vocabulary, again.merges) == (vocabulary, merges)
