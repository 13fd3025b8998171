"""DistilBERT's masked-LM model (it has no sentence-level objective)."""

import keras

from kbert.models.bert.bert_pretrainer import BertPretrainer


@keras.saving.register_keras_serializable(package="kbert")
class DistilBertPretrainer(BertPretrainer):
    """The masked-LM head on a `DistilBertBackbone`, trained by `fit` like `BertPretrainer`.

    DistilBERT drops next-sentence prediction: `next_sentence_prediction` must be False.
    Inputs: `token_ids`, `padding_mask`, `mask_positions`; labels `mask_ids`, `mask_weights`.
    """

    has_sentence_head = False
