"""DistilBERT weights in Hugging Face names (`DistilBertForMaskedLM` without `distilbert.`).

There is no original TF1 release (DistilBERT was trained and published in PyTorch), so this
module has no TF1 names: `kbert.convert.tf1` never reads a checkpoint as DistilBERT.
"""

from kbert.convert import _family, _mapping, bert
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


# === The weight map ===
BLOCK = _mapping.BlockNames(
    layers="transformer.layer.{}.",
    query="attention.q_lin", key="attention.k_lin", value="attention.v_lin",
    attention_output="attention.out_lin", attention_norm="sa_layer_norm",
    intermediate="ffn.lin1", output="ffn.lin2", output_norm="output_layer_norm")
# DistilBERT's pretraining model is its masked LM: "pretrainer" and "mlm" are the same.
HEADS = _mapping.Heads(mlm=("vocab_transform", "vocab_layer_norm", "vocab_projector.bias"),
                       decoder="vocab_projector")
SHAPES = _family.block_shapes(BLOCK)


def backbone_entries(backbone):
    """The weight map of a kbert `DistilBertBackbone` (`HEADS` adds its masked LM's)."""
    return _mapping.backbone_entries(backbone, BLOCK)


FAMILY = _family.record(
    globals(),
    name="distil_bert",
    prefix="distilbert.",
    hf_name="DistilBert",
    task_dropout={"text_classifier": "seq_classif_dropout",
                  "question_answerer": "qa_dropout"},
    keras_hub_class="DistilBertBackbone",
)
