"""RoBERTa's pretraining model: the masked LM alone (no next-sentence prediction)."""

import keras

from kbert.models.bert.bert_pretrainer import BertPretrainer


@keras.saving.register_keras_serializable(package="kbert")
class RobertaPretrainer(BertPretrainer):
    """The masked-LM head on a `RobertaBackbone`, trained by `fit` like `BertPretrainer`.

    RoBERTa drops next-sentence prediction and trains on full sentences packed across
    documents with dynamic masking (the data pipeline's job): `next_sentence_prediction`
    must be False. The head is BERT's (dense, GELU, LayerNorm, logits tied to the token
    table, a bias), which is transformers' `RobertaLMHead`.
    Inputs: `token_ids`, `padding_mask`, `mask_positions`; labels `mask_ids`, `mask_weights`.
    """

    has_sentence_head = False
