"""ModernBERT's embeddings (tokens only, LayerNorm, dropout) and its masked-LM head."""

import keras
import numpy as np

from kbert.layers import _utils
from kbert.layers.hash_dropout import HashDropout
from kbert.layers.masked_lm_head import MaskedLMHead


@keras.saving.register_keras_serializable(package="kbert")
class ModernBertEmbeddings(_utils.SettingsConfig, keras.layers.Layer):
    """Token embeddings, LayerNorm (with a bias where `norm_bias`), dropout: transformers'
    `ModernBertEmbeddings`. No positions (the blocks turn them into queries and keys) and no
    segments.

    Args:
        vocabulary_size, hidden_size, embedding_dropout, layer_norm_epsilon, norm_bias,
            initializer_range: as `ModernBertConfig`.

    Call args:
        token_ids: int [B, S].

    Returns:
        float [B, S, hidden_size].
    """

    def __init__(self, vocabulary_size, hidden_size, embedding_dropout=0.0,
                 layer_norm_epsilon=1e-5, norm_bias=False, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        _utils.keep_settings(self, vocabulary_size=vocabulary_size, hidden_size=hidden_size,
                             embedding_dropout=_utils.check_rate("embedding_dropout",
                                                                 embedding_dropout),
                             layer_norm_epsilon=layer_norm_epsilon, norm_bias=bool(norm_bias),
                             initializer_range=initializer_range)
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, hidden_size,
            embeddings_initializer=_utils.truncated_normal(initializer_range),
            dtype=self.dtype_policy, name="token_embedding")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, center=self.norm_bias, dtype=self.dtype_policy,
            name="layer_norm")
        self.dropout_layer = HashDropout(embedding_dropout, dtype=self.dtype_policy)

    def build(self, token_ids_shape):
        self.token_embedding.build(token_ids_shape)
        self.layer_norm.build(tuple(token_ids_shape) + (self.hidden_size,))
        self.built = True

    def call(self, token_ids, training=None):
        x = self.layer_norm(self.token_embedding(token_ids))
        return self.dropout_layer(x, training=training)

    def compute_output_spec(self, token_ids, training=None):
        return keras.KerasTensor(tuple(token_ids.shape) + (self.hidden_size,),
                                 dtype=self.compute_dtype)


@keras.saving.register_keras_serializable(package="kbert")
class ModernBertMaskedLMHead(MaskedLMHead):
    """transformers' `ModernBertPredictionHead` + tied `decoder`: dense (with a bias where
    `classifier_bias`) -> `classifier_activation` -> LayerNorm (a bias where `norm_bias`) ->
    logits against the token table (+ a bias where `decoder_bias`), at the masked positions
    only (as `MaskedLMHead`).

    Args:
        vocabulary_size, token_embedding, layer_norm_epsilon, initializer_range: as
            `MaskedLMHead`.
        classifier_activation, classifier_bias, norm_bias, decoder_bias: as
            `ModernBertConfig`.
    """

    def __init__(self, vocabulary_size, token_embedding=None, classifier_activation="gelu",
                 layer_norm_epsilon=1e-5, initializer_range=0.02, classifier_bias=False,
                 norm_bias=False, decoder_bias=True, **kwargs):
        super().__init__(vocabulary_size, token_embedding, activation=classifier_activation,
                         layer_norm_epsilon=layer_norm_epsilon,
                         initializer_range=initializer_range, **kwargs)
        self.classifier_bias = bool(classifier_bias)
        self.norm_bias = bool(norm_bias)
        self.decoder_bias = bool(decoder_bias)

    def build(self, inputs_shape, mask_positions_shape=None):
        width = inputs_shape[-1]
        if self.token_embedding is not None and self.token_embedding.output_dim != width:
            raise ValueError(f"The token table is {self.token_embedding.output_dim} wide and "
                             f"the hidden states {width}: ModernBERT's head needs both equal.")
        self.dense = keras.layers.Dense(
            width, activation=self._activation_fn, use_bias=self.classifier_bias,
            kernel_initializer=_utils.truncated_normal(self.initializer_range),
            dtype=self.dtype_policy, name="dense")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, center=self.norm_bias, dtype=self.dtype_policy,
            name="layer_norm")
        self.dense.build((None, None, width))
        self.layer_norm.build((None, None, width))
        if self.token_embedding is None:
            self.output_kernel = self.add_weight(
                name="output_kernel", shape=(self.vocabulary_size, width),
                initializer=_utils.truncated_normal(self.initializer_range))
        if self.decoder_bias:
            self.output_bias = self.add_weight(name="output_bias",
                                               shape=(self.vocabulary_size,),
                                               initializer="zeros")
        else:  # no weight: `MaskedLMHead.call` adds zeros
            self.output_bias = np.zeros((self.vocabulary_size,), "float32")
        self.built = True

    def get_config(self):
        config = super().get_config()
        config["classifier_activation"] = config.pop("activation")
        config.update(classifier_bias=self.classifier_bias, norm_bias=self.norm_bias,
                      decoder_bias=self.decoder_bias)
        return config


@keras.saving.register_keras_serializable(package="kbert")
class ModernBertPredictionHead(_utils.SettingsConfig, keras.layers.Layer):
    """transformers' `ModernBertPredictionHead`, which its task models put between the
    encoder and the classifier: dense(H) (a bias where `classifier_bias`) ->
    `classifier_activation` -> LayerNorm (a bias where `norm_bias`). The masked LM's head
    computes the same before its decoder (`ModernBertMaskedLMHead`).

    Its arguments are the `ModernBertConfig` fields of the same names.

    Args:
        classifier_activation: the activation after the dense layer.
        classifier_bias: whether the dense layer has a bias.
        norm_bias: whether the LayerNorm has a bias (beta).
        layer_norm_epsilon: the LayerNorm's epsilon.
        initializer_range: the stddev of the dense kernel's truncated-normal initializer.

    Call args:
        inputs: float [..., H]: a pooled vector [B, H] or the sequence [B, S, H].

    Returns:
        float [..., H].
    """

    def __init__(self, classifier_activation="gelu", classifier_bias=False, norm_bias=False,
                 layer_norm_epsilon=1e-5, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        _utils.get_activation(classifier_activation)
        _utils.keep_settings(self, classifier_activation=classifier_activation,
                             classifier_bias=bool(classifier_bias), norm_bias=bool(norm_bias),
                             layer_norm_epsilon=layer_norm_epsilon,
                             initializer_range=initializer_range)

    def build(self, inputs_shape):
        width = inputs_shape[-1]
        self.dense = keras.layers.Dense(
            width, activation=_utils.get_activation(self.classifier_activation),
            use_bias=self.classifier_bias,
            kernel_initializer=_utils.truncated_normal(self.initializer_range),
            dtype=self.dtype_policy, name="dense")
        self.norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, center=self.norm_bias, dtype=self.dtype_policy,
            name="norm")
        self.dense.build(tuple(inputs_shape))
        self.norm.build(tuple(inputs_shape))
        self.built = True

    def call(self, inputs):
        return self.norm(self.dense(inputs))

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape)
