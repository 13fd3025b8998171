"""Multi-task fine-tuning: the task schedule, the best epoch by the heads' mean, the flags,
and a two-head run (a classifier and a tagger on one tiny DistilBERT) that trains, scores,
saves, exports and resumes."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from kbert.training import task_sampling
from tests.tools.test_finetune import TINY, WORDS, sentences, write_csv

ROOT = Path(__file__).resolve().parents[2]


# === The schedule ===

def test_sampling_follows_the_configured_proportions():
    """20,000 steps over tasks of 100, 300 and 600 rows: each task's share is within 0.015
    (over 4 standard deviations) of n_i / sum n (proportional) and of n_i ** (1 / T) /
    sum n ** (1 / T) (temperature 2); round robin takes each in turn."""
    sizes = [100, 300, 600]
    proportional = task_sampling.task_sequence(sizes, "proportional", 20000, seed=0)
    np.testing.assert_allclose(np.bincount(proportional) / 20000, [0.1, 0.3, 0.6], atol=0.015)
    expected = np.sqrt(sizes) / np.sqrt(sizes).sum()  # [0.179, 0.309, 0.437] ... normalised
    np.testing.assert_allclose(task_sampling.probabilities(sizes, "temperature", 2.0),
                               expected)
    tempered = task_sampling.task_sequence(sizes, "temperature", 20000, seed=0, temperature=2)
    np.testing.assert_allclose(np.bincount(tempered) / 20000, expected, atol=0.015)
    np.testing.assert_allclose(task_sampling.probabilities(sizes, "temperature", 1.0),
                               [0.1, 0.3, 0.6])
    assert task_sampling.task_sequence(sizes, "round_robin", 7, seed=0).tolist() == [
        0, 1, 2, 0, 1, 2, 0]


def test_the_sequence_is_the_seeds_and_a_resumed_run_continues_it():
    first = task_sampling.task_sequence([5, 9], "proportional", 300, seed=4)
    assert first.tolist() == task_sampling.task_sequence([5, 9], "proportional", 300,
                                                         seed=4).tolist()
    assert first.tolist() != task_sampling.task_sequence([5, 9], "proportional", 300,
                                                         seed=5).tolist()
    # Where each task's stream resumes after step 100: the batches it took before.
    taken = task_sampling.batches_taken(first, 100, 2)
    assert taken == [int(np.sum(first[:100] == 0)), int(np.sum(first[:100] == 1))]
    assert sum(taken) == 100 and task_sampling.batches_taken(first, 0, 2) == [0, 0]


@pytest.mark.parametrize("args, message", [
    (([0, 3], "proportional"), "Task sizes must be one or more positive numbers"),
    (([3], "uniform"), "Unknown task sampling 'uniform'. Allowed: proportional, temperature"),
    (([3], "temperature", 0.0), "The sampling temperature must be > 0, got 0.0"),
])
def test_bad_schedules_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        task_sampling.probabilities(*args)


def test_the_best_epoch_by_the_mean_or_by_one_head():
    """Fixed scores over three epochs: head a's accuracy 0.5, 0.9, 0.6; head b's SQuAD F1
    (percent) 80, 40, 90. Mean of a and b / 100: 0.65, 0.65, 0.75 -> epoch 3; by a: epoch 2
    (a tie keeps the first)."""
    from kbert.training.callbacks import Evaluation
    from kbert.training.multitask_loop import combined_scores

    epochs = [{"a": {"accuracy": 0.5, "f1": 0.1}, "b": {"exact_match": 70.0, "f1": 80.0}},
              {"a": {"accuracy": 0.9, "f1": 0.2}, "b": {"exact_match": 30.0, "f1": 40.0}},
              {"a": {"accuracy": 0.6, "f1": 0.3}, "b": {"exact_match": 85.0, "f1": 90.0}}]
    metrics = {"a": "accuracy", "b": "f1"}

    def best(metric):
        scores = iter(epochs)
        evaluation = Evaluation(lambda: combined_scores(next(scores), metrics, {"b"}), metric)
        for epoch in range(3):
            evaluation.on_epoch_end(epoch, {})
        return evaluation.best

    by_mean = best("mean")
    assert by_mean["epoch"] == 3 and by_mean["scores"]["mean"] == pytest.approx(0.75)
    assert by_mean["scores"]["b/exact_match"] == 85.0
    assert best("a/accuracy")["epoch"] == 2
    assert best("b/f1")["epoch"] == 3


# === The loop: each head learns its own task on the shared backbone ===

def _head_data(rng, rows, length=8):
    """Random ids of 3..19: the classifier's label is whether the row starts with id 5
    (else 6), the tagger's tag is 1 on every id 7."""
    ids = rng.integers(3, 20, size=(rows, length)).astype("int32")
    ids[ids == 5] = 6
    labels = rng.integers(0, 2, size=rows).astype("int32")
    ids[:, 0] = np.where(labels, 5, 6)
    inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
              "padding_mask": np.ones_like(ids)}
    return inputs, labels, (ids == 7).astype("int32")


def test_each_head_learns_its_task_in_the_multitask_loop():
    """A classifier (does the row start with id 5?) and a tagger (which ids are 7?) on one
    tiny BERT, trained by `multitask_loop.train` on a random sequence of heads (60 steps of
    16 rows):
    each head's accuracy on fresh rows of its task rises from chance (the classifier's 50%;
    the tagger's 1 - share of 7s, by tagging all 0) to over 95%."""
    import keras

    from kbert.models import BertBackbone
    from kbert.tasks.text_classification.model import TextClassifier
    from kbert.tasks.token_classification.model import TokenClassifier
    from kbert.training.multitask_loop import MultiTaskModel, train

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    backbone = BertBackbone(vocabulary_size=20, num_layers=1, hidden_size=32, num_heads=2,
                            intermediate_size=64, max_sequence_length=8, dropout=0.0,
                            attention_dropout=0.0)
    heads = {"cls": TextClassifier(backbone, num_classes=2, dropout=0.0),
             "tag": TokenClassifier(backbone, num_classes=2, dropout=0.0)}
    optimizer = keras.optimizers.Adam(3e-3)
    for model in heads.values():
        model.compile(optimizer=optimizer)
    model = MultiTaskModel(heads, backbone, optimizer)
    optimizer.build(model.trainable_variables)  # both heads' slots, as build_model does

    def stream(which, seed):
        batches = np.random.default_rng(seed)
        while True:
            inputs, labels, tags = _head_data(batches, 16)
            yield inputs, (labels if which == "cls" else tags)

    test, labels, tags = _head_data(rng, 256)

    def accuracy():
        predicted = {name: head.predict(test, verbose=0).argmax(-1)
                     for name, head in heads.items()}
        return (float(np.mean(predicted["cls"] == labels)),
                float(np.mean(predicted["tag"] == tags)))

    before = accuracy()
    sequence = task_sampling.task_sequence([1, 1], "proportional", 60, seed=0)
    train(model, sequence, {"cls": stream("cls", 1), "tag": stream("tag", 2)}, epochs=1,
          steps_per_epoch=60, verbose=0)
    after = accuracy()
    assert before[0] < 0.7 and before[1] < 0.95, before
    assert after[0] > 0.95 and after[1] > 0.95, (before, after)


# === The flags ===

def parse(args):
    from absl import flags

    from kbert.training import config_fields
    from kbert.training.finetuning_config import FinetuningConfig

    flag_values = flags.FlagValues()
    config_fields.define_flags(FinetuningConfig, flag_values)
    flag_values(["finetune.py", *args])
    return config_fields.config_from_flags(FinetuningConfig, flag_values)


def test_the_multitask_flagfile_parses_into_heads(tmp_path):
    from kbert.training import multitask_config

    config = parse([f"--flagfile={ROOT / 'tools' / 'flags' / 'glue_multitask.flags'}",
                    f"--model_dir={tmp_path}/run"])
    heads = multitask_config.validate(config)
    config.validate()
    assert [h.name for h in heads] == ["mrpc", "stsb"]
    assert [h.config.train_data for h in heads] == ["tfds:glue/mrpc", "tfds:glue/stsb"]
    assert all(h.config.sequence_length == 128 and h.config.preset == "bert_base"
               and not h.config.multitask for h in heads)
    assert config.sampling == "temperature" and config.train_data is None

    config = parse([f"--checkpoint={TINY}", f"--model_dir={tmp_path}/run",
                    "--multitask=a:task=text_classifier,train_data=tfds:glue/sst2",
                    "--multitask=b:task=token_classifier,train_data=tfds:conll2003,"
                    "loss_weight=0.5,sequence_length=64,group_by_length=false,"
                    "tag_scheme=IOB1,global_batch_size=8"])
    a, b = multitask_config.validate(config)
    assert (a.loss_weight, b.loss_weight) == (1.0, 0.5)
    assert (b.config.task, b.config.sequence_length, b.config.group_by_length,
            b.config.tag_scheme, b.config.global_batch_size) == (
        "token_classifier", 64, False, "IOB1", 8)
    assert a.config.sequence_length == 128 and a.config.tag_scheme == "IOB2"


HEAD_A = "--multitask=a:task=text_classifier,train_data=tfds:glue/sst2"


@pytest.mark.parametrize("args, message", [
    ([HEAD_A], "--multitask gives 1 head(s): a multi-task run needs two or more"),
    ([HEAD_A, "--multitask=a:task=text_classifier,train_data=tfds:glue/mrpc"],
     "--multitask: the head name 'a' is given twice"),
    ([HEAD_A, "--multitask=2b:task=text_classifier"], "'2b:task=text_classifier' is not "
                                                      "NAME:KEY=VALUE"),
    ([HEAD_A, "--multitask=b:task=text_classifier,train_data"], "head 'b': 'train_data' "
                                                                "is not KEY=VALUE"),
    ([HEAD_A, "--multitask=b:task=text_classifier"], "--multitask head 'b': give train_data"),
    ([HEAD_A, "--multitask=b:task=text_classifier,train_data=tfds:glue/mrpc,epochs=2"],
     "--multitask head 'b': unknown key(s) epochs. A head takes: loss_weight, "
     "global_batch_size, task, train_data, validation_data,"),
    ([HEAD_A, "--multitask=b:task=parser,train_data=tfds:glue/mrpc"],
     "--multitask head 'b': --task='parser' is not one of"),
    ([HEAD_A, "--multitask=b:task=text_classifier,train_data=tfds:glue/mrpc,"
               "sequence_length=long"], "head 'b': sequence_length='long': expected an "
                                        "integer"),
    ([HEAD_A, "--multitask=b:task=text_classifier,train_data=tfds:glue/mrpc,"
               "loss_weight=-1"], "head 'b': loss_weight must be a number > 0, got -1.0"),
    ([HEAD_A, "--multitask=b:task=text_classifier,train_data=/no/file.csv"],
     "--multitask head 'b': --train_data='/no/file.csv': no such file"),
    ([HEAD_A, "--multitask=b:task=text_classifier,train_data=tfds:glue/mrpc",
      "--train_data=tfds:glue/sst2"], "--train_data is for one task: with --multitask"),
    ([HEAD_A, "--multitask=b:task=text_classifier,train_data=tfds:glue/mrpc",
      "--best_by=c"], "--best_by='c' is not 'mean' or a head: a, b."),
    ([HEAD_A, "--multitask=b:task=text_classifier,train_data=tfds:glue/mrpc",
      "--strategy=mirrored"], "--strategy=mirrored: a multi-task run takes default"),
    ([HEAD_A, "--multitask=b:task=text_classifier,train_data=tfds:glue/mrpc",
      "--sampling_temperature=0"], "--sampling_temperature must be > 0, got 0.0"),
    (["--train_data=tfds:glue/sst2", "--best_by=a"], "--best_by='a' is for --multitask"),
    ([], "Give --train_data (or two or more --multitask heads)."),
])
def test_bad_multitask_flags_are_refused(tmp_path, args, message):
    from kbert.training.config_fields import ConfigError

    with pytest.raises(ConfigError) as error:
        parse([f"--checkpoint={TINY}", f"--model_dir={tmp_path}/run", *args]).validate()
    assert message in str(error.value)


# === A run: a classifier and a tagger on one backbone ===

def _conll(path, count, seed):
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(count):
        words, tags = list(rng.choice(WORDS, 5)), ["O"] * 5
        position = int(rng.integers(0, 4))
        words[position:position + 2] = ["he", "she"]
        tags[position:position + 2] = ["B-PER", "I-PER"]
        lines.append("".join(f"{w} {t}\n" for w, t in zip(words, tags)) + "\n")
    path.write_text("".join(lines))
    return str(path)


def _settings(tmp_path, model_dir, **kwargs):
    train = write_csv(tmp_path / "train.csv", sentences(48, 0))
    tagged = _conll(tmp_path / "train.conll", 32, 0)
    return dict(
        model_dir=str(model_dir), checkpoint=str(TINY), epochs=2, global_batch_size=8,
        learning_rate=5e-3, verbose=0, jit_compile=False, seed=3, sequence_length=24,
        layer_decay=0.8, unfreeze_every=2, unfreeze_unit="step",
        multitask={"cls": {"task": "text_classifier", "train_data": train,
                           "validation_data": train},
                   "ner": {"task": "token_classifier", "train_data": tagged,
                           "validation_data": tagged, "loss_weight": "0.5",
                           "sequence_length": "16"}}, **kwargs)


def _weights(model):
    return {v.path: np.array(v) for v in model.weights}


@pytest.fixture(scope="module")
def whole_run(tmp_path_factory):
    """A run of 2 epochs of 10 steps (cls 6 batches, ner 4), the backbone frozen for its
    first 2 steps and unfrozen a layer every 2 steps after (all of it from step 6), layer-wise decay 0.8; exported.
    Returns (its result, its initial weights by head, its directory)."""
    import pytest as _pytest

    from kbert.training import FinetuningConfig, multitask, run_finetuning

    tmp_path = tmp_path_factory.mktemp("multitask")
    initial = {}
    build = multitask.build_model

    def build_and_keep(*args, **kwargs):
        model = build(*args, **kwargs)
        initial.update({name: _weights(head) for name, head in model.heads.items()})
        return model

    with _pytest.MonkeyPatch.context() as patch:
        patch.setattr(multitask, "build_model", build_and_keep)
        result = run_finetuning(FinetuningConfig(**_settings(
            tmp_path, tmp_path / "run", export_dir=str(tmp_path / "export"))))
    return result, initial, tmp_path


@pytest.mark.slow
def test_a_two_head_run_trains_both_heads_and_the_backbone_and_scores_both(whole_run):
    from kbert.untrusted import load_model

    result, initial, tmp_path = whole_run
    run = tmp_path / "run"
    assert set(result["best"]["scores"]) == {
        "cls/accuracy", "cls/f1", "cls/macro_f1", "cls/matthews_corrcoef",
        "ner/precision", "ner/recall", "ner/f1", "mean"}
    assert result["best"]["scores"]["mean"] == pytest.approx(np.mean(
        [result["best"]["scores"]["cls/accuracy"], result["best"]["scores"]["ner/f1"]]))
    assert json.loads((run / "best" / "best.json").read_text()) == result["best"]
    assert {"cls_loss", "ner_loss", "cls_accuracy", "ner_accuracy", "val_mean"} <= set(
        result["logs"])
    assert sorted(np.unique(result["sequence"])) == [0, 1] and len(result["sequence"]) == 20

    saved = {name: load_model(str(run / name / "model.keras")) for name in ("cls", "ner")}
    after = {name: _weights(model) for name, model in saved.items()}
    for name, head in (("cls", "classifier/kernel"), ("ner", "classifier/kernel")):
        assert not np.allclose(after[name][head], initial[name][head]), name
    embeddings = [p for p in after["cls"] if "embeddings" in p and p.endswith("embeddings")]
    assert embeddings and all(  # the backbone trained, after its gradual unfreezing
        not np.allclose(after["cls"][p], initial["cls"][p]) for p in embeddings)
    backbone = [v.path for v in saved["cls"].backbone.weights]
    for path in backbone:  # one backbone: both heads saved the same weights
        np.testing.assert_array_equal(after["cls"][path], after["ner"][path])


def _docs_examples(tmp_path):
    """docs/multitask.md's blocks that this file runs (a pipeline per head, each head's
    SavedModel), run as written in a folder where the page's runs/mt is the fixture's run.
    Returns their namespaces, in the page's order."""
    from tests.docs import blocks

    found = [block for block, _ in blocks.markdown_blocks(ROOT / "docs" / "multitask.md")
             if block and (block.marker("example") or "").startswith(
                 "run by tests/training/test_multitask.py")]
    assert len(found) == 2, [block.where for block in found]
    folder = tmp_path / "docs_examples"
    (folder / "runs" / "mt").mkdir(parents=True, exist_ok=True)
    for name, target in (("cls", "run/cls"), ("ner", "run/ner"), ("export", "export")):
        if not (folder / "runs" / "mt" / name).exists():
            (folder / "runs" / "mt" / name).symlink_to(tmp_path / target)
    before, namespaces = os.getcwd(), {}
    os.chdir(folder)
    try:
        for block in found:
            namespaces[block.where] = {}
            exec(compile(block.code, block.where, "exec"), namespaces[block.where])
    finally:
        os.chdir(before)
    return list(namespaces.values())


# Each head's SavedModel: (its pipeline, its task, its sequence length, its label names, the
# options its task's `export_options` fixed, its signatures).
EXPORTED = {
    "cls": ("text-classification", "text_classifier", 24, ["no", "yes"],
            {"truncation": True, "max_length": 24},
            {"serving_default", "serving_pairs", "serving_ids"}),
    "ner": ("token-classification", "token_classifier", 16, ["B-PER", "I-PER", "O"],
            {"aggregation_strategy": "simple"}, {"serving_default", "serving_ids"}),
}


@pytest.mark.slow
def test_each_head_is_exported_as_its_pipeline(whole_run):
    """--export_dir holds a SavedModel per head, export_dir/NAME (`model.export` of the head
    with its task's options): export.json says what it is; serving_default (and a
    classifier's serving_pairs) answer as the head's pipeline with those options;
    serving_ids gives the head's logits; `kbert.pipeline` loads it (the options: the
    call's). docs/multitask.md's examples run on it."""
    import tensorflow_text  # noqa: F401 - the tokenizer's ops

    import kbert
    from kbert import convert
    from kbert.serving import metadata
    from kbert.tasks.text_classification.data import read_classification_file
    from kbert.tasks.text_classification.features import encode_classification
    from kbert.untrusted import load_model
    from tests.pipelines import reference
    from tests.pipelines.test_export import _answer, _calls

    _, _, tmp_path = whole_run
    export = tmp_path / "export"
    assert sorted(p.name for p in export.iterdir()) == sorted(EXPORTED)
    tokenizer = convert.load_tokenizer(str(TINY))
    data = read_classification_file(str(tmp_path / "train.csv"), "sentence",
                                    label_column="label")
    texts = ["he was at the one", "she and he was at the one"]
    inputs = {"cls": texts + [" ".join(WORDS), {"text": texts[0], "text_pair": texts[1]}],
              "ner": texts}  # the classifier cuts the 24 words at 24 tokens
    for name, (task, kind, length, labels, options, signatures) in EXPORTED.items():
        meta = metadata.read(export / name)
        assert (meta["task"], meta["model"], meta["label_names"], meta["options"]) == (
            task, kind, labels, options), name
        assert set(meta["signatures"]) == signatures, name
        served = tf.saved_model.load(str(export / name)).signatures
        assert set(served) == signatures, name
        model = load_model(str(tmp_path / "run" / name / "model.keras"))
        expected = kbert.pipeline(task, model=model, tokenizer=tokenizer)(inputs[name],
                                                                          **options)
        calls, placement = _calls(task, inputs[name], options)
        results = [{k: v.numpy() for k, v in served[signature](
            **{k: tf.constant(v) for k, v in args.items()}).items()}
            for signature, args in calls]
        reference.assert_same(_answer(task, inputs[name], options, results, placement),
                              expected, name, tolerance=1e-5)
        features = encode_classification(data, tokenizer, length).features
        ids = {k: features[k][:4] for k in ("token_ids", "padding_mask")}
        got = served["serving_ids"](**{k: tf.constant(v, tf.int32) for k, v in ids.items()})
        np.testing.assert_allclose(got["logits"], model.predict(ids, verbose=0), atol=1e-5)
        if name == "ner":  # every token's group, "O" too: entities to compare
            every = dict(options, ignore_labels=[])
            tagged = kbert.pipeline(task, model=str(export / name))(texts, **every)
            assert all(tagged), tagged
            reference.assert_same(tagged, kbert.pipeline(task, model=model,
                                                         tokenizer=tokenizer)(texts, **every),
                                  "ner, loaded", tolerance=1e-5)

    # docs/multitask.md's examples on this run: each head's pipeline gives what its
    # SavedModel gives.
    pipelines, saved = _docs_examples(tmp_path)
    texts = ["he was at the one", "she and he was at the one"]
    assert [row["label"] for row in pipelines["classify"](texts)] == [
        label.decode() for label in saved["labels"].numpy()[:, 0]]
    entities = {k: v.numpy() for k, v in saved["entities"].items()}
    for row, text in enumerate(texts):
        tagged = pipelines["tag"](text, aggregation_strategy="simple")
        assert [e["entity_group"] for e in tagged] == [
            group.decode()
            for group in entities["entity_group"][row, :entities["num_entities"][row]]], text


class Interrupted(Exception):
    pass


@pytest.mark.slow
def test_an_interrupted_run_resumes_the_same_task_sequence_and_weights(whole_run,
                                                                       monkeypatch, capsys):
    """Stopped right after its first epoch's checkpoint, then run again: it resumes at step
    10 on the same sequence of heads, and ends with the uninterrupted run's weights."""
    from kbert.training import FinetuningConfig, callbacks, run_finetuning

    result, _, tmp_path = whole_run
    save = callbacks.Checkpoints.on_epoch_end

    def save_then_stop(self, epoch, logs=None):
        save(self, epoch, logs)
        raise Interrupted()

    settings = _settings(tmp_path, tmp_path / "broken")
    with monkeypatch.context() as patch:
        patch.setattr(callbacks.Checkpoints, "on_epoch_end", save_then_stop)
        with pytest.raises(Interrupted):
            run_finetuning(FinetuningConfig(**settings))
    resumed = run_finetuning(FinetuningConfig(**settings))
    assert "(step 10)" in capsys.readouterr().out
    assert resumed["sequence"].tolist() == result["sequence"].tolist()

    def final(run):
        reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(
            os.path.join(run, "checkpoints")))
        return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()
                if n.startswith("model/")}

    a, b = final(tmp_path / "run"), final(tmp_path / "broken")
    assert a.keys() == b.keys() and len(a) > 10
    for name in a:
        np.testing.assert_allclose(a[name], b[name], atol=1e-5, err_msg=name)
