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

import numpy as np

from kbert.convert import _mapping, bert
from kbert.convert._family import FamilyFormat, Shapes
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
    sizes={**bert.EMBEDDING_SIZES,
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


def _norm_entries(name, layer):
    """A NoNorm (gamma, beta) or a LayerNormalization, under transformers' LayerNorm names."""
    return [_mapping.Entry((f"{name}.weight",), layer.gamma, "copy"),
            _mapping.Entry((f"{name}.bias",), layer.beta, "copy")]


def _block_entries(block, p):
    dense, norm = _mapping.dense_entries, _norm_entries
    result = [
        *dense(f"{p}bottleneck.input.dense", block.input_bottleneck),
        *norm(f"{p}bottleneck.input.LayerNorm", block.input_bottleneck_norm),
        *dense(f"{p}bottleneck.attention.dense", block.attention_bottleneck),
        *norm(f"{p}bottleneck.attention.LayerNorm", block.attention_bottleneck_norm),
        *dense(f"{p}attention.self.query", block.query_dense),
        *dense(f"{p}attention.self.key", block.key_dense),
        *dense(f"{p}attention.self.value", block.value_dense),
        *dense(f"{p}attention.output.dense", block.attention_output_dense),
        *norm(f"{p}attention.output.LayerNorm", block.attention_norm),
    ]
    for i, (intermediate, output, layer_norm) in enumerate(
            zip(block.ffn_intermediate, block.ffn_output, block.ffn_norm)):
        result += [*dense(f"{p}ffn.{i}.intermediate.dense", intermediate),
                   *dense(f"{p}ffn.{i}.output.dense", output),
                   *norm(f"{p}ffn.{i}.output.LayerNorm", layer_norm)]
    return result + [
        *dense(f"{p}intermediate.dense", block.intermediate_dense),
        *dense(f"{p}output.dense", block.output_dense),
        *norm(f"{p}output.LayerNorm", block.output_norm),
        *dense(f"{p}output.bottleneck.dense", block.output_bottleneck),
        *norm(f"{p}output.bottleneck.LayerNorm", block.output_bottleneck_norm),
    ]


def entries(model):
    """The weight map of a kbert `MobileBertBackbone` or `MobileBertPretrainer`."""
    backbone = getattr(model, "backbone", model)
    embeddings = backbone.embeddings
    result = [
        _mapping.Entry(("embeddings.word_embeddings.weight",),
                       embeddings.token_embedding.embeddings, "copy"),
        _mapping.Entry(("embeddings.position_embeddings.weight",),
                       embeddings.position_embedding, "copy"),
        _mapping.Entry(("embeddings.token_type_embeddings.weight",),
                       embeddings.segment_embedding.embeddings, "copy"),
        *_norm_entries("embeddings.LayerNorm", embeddings.norm),
    ]
    if embeddings.projection is not None:
        result += _mapping.dense_entries("embeddings.embedding_transformation",
                                         embeddings.projection)
    for i, block in enumerate(backbone.transformer_layers):
        result += _block_entries(block, f"encoder.layer.{i}.")
    if backbone.config.classifier_activation:
        result += _mapping.dense_entries("pooler.dense", backbone.pooler.dense)
    head = getattr(model, "mlm_head", None)
    if head is not None:
        result += _mapping.masked_lm_entries(head, "cls.predictions.transform.dense",
                                             "cls.predictions.transform.LayerNorm",
                                             "cls.predictions.bias")
        # [hidden - embedding, vocabulary] in transformers, [vocabulary, ...] in kbert.
        result.append(_mapping.Entry(("cls.predictions.dense.weight",),
                                     head.extra_output_kernel, "dense"))
    if getattr(model, "nsp_head", None) is not None:
        result += _mapping.dense_entries("cls.seq_relationship", model.nsp_head.dense)
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


def heads_in(weights):
    if "cls.predictions.transform.dense.weight" not in weights:
        return None
    return "pretrainer" if "cls.seq_relationship.weight" in weights else "mlm"


FAMILY = FamilyFormat(
    name="mobile_bert",
    entries=entries,
    heads_in=heads_in,
    model_type=MODEL_TYPE,
    prefix="mobilebert.",
    head_prefixes=("cls.",),
    hf_name="MobileBert",
    tied=("cls.predictions.decoder.weight",),
    aliases={"cls.predictions.decoder.bias": "cls.predictions.bias"},
    config_fields=CONFIG_FIELDS,
    shapes=SHAPES,
    config_from_hf=config_from_hf,
    config_to_hf=config_to_hf,
    to_hf_weights=to_hf_weights,
    task_dropout={"text_classifier": "classifier_dropout",
                  "token_classifier": "classifier_dropout"},
)
