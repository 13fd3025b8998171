"""MobileBERT encoder: trigram embeddings, bottlenecked blocks, first-token pooler."""

import keras

from kbert.layers import Pooler
from kbert.models.backbone import Backbone, encoder_blocks, layer_from_config
from kbert.models.mobile_bert.mobile_bert_config import MobileBertConfig
from kbert.models.mobile_bert.mobile_bert_embeddings import MobileBertEmbeddings
from kbert.models.mobile_bert.mobile_bert_encoder import MobileBertEncoder


@keras.saving.register_keras_serializable(package="kbert")
class FirstTokenPooler(keras.layers.Layer):
    """MobileBERT's pooler without `classifier_activation`: the first token's vector."""

    def call(self, inputs):
        return inputs[:, 0, :]  # [B, H]

    def compute_output_shape(self, inputs_shape):
        return (inputs_shape[0], inputs_shape[-1])


@keras.saving.register_keras_serializable(package="kbert")
class MobileBertBackbone(Backbone):
    """MobileBERT encoder (Sun et al. 2020), as transformers' `MobileBertModel`: a 128-wide
    token table over a 3-token window projected to `hidden_size` (512), `num_layers` blocks
    that narrow to `intra_bottleneck_size` (128) for attention and
    `num_feedforward_networks` stacked feed-forward networks, and the first token as the
    pooled output (through a tanh dense layer with `classifier_activation`).

    It takes the fields of `MobileBertConfig` (validated there; its defaults are the released
        model's), plus `dtype` and the usual `keras.Model` keyword arguments.

    Inputs and outputs: as `BertBackbone` (`token_ids`, `segment_ids`, `padding_mask` ->
        `sequence_output` [B, S, H], `pooled_output` [B, H]).

    Example:
        ```python
        backbone = kbert.presets.load("mobile_bert", head=None, weights=None)
        ```
    """

    config_class = MobileBertConfig
    has_pooler = True

    def make_layers(self, config, dtype):
        embeddings = layer_from_config(MobileBertEmbeddings, config, dtype=dtype,
                                       name="embeddings")
        blocks = encoder_blocks(MobileBertEncoder, config, config.num_layers, dtype,
                                per_layer=config.block_arguments)
        if config.classifier_activation:
            pooler = Pooler(initializer_range=config.initializer_range, dtype=dtype,
                            name="pooler")
        else:
            pooler = FirstTokenPooler(dtype=dtype, name="pooler")
        return {"embeddings": embeddings, "transformer_layers": blocks, "pooler": pooler}

    def network(self, config, layers, inputs, internals):
        x = layers["embeddings"](inputs["token_ids"], inputs["segment_ids"],
                                 padding_mask=inputs["padding_mask"])  # [B, S, H]
        x = internals.embedded(x)
        for block in layers["transformer_layers"]:
            x = internals.block(block, x, padding_mask=inputs["padding_mask"])  # [B, S, H]
        return {"sequence_output": x, "pooled_output": layers["pooler"](x)}  # [B, S, H], [B, H]
