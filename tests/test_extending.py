"""docs/design.md, "Adding a family or a task", proven by doing it on a copy of the `kbert`
package: a new task is its folder (`kbert/tasks/<task>/`) plus at most 3 files touched
elsewhere, a new family its folder (`kbert/models/<family>/`, and presets: none needed here)
plus at most 3. The toy task, "mean_classifier", gives a class per text from the mean of its
token vectors, with a fine-tuning flag of its own and a "mean-classification" pipeline; the
toy family, "toy_bert", is BERT's network under classes of its own whose record gives the text
classifier a [CLS] head with tanh. One process on the copy then uses both through kbert's
entry points.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import TINY

KBERT = Path(__file__).resolve().parent.parent / "kbert"
TASK_FOLDER, FAMILY_FOLDER = "tasks/mean_classification", "models/toy_bert"

TASK_FILES = {
    f"{TASK_FOLDER}/__init__.py": '''\
"""A toy task: a class per text from the mean of its token vectors."""
from kbert.tasks.mean_classification.model import MeanClassifier
from kbert.tasks.record import TaskRecord

TASK = TaskRecord(
    name="mean_classifier", summary="a class per text from the mean of its token vectors",
    pipelines=("mean-classification",), aliases={"mean-sentiment": "mean-classification"},
    model=MeanClassifier, labelled=True, exports=(), finetuning=True, package=__name__)
''',
    f"{TASK_FOLDER}/model.py": '''\
import keras

from kbert.tasks import task as task_lib
from kbert.tasks._heads import TokenPooling


@keras.saving.register_keras_serializable(package="kbert")
class MeanClassifier(task_lib.Task, keras.Model):
    """Mean of the real tokens' vectors -> dropout -> dense(N) logits."""

    def __init__(self, backbone, num_classes=None, dropout=None, label_names=None,
                 preprocessor=None, **kwargs):
        task_lib.family_of(backbone)
        if num_classes is None and label_names is None:
            raise ValueError("Give `num_classes` (or `label_names`).")
        num_classes = num_classes or len(label_names)
        label_names = task_lib.check_label_names(label_names, num_classes)
        dropout = task_lib.head_dropout(backbone, "classifier", dropout)
        pooling = TokenPooling("mean", dtype=backbone.dtype_policy, name="pooling")
        drop = keras.layers.Dropout(dropout, dtype=backbone.dtype_policy, name="dropout")
        classifier = task_lib.dense_layer(backbone, num_classes, "classifier")
        inputs = task_lib.backbone_inputs(backbone)
        sequence = backbone(inputs)["sequence_output"]
        logits = classifier(drop(pooling(sequence, inputs["padding_mask"])))
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self._init_task(backbone, preprocessor, num_classes=num_classes, dropout=dropout,
                        label_names=label_names)
        self.classifier = classifier

    def head_layers(self):
        return {"classifier": self.classifier}

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True), None

    def default_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")], None
''',
    f"{TASK_FOLDER}/finetuning.py": '''\
"""--task=mean_classifier: text classification's data, scores and metric; its own head."""
from kbert.tasks.mean_classification.model import MeanClassifier
from kbert.tasks.record import Flag
from kbert.tasks.text_classification.finetuning import (  # noqa: F401 - the hooks reused
    encode, export_options, fit_labels, metric, read, scores)

BY_LENGTH, PER_TOKEN = True, False
DATA = ("glue/sst2", "CSV/TSV/JSONL")
FLAGS = {"mean_dropout": Flag(float, 0.1, "mean_classifier: the head's dropout, in [0, 1).",
                              group="Model", minimum=0)}


def check(config):
    if config.mean_dropout >= 1:
        raise ValueError(f"--mean_dropout must be below 1, got {config.mean_dropout}.")


def build(config, backbone, train):
    return MeanClassifier(backbone, dropout=config.mean_dropout, label_names=train.label_names)
''',
    "pipelines/mean_classification.py": '''\
"""kbert.pipeline("mean-classification"): the best label of each text."""
from kbert.pipelines.base import Pipeline
from kbert.tasks.text_classification import decode


class MeanClassificationPipeline(Pipeline):
    task = "mean-classification"
    OPTIONS = {"truncation": True}

    def __call__(self, inputs, **options):
        opts, _ = self.options(options)
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        sequences = [self.pack(self.fit(ids, None, opts["truncation"], f"Text {i}")[0])
                     for i, ids in enumerate(self.encoder.ids(texts, self.specials))]
        answers = [decode.classify(row, self.source.label_names, "softmax", 1, True)
                   for row in self.run(sequences, opts)]
        return answers[0] if isinstance(inputs, str) else answers
''',
}
# (file, anchor, replacement): the edits of existing files, each anchor found once.
TASK_EDITS = [
    ("tasks/registry.py", "from kbert.tasks.fill_mask import TASK as MASKED_LM\n",
     "from kbert.tasks.fill_mask import TASK as MASKED_LM\n"
     "from kbert.tasks.mean_classification import TASK as MEAN_CLASSIFIER\n"),
    ("tasks/registry.py", "TEXT_EMBEDDER, EXTRACTIVE_SUMMARIZER,\n",
     "TEXT_EMBEDDER, EXTRACTIVE_SUMMARIZER, MEAN_CLASSIFIER,\n"),
    ("pipelines/__init__.py", "from kbert.pipelines.fill_mask import FillMaskPipeline\n",
     "from kbert.pipelines.fill_mask import FillMaskPipeline\n"
     "from kbert.pipelines.mean_classification import MeanClassificationPipeline\n"),
    ("pipelines/__init__.py", "FillMaskPipeline, SummarizationPipeline)}",
     "FillMaskPipeline, SummarizationPipeline, MeanClassificationPipeline)}"),
]

FAMILY_FILES = {
    f"{FAMILY_FOLDER}/__init__.py": '''\
"""A toy family: BERT's network under classes of its own; its text classifier reads [CLS]."""
import dataclasses
import types

import keras

from kbert.models.bert import BertBackbone, BertConfig, BertPretrainer
from kbert.models.family import Family


@dataclasses.dataclass(frozen=True)
class ToyBertConfig(BertConfig):
    FAMILY = "Toy BERT"


@keras.saving.register_keras_serializable(package="kbert")
class ToyBertBackbone(BertBackbone):
    config_class = ToyBertConfig


@keras.saving.register_keras_serializable(package="kbert")
class ToyBertPretrainer(BertPretrainer):
    pass


FAMILY = Family(ToyBertConfig, ToyBertBackbone, ToyBertPretrainer, classifier_head="cls",
                cls_activation="tanh",
                head_dropout=types.MappingProxyType({"classifier": 0.0}))
''',
}
FAMILY_EDITS = [
    ("models/__init__.py", "mobile_bert, modern_bert, roberta,\n)\n",
     "mobile_bert, modern_bert, roberta,\n)\nfrom kbert.models import toy_bert\n"),
    ("models/__init__.py", '"modern_bert": modern_bert.FAMILY,\n}',
     '"modern_bert": modern_bert.FAMILY,\n    "toy_bert": toy_bert.FAMILY,\n}'),
]

# Runs on the copy: every check of the toys, through kbert's public entry points.
SCRIPT = r'''
import json, os, string, sys
import keras
import numpy as np

ARGS = json.loads(sys.argv[1])
import kbert
assert kbert.__file__.startswith(ARGS["copy"]), kbert.__file__
from kbert import convert, models, tasks
from kbert.tasks import registry
from kbert.tasks.text_classification.model import family_head
from kbert.tokenizers import WordPieceTokenizer
from kbert.training import ConfigError, run_finetuning
from kbert.training.finetuning_config import FinetuningConfig

VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(string.ascii_lowercase)
         + ["##" + c for c in string.ascii_lowercase] + ["good", "bad", "movie", "the"])
tok = WordPieceTokenizer(VOCAB)
TINY = dict(ARGS["tiny"], vocabulary_size=len(VOCAB))
rng = np.random.default_rng(0)
mask = (np.arange(12)[None] < np.array([[12], [7]])).astype("int32")
batch = {"token_ids": rng.integers(5, len(VOCAB), (2, 12)).astype("int32") * mask,
         "segment_ids": np.zeros((2, 12), "int32"), "padding_mask": mask}
keras.utils.set_random_seed(0)

# === The task: found by every name, built on a backbone, run, served by its pipeline ===
record = registry.get("mean_classifier")
assert registry.get("mean-classification") is registry.get("mean-sentiment") is record
backbone = models.build("bert", models.BertConfig(**TINY), head=None)
model = tasks.build("mean-sentiment", backbone, label_names=["bad", "good"])
assert type(model).__name__ == "MeanClassifier" and registry.of_model(model) is record
logits = np.asarray(model.predict(batch, verbose=0))
assert logits.shape == (2, 2) and np.isfinite(logits).all()
# The mean of the real tokens: the second row's padding changes nothing.
short = {k: v[1:, :7] for k, v in batch.items()}
np.testing.assert_allclose(model.predict(short, verbose=0), logits[1:], atol=1e-5)
for name in ("mean-classification", "mean_classifier"):
    pipe = kbert.pipeline(name, model=model, tokenizer=tok)
    answer = pipe("the good movie")
    assert answer["label"] in ("bad", "good") and 0.5 <= answer["score"] <= 1, answer
    assert len(pipe(["good", "bad movie"])) == 2

# === Its flag and fine-tuning: --task=mean_classifier --mean_dropout=0.3 ===
work = ARGS["work"]
checkpoint = convert.save_kbert(backbone, os.path.join(work, "encoder"), vocabulary=tok)
data = os.path.join(work, "train.csv")
with open(data, "w") as f:
    f.write("sentence,label\n" + "".join(f"{t},{l}\n" for t, l in [
        ("good movie", "good"), ("bad movie", "bad"), ("the good", "good"),
        ("the bad", "bad")] * 2))
settings = dict(task="mean_classifier", checkpoint=str(checkpoint), train_data=data,
                validation_data=data, model_dir=os.path.join(work, "run"), epochs=1,
                sequence_length=16, global_batch_size=4, jit_compile=False, verbose=0,
                keep_best=False)
try:
    FinetuningConfig(**settings, mean_dropout=1.5).validate()
    raise AssertionError("--mean_dropout=1.5 passed its task's check")
except ConfigError as e:
    assert "--mean_dropout" in str(e), e
result = run_finetuning(FinetuningConfig(**settings, mean_dropout=0.3))
assert set(result["best"]["scores"]) >= {"accuracy", "f1"}, result
# The run reopened by its directory (kbert.convert's weight map of the head: the model's own
# `head_layers`).
tuned = kbert.load(settings["model_dir"]).model
assert type(tuned).__name__ == "MeanClassifier" and tuned.dropout == 0.3
assert tuned.label_names == ["bad", "good"]
print("fine-tuned:", result["best"]["scores"],
      kbert.pipeline("mean-classification", model=tuned, tokenizer=tok)("good movie"))

# === The family: built by name, its record's classifier head, any task on it ===
toy = models.FAMILIES["toy_bert"]
config = toy.config(**TINY)
backbone = models.build("toy_bert", config, head=None)
assert type(backbone) is toy.backbone and tasks.family_of(backbone) == "toy_bert"
assert keras.saving.get_registered_name(type(backbone)) == "kbert>ToyBertBackbone"
again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(backbone))
assert type(again) is toy.backbone and again.config == config
pretrainer = models.build("toy_bert", config)
assert type(pretrainer) is toy.pretrainer
assert set(pretrainer.predict({**batch, "mask_positions": np.array([[1, 2], [3, 4]], "int32")},
                              verbose=0)) == {"mlm_logits", "nsp_logits"}
classifier = tasks.build("text_classifier", backbone, num_classes=2)
assert classifier.head == family_head("toy_bert") == "cls", classifier.head
assert isinstance(classifier.classifier, tasks.ClassificationHead)
assert classifier.classifier.activation == "tanh" and classifier.dropout == 0.0
assert np.isfinite(classifier.predict(batch, verbose=0)).all()
print("family answers:", kbert.pipeline("text-classification", model=classifier,
                                        tokenizer=tok)("good movie"))
toy_task = tasks.build("mean_classifier", backbone, num_classes=3)
assert np.asarray(toy_task.predict(batch, verbose=0)).shape == (2, 3)
print("OK")
'''


def _apply(root, files, edits):
    for name, text in files.items():
        path = root / name
        assert not path.exists(), f"{name} already exists"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for name, anchor, replacement in edits:
        text = (root / name).read_text()
        assert text.count(anchor) == 1, f"{name}: the anchor {anchor!r} is not there once"
        (root / name).write_text(text.replace(anchor, replacement))


def _snapshot(root):
    """{path relative to `root`: bytes} of every file but `__pycache__`'s."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def _touched(before, after, own_folder):
    """The files outside `own_folder` that are new, changed or gone."""
    return sorted(name for name in set(before) | set(after)
                  if before.get(name) != after.get(name)
                  and not name.startswith(own_folder + "/"))


def _extended_copy(tmp_path):
    """A copy of the kbert package with both toys added: (its folder, the files the task
    touched outside its folder, the files the family touched outside its own)."""
    copy = tmp_path / "src" / "kbert"
    shutil.copytree(KBERT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    original = _snapshot(KBERT)
    assert _snapshot(copy) == original
    _apply(copy, TASK_FILES, TASK_EDITS)
    with_task = _snapshot(copy)
    _apply(copy, FAMILY_FILES, FAMILY_EDITS)
    return (copy, _touched(original, with_task, TASK_FOLDER),
            _touched(with_task, _snapshot(copy), FAMILY_FOLDER))


def test_a_new_task_and_a_new_family_touch_at_most_three_files_each(tmp_path):
    """The toys' files outside their folders, new or changed (pytest -s lists them)."""
    _, task_touched, family_touched = _extended_copy(tmp_path)
    print(f"\ntask: {len(task_touched)} files outside {TASK_FOLDER}: {task_touched}")
    print(f"family: {len(family_touched)} files outside {FAMILY_FOLDER}: {family_touched}")
    # The task: its record in the registry, its pipeline class and that class's registration
    # (pipelines live in kbert/pipelines: the task folders never import the floor above).
    assert len(task_touched) <= 3, task_touched
    # The family: its record in kbert.models.FAMILIES; no preset and no kbert.convert format
    # (the toy is built from a config, never read from or written to a checkpoint; a
    # family that is adds kbert/convert/<family>.py and its line in kbert/convert/families.py).
    assert len(family_touched) <= 3, family_touched


@pytest.mark.slow
def test_the_toy_task_and_family_work_through_kbert_entry_points(tmp_path):
    """On the copy (`import kbert` is it): the task by its names in the registry, built,
    run, served by `kbert.pipeline`, fine-tuned by `run_finetuning` with its own flag; the
    family built by name, its record's classifier head, the toy task on it."""
    copy, _, _ = _extended_copy(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(copy.parent), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    args = json.dumps({"copy": str(copy), "work": str(work), "tiny": TINY})
    done = subprocess.run([sys.executable, "-c", SCRIPT, args], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)
    print(done.stdout[-3000:])
    assert done.returncode == 0, done.stderr[-6000:]
    assert done.stdout.rstrip().endswith("OK")
