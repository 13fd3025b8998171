"""DistilBERT weights in Hugging Face names (`DistilBertForMaskedLM` without `distilbert.`).

There is no original TF1 release (DistilBERT was trained and published in PyTorch), so this
module has no TF1 names: `kbert.convert.tf1` never reads a checkpoint as DistilBERT.
"""

from kbert.convert import _mapping, bert
from kbert.convert._family import FamilyFormat, Shapes
from kbert.models import DistilBertConfig

MODEL_TYPE = "distilbert"
LAYER_NORM_EPSILON = 1e-12  # fixed in Hugging Face's DistilBERT, not in its config

CONFIG_FIELDS = {
    "vocab_size": "vocabulary_size",
    "n_layers": "num_layers",
    "dim": "hidden_size",
    "n_heads": "num_heads",
    "hidden_dim": "intermediate_size",
    "dropout": "dropout",
    "attention_dropout": "attention_dropout",
    "max_position_embeddings": "max_sequence_length",
    "initializer_range": "initializer_range",
}


SHAPES = Shapes(
    sizes={**bert.EMBEDDING_SIZES,
           "hidden_size": ("transformer.layer.0.attention.q_lin.weight", 0),
           "intermediate_size": ("transformer.layer.0.ffn.lin1.weight", 0)},
    layers=r"transformer\.layer\.(\d+)\.",
)


def config_from_hf(values, source="config.json"):
    bert.check_model_type(values, MODEL_TYPE, source)
    if values.get("sinusoidal_pos_embds"):
        raise ValueError(
            f"{source}: sinusoidal_pos_embds=true; kbert's DistilBERT learns its positions."
        )
    kwargs = bert.config_kwargs(values, CONFIG_FIELDS, _mapping.HF_ACTIVATIONS, source,
                                activation_key="activation")
    return DistilBertConfig(**kwargs, type_vocab_size=0, layer_norm_epsilon=LAYER_NORM_EPSILON)


def config_from_keras_hub(values):
    """A `DistilBertConfig` from keras-hub's `DistilBertBackbone.get_config()`: the exact
    GELU (where keras-hub's BERT uses the tanh form) and no segments."""
    return DistilBertConfig(**{**bert.keras_hub_config_kwargs(values), "activation": "gelu",
                               "type_vocab_size": 0})


def config_to_hf(config):
    if config.layer_norm_epsilon != LAYER_NORM_EPSILON or config.type_vocab_size:
        raise ValueError(
            f"layer_norm_epsilon={config.layer_norm_epsilon}, type_vocab_size="
            f"{config.type_vocab_size}: Hugging Face's DistilBERT has 1e-12 and no segments."
        )
    values = bert.config_values(config, CONFIG_FIELDS, MODEL_TYPE, activation_key="activation")
    values.update(sinusoidal_pos_embds=False, tie_word_embeddings=True)
    return values


def entries(model):
    """The weight map of a kbert `DistilBertBackbone` or `DistilBertPretrainer`."""
    backbone = getattr(model, "backbone", model)
    result = _mapping.embedding_entries(backbone.embeddings)
    for i, block in enumerate(backbone.transformer_layers):
        p = f"transformer.layer.{i}."
        result += _mapping.block_entries(
            block,
            *(f"{p}attention.{x}_lin" for x in ("q", "k", "v")),
            attention_output=f"{p}attention.out_lin",
            attention_norm=f"{p}sa_layer_norm",
            intermediate=f"{p}ffn.lin1",
            output=f"{p}ffn.lin2",
            output_norm=f"{p}output_layer_norm",
        )
    if getattr(model, "mlm_head", None) is not None:
        result += _mapping.masked_lm_entries(model.mlm_head, "vocab_transform",
                                             "vocab_layer_norm", "vocab_projector.bias")
    return result


def heads_in(weights):
    # DistilBERT's pretraining model is its masked LM: "pretrainer" and "mlm" are the same.
    return "pretrainer" if "vocab_transform.weight" in weights else None


FAMILY = FamilyFormat(
    name="distil_bert",
    entries=entries,
    heads_in=heads_in,
    model_type=MODEL_TYPE,
    prefix="distilbert.",
    head_prefixes=("vocab_transform.", "vocab_layer_norm.", "vocab_projector."),
    hf_name="DistilBert",
    pretrainer_hf_class="ForMaskedLM",
    tied=("vocab_projector.weight",),
    config_fields=CONFIG_FIELDS,
    shapes=SHAPES,
    config_from_hf=config_from_hf,
    config_to_hf=config_to_hf,
    task_dropout={"text_classifier": "seq_classif_dropout",
                  "question_answerer": "qa_dropout"},
    keras_hub_class="DistilBertBackbone",
    config_from_keras_hub=config_from_keras_hub,
)
