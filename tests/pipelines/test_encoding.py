"""Token offsets into the original text by transformers' rule, and tokens back to text, as
transformers' fast tokenizers give them on the fixtures' vocabularies (expected values
printed by tokenizers 0.22 for these texts)."""

import pytest

from kbert.tokenizers.encoding import Encoder
from tests.pipelines.reference import FIXTURES


@pytest.fixture(scope="module")
def word_piece():
    from kbert import convert

    return Encoder(convert.load_tokenizer(str(FIXTURES / "hf_tasks" / "bert_token")))


@pytest.fixture(scope="module")
def sentence_piece():
    from kbert import convert

    return Encoder(convert.load_tokenizer(str(FIXTURES / "hf_tasks" / "albert_token")))


def _tokens(encoder, text):
    encoding = encoder.encode([text])[0]
    return [(encoder.token(i), tuple(o)) for i, o in zip(encoding.ids, encoding.offsets)]


def test_word_piece_offsets_leave_out_stripped_and_deleted_characters(word_piece):
    # A combining accent (stripped), a zero-width space and a soft hyphen (deleted) belong
    # to no token; an unknown CJK character is an [UNK] of its own.
    assert _tokens(word_piece, "e\u0301tude ab\u200bcd soft\u00adhy (東京)") == [
        ("e", (0, 1)), ("##t", (2, 3)), ("##u", (3, 4)), ("##d", (4, 5)), ("##e", (5, 6)),
        ("a", (7, 8)), ("##b", (8, 9)), ("##c", (10, 11)), ("##d", (11, 12)),
        ("so", (13, 15)), ("##f", (15, 16)), ("##t", (16, 17)), ("##h", (18, 19)),
        ("##y", (19, 20)), ("(", (21, 22)), ("[UNK]", (22, 23)), ("京", (23, 24)),
        (")", (24, 25))]
    assert _tokens(word_piece, "Naïve 🍕") == [
        ("n", (0, 1)), ("##a", (1, 2)), ("##i", (2, 3)), ("##v", (3, 4)), ("##e", (4, 5)),
        ("[UNK]", (6, 7))]
    encoding = word_piece.encode(["  ", ""])
    assert [len(e.ids) for e in encoding] == [0, 0]


def test_sentence_piece_marks_cover_the_space_before_a_word(sentence_piece):
    assert _tokens(sentence_piece, "I love pizza 🍕 so") == [
        ("▁i", (0, 1)), ("▁love", (1, 6)), ("▁", (6, 7)), ("p", (7, 8)), ("i", (8, 9)),
        ("z", (9, 10)), ("z", (10, 11)), ("a", (11, 12)), ("▁", (12, 13)),
        ("<unk>", (13, 14)), ("▁so", (14, 17))]
    assert _tokens(sentence_piece, "Naïve (東京)")[:7] == [
        ("▁", (0, 1)), ("n", (0, 1)), ("a", (1, 2)), ("i", (2, 3)), ("v", (3, 4)),
        ("e", (4, 5)), ("▁", (5, 6))]


def test_special_literals_and_words(word_piece):
    encoding = word_piece.encode(["the [MASK] of it"], {"[MASK]": 4})[0]
    assert encoding.ids[1] == 4 and encoding.words.tolist() == [0, -1, 1, 2]
    assert encoding.word_spans.tolist() == [[0, 3], [11, 13], [14, 16]]


def test_tokens_to_string_as_transformers_decoders(word_piece, sentence_piece):
    assert word_piece.tokens_to_string(["hello", ",", "world", "."]) == "hello, world."
    assert word_piece.tokens_to_string(["##s", "the", "##ing", "'", "s"]) == "##s theing ' s"
    assert word_piece.decode([2, 4, 3], skip_special_tokens=True) == ""
    assert sentence_piece.tokens_to_string(["the", "▁", "a", "▁word"]) == "the a word"
    assert sentence_piece.tokens_to_string(["▁", "<unk>", ","]) == "<unk>,"


def test_the_references_ids_on_every_text():
    """kbert's ids equal the references' tokenizers' on every text of every task: transformers'
    fast ones, and for ALBERT its slow one (google-research/albert's rules: whitespace runs
    to one space first; the fixtures' SentencePiece model normalises nothing, and
    transformers' fast ALBERT tokenizer alone makes tabs, newlines and runs of spaces tokens
    of their own), through the fast tokenizer with that rule in front where the pipeline
    needs offsets (tests/fixtures/make_pipeline_reference.load). The reference tests assert
    the ids of their own case; this checks every text at once, and that `ids()` is
    `encode()` without the offsets."""
    from kbert import convert

    from tests.pipelines import reference

    divergent = set()
    for task in ("text_classification", "token_classification", "question_answering",
                 "zero_shot_classification", "feature_extraction", "fill_mask"):
        for model, known in reference.load(task)["input_ids"].items():
            tokenizer = convert.load_tokenizer(str(FIXTURES / model))
            encoder = Encoder(tokenizer)
            specials = {tokenizer.vocabulary[i]: int(i) for i in tokenizer.special_ids}
            texts = list(known)
            if not tokenizer.bert_words:  # RoBERTa: ids only (encode's offsets are refused)
                all_ids = encoder.ids(texts, specials)
            else:
                encodings = encoder.encode(texts, specials)
                all_ids = [encoding.ids for encoding in encodings]
                # ids() is encode() without the offsets: the same ids, on every text.
                for ids, encoding in zip(encoder.ids(texts, specials), encodings):
                    assert ids.dtype == encoding.ids.dtype and \
                        ids.tolist() == encoding.ids.tolist()
            for text, ids in zip(texts, all_ids):
                ours = [tokenizer.cls_id, *ids.tolist(), tokenizer.sep_id]
                if ours != known[text]:
                    divergent.add((model, text))
    assert not divergent, sorted(divergent)


def test_sentence_piece_offsets_through_the_models_nmt_nfkc():
    """DeBERTa-v3's SentencePiece model normalises by its own charsmap (nmt_nfkc), read from
    the model: U+200B becomes a space that starts a word ("▁" covers it), a control
    character is deleted (it belongs to no token), and a character composed of two ("e" and
    U+0301 -> "é") belongs to the first, as transformers' fast DebertaV2 tokenizer aligns
    them (expected values printed by transformers 4.57 with tokenizers 0.22)."""
    from kbert import convert
    from kbert.tokenizers.sentencepiece import charsmap

    tokenizer = convert.load_tokenizer(str(FIXTURES / "hf_tasks" / "deberta_v3_token"))
    forms = charsmap.charsmap(tokenizer.model)
    assert (forms.char("\u200b"), forms.char("\x01"), forms.char("ﬁ"), forms.composes) == (
        " ", "", "fi", True)
    assert not charsmap.charsmap(convert.load_tokenizer(
        str(FIXTURES / "hf_tasks" / "albert_token")).model).forms  # "identity": none
    encoder = Encoder(tokenizer)
    assert _tokens(encoder, "e\u0301tude ab\u200bcd a\u00adb c\x01d") == [
        ("▁", (0, 1)), ("é", (0, 1)), ("t", (2, 3)), ("u", (3, 4)), ("d", (4, 5)),
        ("e", (5, 6)), ("▁a", (6, 8)), ("b", (8, 9)), ("▁", (9, 10)), ("c", (10, 11)),
        ("d", (11, 12)), ("▁a", (12, 14)), ("[UNK]", (14, 15)), ("b", (15, 16)),
        ("▁", (16, 17)), ("c", (17, 18)), ("d", (19, 20))]
    assert _tokens(encoder, "x\u200b\u200by \u200bz") == [
        ("▁", (0, 1)), ("x", (0, 1)), ("▁", (2, 3)), ("y", (3, 4)), ("▁", (5, 6)),
        ("z", (6, 7))]


def test_sentence_piece_offsets_keep_what_sentence_piece_keeps():
    """A reasoned divergence from transformers: its fast tokenizers run the charsmap over
    grapheme clusters and map a cluster by the shortest key it starts with, so that
    "a\u0301\u0301" becomes "á" and the second accent is lost (no token covers it, here
    (4, 5) for the [UNK]); SentencePiece itself (which gives kbert's ids, the same ids here)
    keeps it ("á\u0301"), and kbert's [UNK] covers the characters it spells: (4, 7)."""
    from kbert import convert

    encoder = Encoder(convert.load_tokenizer(str(FIXTURES / "hf_tasks" / "deberta_v3_token")))
    assert _tokens(encoder, "han a\u0301\u0301b") == [
        ("▁", (0, 1)), ("h", (0, 1)), ("an", (1, 3)), ("▁", (3, 4)), ("[UNK]", (4, 7)),
        ("b", (7, 8))]
