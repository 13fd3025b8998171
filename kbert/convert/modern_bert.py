"""ModernBERT weights and config in Hugging Face names (`ModernBertModel`,
`ModernBertForMaskedLM`, and the task classes `ModernBertForSequenceClassification`,
`...ForTokenClassification`, `...ForQuestionAnswering`): the family's `FamilyFormat` record.

transformers' names: `embeddings.tok_embeddings`, `embeddings.norm`, `layers.{i}.attn_norm`
(none in layer 0), `layers.{i}.attn.Wqkv` (query, key and value in one [3H, H] matrix),
`layers.{i}.attn.Wo`, `layers.{i}.mlp_norm`, `layers.{i}.mlp.Wi` (the GeGLU's input and gate
halves in one [2I, H] matrix), `layers.{i}.mlp.Wo`, `final_norm`; the masked LM adds
`head.dense`, `head.norm` and `decoder` (its weight is the token table again). Biases and
LayerNorm biases exist where the config's `attention_bias`, `mlp_bias`, `norm_bias`,
`classifier_bias` and `decoder_bias` say, and so do kbert's. The task classes put the same
`head.dense` + `head.norm` (kbert's `prediction_head`) before their `classifier` (the reader's
too, kbert's `qa_outputs`), and read their dropout from `classifier_dropout`.
"""

from kbert.convert import _family, _mapping, bert
from kbert.models import ModernBertConfig

MODEL_TYPE = "modernbert"

# config.json fields -> ModernBertConfig fields (the activations are read apart): BERT's sizes,
# and ModernBERT's own.
CONFIG_FIELDS = {
    **{name: bert.CONFIG_FIELDS[name] for name in (
        "vocab_size", "num_hidden_layers", "hidden_size", "num_attention_heads",
        "intermediate_size", "max_position_embeddings", "initializer_range")},
    **{name: name for name in (
        "attention_dropout", "embedding_dropout", "norm_bias", "global_rope_theta",
        "local_rope_theta", "local_attention", "global_attn_every_n_layers", "attention_bias",
        "mlp_bias", "classifier_bias", "decoder_bias", "classifier_pooling",
        "classifier_dropout")},
    "mlp_dropout": "dropout",
    "norm_eps": "layer_norm_epsilon",
}
_ACTIVATION = "hidden_activation"
_HEAD_ACTIVATION = "classifier_activation"

HEADS = _mapping.Heads(mlm=("head.dense", "head.norm", "decoder.bias"), decoder="decoder")
SHAPES = _family.Shapes(
    sizes={"vocabulary_size": ("embeddings.tok_embeddings.weight", 0),
           "hidden_size": ("embeddings.tok_embeddings.weight", 1),
           "intermediate_size": ("layers.0.mlp.Wo.weight", 1)},
    layers=r"layers\.(\d+)\.", optional=())


def config_from_hf(values, source="config.json"):
    """A `ModernBertConfig` from a Hugging Face ModernBERT config.json dict."""
    if values.get("model_type", MODEL_TYPE) != MODEL_TYPE:
        raise ValueError(f"{source}: model_type={values['model_type']!r}, expected "
                         f"{MODEL_TYPE!r}.")
    if values.get("rope_scaling"):
        raise ValueError(f"{source}: rope_scaling={values['rope_scaling']!r} is not "
                         "supported; kbert's ModernBERT has plain rotary positions (null), as "
                         "the released checkpoints.")
    kwargs = bert.config_kwargs(values, CONFIG_FIELDS, _mapping.HF_ACTIVATIONS, source,
                                activation_key=_ACTIVATION)
    if values.get("local_rope_theta") is None:  # transformers: the global one then
        kwargs["local_rope_theta"] = values.get("global_rope_theta", 160000.0)
    kwargs["classifier_activation"] = _mapping.activation(
        values.get(_HEAD_ACTIVATION, "gelu"), _mapping.HF_ACTIVATIONS,
        f"{source} ({_HEAD_ACTIVATION})")
    for field in ("global_rope_theta", "local_rope_theta"):
        if isinstance(kwargs.get(field), int):
            kwargs[field] = float(kwargs[field])
    return ModernBertConfig(**kwargs)


def config_to_hf(config):
    """A Hugging Face config.json dict for a `ModernBertConfig` (without `architectures`)."""
    values = bert.config_values(config, CONFIG_FIELDS, MODEL_TYPE, activation_key=_ACTIVATION)
    values[_HEAD_ACTIVATION] = _mapping.KBERT_TO_HF_ACTIVATIONS[config.classifier_activation]
    values["tie_word_embeddings"] = True
    return values


def heads_in(weights):
    """The masked LM's head where the weights have it: a task checkpoint's `head.dense` is
    its classifier's prediction head, not the masked LM's (it has a `classifier`)."""
    return None if "classifier.weight" in weights else HEADS.heads_in(weights)


def task_config_to_hf(task_head):
    """A sequence classifier's pooling (its `head`, "cls" or "mean") as
    `classifier_pooling`, whatever the encoder's config says."""
    head = task_head.arguments.get("head", "auto")
    if task_head.task == "text_classifier" and head != "auto":
        return {"classifier_pooling": head}
    return {}


def _layer(name, layer):
    """A Dense layer's kernel or a LayerNorm's gamma under `name.weight`, and its bias (beta)
    under `name.bias` where it has one."""
    if hasattr(layer, "kernel"):
        result = [_mapping.Entry((f"{name}.weight",), layer.kernel, "dense")]
        bias = layer.bias
    else:
        result = [_mapping.Entry((f"{name}.weight",), layer.gamma, "copy")]
        bias = layer.beta
    if bias is not None:
        result.append(_mapping.Entry((f"{name}.bias",), bias, "copy"))
    return result


# (Hugging Face name, attribute of kbert's block).
_BLOCK = (("attn_norm", "attention_layer_norm"), ("attn.Wqkv", "qkv_dense"),
          ("attn.Wo", "attention_output_dense"), ("mlp_norm", "mlp_layer_norm"),
          ("mlp.Wi", "mlp_input_dense"), ("mlp.Wo", "mlp_output_dense"))


def backbone_entries(backbone):
    """The weight map of a kbert `ModernBertBackbone`."""
    embeddings = backbone.embeddings
    result = [_mapping.Entry(("embeddings.tok_embeddings.weight",),
                             embeddings.token_embedding.embeddings, "copy"),
              *_layer("embeddings.norm", embeddings.layer_norm)]
    for i, block in enumerate(backbone.transformer_layers):
        for name, attribute in _BLOCK:
            layer = getattr(block, attribute)
            if layer is not None:  # layer 0 has no attn_norm
                result += _layer(f"layers.{i}.{name}", layer)
    return result + _layer("final_norm", backbone.final_layer_norm)


def entries(model):
    """The weight map of a kbert `ModernBertBackbone` or `ModernBertPretrainer`."""
    result = backbone_entries(getattr(model, "backbone", model))
    head = getattr(model, "mlm_head", None)
    if head is not None:
        result += _layer("head.dense", head.dense) + _layer("head.norm", head.layer_norm)
        if head.decoder_bias:
            result.append(_mapping.Entry(("decoder.bias",), head.output_bias, "copy"))
    return result


FAMILY = _family.record(
    globals(),
    name="modern_bert",
    prefix="model.",
    hf_name="ModernBert",
    task_dropout={**_family.classifier_dropout(), "question_answerer": "classifier_dropout"},
    # transformers has no ModernBertTokenizer: a vocab.txt is BERT's WordPiece.
    hf_tokenizer="BertTokenizer",
    task_head_names={"prediction_head.dense": "head.dense", "prediction_head.norm": "head.norm",
                     "qa_outputs": "classifier"},
)
