"""DeBERTa-v3 encoder: token embeddings, relative position table, disentangled-attention
blocks."""

import keras

from kbert.models.backbone import Backbone
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

    def build_network(self, config, dtype):
        # === Layers ===
        embeddings = DebertaV3Embeddings(
            vocabulary_size=config.vocabulary_size, hidden_size=config.hidden_size,
            dropout=config.dropout, layer_norm_epsilon=config.layer_norm_epsilon,
            initializer_range=config.initializer_range, dtype=dtype, name="embeddings")
        relative_embedding = RelativeEmbedding(
            position_buckets=config.position_buckets, hidden_size=config.hidden_size,
            layer_norm_epsilon=config.layer_norm_epsilon,
            initializer_range=config.initializer_range, dtype=dtype, name="relative_embedding")
        blocks = [
            DisentangledAttentionEncoder(
                num_heads=config.num_heads, intermediate_size=config.intermediate_size,
                activation=config.activation, dropout=config.dropout,
                attention_dropout=config.attention_dropout,
                layer_norm_epsilon=config.layer_norm_epsilon,
                initializer_range=config.initializer_range,
                position_buckets=config.position_buckets,
                max_relative_positions=config.max_relative_distance,
                attention_types=config.attention_types, dtype=dtype,
                name=f"transformer_layer_{i}")
            for i in range(config.num_layers)
        ]

        # === Functional model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in ("token_ids", "padding_mask")}
        x = embeddings(inputs["token_ids"], inputs["padding_mask"])  # [B, S, H]
        relative = relative_embedding(x)  # [2P, H]
        for block in blocks:
            x = block(x, relative, padding_mask=inputs["padding_mask"])  # [B, S, H]
        layers = {"embeddings": embeddings, "relative_embedding": relative_embedding,
                  "transformer_layers": blocks, "pooler": None}
        return inputs, {"sequence_output": x}, layers
