"""DeBERTa-v3's masked-LM model (transformers' `DebertaV2ForMaskedLM`)."""

import keras

from kbert.models.bert.bert_pretrainer import BertPretrainer


@keras.saving.register_keras_serializable(package="kbert")
class DebertaV3Pretrainer(BertPretrainer):
    """The masked-LM head on a `DebertaV3Backbone`, trained by `fit` like `BertPretrainer`.

    The head is transformers' `DebertaV2ForMaskedLM` head (`lm_predictions.lm_head`): dense,
    activation, LayerNorm, then logits against the tied token table plus a bias. Like
    transformers, it reads the last layer's output: the enhanced mask decoder of the DeBERTa
    paper (absolute positions added before re-running the last block) is in neither
    transformers nor the released checkpoints' Hugging Face form. There is no sentence-level
    objective (`next_sentence_prediction` must be False). For DeBERTa-v3's own objective,
    replaced-token detection with gradient-disentangled embedding sharing, see
    `DebertaV3RtdPretrainer`.

    Inputs: `token_ids`, `padding_mask`, `mask_positions`; labels `mask_ids`, `mask_weights`.
    """

    has_sentence_head = False
