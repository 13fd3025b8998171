"""ModernBERT encoder: token embeddings, pre-LN blocks of rotary attention (global and sliding
window) and GeGLU, a final LayerNorm."""

import keras

from kbert.models.backbone import NO_INTERNALS, Backbone, layer_from_config
from kbert.models.modern_bert.modern_bert_config import ModernBertConfig
from kbert.models.modern_bert.modern_bert_encoder import ModernBertEncoder
from kbert.models.modern_bert.modern_bert_layers import (
    ModernBertEmbeddings, ModernBertPredictionHead,
)


@keras.saving.register_keras_serializable(package="kbert")
class ModernBertBackbone(Backbone):
    """ModernBERT encoder (Warner et al. 2024): token embeddings and their LayerNorm,
    `num_layers` pre-LN blocks (`ModernBertEncoder`), global attention in every
    `global_attn_every_n_layers`-th layer from the first and a sliding window of
    `local_attention` tokens in the others, each with its own rotary base, and a final
    LayerNorm. No pooler, no segments, no position table. The outputs equal transformers'
    `ModernBertModel` at the real tokens given the same weights.

    The window layers compute the window in chunks (cost and memory linear in the sequence);
    the global layers go through `keras.ops.dot_product_attention`.

    It takes the fields of `ModernBertConfig` (validated there; its defaults apply), plus
        `dtype` and the usual `keras.Model` keyword arguments.

    Inputs (a dict): `token_ids`, `padding_mask`, each int [B, S].
    Outputs (a dict): `sequence_output` [B, S, H].

    Packed documents (ModernBERT's pretraining rows): `features(inputs)` on inputs that add
    `document_ids` int [B, S] (a run of equal ids is one document, as `kbert.data` gives with
    `fill_rows` and `document_ids=True`) keeps attention inside each document, global and windowed, and restarts the
    rotary positions at each document's first token, as ModernBERT's unpadded attention does
    with flash attention's cumulative sequence lengths: each document's hidden states are
    those of the document alone. The backbone's own graph has no such input.
    """

    config_class = ModernBertConfig
    # transformers' ModernBert*For<Task>: dense + activation + LayerNorm before the classifier.
    prediction_head_class = ModernBertPredictionHead

    def make_layers(self, config, dtype):
        embeddings = layer_from_config(ModernBertEmbeddings, config, dtype=dtype,
                                       name="embeddings")
        blocks = []
        for i in range(config.num_layers):
            is_global = config.is_global(i)
            blocks.append(layer_from_config(
                ModernBertEncoder, config, dtype=dtype, name=f"transformer_layer_{i}",
                rope_theta=config.global_rope_theta if is_global else config.local_rope_theta,
                window_radius=None if is_global else config.window_radius,
                attention_norm=i > 0 or config.first_layer_norm,
                **config.block_arguments(i)))
        final_norm = keras.layers.LayerNormalization(
            epsilon=config.layer_norm_epsilon, center=config.norm_bias, dtype=dtype,
            name="final_layer_norm")
        return {"embeddings": embeddings, "transformer_layers": blocks,
                "final_layer_norm": final_norm, "pooler": None}

    def input_names(self, config):
        return ("token_ids", "padding_mask")

    def network(self, config, layers, inputs, internals):
        x = internals.embedded(layers["embeddings"](inputs["token_ids"]))  # [B, S, H]
        packed = {}
        if inputs.get("document_ids") is not None:
            packed["document_ids"] = inputs["document_ids"]
        for block in layers["transformer_layers"]:
            x = internals.block(block, x, padding_mask=inputs["padding_mask"],
                                **packed)  # [B, S, H]
        return {"sequence_output": layers["final_layer_norm"](x)}

    def features(self, inputs):
        """This backbone's outputs on `inputs`, a dict of (symbolic or real) tensors with its
        inputs and optionally `document_ids` (see the class), through its layers (its
        weights): a graph that takes `document_ids` (`ModernBertPretrainer`'s) calls it."""
        layers = {name: getattr(self, name) for name in self._layer_names}
        return self.network(self.config, layers, inputs, NO_INTERNALS)
