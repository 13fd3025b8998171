"""MobileBERT weights in Hugging Face names (`MobileBertForPreTraining` without the
`mobilebert.` prefix).

transformers keeps NoNorm's scale and bias under LayerNorm's names (`LayerNorm.weight`,
`LayerNorm.bias`); the MLM head's extra output rows are `cls.predictions.dense.weight`
[hidden - embedding, vocabulary], beside the tied decoder (the token table again).

The pad id's token row: transformers' MobileBertEmbeddings builds the 3-token window from
the token vectors of every position, padded ones included, so it reads the `pad_token_id`
row there; the releases keep that row at zero (`padding_idx`). kbert's zeroes the padded
positions' vectors instead and never reads the row, so a kbert-made model may hold anything
in it: `to_hf_weights` writes it as zeros, and transformers' outputs on a padded batch are
then kbert's. (kbert's initialization is left as it is: the MLM head's tied table would move
the row off zero in training anyway.)
"""

import dataclasses

import numpy as np

from kbert.convert import _family, _mapping, bert
from kbert.convert._family import Shapes
from kbert.models import MobileBertConfig

MODEL_TYPE = "mobilebert"

CONFIG_FIELDS = {
    **bert.CONFIG_FIELDS,
    "embedding_size": "embedding_size",
    "intra_bottleneck_size": "intra_bottleneck_size",
    "num_feedforward_networks": "num_feedforward_networks",
    "normalization_type": "normalization_type",
    "trigram_input": "trigram_input",
    "classifier_activation": "classifier_activation",
}
# The options kbert's MobileBERT has as the release sets them; another value is refused.
FIXED = {"use_bottleneck": True, "key_query_shared_bottleneck": True,
         "use_bottleneck_attention": False}
# transformers' defaults where a config.json leaves a field out (MobileBertConfig).
HF_DEFAULTS = {"embedding_size": 128, "intra_bottleneck_size": 128,
               "num_feedforward_networks": 4, "normalization_type": "no_norm",
               "trigram_input": True, "classifier_activation": True,
               "hidden_dropout_prob": 0.0, "hidden_act": "relu"}

_LAYER = "encoder.layer.0."
SHAPES = Shapes(
    sizes={**_family.EMBEDDING_SIZES,
           "hidden_size": ("embeddings.position_embeddings.weight", 1),
           "intra_bottleneck_size": (f"{_LAYER}bottleneck.input.dense.weight", 0),
           "intermediate_size": (f"{_LAYER}intermediate.dense.weight", 0)},
    layers=r"encoder\.layer\.(\d+)\.",
)


def _check(values, source):
    for field, value in FIXED.items():
        if values.get(field, value) != value:
            raise ValueError(
                f"{source}: {field}={values[field]!r}; kbert's MobileBERT is the released "
                f"architecture ({', '.join(f'{k}={v}' for k, v in FIXED.items())})."
            )
    inner = values.get("intra_bottleneck_size", HF_DEFAULTS["intra_bottleneck_size"])
    if values.get("true_hidden_size", inner) != inner:
        raise ValueError(f"{source}: true_hidden_size={values['true_hidden_size']} differs from "
                         f"intra_bottleneck_size={inner}; with use_bottleneck they are one.")


def config_from_hf(values, source="config.json"):
    bert.check_model_type(values, MODEL_TYPE, source)
    _check(values, source)
    values = {**HF_DEFAULTS, **values}
    return MobileBertConfig(**bert.config_kwargs(values, CONFIG_FIELDS, _mapping.HF_ACTIVATIONS,
                                                 source))


def config_to_hf(config):
    values = bert.config_values(config, CONFIG_FIELDS, MODEL_TYPE)
    values.update(FIXED, true_hidden_size=config.intra_bottleneck_size)
    return values


# (Hugging Face name, attribute of kbert's block) before and after the feed-forward stack;
# NoNorm keeps LayerNorm's names in transformers.
_BLOCK_IN = (
    ("bottleneck.input.dense", "input_bottleneck"),
    ("bottleneck.input.LayerNorm", "input_bottleneck_norm"),
    ("bottleneck.attention.dense", "attention_bottleneck"),
    ("bottleneck.attention.LayerNorm", "attention_bottleneck_norm"),
    ("attention.self.query", "query_dense"),
    ("attention.self.key", "key_dense"),
    ("attention.self.value", "value_dense"),
    ("attention.output.dense", "attention_output_dense"),
    ("attention.output.LayerNorm", "attention_norm"),
)
_FFN = ("intermediate.dense", "output.dense", "output.LayerNorm")  # under ffn.{i}.
_BLOCK_OUT = (
    ("intermediate.dense", "intermediate_dense"),
    ("output.dense", "output_dense"),
    ("output.LayerNorm", "output_norm"),
    ("output.bottleneck.dense", "output_bottleneck"),
    ("output.bottleneck.LayerNorm", "output_bottleneck_norm"),
)
# BERT's heads, and the MLM's extra output rows: [hidden - embedding, vocabulary] in
# transformers, [vocabulary, ...] in kbert.
HEADS = dataclasses.replace(bert.HEADS, mlm_extra="cls.predictions.dense")


def _block_entries(block, p):
    result = _mapping.layers_entries(p, block, _BLOCK_IN)
    for i, layers in enumerate(zip(block.ffn_intermediate, block.ffn_output, block.ffn_norm)):
        for name, layer in zip(_FFN, layers):
            result += _mapping.layer_entries(f"{p}ffn.{i}.{name}", layer)
    return result + _mapping.layers_entries(p, block, _BLOCK_OUT)


def backbone_entries(backbone):
    """The weight map of a kbert `MobileBertBackbone` (`HEADS` adds a pretrainer's)."""
    embeddings = backbone.embeddings
    result = [
        _mapping.Entry(("embeddings.word_embeddings.weight",),
                       embeddings.token_embedding.embeddings, "copy"),
        _mapping.Entry(("embeddings.position_embeddings.weight",),
                       embeddings.position_embedding, "copy"),
        _mapping.Entry(("embeddings.token_type_embeddings.weight",),
                       embeddings.segment_embedding.embeddings, "copy"),
        *_mapping.layer_norm_entries("embeddings.LayerNorm", embeddings.norm),
    ]
    if embeddings.projection is not None:
        result += _mapping.dense_entries("embeddings.embedding_transformation",
                                         embeddings.projection)
    for i, block in enumerate(backbone.transformer_layers):
        result += _block_entries(block, f"encoder.layer.{i}.")
    if backbone.config.classifier_activation:
        result += _mapping.dense_entries("pooler.dense", backbone.pooler.dense)
    return result


_TOKEN_TABLE = "embeddings.word_embeddings.weight"


def to_hf_weights(hf_config, weights):
    """`weights` with the token table's `pad_token_id` row zeroed (see the module's text):
    transformers reads that row at padded positions, where kbert's model reads zeros."""
    if _TOKEN_TABLE not in weights:
        return weights
    table = np.array(weights[_TOKEN_TABLE], copy=True)
    table[int(hf_config["pad_token_id"])] = 0
    return {**weights, _TOKEN_TABLE: table}


FAMILY = _family.record(
    globals(),
    name="mobile_bert",
    prefix="mobilebert.",
    hf_name="MobileBert",
    task_dropout=_family.classifier_dropout(),
)
