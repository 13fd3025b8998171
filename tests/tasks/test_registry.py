"""The one table of tasks (`kbert.tasks.registry`): every task builds through its record on
every family, every layer's table of task names is a view of it, and a name means one task
everywhere. The tasks and names come from the records, never from a list here."""

import numpy as np
import pytest

import kbert
import kbert.convert
import kbert.pipelines
from kbert.tasks import registry
from tests.tasks._checks import FAMILIES, inputs_for, numpy_outputs, tiny_backbone, tiny_config


def _build(record, family):
    """A model of `record`'s task on a tiny `family` backbone, made through the record."""
    if record.model is None:
        return kbert.models.build(family, tiny_config(family), head=record.model_head)
    return record.build(tiny_backbone(family), **({"num_classes": 3} if record.labelled else {}))


@pytest.mark.parametrize("name", list(registry.RECORDS))
def test_every_task_builds_through_its_record_on_every_family(name):
    """Every family's tiny backbone takes the task; the model is recognised as the task's
    (the pipelines' kind), runs, and a task with a transformers class has that family's
    class in config.json and reads back as the same task."""
    from kbert.convert import families, task_heads

    record = registry.RECORDS[name]
    for family in FAMILIES:
        model = _build(record, family)
        assert registry.of_model(model) is record, (family, type(model).__name__)
        outputs = numpy_outputs(model, inputs_for(model))
        for value in (outputs.values() if isinstance(outputs, dict) else [outputs]):
            assert value.shape[0] == 4 and np.isfinite(value).all(), (family, name)
        if record.model is not None:
            # Every weight the task model computes with is in its checkpoint map (the pooler
            # of a model that does not read it aside): a head left out of the map is saved
            # and loaded as nothing, and a reloaded model silently gets fresh weights.
            mapped = {id(entry.variable) for entry in task_heads.entries(model)}
            unread = (set() if task_heads.reads_pooler(model)
                      else task_heads.pooler_variables(model.backbone))
            missing = [v.path for v in model.weights
                       if id(v) not in mapped | unread and v.trainable]
            assert not missing, (family, name, missing)
        if record.hf_class is None:
            assert task_heads.of_model(model) is None or record.model is not None
            continue
        convert_family = families.get(family)
        head = task_heads.of_model(model)
        assert head.task == name
        values = task_heads.to_hf_config(head, convert_family)
        assert values["architectures"][0].endswith(record.hf_class), (family, values)
        back = task_heads.from_hf_config(values, convert_family)
        assert back.task == name and ("label_names" in back.arguments) == record.labelled


def test_a_task_model_without_a_weight_map_is_refused_not_given_a_fresh_head():
    """A model that names no head layers (not a task model, or a task model without
    `head_layers`) is an error naming it, where an empty map would let a reload rebuild its
    head at random; each task model's map is its own `head_layers`."""
    import keras

    from kbert.convert import task_heads
    from kbert.tasks.task import Task

    backbone = tiny_backbone("bert")

    class Unmapped(keras.Model):
        pass

    class Unnamed(Task, keras.Model):
        pass

    for cls in (Unmapped, Unnamed):
        model = cls(inputs=backbone.input, outputs=backbone.output["pooled_output"])
        with pytest.raises(TypeError, match=f"no weight map for the head of {cls.__name__}: "
                                            f"a task model names its head's layers"):
            task_heads._classifier_entries(model)
    tagger = kbert.tasks.TokenClassifier(backbone, num_classes=3)
    assert [e.names[0] for e in task_heads._classifier_entries(tagger)] == \
        ["classifier.weight", "classifier.bias"]


def test_every_layer_reads_its_task_names_from_the_table():
    from kbert.convert import families
    from kbert.pipelines import exporting, model_source
    from kbert.training import finetuning_config, finetuning_tasks

    pipelines = registry.pipeline_names()
    assert list(kbert.pipelines.TASKS) == list(pipelines)
    assert all(kbert.pipelines.TASKS[p].task == p for p in pipelines)
    for runtime in ("saved_model", "tflite"):
        assert tuple(exporting.BUILDERS[runtime]) == registry.pipeline_names(export=runtime)
    assert {r.name: r.serves for r in registry.RECORDS.values()} == model_source.SERVES
    finetuned = [r.name for r in registry.finetuning_tasks()]
    assert list(finetuning_tasks.FINETUNING_TASKS) == finetuned
    assert list(finetuning_config.TASKS) == finetuned
    assert list(kbert.tasks.TASKS) == [r.name for r in registry.task_models()]
    for family in families.FORMATS.values():  # the task classes transformers has
        assert set(family.task_architectures) <= set(registry.hugging_face_tasks())


@pytest.mark.parametrize("name", registry.names())
def test_a_name_means_one_task_everywhere(name):
    from kbert.convert import task_heads

    record = registry.get(name)
    assert kbert.tasks.task_name(name) == record.name
    assert kbert.tasks.ALIASES.get(name, name) == record.name or record.model is None
    pipeline = kbert.pipelines.ALIASES.get(name, name)
    assert pipeline == registry.pipeline_task(name) and pipeline in record.pipelines
    assert kbert.pipelines.TASKS[pipeline].task == pipeline
    assert task_heads.describe(name) == record.describe()
    assert name in record.describe() and record.describe().startswith(record.name)


def test_feature_extraction_is_the_backbones_hidden_states_as_in_transformers():
    """The disagreement the table ended: "feature-extraction" is the backbone's hidden
    states for the pipelines and for `kbert.tasks`; the `TextEmbedder` is
    "text_embedder" / "sentence-embeddings"."""
    from kbert.convert import task_heads
    from kbert.pipelines import sources
    from kbert.tokenizers import WordPieceTokenizer

    assert registry.get("feature-extraction") is registry.BACKBONE
    assert registry.get("sentence-embeddings") is registry.TEXT_EMBEDDER
    backbone = tiny_backbone("bert")
    embedder = kbert.tasks.build("sentence-embeddings", backbone)
    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"])
    assert sources.from_model(embedder, tokenizer, "feature-extraction").runner.model \
        is backbone
    assert sources.from_model(embedder, tokenizer, "sentence-embeddings").runner.model \
        is embedder
    with pytest.raises(ValueError, match="has no task model"):
        kbert.tasks.build("feature-extraction", backbone)
    with pytest.raises(ValueError, match=r"task='feature-extraction' \(backbone\) has no "
                                         "task model.*task=None, head=None.*text_embedder"):
        task_heads.check(None, "feature-extraction", "dir")


def test_unknown_names_are_refused_listing_the_known_ones():
    known = ", ".join(registry.names())
    message = f"Unknown task 'translation'. Known: {known}."
    for call in (lambda: registry.get("translation"),
                 lambda: kbert.tasks.build("translation", None),
                 lambda: kbert.tasks.task_name("translation"),
                 lambda: kbert.pipeline("translation", model="anything")):
        with pytest.raises(ValueError) as caught:
            call()
        assert str(caught.value) == message
    with pytest.raises(ValueError, match="Unknown task None"):
        registry.get(None)
    with pytest.raises(ValueError, match="Unknown export 'onnx'. Allowed: saved_model, tflite"):
        registry.pipeline_names(export="onnx")


def test_a_record_that_breaks_the_table_fails_on_import(monkeypatch):
    with pytest.raises(TypeError, match="aliases must name one of its pipelines"):
        registry.TaskRecord(name="x", summary="x", pipelines=("x-pipe",),
                            aliases={"y": "other-pipe"}, model_head=None)
    with pytest.raises(TypeError, match="without a model class needs a model_head"):
        registry.TaskRecord(name="x", summary="x", pipelines=("x-pipe",), model_head="auto")
    twin = registry.TaskRecord(name="tagger", summary="x", pipelines=("tagging",),
                               aliases={"ner": "tagging"}, model_head=None)
    monkeypatch.setitem(registry.RECORDS, "tagger", twin)
    with pytest.raises(TypeError, match="'ner' is taken by token_classifier and tagger"):
        registry._index()


@pytest.mark.parametrize("name", list(registry.RECORDS))
def test_every_task_folder_holds_what_its_record_says(name):
    """Export and fine-tuning reach a task through its record: its folder has the modules and
    functions of what the record says it does (a task added with its record alone fails
    here, not at a user's export)."""
    record = registry.RECORDS[name]
    for export in record.exports:
        for pipeline in record.pipelines:
            assert callable(record.pipeline_export(pipeline, export)), (pipeline, export)
    if record.finetuning:
        hooks = record.module("finetuning")
        for hook in ("read", "encode", "fit_labels", "build", "scores", "metric",
                     "export_options"):
            assert callable(getattr(hooks, hook)), hook


def test_a_task_without_a_part_or_an_unknown_task_fails_naming_it(monkeypatch):
    """No fallback to another task: what a task's folder lacks, and a pipeline task that no
    export table holds, are errors naming the task and what is allowed."""
    from kbert.pipelines import exporting

    with pytest.raises(LookupError, match=r"task text_embedder \(sentence-embeddings, "
                                          r"sentence-similarity\) has no finetuning module "
                                          r"\(kbert.tasks.text_embedding.finetuning"):
        registry.TEXT_EMBEDDER.module("finetuning")
    with pytest.raises(ValueError, match="Unknown task module role 'decoder'. Allowed: "
                                         "pipeline_serving, tflite, finetuning"):
        registry.TEXT_EMBEDDER.module("decoder")
    bare = registry.TaskRecord(name="translator", summary="x", pipelines=("translation",),
                               model_head=None)
    with pytest.raises(LookupError, match=r"translator .* names no folder \(package=None\): "
                                          "it has no tflite module"):
        bare.pipeline_export("translation", "tflite")
    with pytest.raises(LookupError, match="'fill-mask' is no pipeline of the task translator"):
        bare.pipeline_export("fill-mask", "saved_model")
    with pytest.raises(ValueError, match="Unknown export 'onnx'"):
        bare.pipeline_export("translation", "onnx")

    class Pipe:  # a pipeline of a task no export holds
        task = "translation"

    with pytest.raises(NotImplementedError, match="A translation pipeline does not export to "
                                                  "saved_model: the exports to saved_model "
                                                  "are text-classification, "):
        exporting.write(Pipe(), "unused", "saved_model", None, {})
    with pytest.raises(NotImplementedError, match="does not export to tflite: .* "
                                                  "format='saved_model' writes a SavedModel"):
        exporting.write(Pipe(), "unused", "tflite", None, {})
    with pytest.raises(ValueError, match="format='coreml'; allowed: 'saved_model', 'tflite', "
                                         "'onnx'"):
        exporting.write(Pipe(), "unused", "coreml", None, {})

