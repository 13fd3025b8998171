"""Small checkpoints in the original formats, written the way their own code names things."""

import json
from pathlib import Path

import numpy as np
import tensorflow as tf

from kbert.models import BertConfig, BertPretrainer, build

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
    w for w in "the a of to and in is it that was he she for on are with as his they be at one "
                "have this from or had by word but what some we can out other were all there when "
                "up use your how said an each which do their time if will way about many then them "
                "##s ##ed ##ing ##ly".split()
]
CONFIG = BertConfig(vocabulary_size=len(VOCABULARY), num_layers=2, hidden_size=16, num_heads=2,
                    intermediate_size=32, max_sequence_length=24, dropout=0.0,
                    attention_dropout=0.0)


def randomise(model, seed=0):
    """Every float weight of `model` (biases and LayerNorms too) random; other state (a
    sampler's seed) kept."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        if variable.dtype == "float32":
            variable.assign(rng.normal(0.0, 0.2, variable.shape).astype("float32"))
    return model


def random_pretrainer(config=CONFIG, seed=0, head="pretrainer"):
    """A kbert model whose every weight (biases and LayerNorms too) is random."""
    return randomise(build("bert", config, head=head), seed)


def inputs(batch=3, length=12, vocabulary_size=len(VOCABULARY), seed=1):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, length), "int32")
    mask[0, length - 4:] = 0
    return {
        "token_ids": rng.integers(0, vocabulary_size, (batch, length)).astype("int32"),
        "segment_ids": (np.arange(length)[None] >= length // 2).repeat(batch, 0).astype("int32"),
        "padding_mask": mask,
        "mask_positions": np.array([[1, 3], [2, 5], [0, 7]][:batch], "int32"),
    }


def assert_same_outputs(a, b, x, atol=0.0):
    """Both models give the same outputs on `x` (each model gets the inputs it takes)."""
    x = {k: v for k, v in x.items() if k in a.input}
    ya, yb = a(x), b(x)
    assert set(ya) == set(yb)
    for key in ya:
        np.testing.assert_allclose(np.asarray(ya[key]), np.asarray(yb[key]), atol=atol, rtol=0,
                                   err_msg=key)


def google_variables(model):
    """The model's weights under google-research/bert's TF1 variable names and layouts."""
    backbone = model.backbone
    hidden = backbone.config.hidden_size
    e = backbone.embeddings
    v = {
        "bert/embeddings/word_embeddings": e.token_embedding.embeddings,
        "bert/embeddings/token_type_embeddings": e.segment_embedding.embeddings,
        "bert/embeddings/position_embeddings": e.position_embedding,
        "bert/embeddings/LayerNorm/gamma": e.layer_norm.gamma,
        "bert/embeddings/LayerNorm/beta": e.layer_norm.beta,
        "bert/pooler/dense/kernel": backbone.pooler.dense.kernel,
        "bert/pooler/dense/bias": backbone.pooler.dense.bias,
    }
    v = {k: np.asarray(x) for k, x in v.items()}
    for i, block in enumerate(backbone.transformer_layers):
        p = f"bert/encoder/layer_{i}/"
        kernel, bias = np.asarray(block.qkv_dense.kernel), np.asarray(block.qkv_dense.bias)
        for c, part in enumerate(("query", "key", "value")):
            v[f"{p}attention/self/{part}/kernel"] = kernel[:, c].reshape(hidden, hidden)
            v[f"{p}attention/self/{part}/bias"] = bias[c].reshape(hidden)
        v[f"{p}attention/output/dense/kernel"] = np.asarray(
            block.attention_output_dense.kernel).reshape(hidden, hidden)
        for name, layer in (("attention/output/dense/bias", block.attention_output_dense.bias),
                            ("attention/output/LayerNorm/gamma", block.attention_layer_norm.gamma),
                            ("attention/output/LayerNorm/beta", block.attention_layer_norm.beta),
                            ("intermediate/dense/kernel", block.intermediate_dense.kernel),
                            ("intermediate/dense/bias", block.intermediate_dense.bias),
                            ("output/dense/kernel", block.output_dense.kernel),
                            ("output/dense/bias", block.output_dense.bias),
                            ("output/LayerNorm/gamma", block.output_layer_norm.gamma),
                            ("output/LayerNorm/beta", block.output_layer_norm.beta)):
            v[p + name] = np.asarray(layer)
    if isinstance(model, BertPretrainer):
        head = model.mlm_head
        v.update({
            "cls/predictions/transform/dense/kernel": np.asarray(head.dense.kernel),
            "cls/predictions/transform/dense/bias": np.asarray(head.dense.bias),
            "cls/predictions/transform/LayerNorm/gamma": np.asarray(head.layer_norm.gamma),
            "cls/predictions/transform/LayerNorm/beta": np.asarray(head.layer_norm.beta),
            "cls/predictions/output_bias": np.asarray(head.output_bias),
        })
        if model.nsp_head is not None:
            v["cls/seq_relationship/output_weights"] = np.asarray(model.nsp_head.dense.kernel).T
            v["cls/seq_relationship/output_bias"] = np.asarray(model.nsp_head.dense.bias)
    return v


def write_tf1_release(model, folder, vocabulary=VOCABULARY, with_optimizer_slots=True):
    """A folder like google-research/bert's releases: bert_model.ckpt.*, bert_config.json,
    vocab.txt. Variables keep their TF1 names (SaveV2 writes the names it is given)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    variables = google_variables(model)
    if with_optimizer_slots:  # what a pretraining checkpoint also holds
        variables.update({f"{name}/adam_m": np.zeros_like(value)
                          for name, value in list(variables.items())[:3]})
        variables["global_step"] = np.array(1000, "int64")
    names = sorted(variables)
    tf.raw_ops.SaveV2(prefix=str(folder / "bert_model.ckpt"), tensor_names=names,
                      shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(variables[n]) for n in names])
    config = model.backbone.config
    activation = {"gelu_approximate": "gelu"}.get(config.activation, config.activation)
    (folder / "bert_config.json").write_text(json.dumps({
        "attention_probs_dropout_prob": config.attention_dropout,
        "hidden_act": activation,
        "hidden_dropout_prob": config.dropout,
        "hidden_size": config.hidden_size,
        "initializer_range": config.initializer_range,
        "intermediate_size": config.intermediate_size,
        "max_position_embeddings": config.max_sequence_length,
        "num_attention_heads": config.num_heads,
        "num_hidden_layers": config.num_layers,
        "type_vocab_size": config.type_vocab_size,
        "vocab_size": config.vocabulary_size,
    }, indent=2))
    (folder / "vocab.txt").write_text("".join(f"{t}\n" for t in vocabulary))
    return folder
