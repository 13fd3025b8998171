"""Every architecture field of an ELECTRA discriminator."""

import dataclasses

from kbert.models.bert.bert_config import BertConfig


@dataclasses.dataclass(frozen=True)
class ElectraConfig(BertConfig):
    """Architecture of an ELECTRA encoder (Clark et al. 2020): BERT's fields; `embedding_size`
    narrower than `hidden_size` gives the projected embeddings of ELECTRA-Small."""

    FAMILY = "ELECTRA"
