"""tools/finetune.py and kbert.training.run_finetuning: flags, a run per task, best epoch,
resume, the saved model and its --export_dir SavedModel."""

import collections
import json
import os
import re
import string
import types
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tests.helpers import run_program_here
from tests.tools.killing import run_killed_after_checkpoint

ROOT = Path(__file__).resolve().parents[2]
FINETUNE = str(ROOT / "tools" / "finetune.py")
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
TINY = ROOT / "tests" / "fixtures" / "hf_tiny" / "distil_bert"  # vocab of 67 words
WORDS = ["the", "of", "to", "and", "in", "it", "that", "was", "for", "on", "with", "as",
         "they", "at", "one", "this", "from", "or", "had", "by", "word", "but", "what", "some"]


def parse_flags(args):
    from absl import flags

    from kbert.training import config_fields
    from kbert.training.finetuning_config import FinetuningConfig

    flag_values = flags.FlagValues()
    config_fields.define_flags(FinetuningConfig, flag_values)
    flag_values(["finetune.py", *args])
    return config_fields.config_from_flags(FinetuningConfig, flag_values)


def sentences(n, seed):
    """Texts of vocabulary words; the label says whether "he" or "she" is in it."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        words = list(rng.choice(WORDS, rng.integers(4, 9)))
        label = ["no", "yes"][i % 2]
        if label == "yes":
            words.insert(int(rng.integers(0, len(words))), str(rng.choice(["he", "she"])))
        rows.append((" ".join(words), label))
    return rows


def write_csv(path, rows):
    path.write_text("sentence,label\n" + "".join(f"{t},{l}\n" for t, l in rows))
    return str(path)


@pytest.mark.parametrize("args, message", [
    ([], "Give exactly one of --preset and --checkpoint."),
    (["--preset=bert_base", f"--checkpoint={TINY}"], "Give exactly one of --preset and"),
    (["--preset=bert_huge"], "--preset: Unknown preset 'bert_huge'"),
    (["--checkpoint=/no/such/dir"], "--checkpoint='/no/such/dir' does not exist."),
    ([f"--checkpoint={TINY}", "--train_data=/no/train.csv"], "--train_data='/no/train.csv': "
                                                             "no such file"),
    ([f"--checkpoint={TINY}", "--layer_decay=1.5"], "--layer_decay must be in (0, 1], got 1.5"),
    ([f"--checkpoint={TINY}", "--freeze_backbone", "--unfreeze_every=2"],
     "--freeze_backbone keeps the backbone frozen"),
    ([f"--checkpoint={TINY}", "--lora_rank=4", "--freeze_backbone"],
     "--lora_rank trains adapters on a frozen backbone; it does not combine with"),
    ([f"--checkpoint={TINY}", "--lora_rank=-1"], "--lora_rank must be an integer >= 0, got -1"),
    ([f"--checkpoint={TINY}", "--prune_heads=0.5", "--lora_rank=2"],
     "--prune_heads / --prune_units / --prune_layers prune the fine-tuned model of one task "
     "in --checkpoint (a tools/finetune.py run); they do not combine with --lora_rank "
     "(given)."),
    ([f"--checkpoint={TINY}", "--task=parser"], "--task='parser' is not one of"),
    ([f"--checkpoint={TINY}", "--exit_heads", "--task=token_classifier"],
     "--exit_heads does not work with --task='token_classifier' (early exit is "
     "text_classifier's); no --validation_data (the threshold is chosen on it)."),
    ([f"--checkpoint={TINY}", "--exit_heads", "--validation_data=tfds:glue/sst2",
      "--exit_max_drop=1"], "--exit_max_drop=1.0: a fraction in [0, 1)."),
    ([f"--checkpoint={TINY}", "--epochs=0"], "--epochs must be an integer >= 1, got 0."),
    ([f"--checkpoint={TINY}", "--warmup_proportion=2"], "--warmup_proportion must be in [0, 1]"),
    ([f"--checkpoint={TINY}", "--task=question_answerer", "--doc_stride=60"],
     "--doc_stride=60 (the context pieces a window repeats from the one before) must be "
     "smaller than the window's context length after a question of --max_question_length=64 "
     "pieces, 60 (--sequence_length=128 minus"),
])
def test_bad_flags_fail_fast(tmp_path, args, message):
    from absl.flags import IllegalFlagValueError

    from kbert.training.config_fields import ConfigError

    base = [f"--model_dir={tmp_path}/run", "--train_data=tfds:glue/sst2"]
    try:
        config = parse_flags(base + args)
    except IllegalFlagValueError as e:  # an enum flag is refused by absl itself
        assert "parser" in str(e) and "--task" in message
        return
    with pytest.raises(ConfigError) as error:
        config.validate()
    assert message in str(error.value)
    assert not (tmp_path / "run").exists()


# Those that read files (aclsum.flags) are validated where their files are, by tests/docs.
@pytest.mark.parametrize("flagfile", sorted(p for p in (ROOT / "tools" / "flags").glob("*.flags")
                                            if "--task=" in p.read_text()
                                            and "--train_data=tfds:" in p.read_text()),
                         ids=lambda p: p.name)
def test_flagfiles_are_valid(flagfile, tmp_path):
    config = parse_flags([f"--flagfile={flagfile}", f"--model_dir={tmp_path}/run"])
    config.validate()
    assert config.train_data.startswith("tfds:") and config.preset == "bert_base"


def test_doc_stride_default(tmp_path):
    """--doc_stride unset: the pipeline's min(sequence_length // 2, 128), under the room a
    question of --max_question_length pieces leaves."""
    from kbert.tasks.question_answering.finetuning import doc_stride
    from kbert.training import FinetuningConfig

    def config(**kwargs):
        config = FinetuningConfig(model_dir=str(tmp_path / "run"), checkpoint=str(TINY),
                                  task="question_answerer", train_data="tfds:squad/v1.1",
                                  **kwargs)
        config.validate()
        return config

    assert doc_stride(config()) == 59  # 128 - 64 - 4 = 60 pieces of room
    assert doc_stride(config(sequence_length=384)) == 128
    assert doc_stride(config(sequence_length=64, max_question_length=16)) == 32
    assert doc_stride(config(doc_stride=0)) == 0


@pytest.mark.parametrize("kinds, xla", [(("CPU",), False), (("CPU", "GPU"), True),
                                         (("CPU", "TPU"), True)])
def test_xla_is_the_default_where_tensorflow_sees_an_accelerator(tmp_path, monkeypatch, kinds,
                                                                  xla):
    """Keras' jit_compile="auto" rule: XLA on a GPU or TPU, not on a CPU-only host; a given
    --jit_compile wins."""
    import tensorflow as tf

    from kbert.training import FinetuningConfig

    monkeypatch.setattr(tf.config, "list_physical_devices",
                        lambda: [types.SimpleNamespace(device_type=kind) for kind in kinds])
    settings = dict(model_dir=str(tmp_path / "run"), checkpoint=str(TINY), train_data="a.csv")
    assert FinetuningConfig(**settings).jit_compile is xla
    assert FinetuningConfig(**settings, jit_compile=not xla).jit_compile is (not xla)


def test_a_task_flag_is_its_own(monkeypatch):
    """A task folder's flag may take neither a run's flag nor another task's."""
    from kbert.tasks.record import Flag
    from kbert.training import finetuning_config

    hooks = finetuning_config.HOOKS["token_classifier"]
    flags = dict(hooks.FLAGS)
    for name, owner in (("sequence_length", "every run"), ("doc_stride", "question_answerer")):
        monkeypatch.setattr(hooks, "FLAGS", {**flags, name: Flag(int, 1, "taken")})
        with pytest.raises(TypeError, match=rf"--{name} is given by both .*{owner}|"
                                            rf"--{name} is given by both token_classifier "
                                            rf"and {owner}"):
            list(finetuning_config._task_fields())


def test_a_run_reads_its_encoder_and_its_data(tmp_path):
    """What a run does before training, quickly: the encoder's tokenizer and positions, the
    task's records and label names, and the metric that picks the best epoch."""
    from kbert.training import FinetuningConfig
    from kbert.training.finetuning import encoder_source
    from kbert.training.finetuning_tasks import FINETUNING_TASKS

    train = write_csv(tmp_path / "train.csv", sentences(8, 0))
    config = FinetuningConfig(model_dir=str(tmp_path / "run"), checkpoint=str(TINY),
                              train_data=train, sequence_length=24)
    encoder = encoder_source(config)
    assert encoder.max_sequence_length == 24 and encoder.tokenizer.vocabulary_size == 67
    task = FINETUNING_TASKS["text_classifier"]
    prepared = task.prepare(config, train, "train", encoder.tokenizer)
    assert prepared.label_names == ["no", "yes"] and len(prepared.data.examples) == 8
    assert task.metric(config, prepared) == "accuracy"
    mrpc = FinetuningConfig(model_dir="m", preset="bert_base", train_data="tfds:glue/mrpc")
    assert task.metric(mrpc, prepared) == "f1"


def test_the_export_fixes_the_runs_options_of_the_tasks_pipeline():
    """--export_dir writes `model.export` of the task's pipeline with options from the run
    (each task's `export_options`), all of them options of that pipeline: a classifier cuts
    texts at --sequence_length; a tagger groups B-/I- entities ("simple") and leaves the
    tags of BIOES / BILOU to the client ("none"); a reader takes the run's windows and answer
    lengths, the empty answer on SQuAD 2.0 data."""
    from types import SimpleNamespace

    from kbert import pipelines
    from kbert.pipelines.base import TOKENIZER_OPTIONS
    from kbert.tasks import registry
    from kbert.training import FinetuningConfig
    from kbert.training.finetuning_tasks import FINETUNING_TASKS

    def options(task, version_2=False, **settings):
        config = FinetuningConfig(model_dir="m", checkpoint=str(TINY), task=task,
                                  train_data="tfds:x", **settings)
        train = SimpleNamespace(data=SimpleNamespace(version_2=version_2))
        got = FINETUNING_TASKS[task].export_options(config, train)
        pipeline = pipelines.TASKS[registry.get(task).pipelines[0]]  # model.export's
        assert set(got) <= set(pipeline.OPTIONS) | set(TOKENIZER_OPTIONS), (task, got)
        return got

    assert options("text_classifier", sequence_length=24) == {"truncation": True,
                                                              "max_length": 24}
    for scheme, grouping in (("IOB1", "simple"), ("IOB2", "simple"), ("BIO", "simple"),
                             ("BIOES", "none"), ("IOBES", "none"), ("BILOU", "none")):
        assert options("token_classifier", tag_scheme=scheme) == {
            "aggregation_strategy": grouping}, scheme
    reader = dict(sequence_length=64, max_question_length=16, max_answer_length=10)
    assert options("question_answerer", **reader) == {
        "handle_impossible_answer": False, "doc_stride": 32, "max_seq_len": 64,
        "max_answer_len": 10, "max_question_len": 16}
    assert options("question_answerer", version_2=True,
                   **reader)["handle_impossible_answer"] is True
    assert options("extractive_summarizer") == {}


def binary_scores(truth, predicted):
    """Accuracy, F1 of label 1, macro F1 and Matthews' correlation, from the counts."""
    tp = np.sum((predicted == 1) & (truth == 1))
    tn = np.sum((predicted == 0) & (truth == 0))
    fp = np.sum((predicted == 1) & (truth == 0))
    fn = np.sum((predicted == 0) & (truth == 1))
    f1 = lambda tp, fp, fn: 2 * tp / (2 * tp + fp + fn)  # noqa: E731
    denominator = float((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    mcc = (tp * tn - fp * fn) / np.sqrt(denominator) if denominator else 0.0  # sklearn's 0
    return {"accuracy": (tp + tn) / len(truth), "f1": f1(tp, fp, fn),
            "macro_f1": (f1(tp, fp, fn) + f1(tn, fn, fp)) / 2, "matthews_corrcoef": mcc}


def squad_v1(prediction, gold):
    """(exact match, token F1) of one answer, as SQuAD v1.1's evaluate script."""
    def normal(text):
        text = "".join(c for c in text.lower() if c not in string.punctuation)
        return re.sub(r"\b(a|an|the)\b", " ", text).split()

    p, g = normal(prediction), normal(gold)
    same = sum((collections.Counter(p) & collections.Counter(g)).values())
    f1 = 0.0 if same == 0 else 2 * same / (len(p) + len(g))
    return float(p == g), f1


def rescored(model_dir, task, settings, data):
    """The scores of the run's saved model (its best epoch) on `data`, computed here from
    its predictions: seqeval's entity scores of the words' tags (tagger), SQuAD v1.1's
    exact match and F1 of the decoded answers (reader), in the run's own units."""
    from kbert import convert
    from kbert.training import FinetuningConfig
    from kbert.training.finetuning_tasks import FINETUNING_TASKS, model_inputs
    from kbert.untrusted import load_model

    config = FinetuningConfig(**{**RUN_SETTINGS, **settings, "model_dir": str(model_dir),
                                 "task": task, "train_data": data, "validation_data": data})
    model = load_model(str(model_dir / "model.keras"))
    split = FINETUNING_TASKS[task].prepare(config, data, "validation",
                                           convert.load_tokenizer(str(TINY)),
                                           label_names=getattr(model, "label_names", None))
    outputs = model.predict(model_inputs(model, split.encoded.features), verbose=0)
    if task == "token_classifier":
        from seqeval import metrics

        gold = [[split.label_names[t] for t in e.tags] for e in split.data.examples]
        found = [[t or "O" for t in tags] for tags in split.encoded.word_predictions(outputs)]
        return {"precision": metrics.precision_score(gold, found, zero_division=0),
                "recall": metrics.recall_score(gold, found, zero_division=0),
                "f1": metrics.f1_score(gold, found, zero_division=0)}
    answers = split.encoded.decode(outputs["start_logits"], outputs["end_logits"],
                                   n_best=config.n_best, version_2=False,
                                   max_answer_length=config.max_answer_length)
    pairs = [max(squad_v1(answers[e.id]["text"], g) for g, _ in e.answers)
             for e in split.data.examples]
    return {"exact_match": 100 * np.mean([p[0] for p in pairs]),
            "f1": 100 * np.mean([p[1] for p in pairs])}


RUN_SETTINGS = dict(checkpoint=str(TINY), global_batch_size=16, epochs=2, learning_rate=1e-3,
                    verbose=2, jit_compile=False, seed=3, sequence_length=24)


def run(tmp_path, **kwargs):
    from kbert.training import FinetuningConfig, run_finetuning

    settings = dict(model_dir=str(tmp_path / "run"), **RUN_SETTINGS)
    settings.update(kwargs)
    return run_finetuning(FinetuningConfig(**settings))


@pytest.mark.slow
def test_a_classifier_run_keeps_the_best_epoch_and_saves_a_loadable_model(tmp_path, capsys):
    from kbert import convert
    from kbert.untrusted import load_model

    train = write_csv(tmp_path / "train.csv", sentences(64, 0))
    dev = write_csv(tmp_path / "dev.csv", sentences(32, 1))
    result = run(tmp_path, train_data=train, validation_data=dev,
                 export_dir=str(tmp_path / "export"))
    best = json.loads((tmp_path / "run" / "best" / "best.json").read_text())
    assert result["best"] == best and best["epoch"] in (1, 2)
    assert set(best["scores"]) == {"accuracy", "f1", "macro_f1", "matthews_corrcoef"}
    assert "val_accuracy" in result["logs"]
    out = capsys.readouterr().out
    assert "Validation: accuracy" in out and f"Best epoch {best['epoch']}" in out
    # Where fit's time went (callbacks.StepTimes): 64 examples in batches of 16, 2 epochs.
    assert result["step_times"]["calls"] == 8 and "8 train-function calls" in out

    # model.keras holds the best epoch's weights; it scores what best.json says.
    model = load_model(str(tmp_path / "run" / "model.keras"))
    assert model.label_names == ["no", "yes"]
    tokenizer = convert.load_tokenizer(str(TINY))
    from kbert.tasks.text_classification.data import read_classification_file
    from kbert.tasks.text_classification.features import classification_dataset

    data = read_classification_file(dev, "sentence", label_column="label",
                                    label_names=["no", "yes"])
    logits = model.predict(classification_dataset(data, tokenizer, 24, 16).map(
        lambda x, y: {"token_ids": x["token_ids"], "padding_mask": x["padding_mask"]}),
        verbose=0)
    predicted, truth = logits.argmax(-1), np.array([e.label for e in data.examples])
    assert best["scores"] == pytest.approx(binary_scores(truth, predicted))
    exported_as_the_pipeline(tmp_path / "export", model, data, tokenizer, logits)

    # Running it again resumes: nothing left to train.
    again = run(tmp_path, train_data=train, validation_data=dev)
    assert "Already trained 8 of 8 steps." in capsys.readouterr().out
    assert again["best"] == best


def exported_as_the_pipeline(export, model, data, tokenizer, logits):
    """--export_dir holds `model.export` of the run's best model: export.json says what it
    is; serving_default (and serving_pairs) answer as `kbert.pipeline` on the model with the
    run's options (texts cut at --sequence_length); serving_ids gives the model's logits."""
    import tensorflow_text  # noqa: F401 - the tokenizer's ops

    import kbert
    from kbert.serving import metadata
    from kbert.tasks.text_classification.features import classification_dataset
    from tests.pipelines import reference
    from tests.pipelines.test_export import _answer, _calls

    task, options = "text-classification", {"truncation": True, "max_length": 24}
    meta = metadata.read(export)
    assert (meta["task"], meta["model"], meta["label_names"], meta["options"]) == (
        task, "text_classifier", ["no", "yes"], options)
    assert set(meta["signatures"]) == {"serving_default", "serving_pairs", "serving_ids"}
    signatures = tf.saved_model.load(str(export)).signatures
    texts = [e.text_a for e in data.examples[:3]] + [" ".join(WORDS * 2)]  # cut at 24
    inputs = texts + [{"text": texts[0], "text_pair": texts[1]}]
    calls, placement = _calls(task, inputs, options)
    results = [{k: v.numpy() for k, v in signatures[name](
        **{k: tf.constant(v) for k, v in args.items()}).items()} for name, args in calls]
    expected = kbert.pipeline(task, model=model, tokenizer=tokenizer)(inputs, **options)
    reference.assert_same(_answer(task, inputs, options, results, placement), expected,
                          "serving_default", tolerance=1e-5)
    features, _ = next(iter(classification_dataset(data, tokenizer, 24, 16)))
    served = signatures["serving_ids"](token_ids=features["token_ids"],
                                       padding_mask=features["padding_mask"])["logits"]
    np.testing.assert_allclose(served, logits[:16], atol=1e-5)


@pytest.mark.slow
def test_a_tagger_and_a_reader_run_with_their_official_metrics(tmp_path):
    conll = "-DOCSTART- O\n\n" + "".join(
        f"{' '.join(w)}\n".replace(" ", "\n").replace("\n", f" {t}\n", 1) for w, t in [])
    lines = []
    rng = np.random.default_rng(0)
    for _ in range(40):
        words = list(rng.choice(WORDS, 5))
        tags = ["O"] * 5
        position = int(rng.integers(0, 4))
        words[position:position + 2] = ["he", "she"]
        tags[position:position + 2] = ["B-PER", "I-PER"]
        lines.append("".join(f"{w} {t}\n" for w, t in zip(words, tags)) + "\n")
    (tmp_path / "train.conll").write_text(conll + "".join(lines))
    tagged = run(tmp_path / "tagger", task="token_classifier",
                 train_data=str(tmp_path / "train.conll"),
                 validation_data=str(tmp_path / "train.conll"), epochs=1, sequence_length=16)
    assert set(tagged["best"]["scores"]) == {"precision", "recall", "f1"}
    rescore = dict(epochs=3, sequence_length=16)
    assert tagged["best"]["scores"] == pytest.approx(rescored(
        tmp_path / "tagger" / "run", "token_classifier", rescore,
        str(tmp_path / "train.conll")))

    paragraphs = []
    for i in range(24):
        context = " ".join(rng.choice(WORDS, 12)) + " she was at the " + WORDS[i % 10] + " ."
        start = context.index("she")
        paragraphs.append({"context": context, "qas": [
            {"id": f"q{i}", "question": "who was there", "answers": [
                {"text": "she", "answer_start": start}]}]})
    (tmp_path / "squad.json").write_text(json.dumps(
        {"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}))
    read = run(tmp_path / "reader", task="question_answerer",
               train_data=str(tmp_path / "squad.json"),
               validation_data=str(tmp_path / "squad.json"), epochs=1, sequence_length=24,
               doc_stride=8, max_question_length=8, global_batch_size=8)
    assert set(read["best"]["scores"]) == {"exact_match", "f1"}
    assert read["best"]["scores"] == pytest.approx(rescored(
        tmp_path / "reader" / "run", "question_answerer",
        dict(epochs=1, sequence_length=24, doc_stride=8, max_question_length=8,
             global_batch_size=8), str(tmp_path / "squad.json")))


def final_weights(model_dir):
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(
        os.path.join(model_dir, "checkpoints")))
    return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()
            if n.startswith("model/")}


def run_here(args):
    """tools/finetune.py's `main` in this process (`tests.helpers.run_program_here`), as
    tests/tools/test_pretrain.py's `run_here` runs tools/pretrain.py's: what the run
    printed."""
    from kbert.training import run_finetuning
    from kbert.training.finetuning_config import FinetuningConfig

    return run_program_here(FinetuningConfig, run_finetuning, "finetune.py", args)


@pytest.mark.slow
def test_kill_and_resume_matches_an_uninterrupted_run(tmp_path):
    """kill -9 after the first epoch's checkpoint, run the same command again: the weights
    equal an uninterrupted run's (the stream and the dropout seeds resume where they were).
    The killed run is the tool's own process; the uninterrupted run and the resumed one run
    its main in this process (`run_here`, as tests/tools/test_pretrain.py's kill-and-resume
    test does)."""
    train = write_csv(tmp_path / "train.csv", sentences(96, 0))
    args = lambda model_dir: [  # noqa: E731
        f"--checkpoint={TINY}", f"--train_data={train}", f"--model_dir={model_dir}",
        "--global_batch_size=16", "--epochs=3", "--learning_rate=1e-3", "--verbose=2",
        "--nojit_compile", "--seed=5", "--layer_decay=0.8", "--sequence_length=24"]
    whole = tmp_path / "whole"
    run_here(args(whole))

    broken = tmp_path / "broken"
    run_killed_after_checkpoint(FINETUNE, args(broken), 6, ENV, ROOT)
    assert not (broken / "model.keras").exists()
    assert "Resuming from" in run_here(args(broken))
    a, b = final_weights(str(whole)), final_weights(str(broken))
    assert a.keys() == b.keys() and len(a) > 10
    for name in a:
        np.testing.assert_allclose(a[name], b[name], atol=1e-5, err_msg=name)


def test_an_extractive_summarizer_runs_with_rouge(tmp_path):
    """--task=extractive_summarizer on a JSONL file of documents and reference summaries:
    the oracle labels, a DistilBERT (no segment ids) run scored by ROUGE."""
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(24):
        sentences = [" ".join(rng.choice(WORDS, 4)) + " ." for _ in range(4)]
        keyed = int(rng.integers(1, 4))
        sentences[keyed] = "she " + sentences[keyed]
        rows.append(json.dumps({"document": " ".join(s.capitalize() for s in sentences),
                                "summary": sentences[keyed].capitalize()}) + "\n")
    (tmp_path / "docs.jsonl").write_text("".join(rows))
    data = str(tmp_path / "docs.jsonl")
    result = run(tmp_path, task="extractive_summarizer", train_data=data, validation_data=data,
                 text_column="document", label_column="summary", epochs=1)
    assert set(result["best"]["scores"]) == {"rouge1", "rouge2", "rougeL"}
    assert all(0 <= v <= 1 for v in result["best"]["scores"].values())


@pytest.mark.slow
def test_a_lora_run_trains_adapters_and_saves_a_plain_model(tmp_path, capsys):
    """--lora_rank: the run trains LoRA adapters on the encoder; model.keras holds them merged
    into its kernels (no LoRA weight in it, the attention projections moved)."""
    from kbert import convert
    from kbert.untrusted import load_model

    train = write_csv(tmp_path / "train.csv", sentences(64, 0))
    dev = write_csv(tmp_path / "dev.csv", sentences(32, 1))
    run(tmp_path, train_data=train, validation_data=dev, lora_rank=4, epochs=1)
    assert "LoRA of rank 4:" in capsys.readouterr().out
    model = load_model(str(tmp_path / "run" / "model.keras"))
    assert not any("lora" in v.path for v in model.weights)
    start = convert.load(str(TINY))
    kernels = {v.path: v for v in start.weights if v.path.endswith("qkv_dense/kernel")}
    changed = [path for path, v in kernels.items() if not np.allclose(
        next(w for w in model.backbone.weights if w.path.endswith(path.split("/", 1)[1])),
        v, atol=1e-7)]
    assert changed  # the merged update moved them


@pytest.mark.slow
def test_a_pruning_run_ranks_removes_and_fine_tunes_the_smaller_model(tmp_path, capsys):
    """--prune_heads / --prune_units / --prune_layers on a fine-tuned run: the heads, units
    and layers ranked on the training data, removed, the smaller model fine-tuned and saved
    (its per-layer sizes in its config); the removal is written down, and a run resumed reads
    it; a checkpoint without the task's fine-tuned model is refused by name. With
    --prune_distil the smaller model learns from the unpruned one's answers too, its best
    epoch is kept and a resumed run reads its checkpoint back. (docs/pruning.md's
    command.)"""
    from kbert.training.config_fields import ConfigError
    from kbert.untrusted import load_model

    train = write_csv(tmp_path / "train.csv", sentences(64, 0))
    run(tmp_path / "first", train_data=train, epochs=1)
    pruned_dir = tmp_path / "pruned"
    run(pruned_dir, train_data=train, epochs=1, checkpoint=str(tmp_path / "first" / "run"),
        prune_heads=0.5, prune_units=0.5, prune_batches=2, export_dir=str(tmp_path / "export"))
    out = capsys.readouterr().out
    assert "Ranking the heads and feed-forward units" in out
    assert "Recovering by distillation" not in out
    assert "Pruned: heads per layer [2, 2] -> " in out, out
    removal = json.loads((pruned_dir / "run" / "pruning.json").read_text())
    model = load_model(str(pruned_dir / "run" / "model.keras"))
    config = model.backbone.config
    assert sum(config.layer_heads) == 2 and sum(config.layer_intermediate_sizes) == 32
    assert sum(map(len, removal["heads"].values())) == 2
    # Run again in the same model_dir: the removal is read back, not ranked again.
    run(pruned_dir, train_data=train, epochs=1, checkpoint=str(tmp_path / "first" / "run"),
        prune_heads=0.5, prune_units=0.5, prune_batches=2)
    assert "Pruning as " in capsys.readouterr().out
    # Recovered by distillation, its best epoch kept; then resumed for one epoch more: the
    # checkpoint (the student's weights, the optimizer's) read back.
    distilled = dict(train_data=train, checkpoint=str(tmp_path / "first" / "run"),
                     prune_heads=0.5, prune_units=0.5, prune_batches=2, prune_distil=0.5,
                     validation_data=train)
    run(tmp_path / "distilled", epochs=1, **distilled)
    out = capsys.readouterr().out
    assert "Recovering by distillation from the unpruned model: its answers weigh 0.5" in out
    assert "Best epoch 1" in out, out
    run(tmp_path / "distilled", epochs=2, **distilled)
    out = capsys.readouterr().out
    assert "Resuming from" in out and "(step 4)" in out, out
    small = load_model(str(tmp_path / "distilled" / "run" / "model.keras"))
    assert sum(small.backbone.config.layer_heads) == 2
    with pytest.raises(ConfigError, match="is the removal of another pruning"):
        run(pruned_dir, train_data=train, epochs=1, prune_heads=0.25,
            checkpoint=str(tmp_path / "first" / "run"))
    with pytest.raises(ConfigError, match="prune a fine-tuned text_classifier .* holds a "
                                          "DistilBertPretrainer"):
        run(tmp_path / "other", train_data=train, epochs=1, prune_heads=0.5)
    with pytest.raises(ConfigError, match=r"--prune_units=1.0: a fraction in \[0, 1\)"):
        run(tmp_path / "other", train_data=train, prune_units=1.0)
    with pytest.raises(ConfigError, match=r"--prune_distil=1.5: the weight of the unpruned "
                                          r"model's answers, in \[0, 1\]"):
        run(tmp_path / "other", train_data=train, prune_heads=0.5, prune_distil=1.5)
    with pytest.raises(ConfigError, match="--prune_distil does not work with no --prune_heads, "
                                          "--prune_units or --prune_layers"):
        run(tmp_path / "other", train_data=train, prune_distil=0.5)
    # --prune_layers: the layer whose removal raises the loss least goes (alone here); the
    # record names it; every layer is refused by name.
    run(tmp_path / "layers", train_data=train, epochs=1, prune_layers=1, prune_batches=2,
        checkpoint=str(tmp_path / "first" / "run"))
    out = capsys.readouterr().out
    assert "Ranking the 2 layers of" in out and "without each layer: removing [" in out, out
    removal = json.loads((tmp_path / "layers" / "run" / "pruning.json").read_text())
    assert len(removal["layers"]) == 1 and removal["settings"]["prune_layers"] == 1
    assert f"Pruned: layers {removal['layers']} removed; heads per layer [2, 2] -> [2]" in out
    one = load_model(str(tmp_path / "layers" / "run" / "model.keras"))
    assert one.backbone.config.num_layers == 1
    with pytest.raises(ConfigError, match=r"--prune_layers=2: .* has 2 layers; remove 1 to 1"):
        run(tmp_path / "all_layers", train_data=train, epochs=1, prune_layers=2,
            prune_batches=2, checkpoint=str(tmp_path / "first" / "run"))


@pytest.mark.slow
def test_an_exit_heads_run_trains_exits_chooses_a_threshold_and_exports_it(tmp_path, capsys):
    """--exit_heads: after fine-tuning, exit heads trained on the frozen model, the entropy
    threshold chosen on the validation data and written to early_exit.json, the model saved
    with its exits, and --export_dir's SavedModel exiting early as the pipeline does.
    (docs/early-exit.md's command.)"""
    import tensorflow as tf

    import kbert
    from kbert.untrusted import load_model

    train = write_csv(tmp_path / "train.csv", sentences(64, 0))
    dev = write_csv(tmp_path / "dev.csv", sentences(32, 1))
    result = run(tmp_path, train_data=train, validation_data=dev, epochs=1, exit_heads=True,
                 exit_learning_rate=1e-3, exit_max_drop=0.2,
                 export_dir=str(tmp_path / "export"))
    out = capsys.readouterr().out
    assert "Training exit heads after layers [1] for 3 epoch(s), the model frozen." in out
    record = json.loads((tmp_path / "run" / "early_exit.json").read_text())
    assert record["setting"] == result["early_exit"]["setting"]
    assert set(record["setting"]) == {"entropy"} and record["num_layers"] == 2
    assert record["accuracy"] >= record["full_accuracy"] - 0.2 - 1e-9
    assert f"Early exit: {record['setting']} runs" in out
    model = load_model(str(tmp_path / "run" / "model.keras"))
    assert type(model).__name__ == "EarlyExitClassifier" and model.exit_layers == [1]
    texts = [row[0] for row in sentences(12, 2)]
    tokenizer = kbert.convert.load_tokenizer(str(tmp_path / "run"))
    pipe = kbert.pipeline("text-classification", model=model, tokenizer=tokenizer)
    answers = pipe(texts, early_exit=record["setting"])
    served = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"](
        tf.constant(texts))
    assert [label.decode() for label in served["label"].numpy()[:, 0]] == \
        [a["label"] for a in answers]
    np.testing.assert_allclose(served["score"].numpy()[:, 0], [a["score"] for a in answers],
                               atol=1e-5)
    # kbert.load of the run gives the model with its exits; a checkpoint of it, the classifier
    assert type(kbert.load(str(tmp_path / "run")).model).__name__ == "EarlyExitClassifier"
    again = kbert.pipeline("text-classification", model=str(tmp_path / "run"))
    assert again(texts, early_exit=record["setting"]) == answers
    assert type(kbert.convert.load(str(tmp_path / "run"))).__name__ == "TextClassifier"
