"""ALBERT weights in Hugging Face names (`AlbertForPreTraining` without the `albert.` prefix).

Hugging Face and kbert keep one set of block weights per group (`num_groups`); the original
TF1 release names them `bert/encoder/transformer/group_0/inner_group_0/...`.
"""

import re

from kbert.convert import _mapping, bert
from kbert.convert._family import FamilyFormat, Shapes
from kbert.models import AlbertConfig

MODEL_TYPE = "albert"

CONFIG_FIELDS = {**bert.CONFIG_FIELDS, "embedding_size": "embedding_size",
                 "num_hidden_groups": "num_groups"}


_BLOCK = "encoder.albert_layer_groups.0.albert_layers.0."
SHAPES = Shapes(
    sizes={**bert.EMBEDDING_SIZES,
           "hidden_size": (f"{_BLOCK}attention.query.weight", 0),
           "intermediate_size": (f"{_BLOCK}ffn.weight", 0)},
    layers=r"encoder\.albert_layer_groups\.(\d+)\.",
    layer_field="num_groups",  # the blocks kept; num_layers repeats them
)


def _check(values, source):
    if values.get("inner_group_num", 1) != 1:
        raise ValueError(
            f"{source}: inner_group_num={values['inner_group_num']}; kbert's ALBERT has one "
            "block per group (inner_group_num=1, as every released ALBERT)."
        )
    embedding, hidden = values.get("embedding_size", 128), values.get("hidden_size")
    if embedding == hidden:
        raise ValueError(
            f"{source}: embedding_size equals hidden_size ({hidden}); kbert's ALBERT projects "
            "its embeddings only when they are narrower, so this checkpoint has no kbert form."
        )


def config_from_hf(values, source="config.json"):
    bert.check_model_type(values, MODEL_TYPE, source)
    _check(values, source)
    return AlbertConfig(**bert.config_kwargs(values, CONFIG_FIELDS, _mapping.HF_ACTIVATIONS,
                                             source))


def config_from_google(values, source="albert_config.json"):
    """From google-research/albert's albert_config.json ("gelu" there is the tanh form)."""
    _check(values, source)
    return AlbertConfig(**bert.config_kwargs(values, CONFIG_FIELDS, _mapping.GOOGLE_ACTIVATIONS,
                                             source))


def config_from_keras_hub(values):
    """An `AlbertConfig` from keras-hub's `AlbertBackbone.get_config()`; one block per group
    (`num_inner_repetitions` > 1) is refused where the weights are read."""
    return AlbertConfig(**bert.keras_hub_config_kwargs(values),
                        embedding_size=values["embedding_dim"], num_groups=values["num_groups"])


def config_to_hf(config):
    values = bert.config_values(config, CONFIG_FIELDS, MODEL_TYPE)
    values.update(inner_group_num=1, position_embedding_type="absolute")
    return values


def entries(model):
    """The weight map of a kbert `AlbertBackbone` or `AlbertPretrainer`."""
    backbone = getattr(model, "backbone", model)
    result = [*_mapping.embedding_entries(backbone.embeddings),
              *_mapping.dense_entries("encoder.embedding_hidden_mapping_in",
                                      backbone.embeddings.projection)]
    for g, block in enumerate(backbone.transformer_layers):
        p = f"encoder.albert_layer_groups.{g}.albert_layers.0."
        result += _mapping.block_entries(
            block,
            *(f"{p}attention.{x}" for x in ("query", "key", "value")),
            attention_output=f"{p}attention.dense",
            attention_norm=f"{p}attention.LayerNorm",
            intermediate=f"{p}ffn",
            output=f"{p}ffn_output",
            output_norm=f"{p}full_layer_layer_norm",
        )
    result += _mapping.dense_entries("pooler", backbone.pooler.dense)
    if getattr(model, "mlm_head", None) is not None:
        result += _mapping.masked_lm_entries(model.mlm_head, "predictions.dense",
                                             "predictions.LayerNorm", "predictions.bias")
    if getattr(model, "nsp_head", None) is not None:
        result += _mapping.dense_entries("sop_classifier.classifier", model.nsp_head.dense)
    return result


def heads_in(weights):
    if "predictions.dense.weight" not in weights:
        return None
    return "pretrainer" if "sop_classifier.classifier.weight" in weights else "mlm"


# === Original TF1 names (google-research/albert), as Hugging Face's converter reads them ===
_TF1_RENAMES = [  # applied in order to the scope path
    (r"^bert/", ""),
    (r"^cls/predictions/transform/", "predictions/"),
    (r"^cls/predictions/output_bias$", "predictions/bias"),
    (r"^cls/seq_relationship/output_weights$", "sop_classifier/classifier/weight"),
    (r"^cls/seq_relationship/output_bias$", "sop_classifier/classifier/bias"),
    (r"^pooler/dense/", "pooler/"),
    (r"/transformer/group_(\d+)/inner_group_(\d+)/",
     r"/albert_layer_groups/\1/albert_layers/\2/"),
    (r"/attention_1/self/", "/attention/"),
    (r"/attention_1/output/dense/", "/attention/dense/"),
    (r"/LayerNorm_1/", "/full_layer_layer_norm/"),
    (r"(albert_layers/\d+)/LayerNorm/", r"\1/attention/LayerNorm/"),
    (r"/ffn_1/intermediate/output/dense/", "/ffn_output/"),
    (r"/ffn_1/intermediate/dense/", "/ffn/"),
]
_TRANSPOSED = {"sop_classifier/classifier/weight"}  # output_weights is [2, H] already


def tf1_name(name):
    """`bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/dense/kernel` ->
    (`encoder.albert_layer_groups.0.albert_layers.0.ffn.weight`, transpose?). `None` for
    names that are not ALBERT weights."""
    name = re.sub(r"^module/", "", name)  # the TF-Hub modules' scope
    if not name.startswith(("bert/", "cls/")):
        return None
    for pattern, replacement in _TF1_RENAMES:
        name = re.sub(pattern, replacement, name)
    if name in _TRANSPOSED or "/" not in name:
        return name.replace("/", "."), False
    return bert.tf1_parts_to_hf(name.split("/"))


FAMILY = FamilyFormat(
    name="albert",
    entries=entries,
    heads_in=heads_in,
    model_type=MODEL_TYPE,
    prefix="albert.",
    head_prefixes=("predictions.", "sop_classifier."),
    hf_name="Albert",
    tied=("predictions.decoder.weight",),
    aliases={"predictions.decoder.bias": "predictions.bias"},
    config_fields=CONFIG_FIELDS,
    shapes=SHAPES,
    config_from_hf=config_from_hf,
    config_to_hf=config_to_hf,
    task_dropout={"text_classifier": "classifier_dropout_prob",
                  "token_classifier": "classifier_dropout_prob"},
    tf1_name=tf1_name,
    tf1_pattern=r"/transformer/group_",
    tf1_config_files=("albert_config.json", "config.json"),
    config_from_google=config_from_google,
    keras_hub_class="AlbertBackbone",
    config_from_keras_hub=config_from_keras_hub,
)
