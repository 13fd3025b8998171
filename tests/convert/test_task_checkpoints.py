"""Fine-tuned checkpoints in and out (issue 19): transformers' task models and
sentence-transformers directories load as kbert task models with transformers' outputs, labels
and problem type, and go back out in the layout transformers loads."""

import dataclasses
import json
import re
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import kbert.convert
from kbert import tasks
from kbert.convert import bert as bert_weights
from kbert.convert.families import get as checkpoint_family
from kbert.models import BertBackbone
from tests.convert import _tasks
from tests.convert._tasks import FAMILIES, FIXTURES, KINDS

CASES = [(f, k) for f in FAMILIES for k in KINDS]


def _check_task(model, name, task, label_names, problem_type):
    assert isinstance(model, tasks.TASKS[task]), type(model)
    assert getattr(model, "label_names", None) == label_names
    assert getattr(model, "problem_type", None) == problem_type
    difference = _tasks.largest_difference(model, _tasks.reference(name))
    print(f"{name}: max |kbert - transformers| = {difference:.1e}")
    assert difference < _tasks.ATOL


def _same_files(written, original):
    """The written model.safetensors holds the original's tensors, under the same names."""
    ours, theirs = load_file(str(written / "model.safetensors")), load_file(
        str(original / "model.safetensors"))
    theirs.pop("bert.embeddings.position_ids", None)
    assert sorted(ours) == sorted(theirs)
    for name, value in theirs.items():
        assert np.array_equal(ours[name], value), name


@pytest.mark.parametrize("family, kind", CASES, ids=[f"{f}_{k}" for f, k in CASES])
def test_a_task_checkpoint_loads_with_transformers_outputs_and_goes_back(family, kind,
                                                                         tmp_path):
    name = f"{family}_{kind}"
    task, suffix, label_names, problem_type = KINDS[kind]
    checkpoint = kbert.convert.read(FIXTURES / name)
    assert checkpoint.task.architecture == checkpoint.architecture == FAMILIES[family] + suffix
    model = checkpoint.build_task()
    _check_task(model, name, task, label_names, problem_type)

    kbert.convert.save_hugging_face(model, tmp_path / "out", vocabulary=checkpoint.tokenizer())
    _same_files(tmp_path / "out", FIXTURES / name)
    ours = json.loads((tmp_path / "out" / "config.json").read_text())
    theirs = json.loads((FIXTURES / name / "config.json").read_text())
    for key in ("architectures", "id2label", "label2id"):
        assert ours.get(key) == theirs.get(key), key
    dropout = checkpoint_family(family).task_dropout.get(task)  # None or absent (DeBERTa's
    if dropout is not None:                                     # cls_dropout): the encoder's
        assert ours[dropout] == (theirs.get(dropout) or theirs["hidden_dropout_prob"]), dropout
    # No fixture states a problem_type but seq_multi's: the others go back out without one
    # (transformers' pipeline scores one output without it with a sigmoid, not as a value).
    assert ours.get("problem_type") == theirs.get("problem_type")
    if task == "text_classifier":
        assert model.problem_type_declared == (theirs.get("problem_type") is not None)


@pytest.mark.parametrize("name, classifier_activation, pooler_tensors", [
    ("mobile_bert_seq_single", False, []),  # google/mobilebert-uncased's: the first token
    ("mobile_bert_seq_regression", True, ["pooler.dense.bias", "pooler.dense.weight"]),
])
def test_a_mobile_bert_classifier_reads_either_pooler(name, classifier_activation,
                                                      pooler_tensors, tmp_path):
    """MobileBertForSequenceClassification classifies the pooled output, which is the first
    token as it is without `classifier_activation` (no tensor) and dense + tanh with it: the
    fixtures hold one of each, and the pooler's tensors go back out only where there are
    some."""
    classifier = kbert.convert.load(FIXTURES / name)
    assert classifier.head == "pooled"
    assert classifier.backbone.config.classifier_activation is classifier_activation
    kbert.convert.save_hugging_face(classifier, tmp_path / "out")
    written = load_file(str(tmp_path / "out" / "model.safetensors"))
    assert sorted(k for k in written if ".pooler." in k) == [
        f"mobilebert.{k}" for k in pooler_tensors]
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["classifier_activation"] is classifier_activation


@pytest.mark.parametrize("change, message", [
    ({"pooler_hidden_act": "tanh"}, "a DebertaV2ForSequenceClassification with "
     "pooler_hidden_act='tanh'; kbert's DeBERTa-v3 TextClassifier serves "
     "pooler_hidden_act='gelu'"),
    ({"pooler_hidden_size": 16}, "a DebertaV2ForSequenceClassification with "
     "pooler_hidden_size=16 \\(hidden_size=24\\); kbert's DeBERTa-v3 TextClassifier serves a "
     "pooler as wide as the encoder"),
])
def test_a_deberta_classifier_with_another_context_pooler_is_refused(tmp_path, change,
                                                                      message):
    """DeBERTa's ContextPooler is kbert's ClassificationHead only as transformers' default
    (exact GELU, as wide as the encoder): another would give other outputs."""
    folder = _copy_with_config("deberta_v3_seq_single", tmp_path / "x", **change)
    with pytest.raises(ValueError, match=message):
        kbert.convert.load(folder)
    # The encoder's config.json of a base model may carry any pooler: it has none.
    base = _copy_with_config("deberta_v3_token", tmp_path / "base", **change)
    assert isinstance(kbert.convert.load(base), tasks.TokenClassifier)


def test_deberta_names_its_classifier_head_pooler_and_classifier(tmp_path):
    """DeBERTa's ContextPooler (`pooler.dense`, outside `deberta.`) and `classifier` are the
    ClassificationHead's dense and out_proj; a `pooler.*` tensor that a DeBERTa token
    classifier does not use is an error, as any unused head tensor."""
    classifier = kbert.convert.load(FIXTURES / "deberta_v3_seq_single")
    assert classifier.head == "cls"
    weights = load_file(str(FIXTURES / "deberta_v3_seq_single" / "model.safetensors"))
    np.testing.assert_array_equal(np.asarray(classifier.classifier.dense.kernel),
                                  weights["pooler.dense.weight"].T)
    np.testing.assert_array_equal(np.asarray(classifier.classifier.out_proj.kernel),
                                  weights["classifier.weight"].T)
    folder = tmp_path / "token"
    shutil.copytree(FIXTURES / "deberta_v3_token", folder)
    weights = load_file(str(folder / "model.safetensors"))
    weights["pooler.dense.bias"] = np.ones((24,), np.float32)
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ValueError, match="holds a DebertaV2ForTokenClassification with head "
                                         ".* does not use: pooler.dense.bias\\."):
        kbert.convert.load(folder)


def _copy_with_config(name, folder, **changes):
    shutil.copytree(FIXTURES / name, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))
    return folder


def test_a_declared_problem_type_goes_back_out_and_an_unstated_one_stays_unstated(tmp_path):
    """One output: "regression" stated stays stated; none stated stays none, through
    kbert's own directory too (transformers' pipeline scores the two differently)."""
    declared = kbert.convert.load(_copy_with_config("bert_seq_regression", tmp_path / "r",
                                                    problem_type="regression"))
    assert (declared.problem_type, declared.declared_problem_type) == ("regression",
                                                                       "regression")
    kbert.convert.save_hugging_face(declared, tmp_path / "r_out")
    assert json.loads((tmp_path / "r_out" / "config.json").read_text())[
        "problem_type"] == "regression"

    unstated = kbert.convert.load(FIXTURES / "bert_seq_regression")
    assert (unstated.problem_type, unstated.declared_problem_type) == ("regression", None)
    kbert.convert.save_kbert(unstated, tmp_path / "k")
    again = kbert.convert.load(tmp_path / "k")
    assert (again.problem_type, again.problem_type_declared) == ("regression", False)
    kbert.convert.save_hugging_face(again, tmp_path / "k_out")
    assert "problem_type" not in json.loads((tmp_path / "k_out" / "config.json").read_text())


@pytest.mark.parametrize("name, extra, shape", [
    ("bert_seq_single", "pre_classifier.weight", (24, 24)),  # DistilBERT's layer, not BERT's
    ("electra_token", "qa_outputs.bias", (2,)),
    ("distil_bert_qa", "classifier.bias", (2,)),
])
def test_a_head_tensor_the_task_model_does_not_use_is_an_error(tmp_path, name, extra, shape):
    """A head tensor left out would give a model whose outputs are not the checkpoint's."""
    folder = tmp_path / name
    shutil.copytree(FIXTURES / name, folder)
    weights = load_file(str(folder / "model.safetensors"))
    weights[extra] = np.ones(shape, np.float32)
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    architecture = kbert.convert.read(folder).architecture
    with pytest.raises(ValueError, match=re.escape(
            f"holds a {architecture} with head tensors that the kbert ")
            + f".* does not use: {re.escape(extra)}\\."):
        kbert.convert.load(folder)
    assert isinstance(kbert.convert.load(folder, task=None), BertBackbone)  # the encoder


@pytest.mark.parametrize("name", ["bert_nli", "roberta_nli", "mobile_bert_nli",
                                  "deberta_v3_nli"])
def test_an_nli_classifier_keeps_mnli_label_order(name):
    _check_task(kbert.convert.load(FIXTURES / name, task="text-classification"),
                name, "text_classifier", _tasks.NLI_LABELS, "single_label")


@pytest.mark.parametrize("name, pooling, normalize", [
    ("st_bert_mean_normalize", "mean", True),  # sentence-transformers 5's files
    ("st_bert_cls", "cls", False),  # 0_Transformer/ and the 2.x config keys
])
def test_a_sentence_transformers_directory_is_a_text_embedder(name, pooling, normalize,
                                                              tmp_path):
    embedder = kbert.convert.load(FIXTURES / name)
    assert (embedder.pooling, embedder.normalize) == (pooling, normalize)
    _check_task(embedder, name, "text_embedder", None, None)
    checkpoint = kbert.convert.read(FIXTURES / name)
    assert checkpoint.task.max_length == 128 and len(checkpoint.vocabulary) == 417
    # Written as sentence-transformers' 2.x layout: it reads back to the same embedder.
    kbert.convert.save_hugging_face(embedder, tmp_path / "out", vocabulary=checkpoint.tokenizer())
    _same_files(tmp_path / "out", FIXTURES / name / ("0_Transformer" if pooling == "cls" else ""))
    modules = json.loads((tmp_path / "out" / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[1] for m in modules] == (
        ["Transformer", "Pooling", "Normalize"] if normalize else ["Transformer", "Pooling"])
    again = kbert.convert.load(tmp_path / "out")
    assert (again.pooling, again.normalize, again.max_length) == (pooling, normalize, 128)
    x = _tasks.features(_tasks.reference(name), embedder, "text_")
    np.testing.assert_array_equal(_tasks.outputs(again, x)["embeddings"],
                                  _tasks.outputs(embedder, x)["embeddings"])


def test_minilm_loads_as_its_sentence_transformers_pipeline(tmp_path):
    """The real all-MiniLM-L6-v2 (modules.json of sentence-transformers 2.0): a mean-pooling,
    normalizing TextEmbedder with sentence-transformers' embeddings and max_seq_length (256
    of its 512 positions, also written back out); head=None: its encoder."""
    from tests.tasks.test_text_embedder import MINILM, REFERENCE

    embedder = kbert.convert.load(MINILM)
    assert (type(embedder), embedder.pooling, embedder.normalize) == (
        tasks.TextEmbedder, "mean", True)
    reference = np.load(REFERENCE)
    x = {k: reference[k] for k in _tasks.INPUTS}
    np.testing.assert_allclose(_tasks.outputs(embedder, x)["embeddings"],
                               reference["embeddings"], atol=_tasks.ATOL, rtol=0)
    assert kbert.convert.read(MINILM).task.max_length == 256
    assert (embedder.max_length, embedder.backbone.config.max_sequence_length) == (256, 512)
    kbert.convert.save_hugging_face(embedder, tmp_path / "out")
    written = json.loads((tmp_path / "out" / "sentence_bert_config.json").read_text())
    assert written["max_seq_length"] == 256
    shorter = kbert.convert.load(MINILM, max_sequence_length=128)  # no longer than positions
    assert shorter.max_length == 128
    assert type(kbert.convert.load(MINILM, head=None)) is BertBackbone


@pytest.mark.parametrize("name", ["bert_seq_single", "albert_seq_single", "st_bert_cls",
                                  "mobile_bert_token", "deberta_v3_token"])
def test_the_tokenizer_gives_the_checkpoints_ids(name):
    """kbert's tokenizer of each kind (WordPiece; ALBERT's SentencePiece; a Transformer in its
    own folder; MobileBertTokenizer's files; DeBERTa-v3's cased spm.model without
    tokenizer.json) gives the ids of the checkpoint's own fast tokenizer on real
    sentences."""
    arrays = _tasks.reference(name)
    tokenizer = kbert.convert.load_tokenizer(FIXTURES / name)
    ids = tokenizer.tokenize([str(s) for s in arrays["sentences"]]).to_list()
    for sentence, ours, expected, mask in zip(arrays["sentences"], ids,
                                              arrays["text_token_ids"],
                                              arrays["text_padding_mask"]):
        expected = expected[mask.astype(bool)].tolist()
        assert [expected[0], *ours, expected[-1]] == expected, sentence


@pytest.mark.parametrize("name, task, served", [
    ("bert_seq_single", "token_classifier", "text_classifier (text-classification, "
                                            "zero-shot-classification, sentiment-analysis)"),
    ("electra_token", "question-answering", "token_classifier (token-classification, ner)"),
    ("distil_bert_qa", "ner", "question_answerer (question-answering)"),
    ("st_bert_cls", "text_classifier",
     "text_embedder (sentence-embeddings, sentence-similarity)"),
])
def test_the_wrong_task_is_refused_naming_what_the_checkpoint_serves(name, task, served):
    architecture = kbert.convert.read(FIXTURES / name).task.architecture
    with pytest.raises(ValueError) as error:
        kbert.convert.load(FIXTURES / name, task=task)
    message = str(error.value)
    assert f"holds a {architecture}, which serves {served}, not {task!r}" in message
    assert "task=None for its encoder" in message


def test_an_encoder_checkpoint_serves_no_task_and_bad_arguments_are_named():
    tiny = FIXTURES.parent / "hf_tiny" / "distil_bert"
    with pytest.raises(ValueError, match="holds a DistilBertForMaskedLM without a task head, "
                                         "so it serves no task"):
        kbert.convert.load(tiny, task="text_classifier")
    with pytest.raises(ValueError, match="Unknown task 'parser'. Known: text_classifier"):
        kbert.convert.load(FIXTURES / "bert_qa", task="parser")
    with pytest.raises(ValueError, match="head='mlm' asks for a pretraining model and "
                                         "task='question_answerer'"):
        kbert.convert.load(FIXTURES / "bert_qa", head="mlm", task="question_answerer")
    with pytest.raises(TypeError, match="takes the tasks text_classifier, .* not \\['parser'"):
        dataclasses.replace(bert_weights.FAMILY, task_dropout={"parser": "parser_dropout"})


def test_task_none_gives_the_encoder_of_a_task_checkpoint():
    """transformers' token classifiers have no pooler: the encoder keeps its initial one."""
    encoder = kbert.convert.load(FIXTURES / "bert_token", task=None)
    tagger = kbert.convert.load(FIXTURES / "bert_token")
    assert type(encoder) is BertBackbone and isinstance(tagger, tasks.TokenClassifier)
    x = _tasks.features(_tasks.reference("bert_token"), encoder)
    np.testing.assert_array_equal(encoder(x)["sequence_output"],
                                  tagger.backbone(x)["sequence_output"])


@pytest.mark.parametrize("change, message", [
    ({"problem_type": "ordinal"}, "problem_type='ordinal' is not supported. Supported: "
                                  "single_label_classification"),
    ({"id2label": {"0": "a", "2": "b"}}, "id2label has ids \\[0, 2\\]; expected 0 to 1"),
])
def test_bad_task_configs_are_named(tmp_path, change, message):
    shutil.copytree(FIXTURES / "bert_seq_single", tmp_path / "x")
    config = json.loads((tmp_path / "x" / "config.json").read_text())
    (tmp_path / "x" / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(ValueError, match=message):
        kbert.convert.read(tmp_path / "x")


@pytest.mark.parametrize("module, pooling, message", [
    ("sentence_transformers.models.Dense", "mean", "Transformer -> Pooling -> Dense; kbert"),
    (None, "weightedmean", "pooling weightedmean; kbert's TextEmbedder pools one way"),
])
def test_sentence_transformers_modules_without_a_kbert_form_are_named(tmp_path, module,
                                                                      pooling, message):
    folder = tmp_path / "st"
    shutil.copytree(FIXTURES / "st_bert_mean_normalize", folder)
    modules = json.loads((folder / "modules.json").read_text())
    if module:
        modules[2]["type"] = module
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode": pooling}))
    with pytest.raises(ValueError, match=message):
        kbert.convert.read(folder)


def test_a_classifier_without_a_hugging_face_form_is_refused(tmp_path):
    backbone = kbert.convert.load(FIXTURES / "bert_seq_single", task=None)
    classifier = tasks.TextClassifier(backbone, num_classes=2, head="cls")
    with pytest.raises(ValueError, match="a bert TextClassifier with head='cls' has no Hugging "
                                         "Face form; BertForSequenceClassification is "
                                         "head='pooled'"):
        kbert.convert.save_hugging_face(classifier, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_kbert_format_keeps_the_task_model(tmp_path):
    classifier = kbert.convert.load(FIXTURES / "electra_seq_multi")
    tokenizer = kbert.convert.load_tokenizer(FIXTURES / "electra_seq_multi")
    kbert.convert.save_kbert(classifier, tmp_path / "k", vocabulary=tokenizer)
    again = kbert.convert.load(tmp_path / "k")
    assert (again.label_names, again.problem_type) == (_tasks.TOPICS, "multi_label")
    assert kbert.convert.read(tmp_path / "k").task.architecture == \
        "ElectraForSequenceClassification"
    x = _tasks.features(_tasks.reference("electra_seq_multi"), again)
    np.testing.assert_array_equal(_tasks.outputs(again, x)["logits"],
                                  _tasks.outputs(classifier, x)["logits"])
