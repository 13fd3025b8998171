"""DeBERTa-v3 encoder: token embeddings, relative position table, disentangled-attention
blocks."""

import keras

from kbert.models.backbone import Backbone, encoder_blocks, layer_from_config
from kbert.models.deberta_v3.deberta_v3_config import DebertaV3Config
from kbert.models.deberta_v3.deberta_v3_embeddings import DebertaV3Embeddings, RelativeEmbedding
from kbert.models.deberta_v3.disentangled_attention_encoder import DisentangledAttentionEncoder


@keras.saving.register_keras_serializable(package="kbert")
class DebertaV3Backbone(Backbone):
    """DeBERTa-v3 encoder (He et al. 2021): token embeddings (no absolute positions, no
    segments), a layer-normalized table of `2 * position_buckets` relative-position embeddings
    shared by `num_layers` post-LN blocks of disentangled attention. No pooler. The outputs
    equal Hugging Face's `DebertaV2Model` and keras-hub's `DebertaV3Backbone` given the same
    weights.

    It takes the fields of `DebertaV3Config` (validated there; its defaults apply), plus `dtype`
        and the usual `keras.Model` keyword arguments.

    Inputs (a dict): `token_ids`, `padding_mask`, each int [B, S].
    Outputs (a dict): `sequence_output` [B, S, H].

    Example:
        ```python
        backbone = kbert.presets.load("deberta_v3_base", head=None, weights=None)
        ```
    """

    config_class = DebertaV3Config

    def make_layers(self, config, dtype):
        embeddings = layer_from_config(DebertaV3Embeddings, config, dtype=dtype,
                                       name="embeddings")
        relative_embedding = layer_from_config(RelativeEmbedding, config, dtype=dtype,
                                               name="relative_embedding")
        blocks = encoder_blocks(DisentangledAttentionEncoder, config, config.num_layers, dtype,
                                per_layer=config.block_arguments,
                                max_relative_positions=config.max_relative_distance)
        return {"embeddings": embeddings, "relative_embedding": relative_embedding,
                "transformer_layers": blocks, "pooler": None}

    def input_names(self, config):
        return ("token_ids", "padding_mask")

    def network(self, config, layers, inputs, internals):
        x = layers["embeddings"](inputs["token_ids"], inputs["padding_mask"])  # [B, S, H]
        x = internals.embedded(x)
        relative = layers["relative_embedding"](x)  # [2P, H]
        for block in layers["transformer_layers"]:
            x = internals.block(block, x, relative,
                                padding_mask=inputs["padding_mask"])  # [B, S, H]
        return {"sequence_output": x}
