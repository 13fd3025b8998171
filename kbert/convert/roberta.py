"""RoBERTa weights in Hugging Face names (`RobertaForMaskedLM` without `roberta.`).

The encoder's names are BERT's; the masked-LM head is `lm_head.*`. Hugging Face's position
table has `max_position_embeddings` = `max_sequence_length` + 2 rows (fairseq's padding index
1, plus 1), kbert's `RobertaBackbone` the same table. The pooler that `roberta-base` carries
was never trained by pretraining and kbert's backbone has none: it is read as an unused tensor
and not written. There is no original TF1 release (fairseq published PyTorch).
"""

from kbert.convert import _family, _mapping, bert
from kbert.models import RobertaBackbone, RobertaConfig

MODEL_TYPE = "roberta"
PAD_TOKEN_ID = 1  # fairseq's padding index: the positions count from PAD_TOKEN_ID + 1
POSITION_OFFSET = RobertaBackbone.position_offset
assert POSITION_OFFSET == PAD_TOKEN_ID + 1

CONFIG_FIELDS = {k: v for k, v in bert.CONFIG_FIELDS.items() if k != "max_position_embeddings"}
# BERT's sizes, with the position table POSITION_OFFSET rows longer than max_sequence_length:
# config.json's max_position_embeddings is the table's length (514 for 512 positions).
SHAPES = _family.block_shapes(bert.BLOCK, offsets={"max_sequence_length": POSITION_OFFSET})


def config_from_hf(values, source="config.json"):
    """A `RobertaConfig` from a Hugging Face RoBERTa config.json dict."""
    bert.check_model_type(values, MODEL_TYPE, source)
    if values.get("pad_token_id", PAD_TOKEN_ID) != PAD_TOKEN_ID:
        raise ValueError(
            f"{source}: pad_token_id={values['pad_token_id']}; kbert's RoBERTa counts the "
            f"positions from fairseq's padding index {PAD_TOKEN_ID} + 1."
        )
    kwargs = bert.config_kwargs(values, CONFIG_FIELDS, _mapping.HF_ACTIVATIONS, source)
    positions = values.get("max_position_embeddings", 514)
    if positions <= POSITION_OFFSET:
        raise ValueError(f"{source}: max_position_embeddings={positions} leaves no position "
                         f"after the first {POSITION_OFFSET} rows.")
    return RobertaConfig(**kwargs, max_sequence_length=positions - POSITION_OFFSET)


def config_to_hf(config):
    """A Hugging Face config.json dict for a `RobertaConfig`, without `architectures`."""
    if config.embedding_size not in (None, config.hidden_size):
        raise ValueError(f"embedding_size={config.embedding_size} differs from hidden_size="
                         f"{config.hidden_size}: Hugging Face's RoBERTa has no factorized "
                         "embedding.")
    values = bert.config_values(config, CONFIG_FIELDS, MODEL_TYPE)
    values.update(max_position_embeddings=config.max_sequence_length + POSITION_OFFSET,
                  position_embedding_type="absolute", pad_token_id=PAD_TOKEN_ID,
                  bos_token_id=0, eos_token_id=2)
    return values


def config_from_keras_hub(values):
    """A `RobertaConfig` from keras-hub's `RobertaBackbone.get_config()`: the exact GELU,
    epsilon 1e-5 and one segment row (which keras-hub lacks: `kbert.convert.keras_hub` fills
    it with zeros, as it does the two rows before the first position)."""
    return RobertaConfig(**{**bert.keras_hub_config_kwargs(values), "activation": "gelu",
                            "layer_norm_epsilon": 1e-5, "type_vocab_size": 1})


# RoBERTa's pretraining model is its masked LM: "pretrainer" and "mlm" are the same.
HEADS = _mapping.Heads(mlm=("lm_head.dense", "lm_head.layer_norm", "lm_head.bias"),
                       decoder="lm_head.decoder")  # the token table again


def backbone_entries(backbone):
    """The weight map of a kbert `RobertaBackbone`, BERT's without the pooler (`HEADS` adds
    its masked LM's)."""
    return _mapping.backbone_entries(backbone, bert.BLOCK)


FAMILY = _family.record(
    globals(),
    name="roberta",
    prefix="roberta.",
    hf_name="Roberta",
    # For messages: the file's max_position_embeddings is max_sequence_length + the offset.
    config_fields={**CONFIG_FIELDS, "max_position_embeddings": "max_sequence_length"},
    task_dropout=_family.classifier_dropout(),
    keras_hub_class="RobertaBackbone",
)
