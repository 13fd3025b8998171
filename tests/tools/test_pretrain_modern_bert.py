"""tools/pretrain.py with ModernBERT's recipe (tools/flags/modern_bert.flags): the masked LM
alone at 30% masking on packed rows ([CLS] document [SEP] after one another, no padding), a
warmup-stable-decay schedule, a byte-level BPE learned by the run, and the export."""

import numpy as np
import pytest

from tests.tools.test_pretrain import ROOT, parse_flags

FLAGS = ROOT / "tools" / "flags" / "modern_bert.flags"
# Two layers, a window of 16 tokens (8 each side) on rows of 64, a global layer every 2nd.
TINY = dict(num_layers=2, hidden_size=32, num_heads=2, intermediate_size=48,
            local_attention=16, global_attn_every_n_layers=2, max_sequence_length=64)


def test_the_modern_bert_flagfile_is_the_papers_recipe(tmp_path):
    """The flagfile parses and validates and says what ModernBERT-Base's first phase is."""
    config = parse_flags([f"--flagfile={FLAGS}", f"--model_dir={tmp_path}/run"])
    config.validate()
    assert (config.preset, config.family, config.objective) == (
        "modern_bert_base", "modern_bert", "mlm")
    assert (config.masked_lm_prob, config.sequence_length, config.max_predictions) == (
        0.3, 1024, 308)
    assert config.pack_across_documents and config.fill_rows and config.short_seq_prob == 0.0
    assert config.separate_documents  # each document of a row to itself, as ModernBERT's
    assert (config.decay, config.warmup_steps, config.decay_steps, config.train_steps) == (
        "warmup_stable_decay", 636, 10597, 360000)
    assert (config.learning_rate, config.global_batch_size, config.weight_decay) == (
        8e-4, 4608, 1e-5)
    assert (config.adam_beta_2, config.adam_epsilon) == (0.98, 1e-6)
    assert config.resolved_tokenizer_type == "bpe" and config.resolved_lowercase is False


@pytest.mark.parametrize("args, message", [
    (["--preset=modern_bert_base"],
     "--tokenizer_type=auto: preset modern_bert_base's release tokenizes with a "
     "'tokenizer_json' file, which a run does not learn; give --tokenizer_type"),
    (["--tokenizer_type=bpe", "--fill_rows"],
     "--fill_rows packs documents one after the other: it needs --pack_across_documents."),
    (["--tokenizer_type=bpe", "--pack_across_documents", "--separate_documents"],
     "--separate_documents keeps apart the documents packed into a row: it needs "
     "--pack_across_documents --fill_rows."),
    (["--tokenizer_type=bpe", "--pack_across_documents", "--fill_rows",
      "--separate_documents", "--preset=roberta_base"],
     "--separate_documents: --preset=roberta_base (roberta) with --objective=mlm; only "
     "ModernBERT's masked LM (--objective=mlm on a modern_bert preset) keeps each document "
     "to itself. Other families attend across the documents of a row: use "
     "--noseparate_documents."),
    (["--tokenizer_type=bpe", "--decay_steps=10"],
     "--decay_steps=10 sets the final decay of --decay=warmup_stable_decay; --decay=linear "
     "has none."),
    (["--tokenizer_type=bpe", "--decay=warmup_stable_decay", "--decay_steps=995",
      "--warmup_steps=10"], "--decay_steps=995 must be at most --train_steps - --warmup_steps "
                            "= 990."),
])
def test_modern_bert_settings_that_cannot_run_fail_fast(tmp_path, args, message):
    from kbert.training.config_fields import ConfigError

    base = [f"--model_dir={tmp_path}/run", "--preset=modern_bert_base", "--objective=mlm"]
    with pytest.raises(ConfigError) as error:
        parse_flags(base + args).validate()
    assert message in str(error.value)


def test_the_recipe_trains_on_document_ids_and_exports_without_them(tmp_path):
    """--separate_documents: the run's model takes the rows' `document_ids`; what it exports
    (the same backbone and head weights) takes one text a row."""
    from kbert.training.objectives import OBJECTIVES

    config = parse_flags([f"--flagfile={FLAGS}", f"--model_dir={tmp_path}/run"])
    mlm = OBJECTIVES[config.objective]
    model = mlm.build(config, {"vocabulary_size": 64, **TINY})
    assert model.document_ids and "document_ids" in model.input
    served = mlm.model_to_export(model)
    assert "document_ids" not in served.input and served.backbone is model.backbone
    for trained, exported in zip(model.mlm_head.weights, served.mlm_head.weights):
        np.testing.assert_array_equal(np.asarray(trained), np.asarray(exported))


@pytest.mark.slow  # ~35 s of CPU (no XLA), ~100 s on the shared 2-core machine
def test_a_tiny_modern_bert_learns_on_packed_rows_and_exports(tmp_path):
    """The recipe's flags on a tiny ModernBERT (2 layers, a window smaller than the row):
    learned BPE, 30% masking, full rows, warmup-stable-decay; it beats the most frequent
    token and its export serves raw strings. Seen: mlm_accuracy 0.059 (the mean of the last
    80 steps; 0.067 with the documents of a row attending to one another) against 0.034 for
    the most frequent token (labels of 30 batches)."""
    import tensorflow as tf

    from kbert.data import corpora, pretraining_dataset
    from kbert.models import ModernBertPretrainer
    from kbert.training import run_pretraining

    corpus = tmp_path / "corpus.txt"
    documents = corpora.stdlib_docstrings().take(100).as_numpy_iterator()
    corpus.write_text("\n\n".join("\n".join(s.decode() for s in d) for d in documents))
    overrides = "".join(f" --config_override={k}={v}" for k, v in TINY.items()).split()
    config = parse_flags([
        f"--flagfile={FLAGS}", f"--input={corpus}", f"--model_dir={tmp_path}/run",
        f"--export_dir={tmp_path}/export", "--learned_vocabulary_size=500",
        "--sequence_length=64", "--max_predictions=20", "--global_batch_size=16",
        "--train_steps=160", "--steps_per_loop=80", "--learning_rate=5e-3",
        "--warmup_steps=20", "--decay_steps=40", "--precision=float32", "--verbose=0",
        "--nojit_compile",
        "--seed=1", *overrides])
    logs = run_pretraining(config)

    from kbert.tokenizers import tokenizer_types

    tokenizer = tokenizer_types.load(tmp_path / "run" / "vocab.json", lowercase=False)
    data = pretraining_dataset(corpora.text_files(str(corpus)), tokenizer, sequence_length=64,
                               max_predictions=20, batch_size=16, sentence_task="none",
                               masked_lm_prob=0.3, short_seq_prob=0.0, seed=1,
                               pack_across_documents=True, fill_rows=True, document_ids=True)
    batches = list(data.take(30).as_numpy_iterator())
    # Full rows: no padding in any batch of the stream but (possibly) its last row; the
    # rows' document ids (which the run's model took: --separate_documents) start at 1.
    assert all(f["padding_mask"].all() for f, _ in batches)
    assert all((f["document_ids"][:, 0] == 1).all() for f, _ in batches)
    assert max(f["document_ids"].max() for f, _ in batches) > 1
    # 30% of the non-special tokens, capped at 20 of 64.
    assert np.mean([l["mask_weights"].sum(axis=1).mean() for _, l in batches]) > 16
    labels = np.concatenate([l["mask_ids"][l["mask_weights"] > 0] for _, l in batches])
    baseline = np.bincount(labels).max() / len(labels)
    print(f"mlm_accuracy {logs['mlm_accuracy']:.4f}, most frequent token {baseline:.4f}")
    assert logs["mlm_accuracy"] > 1.3 * baseline, (logs, baseline)

    # The export is the fill-mask pipeline on raw strings (the learned BPE's <mask> in them)
    # and the backbone on ids (serving_ids).
    served = tf.saved_model.load(str(tmp_path / "export"))
    filled = served.signatures["serving_default"](text=tf.constant(["Return the <mask> of it."]))
    assert filled["num_masks"].numpy().tolist() == [1]
    assert all(s.decode().endswith(" of it.") for s in filled["sequence"].numpy()[0, 0])
    ids = [tokenizer.cls_id, *tokenizer.tokenize(["Return the value."]).to_list()[0],
           tokenizer.sep_id]
    out = served.signatures["serving_ids"](token_ids=tf.constant([ids], "int32"),
                                          padding_mask=tf.ones((1, len(ids)), "int32"))
    assert out["sequence_output"].shape == (1, len(ids), 32)
