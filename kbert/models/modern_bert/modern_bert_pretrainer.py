"""ModernBERT's masked-LM model (transformers' `ModernBertForMaskedLM`)."""

import keras

from kbert.models.backbone import int_inputs
from kbert.models.bert.bert_pretrainer import BertPretrainer
from kbert.models.modern_bert.modern_bert_layers import ModernBertMaskedLMHead
from kbert.models.pretrainer import masked_lm_head


def modern_bert_masked_lm_head(backbone, name="mlm_head"):
    """A `ModernBertMaskedLMHead` tied to `backbone`'s token table."""
    return masked_lm_head(backbone, name, head_class=ModernBertMaskedLMHead)


@keras.saving.register_keras_serializable(package="kbert")
class ModernBertPretrainer(BertPretrainer):
    """The masked-LM head on a `ModernBertBackbone`, trained by `fit` like `BertPretrainer`:
    transformers' `ModernBertForMaskedLM` head (dense -> `classifier_activation` ->
    LayerNorm -> logits against the tied token table + the decoder bias), scored at the
    masked positions only. No sentence-level objective (`next_sentence_prediction` must be
    False).

    Args:
        backbone: a `ModernBertBackbone`.
        next_sentence_prediction: `None` or False.
        document_ids: True: the rows are packed documents (ModernBERT's pretraining) and the
            model takes their `document_ids` [B, S] too: attention stays inside each
            document and rotary positions restart at each (see `ModernBertBackbone`).
            False (the default): one sequence a row, the backbone's graph.

    Inputs: `token_ids`, `padding_mask`, `mask_positions` (and `document_ids`); labels
        `mask_ids`, `mask_weights`.
    """

    has_sentence_head = False
    make_masked_lm_head = staticmethod(modern_bert_masked_lm_head)

    def __init__(self, backbone, next_sentence_prediction=None, document_ids=False, **kwargs):
        self.document_ids = bool(document_ids)  # read by backbone_graph, during the init
        super().__init__(backbone, next_sentence_prediction, **kwargs)

    def backbone_graph(self, backbone):
        if not self.document_ids:
            return super().backbone_graph(backbone)
        inputs = int_inputs(backbone.input_names(backbone.config) + ("document_ids",))
        return inputs, backbone.features(inputs)

    def without_document_ids(self):
        """This pretrainer (its backbone, not a copy; its head's weights copied) without the
        `document_ids` input: one text a row, what a served model (`fill_mask`) takes."""
        plain = type(self)(self.backbone, name=self.name)
        plain.mlm_head.set_weights(self.mlm_head.get_weights())
        return plain

    def with_internals(self, hidden_states=True, attentions=True):
        if self.document_ids:  # its graph runs the backbone's layers, not the backbone
            raise ValueError(
                "with_internals takes a ModernBertPretrainer without document_ids (built with "
                "document_ids=True, its graph packs documents inside the backbone's layers): "
                "call model.without_document_ids().with_internals(...) (one text a row).")
        return super().with_internals(hidden_states, attentions)

    def get_config(self):
        config = super().get_config()
        if self.document_ids:  # saved only where set: earlier configs stay as they were
            config["document_ids"] = True
        return config
