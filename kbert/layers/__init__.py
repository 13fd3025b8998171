"""Keras layers for the BERT family (keras.ops only: any Keras backend)."""

from kbert.layers._utils import ACTIVATION_NAMES
from kbert.layers.embeddings import Embeddings
from kbert.layers.hash_dropout import HashDropout
from kbert.layers.masked_lm_head import MaskedLMHead
from kbert.layers.masked_token_sampler import MaskedTokenSampler
from kbert.layers.mobile_bert_embeddings import MobileBertEmbeddings
from kbert.layers.mobile_bert_encoder import MobileBertEncoder
from kbert.layers.mobile_bert_masked_lm_head import MobileBertMaskedLMHead
from kbert.layers.next_sentence_head import NextSentenceHead
from kbert.layers.no_norm import NoNorm
from kbert.layers.pooler import Pooler
from kbert.layers.replaced_token_head import ReplacedTokenHead
from kbert.layers.transformer_encoder import TransformerEncoder

__all__ = [
    "ACTIVATION_NAMES",
    "Embeddings",
    "HashDropout",
    "MaskedLMHead",
    "MaskedTokenSampler",
    "MobileBertEmbeddings",
    "MobileBertEncoder",
    "MobileBertMaskedLMHead",
    "NextSentenceHead",
    "NoNorm",
    "Pooler",
    "ReplacedTokenHead",
    "TransformerEncoder",
]
