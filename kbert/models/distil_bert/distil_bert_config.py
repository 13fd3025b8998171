"""Every architecture field of a DistilBERT model."""

import dataclasses

from kbert.models.bert.bert_config import BertConfig


@dataclasses.dataclass(frozen=True)
class DistilBertConfig(BertConfig):
    """Architecture of a DistilBERT encoder (Sanh et al. 2019): BERT's fields, with no segment
    embeddings (`type_vocab_size=0`) and the exact GELU by default. The backbone has no pooler.

    `from_dict` also reads Hugging Face's DistilBERT names (`n_layers`, `dim`, `n_heads`,
    `hidden_dim`, ...).
    """

    activation: str = "gelu"
    type_vocab_size: int = 0

    FAMILY = "DistilBERT"
    ORIGINAL_NAMES = {
        **BertConfig.ORIGINAL_NAMES,
        "n_layers": "num_layers",
        "dim": "hidden_size",
        "n_heads": "num_heads",
        "hidden_dim": "intermediate_size",
    }
