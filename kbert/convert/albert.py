"""ALBERT weights in Hugging Face names (`AlbertForPreTraining` without the `albert.` prefix).

Hugging Face and kbert keep one set of block weights per group (`num_groups`); the original
TF1 release names them `bert/encoder/transformer/group_0/inner_group_0/...`.
"""

import re

from kbert.convert import _family, _mapping, bert
from kbert.models import AlbertConfig

MODEL_TYPE = "albert"

CONFIG_FIELDS = {**bert.CONFIG_FIELDS, "embedding_size": "embedding_size",
                 "num_hidden_groups": "num_groups"}


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


# === The weight map ===
BLOCK = _mapping.BlockNames(
    layers="encoder.albert_layer_groups.{}.albert_layers.0.",  # a block per group
    query="attention.query", key="attention.key", value="attention.value",
    attention_output="attention.dense", attention_norm="attention.LayerNorm",
    intermediate="ffn", output="ffn_output", output_norm="full_layer_layer_norm")
HEADS = _mapping.Heads(mlm=("predictions.dense", "predictions.LayerNorm", "predictions.bias"),
                       decoder="predictions.decoder", nsp="sop_classifier.classifier")
# The blocks kept are the groups; num_layers repeats them.
SHAPES = _family.block_shapes(BLOCK, layer_field="num_groups")


def backbone_entries(backbone):
    """The weight map of a kbert `AlbertBackbone` (`HEADS` adds an `AlbertPretrainer`'s)."""
    return _mapping.backbone_entries(backbone, BLOCK, pooler="pooler",
                                     projection="encoder.embedding_hidden_mapping_in")


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


FAMILY = _family.record(
    globals(),
    name="albert",
    prefix="albert.",
    hf_name="Albert",
    task_dropout=_family.classifier_dropout("classifier_dropout_prob"),
    tf1_pattern=r"/transformer/group_",
    tf1_config_files=("albert_config.json", "config.json"),
    keras_hub_class="AlbertBackbone",
)
