"""Vocabulary learning: WordPiece on tensorflow-text's `bert_vocab_from_dataset`,
SentencePiece (ALBERT's kind) on the `sentencepiece` package's trainer, byte-level BPE on the
`tokenizers` package's trainer."""

import io
import json

from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset

# The writers are part of this module's interface (what it learns, they write).
from kbert.tokenizers.files import (  # noqa: F401
    MERGES_FILE,
    write_byte_pair_files,
    write_sentence_piece_model,
    write_vocabulary,
)
from kbert.tokenizers.sentencepiece import tokenizer as sentence_piece_tokenizer
from kbert.tokenizers.wordpiece.tokenizer import SPECIAL_TOKENS, normalize

RESERVED_TOKENS = list(SPECIAL_TOKENS.values())  # [PAD]=0, [UNK], [CLS], [SEP], [MASK]


def learn_vocabulary(documents, vocab_size, lowercase=True, max_sentences=None, batch_size=1024):
    """Learns a WordPiece vocabulary from a dataset of documents (string vectors).

    Args:
        documents: a `tf.data.Dataset` whose elements are string vectors (sentences), as made
            by `kbert.data.corpora`; a dataset of plain strings works too.
        vocab_size: target size, the special tokens included. tensorflow-text's learner
            treats it as a target, so the result can be a little smaller.
        lowercase: lower-case and strip accents first (for uncased models).
        max_sentences: learn from the first this many sentences only (`None`: all).

    Returns:
        the token list: [PAD], [UNK], [CLS], [SEP], [MASK], then the learned tokens.
    """
    if not isinstance(vocab_size, int) or vocab_size <= len(RESERVED_TOKENS):
        raise ValueError(
            f"vocab_size must be an integer > {len(RESERVED_TOKENS)} (the special tokens), "
            f"got {vocab_size!r}."
        )
    sentences = _sentences(documents, max_sentences)
    # The same normalisation as WordPieceTokenizer, so that every learned token is reachable.
    batches = sentences.batch(batch_size).map(lambda text: normalize(text, bool(lowercase)))
    vocabulary = bert_vocab_from_dataset.bert_vocab_from_dataset(
        batches.prefetch(2),
        vocab_size=vocab_size,
        reserved_tokens=RESERVED_TOKENS,
        bert_tokenizer_params={"lower_case": False},
        # With the default count threshold (10), small corpora fall far short of the target.
        learn_params={"lower_thresh": 1},
    )
    if len(vocabulary) <= len(RESERVED_TOKENS):
        raise ValueError("The corpus gave no vocabulary: is it empty?")
    return vocabulary


def _sentences(documents, max_sentences):
    """A dataset of documents (string vectors) or of strings -> a dataset of strings."""
    sentences = documents
    if len(documents.element_spec.shape) == 1:
        sentences = documents.unbatch()
    if max_sentences is not None:
        sentences = sentences.take(max_sentences)
    return sentences


def learn_sentence_piece_model(documents, vocab_size, lowercase=True, max_sentences=None,
                               model_type="unigram", batch_size=1024):
    """Learns a SentencePiece model with ALBERT's special pieces from a dataset of documents,
    with the `sentencepiece` package's trainer.

    The trainer's settings are google-research/albert's: a unigram model, <pad>=0, <unk>=1,
    then [CLS], [SEP], [MASK] as control pieces (never produced from text), no <s> or </s>,
    character coverage 0.99995, nmt_nfkc normalisation, and at most 10 million sentences
    (a random sample of a larger corpus). The text is normalised first as
    `SentencePieceTokenizer` normalises it (ALBERT's `preprocess_text`), so that every
    learned piece is reachable.

    Args:
        documents: a `tf.data.Dataset` of string vectors (sentences) or of strings.
        vocab_size: target number of pieces, the 5 special ones included. The trainer treats
            it as a target: a small corpus can give fewer.
        lowercase: lower-case first (uncased models, as ALBERT's).
        max_sentences: learn from the first this many sentences only (`None`: all).
        model_type: "unigram" (ALBERT's) or "bpe".

    Returns:
        the serialized model (bytes), which `SentencePieceTokenizer` takes and
        `write_sentence_piece_model` writes as a spiece.model.
    """
    import sentencepiece

    specials = list(sentence_piece_tokenizer.SPECIAL_PIECES.values())
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or \
            vocab_size <= len(specials):
        raise ValueError(f"vocab_size must be an integer > {len(specials)} (the special pieces "
                         f"{specials}), got {vocab_size!r}.")
    model_types = ("unigram", "bpe")
    if model_type not in model_types:
        raise ValueError(f"Unknown SentencePiece model_type {model_type!r}. Allowed: "
                         f"{', '.join(model_types)}.")
    batches = _sentences(documents, max_sentences).batch(batch_size).map(
        lambda text: sentence_piece_tokenizer.normalize(text, bool(lowercase)))

    def texts():
        for batch in batches.prefetch(2).as_numpy_iterator():
            for text in batch:
                if text:
                    yield text.decode("utf-8")

    model = io.BytesIO()
    pieces = sentence_piece_tokenizer.SPECIAL_PIECES
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=texts(), model_writer=model, vocab_size=vocab_size,
            hard_vocab_limit=False, model_type=model_type, pad_id=0, pad_piece=pieces["pad"],
            unk_id=1, unk_piece=pieces["unk"], bos_id=-1, eos_id=-1,
            control_symbols=[pieces["cls"], pieces["sep"], pieces["mask"]],
            character_coverage=0.99995, input_sentence_size=10_000_000,
            shuffle_input_sentence=True, minloglevel=2,
        )
    except RuntimeError as e:
        raise ValueError(f"The corpus gave no SentencePiece model (is it empty?): {e}") from None
    return model.getvalue()


def learn_byte_pair_vocabulary(documents, vocab_size, min_frequency=2, special_tokens=None,
                               add_prefix_space=False, max_sentences=None, batch_size=1024,
                               lowercase=False):
    """Learns a byte-level BPE vocabulary and its merges (GPT-2 / RoBERTa's kind) from a
    dataset of documents, with the `tokenizers` package's trainer.

    Args:
        documents: a `tf.data.Dataset` of string vectors (sentences) or of strings.
        vocab_size: target size: the special tokens, the 256 byte symbols and the merges.
        min_frequency: a pair seen fewer times is not merged.
        special_tokens: the special tokens, first ids in this order; RoBERTa's (<s>, <pad>,
            </s>, <unk>, <mask>) by default.
        add_prefix_space: learn on text with a space put before it, as a `BytePairTokenizer`
            with `add_prefix_space=True` tokenizes.
        max_sentences: learn from the first this many sentences only (`None`: all).
        lowercase: learn on lower-cased text, as a `BytePairTokenizer` with `lowercase=True`
            tokenizes (RoBERTa's is cased).

    Returns:
        (vocabulary: the token list, index = id; merges: the (left, right) pairs in rank
        order), which `BytePairTokenizer(vocabulary, merges)` and `write_byte_pair_files` take.
    """
    from tokenizers import ByteLevelBPETokenizer

    from kbert.tokenizers.bpe.tokenizer import SPECIAL_TOKENS

    if special_tokens is None:
        special_tokens = [SPECIAL_TOKENS[key] for key in ("cls", "pad", "sep", "unk", "mask")]
    special_tokens = list(special_tokens)
    if not isinstance(vocab_size, int) or vocab_size <= len(special_tokens) + 256:
        raise ValueError(f"vocab_size must be an integer > {len(special_tokens) + 256} (the "
                         f"special tokens and the 256 bytes), got {vocab_size!r}.")
    sentences = documents
    if len(documents.element_spec.shape) == 1:
        sentences = documents.unbatch()
    if max_sentences is not None:
        sentences = sentences.take(max_sentences)

    def texts():
        for batch in sentences.batch(batch_size).as_numpy_iterator():
            # Invalid UTF-8 as the tokenizer sees it (U+FFFD), not a crash of the trainer.
            yield [text.decode("utf-8", "replace") for text in batch]

    trainer = ByteLevelBPETokenizer(add_prefix_space=bool(add_prefix_space),
                                    lowercase=bool(lowercase))
    trainer.train_from_iterator(texts(), vocab_size=vocab_size, min_frequency=min_frequency,
                                special_tokens=special_tokens, show_progress=False)
    model = json.loads(trainer.to_str())["model"]
    vocabulary = [None] * len(model["vocab"])
    for token, i in model["vocab"].items():
        vocabulary[i] = token
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    if len(vocabulary) <= len(special_tokens) + 256 and not merges:
        raise ValueError("The corpus gave no merges: is it empty?")
    return vocabulary, merges
