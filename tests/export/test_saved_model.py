"""`kbert.export` of a pretrainer and of a backbone (what `tools/pretrain.py --export_dir`
writes): the fill-mask or feature-extraction pipeline's answers on text, and the backbone's
outputs on token ids (`serving_ids`), checked in a fresh TensorFlow-only process."""

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert import presets
from kbert.tokenizers.packing import pack_segments as pack

SEQUENCE_LENGTH = 32
LONG = " ".join(["Return the number of items in a container, or raise an error."] * 3)
MASKED = ["Return the [MASK] of items in a [MASK].", "[MASK]", LONG + " [MASK]",
          "résumé naïve [MASK] café", "[MASK] [MASK] [MASK]"]
TEXTS = ["Return the number of items in a container.", "", "A single word",
         "résumé naïve café"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory, stdlib_vocab_file):
    from kbert.tokenizers import WordPieceTokenizer

    tmp = tmp_path_factory.mktemp("export")
    tokenizer = WordPieceTokenizer(stdlib_vocab_file)  # tests/conftest.py: learned once per run
    model = presets.load("bert_tiny", head="pretrainer", weights=None,
                         vocabulary_size=tokenizer.vocabulary_size, max_sequence_length=64)
    path = kbert.export(model, str(tmp / "saved_model"), tokenizer=tokenizer, top_k=4)
    return model, tokenizer, path


FRESH = """
import pickle, sys
import tensorflow as tf
import tensorflow_text  # registers the tokenizer's ops
path, calls, out = sys.argv[1:]
loaded = tf.saved_model.load(path)
results = []
for name, kwargs in pickle.load(open(calls, "rb")):
    outputs = loaded.signatures[name](**{k: tf.constant(v) for k, v in kwargs.items()})
    results.append({k: v.numpy() for k, v in outputs.items()})
pickle.dump((sorted(loaded.signatures), results), open(out, "wb"))
# keras may come in with tensorflow (its dependency); kbert and keras-hub must not.
assert not any(m.split(".")[0] in ("kbert", "keras_hub") for m in sys.modules)
"""


def fresh(path, calls, tmp_path):
    """The signatures of the SavedModel `path` and its outputs for `calls` ([(signature,
    kwargs)]), from a process with TensorFlow and tensorflow-text alone."""
    (tmp_path / "calls.pkl").write_bytes(pickle.dumps(calls))
    result = subprocess.run(
        [sys.executable, "-c", FRESH, path, str(tmp_path / "calls.pkl"),
         str(tmp_path / "out.pkl")], capture_output=True, text=True, timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    return pickle.loads((tmp_path / "out.pkl").read_bytes())


def ids_of(tokenizer, texts, names=("token_ids", "segment_ids", "padding_mask")):
    inputs = pack(tokenizer, [tokenizer.tokenize(tf.constant(texts))], SEQUENCE_LENGTH)
    return {name: inputs[name].numpy() for name in names}


@pytest.mark.slow
def test_a_fresh_tensorflow_process_answers_as_the_pipeline(exported, tmp_path):
    model, tokenizer, path = exported
    ids = ids_of(tokenizer, TEXTS)
    signatures, (filled, by_ids, many, one) = fresh(path, [
        ("serving_default", {"text": MASKED}),
        ("serving_ids", ids),
        # A batch of a thousand, and a batch of one.
        ("serving_default", {"text": ["Return the [MASK] of items."] * 1000}),
        ("serving_ids", {name: value[:1] for name, value in ids.items()}),
    ], tmp_path)
    assert signatures == ["serving_default", "serving_ids"]
    meta = json.loads(Path(path, "export.json").read_text())
    assert (meta["task"], meta["model"], meta["options"]) == ("fill-mask", "backbone",
                                                              {"top_k": 4})

    # serving_default: the fill-mask pipeline's answers, each mask's top 4 in order.
    answers = kbert.pipeline("fill-mask", model=model, tokenizer=tokenizer)(MASKED, top_k=4)
    assert filled["num_masks"].tolist() == [2, 1, 1, 1, 3]
    for row, answer in enumerate(answers):
        per_mask = answer if filled["num_masks"][row] > 1 else [answer]
        for m, candidates in enumerate(per_mask):
            assert filled["token"][row, m].tolist() == [c["token"] for c in candidates]
            assert [s.decode() for s in filled["token_str"][row, m]] == [
                c["token_str"] for c in candidates]
            np.testing.assert_allclose(filled["score"][row, m],
                                       [c["score"] for c in candidates], atol=1e-5)
    assert (filled["token"][0, 2:] == -1).all() and (filled["score"][1, 1:] == 0).all()

    # serving_ids: the backbone's outputs, as Keras gives them.
    expected = model.backbone(ids)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(by_ids[key], np.asarray(expected[key]), atol=1e-5)
        np.testing.assert_allclose(one[key], by_ids[key][:1], atol=1e-5)
    assert many["token"].shape == (1000, 1, 4)
    np.testing.assert_allclose(many["score"][999], many["score"][0], atol=1e-6)


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
        "serving_default": (["text"], ["score", "token", "token_str", "sequence", "num_masks"]),
        "serving_ids": (["token_ids", "segment_ids", "padding_mask"],
                        ["sequence_output", "pooled_output"]),
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
def test_a_pipeline_runs_the_backbone_of_the_export(exported):
    """`serving_ids` returns the backbone's outputs: feature extraction runs on the export;
    fill-mask needs the masked-LM head's logits, which the export does not return."""
    model, tokenizer, path = exported
    features = kbert.pipeline("feature-extraction", model=path)
    expected = kbert.pipeline("feature-extraction", model=model, tokenizer=tokenizer)
    np.testing.assert_allclose(np.asarray(features(TEXTS[0])), np.asarray(expected(TEXTS[0])),
                               atol=1e-5)
    with pytest.raises(ValueError, match="fill-mask cannot run on the SavedModel .* serves "
                                         "feature-extraction"):
        kbert.pipeline("fill-mask", model=path)


@pytest.mark.slow
def test_a_backbone_without_segments_or_pooler(exported, tmp_path):
    """DistilBERT's backbone exports as feature extraction: serving_ids takes no segment_ids
    and returns no pooled_output."""
    _, tokenizer, _ = exported
    backbone = presets.load("distil_bert_base", head=None, weights=None, num_layers=1,
                            hidden_size=32, num_heads=2, intermediate_size=64,
                            max_sequence_length=64, vocabulary_size=tokenizer.vocabulary_size)
    path = kbert.export(backbone, str(tmp_path / "distil"), tokenizer=tokenizer)
    loaded = tf.saved_model.load(path)
    assert json.loads(Path(path, "export.json").read_text())["task"] == "feature-extraction"
    outputs = loaded.signatures["serving_default"](text=tf.constant(["A single word"]))
    assert sorted(outputs) == ["features", "num_tokens"]
    inputs = ids_of(tokenizer, ["A single word"], ("token_ids", "padding_mask"))
    by_ids = loaded.signatures["serving_ids"](**inputs)
    assert sorted(by_ids) == ["sequence_output"]
    np.testing.assert_allclose(by_ids["sequence_output"].numpy(),
                               np.asarray(backbone(inputs)["sequence_output"]), atol=1e-5)
    tokens = int(outputs["num_tokens"][0])
    np.testing.assert_allclose(outputs["features"].numpy()[0, :tokens],
                               by_ids["sequence_output"].numpy()[0, :tokens], atol=1e-5)


def test_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="kbert.export takes a pipeline or a kbert model"):
        kbert.export(object(), str(tmp_path / "x"))
    backbone = presets.load("electra_small", head=None, weights=None, num_layers=1,
                            hidden_size=32, num_heads=2, intermediate_size=64,
                            embedding_size=32, vocabulary_size=50)
    from kbert.models import ElectraPretrainer
    from kbert.tokenizers import WordPieceTokenizer

    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"])
    with pytest.raises(TypeError, match=r"export its discriminator, kbert.export\("
                                        r"model.discriminator\(\)"):
        kbert.export(ElectraPretrainer(backbone), str(tmp_path / "x"), tokenizer=tokenizer)
    # Nor does a fill-mask pipeline on it (which runs in Python) export the sampler.
    pipe = kbert.pipeline("fill-mask", model=ElectraPretrainer(backbone), tokenizer=tokenizer)
    for format in ("saved_model", "tflite"):
        with pytest.raises(TypeError, match="export its discriminator"):
            pipe.export(str(tmp_path / "x"), format=format)
    assert not (tmp_path / "x").exists()


def test_byte_pair_masks_take_the_space_before_them(tmp_path):
    """A fill-mask export's tokenization with a byte-level BPE: "the <mask> of" is "Ġthe"
    <mask> "Ġof", the mask standing for a whole "Ġword" as in training (not "Ġthe" "Ġ"
    <mask>); the tokenizer's files are vocab.json and merges.txt."""
    from kbert.tasks.graph.packing import ids
    from kbert.tokenizers import BytePairTokenizer, tokenizer_types
    from kbert.tokenizers.files import write_tokenizer_files
    from kbert.tokenizers.vocab_learning import learn_byte_pair_vocabulary

    sentences = [b"Return the value %d of the attribute." % i for i in range(100)]
    vocabulary, merges = learn_byte_pair_vocabulary(tf.data.Dataset.from_tensor_slices(
        sentences), 300, add_prefix_space=True)
    tokenizer = BytePairTokenizer(vocabulary, merges, add_prefix_space=True)
    rows = ids(tokenizer, tf.constant(["Return the <mask> of the attribute.",
                                       "Return the  \t<mask>"])).to_list()
    tokens = [[tokenizer.id_to_token(i) for i in row] for row in rows]
    assert tokens[0] == ["\u0120Return", "\u0120the", "<mask>", "\u0120of", "\u0120the",
                         "\u0120attribute", "."]
    assert tokens[1] == ["\u0120Return", "\u0120the", "<mask>"]
    write_tokenizer_files(tokenizer, str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["merges.txt", "vocab.json"]
    again = tokenizer_types.load(str(tmp_path / "vocab.json"), lowercase=False)
    assert (again.vocabulary, again.merges) == (vocabulary, merges)
