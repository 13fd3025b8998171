"""tools/pretrain.py with a DeBERTa-v3 preset: replaced-token detection with gradient-
disentangled embedding sharing on a SentencePiece vocabulary the run learns from raw text,
the masked LM on a WordPiece vocabulary, and the SavedModels of both."""

import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.tools.test_pretrain import (ENV, ROOT, parse_flags, run_here, small_run_flags,  # noqa: F401
                                       vocab_file)

DEBERTA_V3_FLAGS = ROOT / "tools" / "flags" / "deberta_v3.flags"
TINY = dict(num_layers=2, hidden_size=32, num_heads=2, intermediate_size=64,
            position_buckets=8, max_sequence_length=64)


def test_the_deberta_v3_flagfile_is_the_released_recipe(tmp_path):
    """tools/flags/deberta_v3.flags parses and validates, and says what DeBERTa-v3-Base's
    run is: a cased SentencePiece vocabulary of 128,100 pieces learned into model_dir, RTD
    with a generator half as deep, 512 tokens, microsoft/DeBERTa's rtd.sh schedule."""
    config = parse_flags([f"--flagfile={DEBERTA_V3_FLAGS}", f"--model_dir={tmp_path}/run"])
    config.validate()
    assert (config.preset, config.family, config.objective) == (
        "deberta_v3_base", "deberta_v3", "rtd")
    assert config.resolved_tokenizer_type == "sentencepiece" and config.vocab_file is None
    assert config.learned_vocabulary_size == 128100 and config.resolved_lowercase is False
    assert (config.sequence_length, config.resolved_generator_layers_fraction) == (512, 0.5)
    assert (config.global_batch_size, config.learning_rate, config.warmup_steps) == (
        256, 1e-4, 10000)


@pytest.mark.parametrize("args, message", [
    (["--generator_layers_fraction=0"], "--generator_layers_fraction must be in (0, 1], got 0"),
    (["--generator_layers_fraction=1.5"], "--generator_layers_fraction must be in (0, 1]"),
    (["--generator_hidden_fraction=0.5"],
     "--generator_hidden_fraction=0.5 does not apply to --preset=deberta_v3_xsmall "
     "(deberta_v3): its generator is as wide as its discriminator; "
     "--generator_layers_fraction sets its size."),
    (["--preset=electra_small", "--generator_layers_fraction=1.5"],
     "--generator_layers_fraction must be in (0, 1]"),
    (["--preset=roberta_base"], "needs a preset of the electra or deberta_v3 family"),
])
def test_the_generator_size_flags_fail_fast(tmp_path, args, message):
    from kbert.training.config_fields import ConfigError

    with pytest.raises(ConfigError) as error:
        parse_flags([f"--model_dir={tmp_path}/run", "--preset=deberta_v3_xsmall",
                     "--objective=rtd", *args]).validate()
    assert message in str(error.value)


def test_the_generator_depth_defaults_to_the_family_s_and_both_families_take_it(tmp_path):
    """DeBERTa-v3's generator is half as deep by default, ELECTRA's as deep (its run records
    no depth it did not use); an ELECTRA run given --generator_layers_fraction builds a
    shallower generator, as ElectraPretrainer allows."""
    from kbert.training.objectives import OBJECTIVES

    def config(*args):
        return parse_flags([f"--model_dir={tmp_path}", "--objective=rtd", *args])

    assert config("--preset=deberta_v3_xsmall").resolved_generator_layers_fraction == 0.5
    electra = config("--preset=electra_small")
    assert electra.generator_layers_fraction is None
    assert electra.resolved_generator_layers_fraction == 1.0
    shallow = config("--preset=electra_small", "--generator_layers_fraction=0.5")
    shallow.validate()
    sizes = {**TINY, "num_layers": 4, "vocabulary_size": 60}
    del sizes["position_buckets"]  # DeBERTa-v3's alone
    model = OBJECTIVES["rtd"].build(shallow, sizes)
    assert model.get_config()["generator_layers_fraction"] == 0.5


def test_rtd_on_a_deberta_v3_preset_builds_gdes_and_exports_the_discriminator(tmp_path):
    """The rtd objective builds DeBERTa-v3's pretrainer (generator `generator_layers_fraction`
    as deep) on a deberta_v3 preset and ELECTRA's on an electra one; what a run exports and
    fine-tunes is the discriminator with the generator's table plus the delta."""
    import keras

    from kbert.models import DebertaV3Backbone, DebertaV3RtdPretrainer, ElectraPretrainer
    from kbert.training.objectives import OBJECTIVES

    rtd = OBJECTIVES["rtd"]
    config = parse_flags([f"--model_dir={tmp_path}", "--preset=deberta_v3_xsmall",
                          "--objective=rtd", "--generator_layers_fraction=0.25"])
    sizes = {**TINY, "num_layers": 4, "vocabulary_size": 60}
    model = rtd.build(config, sizes)
    assert isinstance(model, DebertaV3RtdPretrainer)
    assert model.generator.config.num_layers == 1 and model.backbone.config.num_layers == 4
    delta = model.backbone.embeddings.token_embedding.embeddings
    delta.assign(np.full(delta.shape, 0.5, "float32"))
    exported = rtd.model_to_export(model)
    assert isinstance(exported, DebertaV3Backbone) and exported is not model.backbone
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(exported.embeddings.token_embedding.embeddings),
        keras.ops.convert_to_numpy(model.generator.embeddings.token_embedding.embeddings) + 0.5,
        atol=1e-6)
    encoder = rtd.encoder(model)  # what fine-tuning from the run's model_dir starts from
    assert isinstance(encoder, DebertaV3Backbone)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(encoder.embeddings.token_embedding.embeddings),
        keras.ops.convert_to_numpy(exported.embeddings.token_embedding.embeddings), atol=1e-6)

    electra = parse_flags([f"--model_dir={tmp_path}", "--preset=electra_small",
                           "--objective=rtd"])
    model = rtd.build(electra, {"num_layers": 1, "vocabulary_size": 60})
    assert isinstance(model, ElectraPretrainer)
    assert rtd.model_to_export(model) is model.backbone is rtd.encoder(model)


# Only tensorflow and tensorflow_text: what a server that never installed kbert has.
SERVE_RAW_STRINGS = """
import sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401 - registers the SentencePiece ops

assert not any(name == "kbert" or name.startswith("kbert.") for name in sys.modules)
export_dir, out = sys.argv[1], sys.argv[2]
texts = ["Return the value of the Attribute.", "The  file is opened in binary mode!"]
served = tf.saved_model.load(export_dir).signatures["serving_default"](text=tf.constant(texts))
np.savez(out, features=served["features"].numpy(), num_tokens=served["num_tokens"].numpy())
"""


@pytest.mark.slow
def test_deberta_v3_rtd_learns_from_raw_text_and_serves_the_discriminator(tmp_path):
    """Raw text -> pretrain.py --preset=deberta_v3_xsmall --objective=rtd with no vocabulary:
    the run learns a cased SentencePiece model into model_dir, its generator's masked LM beats
    the most-frequent-token baseline on the same data, and the exported SavedModel (feature
    extraction) serves raw strings in a fresh process (tensorflow + tensorflow_text only) with the discriminator's
    sequence_output of the last checkpoint."""
    import keras

    from kbert.data import corpora, pretraining_dataset
    from kbert.tokenizers import SentencePieceTokenizer
    from kbert.loading import runs

    corpus = tmp_path / "corpus.txt"
    documents = corpora.stdlib_docstrings().take(300).as_numpy_iterator()
    corpus.write_text("\n\n".join("\n".join(s.decode() for s in d) for d in documents))
    model_dir, export_dir = tmp_path / "run", tmp_path / "export"
    flags = dict(preset="deberta_v3_xsmall", objective="rtd", input=corpus,
                 tokenizer_type="sentencepiece", learned_vocabulary_size=1000,
                 sequence_length=64, max_predictions=10, global_batch_size=32,
                 train_steps=240, steps_per_loop=120, learning_rate=6e-3,
                 warmup_steps=20, seed=1, verbose=2, model_dir=model_dir,
                 export_dir=export_dir)
    result = run_here([f"--{k}={v}" for k, v in flags.items()]
                      + [f"--config_override={k}={v}" for k, v in TINY.items()])
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Learning a sentencepiece vocabulary (~1000 tokens)" in result.stdout
    assert "Exported the discriminator" in result.stdout, result.stdout[-2000:]
    final = next(line for line in result.stdout.splitlines() if line.startswith("Final ("))
    logs = dict(item.rsplit(" ", 1) for item in final.split(": ", 1)[1].split(", "))
    assert {"mlm_accuracy", "rtd_accuracy", "mlm_loss", "rtd_loss"} <= set(logs), final

    spiece = model_dir / "spiece.model"
    tokenizer = SentencePieceTokenizer(spiece, lowercase=False)
    data = pretraining_dataset(corpora.text_files(str(corpus)), tokenizer, sequence_length=64,
                               max_predictions=10, batch_size=32, sentence_task="none", seed=1)
    labels = np.concatenate([l["mask_ids"][l["mask_weights"] > 0]
                             for _, l in data.take(40).as_numpy_iterator()])
    baseline = np.bincount(labels).max() / len(labels)
    print(final, f"(most frequent token: {baseline:.4f})")  # shown with pytest -s
    # Seen: 0.0786 (the mean of the last 120 steps, ~36,000 predictions: sd 0.0014) against a
    # baseline of 0.0440 (400 steps: 0.1035; 200 steps at 3e-3 reached only 0.058). 1.5x is
    # 9 sd under what was seen, 15 sd over the baseline.
    assert float(logs["mlm_accuracy"]) > 1.5 * baseline, (final, baseline)

    assert (export_dir / "spiece.model").read_bytes() == spiece.read_bytes()
    out = tmp_path / "served.npz"
    served = subprocess.run([sys.executable, "-c", SERVE_RAW_STRINGS, str(export_dir), str(out)],
                            capture_output=True, text=True, timeout=600, env=ENV, cwd=tmp_path)
    assert served.returncode == 0, served.stderr[-3000:]
    served = np.load(out)

    # The discriminator of the last checkpoint, rebuilt from the run as fine-tuning does.
    run = runs.read_run(str(model_dir))
    discriminator = run.encoder(run.build())
    texts = ["Return the value of the Attribute.", "The  file is opened in binary mode!"]
    ids = np.full((2, 64), tokenizer.pad_id, "int32")
    for row, pieces in enumerate(tokenizer.tokenize(texts).to_list()):
        ids[row, : len(pieces) + 2] = [tokenizer.cls_id, *pieces, tokenizer.sep_id]
    mask = (ids != tokenizer.pad_id).astype("int32")
    assert served["num_tokens"].tolist() == mask.sum(axis=1).tolist()
    expected = keras.ops.convert_to_numpy(
        discriminator({"token_ids": ids, "padding_mask": mask})["sequence_output"])
    longest = int(mask.sum(axis=1).max())
    assert served["features"].shape == (2, longest, 32)
    np.testing.assert_allclose(served["features"][mask[:, :longest] > 0], expected[mask > 0],
                               atol=1e-5)


@pytest.mark.slow
def test_deberta_v3_masked_lm_trains_and_exports(tmp_path, vocab_file):  # noqa: F811
    import keras

    from kbert import presets
    from kbert.models import DebertaV3Pretrainer

    model_dir, export_dir = tmp_path / "run", tmp_path / "export"
    overrides = ["--config_override=num_layers=2", "--config_override=hidden_size=32",
                 "--config_override=num_heads=2", "--config_override=intermediate_size=64",
                 "--config_override=position_buckets=8"]
    result = run_here(small_run_flags(model_dir, vocab_file, steps=20,
                                      preset="deberta_v3_xsmall", objective="mlm",
                                      export_dir=export_dir) + overrides)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "mlm_accuracy" in result.stdout and "Exported the model" in result.stdout

    vocabulary_size = sum(1 for _ in open(vocab_file, encoding="utf-8"))
    model = presets.load("deberta_v3_xsmall", head="mlm", weights=None, num_layers=2,
                         hidden_size=32, num_heads=2, intermediate_size=64, position_buckets=8,
                         vocabulary_size=vocabulary_size)
    assert isinstance(model, DebertaV3Pretrainer)
    path = tf.train.latest_checkpoint(str(model_dir / "checkpoints"))
    tf.train.Checkpoint(model=list(model.variables)).restore(path).expect_partial()
    ids = np.array([[2, 40, 41, 42, 43, 44, 45, 46, 47, 48, 3, 0]], "int32")
    inputs = {"token_ids": ids, "padding_mask": (ids > 0).astype("int32")}
    expected = keras.ops.convert_to_numpy(model.backbone(inputs)["sequence_output"])
    served = tf.saved_model.load(str(export_dir)).signatures["serving_ids"](
        **{k: tf.constant(v) for k, v in inputs.items()})
    mask = inputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(served["sequence_output"].numpy()[mask], expected[mask],
                               atol=1e-5)
