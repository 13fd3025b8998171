"""Keras layers shared by the BERT family's models (keras.ops only: any Keras backend). A
layer that one family alone uses lives beside its models (kbert/models/<family>/)."""

from kbert.layers._utils import ACTIVATION_NAMES
from kbert.layers.embeddings import Embeddings
from kbert.layers.hash_dropout import HashDropout
from kbert.layers.masked_lm_head import MaskedLMHead
from kbert.layers.masked_token_sampler import MaskedTokenSampler
from kbert.layers.next_sentence_head import NextSentenceHead
from kbert.layers.pooler import Pooler
from kbert.layers.replaced_token_head import ReplacedTokenHead
from kbert.layers.transformer_encoder import TransformerEncoder

__all__ = [
    "ACTIVATION_NAMES",
    "Embeddings",
    "HashDropout",
    "MaskedLMHead",
    "MaskedTokenSampler",
    "NextSentenceHead",
    "Pooler",
    "ReplacedTokenHead",
    "TransformerEncoder",
]
