"""Pipelines on ONNX Runtime (`runtime="onnxruntime"`, `kbert.serving.onnx`: tf2onnx's
conversion of the model of token ids): every family and every kind of task model answers as on
TensorFlow (scores and vectors within 1e-4, labels, words and offsets equal); an ONNX export
(`kbert.export(..., format="onnx")`) is a directory a pipeline runs, with its options as
defaults; int8 stays near float32; and what cannot run on ONNX Runtime says so before any
conversion."""

import json

import numpy as np
import pytest

import kbert
from kbert.serving import onnx
from tests.pipelines.conftest import load_pipeline
from tests.pipelines.reference import FIXTURES
from tests.pipelines.test_jit_compile import TEXTS

FAMILIES = ("bert", "albert", "distil_bert", "electra", "roberta", "deberta_v3", "mobile_bert",
            "modern_bert")
TASKS = [
    ("token-classification", "hf_tasks/bert_token", TEXTS, {"aggregation_strategy": "simple"}),
    # DistilBERT: no segment_ids; feature extraction runs the backbone of a task model.
    ("feature-extraction", "hf_tasks/distil_bert_seq_single", TEXTS, {}),
    ("sentence-embeddings", "hf_tasks/st_bert_mean_normalize", TEXTS, {}),
    ("question-answering", "hf_tasks/bert_qa",
     {"question": ["Where does John work?", "Who?"], "context": [TEXTS[2], TEXTS[0]]}, {}),
    ("zero-shot-classification", "hf_tasks/bert_nli", TEXTS[:2],
     {"candidate_labels": ["sports", "politics", "travel"]}),
]


def _same(got, want, where="answer", tolerance=1e-4):
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), where
        for key in want:
            _same(got[key], want[key], f"{where}[{key!r}]", tolerance)
    elif isinstance(want, (list, tuple, np.ndarray)) and not np.isscalar(want):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{where}[{i}]", tolerance)
    elif isinstance(want, float):
        assert abs(got - want) <= tolerance, (where, got, want)
    else:
        assert got == want, (where, got, want)


def _on_onnxruntime(task, model, **options):
    return kbert.pipeline(task, model=str(FIXTURES / model), runtime="onnxruntime", **options)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_answers_on_onnxruntime_as_on_tensorflow(family):
    model = f"hf_tasks/{family}_seq_single"
    want = load_pipeline("text-classification", model)(TEXTS, batch_size=2, top_k=None)
    pipe = _on_onnxruntime("text-classification", model)
    assert isinstance(pipe.source.runner, onnx.SessionRunner)
    assert pipe.source.name == "TextClassifier on ONNX Runtime"
    _same(pipe(TEXTS, batch_size=2, top_k=None), want)


@pytest.mark.parametrize("task, model, inputs, options", TASKS,
                         ids=[f"{c[0]}-{c[1].split('/')[-1]}" for c in TASKS])
def test_every_task_answers_on_onnxruntime_as_on_tensorflow(task, model, inputs, options):
    if task == "question-answering":  # question= and context=, as transformers' pipeline
        options, inputs = {**options, **inputs}, ()
    else:
        inputs = (inputs,)
    want = load_pipeline(task, model)(*inputs, batch_size=2, **options)
    _same(_on_onnxruntime(task, model)(*inputs, batch_size=2, **options), want)


def test_a_summarizer_chooses_the_sentences_it_chooses_on_tensorflow():
    from kbert.tasks import ExtractiveSummarizer
    from tests.tasks._checks import tiny_backbone
    from tests.tasks.test_extractive_summarizer import VOCABULARY, WORDS, tokenizer

    tok = tokenizer()
    model = ExtractiveSummarizer(tiny_backbone("bert", vocabulary_size=len(VOCABULARY)))
    rng = np.random.default_rng(3)
    documents = [" ".join(" ".join(rng.choice(WORDS, size=rng.integers(2, 8))).capitalize()
                          + "." for _ in range(rng.integers(1, 8))) for _ in range(6)]
    want = kbert.pipeline("summarization", model=model, tokenizer=tok)(documents,
                                                                       num_sentences=2)
    got = kbert.pipeline("summarization", model=model, tokenizer=tok, runtime="onnxruntime")(
        documents, num_sentences=2)
    _same(got, want)


def test_gemms_become_matmuls_with_each_shared_weight_transposed_once():
    """tf2onnx's Gemm (alpha 1, transB 0 or 1, a bias or none) as MatMul and Add, which ONNX
    Runtime's int8 quantizes: the same numbers in ONNX Runtime."""
    import onnx as onnx_library
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w, wt, c = (rng.normal(size=s).astype(np.float32) for s in ((4, 3), (3, 4), (3,)))
    nodes = [helper.make_node("Gemm", ["x", "w", "c"], ["a"]),
             helper.make_node("Gemm", ["x", "wt"], ["b"], transB=1, beta=0.0),
             helper.make_node("Gemm", ["x", "wt", "c"], ["d"], transB=1)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [None, 3]) for n in "abd"],
        [numpy_helper.from_array(v, n) for n, v in (("w", w), ("wt", wt), ("c", c))])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", onnx.OPSET)])
    x = rng.normal(size=(5, 4)).astype(np.float32)
    want = onnx.session(proto).run(None, {"x": x})
    changed = onnx._gemms_as_matmuls(onnx_library.ModelProto.FromString(
        proto.SerializeToString()))
    onnx_library.checker.check_model(changed)
    assert [n.op_type for n in changed.graph.node] == ["MatMul", "Add", "MatMul", "MatMul",
                                                       "Add"]
    assert [i.name for i in changed.graph.initializer].count("wt_transposed") == 1
    for g, w_ in zip(onnx.session(changed).run(None, {"x": x}), want):
        np.testing.assert_allclose(g, w_, atol=1e-6)


def test_the_graph_holds_what_onnx_runtime_fuses():
    """Keras' LayerNorm as ONNX's LayerNormalization, the exact GELU as the erf form ONNX
    Runtime fuses, attention as 4-D transposes and matmuls (not tf2onnx's 5-D einsums of
    `dot_product_attention`), the projections as one MatMul each."""
    pipe = load_pipeline("text-classification", "hf_tasks/bert_seq_single")
    model = pipe.source.runner.model
    proto = onnx.model_proto(model, "text_classifier")
    ops = [node.op_type for node in proto.graph.node]
    layers = model.backbone.config.num_layers
    assert ops.count("LayerNormalization") == 2 * layers + 1, sorted(set(ops))
    assert ops.count("Erf") == layers and "GlobalAveragePool" not in ops, sorted(set(ops))
    perms = [list(a.ints) for node in proto.graph.node if node.op_type == "Transpose"
             for a in node.attribute if a.name == "perm"]
    # Each layer's query, key and value to [B, N, S, D] (keys to [B, N, D, S]).
    assert perms.count([0, 2, 1, 3]) >= 2 * layers and perms.count([0, 2, 3, 1]) == layers, perms
    assert "Einsum" not in ops
    # Each layer's query, key, value, scores, context, output and two feed-forward layers one
    # MatMul each (not tf2onnx's Gemm of the fused projection and Slices of it), the pooler's
    # and the classifier's two more.
    assert ops.count("MatMul") == 8 * layers + 2 and "Gemm" not in ops, sorted(set(ops))
    # Each dense layer on [B, S, H] one MatMul of the 3-D tensor (not tf.tensordot's Reshape
    # to 2-D and back by a shape computed at run time): the Reshapes left are the query's,
    # key's and value's to heads and the context's back.
    assert ops.count("Reshape") == 4 * layers and ops.count("Shape") <= 3, sorted(ops)
    # ModernBERT's LayerNorms have no beta: fused all the same.
    modern = load_pipeline("text-classification", "hf_tasks/modern_bert_seq_single")
    ops = [node.op_type for node in
           onnx.model_proto(modern.source.runner.model, "text_classifier").graph.node]
    assert "LayerNormalization" in ops and "GlobalAveragePool" not in ops, sorted(set(ops))


def test_an_onnx_export_is_a_directory_a_pipeline_runs_with_its_options(tmp_path):
    model = "hf_tasks/bert_seq_single"
    pipe = load_pipeline("text-classification", model)
    path = kbert.export(pipe, tmp_path / "export", format="onnx", top_k=2)
    assert sorted(p.name for p in path.iterdir()) == ["export.json", "model.onnx",
                                                      "tokenizer_config.json", "vocab.txt"]
    meta = json.loads((path / "export.json").read_text())
    assert (meta["runtime"], meta["task"], meta["model"], meta["quantize"]) == (
        "onnx", "text-classification", "text_classifier", None)
    assert meta["options"] == {"top_k": 2}
    assert meta["signatures"] == {"serving_ids": {
        "inputs": ["token_ids", "segment_ids", "padding_mask"], "outputs": ["logits"]}}
    loaded = kbert.pipeline("text-classification", model=str(path))
    assert loaded.source.name == f"the ONNX export {path}"
    assert loaded.source.label_names == pipe.source.label_names
    # The export's top_k=2 is the default of the same pipeline on it; a call overrides it.
    _same(loaded(TEXTS), pipe(TEXTS, top_k=2))
    _same(loaded(TEXTS, top_k=None), pipe(TEXTS, top_k=None))
    with pytest.raises(ValueError, match="jit_compile=True .* ONNX Runtime"):
        loaded(TEXTS, jit_compile=True)
    with pytest.raises(ValueError, match="is an ONNX export: run it with kbert.pipeline"):
        kbert.load(str(path))
    with pytest.raises(ValueError, match="is an ONNX export, which runs on ONNX Runtime"):
        kbert.pipeline("text-classification", model=str(path), runtime="tensorflow")


def test_int8_stays_near_float32(tmp_path):
    """ONNX Runtime's dynamic int8 quantization: the graph holds integer matrix products, and
    the scores move by at most 0.15 (measured up to 0.09 on three families' tiny models).
    The tiny fixtures' random weights leave class margins near zero, so a label may flip
    here: the accuracy change on real labelled data is `tools/benchmark.py serving`'s."""
    model = "hf_tasks/bert_seq_single"
    want = load_pipeline("text-classification", model)(TEXTS, top_k=None)
    path = kbert.export(load_pipeline("text-classification", model), tmp_path / "int8",
                        format="onnx", quantize="int8")
    assert json.loads((path / "export.json").read_text())["quantize"] == "int8"
    import onnx as onnx_library

    ops = {node.op_type for node in onnx_library.load(str(path / "model.onnx")).graph.node}
    # Every dense layer quantized: tf2onnx's Gemms were written as MatMul first.
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= ops and "Gemm" not in ops, sorted(ops)
    pipe = kbert.pipeline("text-classification", model=str(path))
    assert pipe.source.name == f"the ONNX export (quantized int8) {path}"
    got = pipe(TEXTS, top_k=None)
    for g, w in zip(got, want):
        scores = {answer["label"]: answer["score"] for answer in g}
        for answer in w:
            assert abs(scores[answer["label"]] - answer["score"]) <= 0.15, (g, w)
    with pytest.raises(ValueError, match="quantized already"):
        kbert.pipeline("text-classification", model=str(path), quantize="int8")


def test_what_cannot_run_on_onnxruntime_says_so(tmp_path):
    model = str(FIXTURES / "hf_tasks/bert_seq_single")
    with pytest.raises(ValueError, match="runtime='torch'; allowed: 'tensorflow', "
                                         "'onnxruntime'"):
        kbert.pipeline("text-classification", model=model, runtime="torch")
    with pytest.raises(ValueError, match="pass runtime='onnxruntime' with it"):
        kbert.pipeline("text-classification", model=model, quantize="int8")
    with pytest.raises(ValueError, match="quantize='dynamic' for ONNX; allowed: None"):
        kbert.pipeline("text-classification", model=model, runtime="onnxruntime",
                       quantize="dynamic")
    fill_mask = load_pipeline("fill-mask", "hf_tiny/distil_bert")
    with pytest.raises(NotImplementedError, match="fill-mask pipeline on a masked lm does "
                                                  "not export to ONNX"):
        kbert.export(fill_mask, tmp_path / "fill", format="onnx")
    with pytest.raises(ValueError, match="runtime='onnxruntime' runs a model of token ids"):
        kbert.pipeline("fill-mask", model=str(FIXTURES / "hf_tiny/distil_bert"),
                       runtime="onnxruntime")
    features = load_pipeline("feature-extraction", "hf_tasks/distil_bert_seq_single")
    with pytest.raises(ValueError, match="output_hidden_states"):
        kbert.export(features, tmp_path / "internals", format="onnx",
                     output_hidden_states=True)
    from tests.tasks._checks import tiny_backbone

    with pytest.raises(ValueError, match="converts a float32 model; this one computes in "
                                         "bfloat16"):
        onnx.model_proto(tiny_backbone("bert", dtype="mixed_bfloat16"), "backbone")
    with pytest.raises(ValueError, match="quantize='float16' for ONNX"):
        kbert.export(load_pipeline("text-classification", "hf_tasks/bert_seq_single"),
                     tmp_path / "f16", format="onnx", quantize="float16")
    assert not any((tmp_path / name).exists() for name in ("fill", "f16", "internals"))
