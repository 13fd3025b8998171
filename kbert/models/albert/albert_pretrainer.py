"""ALBERT pretraining model: masked LM + sentence-order prediction."""

import keras

from kbert.models.bert.bert_pretrainer import BertPretrainer


@keras.saving.register_keras_serializable(package="kbert")
class AlbertPretrainer(BertPretrainer):
    """Masked-LM and sentence-order-prediction (SOP) heads on an `AlbertBackbone`.

    SOP is a 2-way classifier on the pooled output, like BERT's NSP head, but trained on
    pairs of consecutive segments of one document, in order (label 0) or swapped (label 1):
    feed it `kbert.data` pairs made with `objective="sop"` (`tools/pretrain.py
    --objective=mlm_sop`). The sentence head, its output and its metrics keep BERT's names
    (`nsp_logits`, `nsp_loss`, `nsp_accuracy`, labels `next_sentence_labels`), so that one
    pipeline and one loss serve both.

    Args:
        backbone: an `AlbertBackbone`.
        next_sentence_prediction: `False` trains the masked LM alone.
    """
