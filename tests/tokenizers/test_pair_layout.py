"""The pair layout is data a tokenizer is given (`pair_layout=`), not a property of its kind: a
SentencePiece tokenizer with RoBERTa's layout (XLM-R's) packs <s> A </s></s> B </s>, all in
segment 0, in numpy and in the graph; the layout is saved and read back with the tokenizer;
and a family record's `pair_layout` reaches the tokenizer that kbert builds for a checkpoint
of that family."""

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import kbert.convert
import kbert.models
import kbert.presets
from kbert.tokenizers import SentencePieceTokenizer, load_tokenizer_json, saving, tokenizer_types
from kbert.tokenizers.files import SETTINGS_FILE, write_tokenizer_files
from kbert.tokenizers.packing import BERT, LAYOUTS, ROBERTA, PairLayout

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ALBERT = FIXTURES / "hf_tiny" / "albert"
# XLM-R's specials on the ALBERT fixture's spiece.model (which lacks them: added pieces).
XLMR_PIECES = {"cls": "<s>", "pad": "<pad>", "sep": "</s>", "unk": "<unk>", "mask": "<mask>"}


def xlm_r_like(**kwargs):
    return SentencePieceTokenizer(ALBERT / "spiece.model", special_pieces=XLMR_PIECES,
                                  added_pieces=["<s>", "</s>", "<mask>"], **kwargs)


def test_a_sentence_piece_tokenizer_packs_by_the_layout_it_is_given():
    tokenizer = xlm_r_like(pair_layout="roberta")
    assert tokenizer.layout == ROBERTA and SentencePieceTokenizer.layout == BERT
    s, end = tokenizer.token_to_id("<s>"), tokenizer.token_to_id("</s>")
    assert (tokenizer.cls_id, tokenizer.sep_id) == (s, end)
    first = tokenizer.tokenize(tf.constant("the word")).numpy().tolist()
    second = tokenizer.tokenize(tf.constant("we")).numpy().tolist()
    ids = [s, *first, end, end, *second, end]
    # numpy: the pair unpadded, and one padded row with the position of the second text.
    token_ids, segment_ids = tokenizer.pair_layout(first, second)
    assert token_ids.tolist() == ids and segment_ids.tolist() == [0] * len(ids)
    assert [tokenizer.id_to_token(i) for i in token_ids[:1]] == ["<s>"]
    *row, offset = tokenizer.pack_row(first, second, 16)
    padding = 16 - len(ids)
    assert [r.tolist() for r in row] == [ids + [tokenizer.pad_id] * padding, [0] * 16,
                                         [1] * len(ids) + [0] * padding]
    assert offset == 1 + len(first) + 2
    assert tokenizer.special_count(True) == 4
    # The graph: the same row.
    packed = tokenizer.pack([tf.ragged.constant([first], tf.int32),
                             tf.ragged.constant([second], tf.int32)], 16)
    assert [packed[k].numpy().tolist() for k in ("token_ids", "segment_ids", "padding_mask")
            ] == [[r.tolist()] for r in row]
    # Without `pair_layout`, the kind's: BERT's [CLS] A [SEP] B [SEP], B in segment 1.
    bert = xlm_r_like()
    token_ids, segment_ids = bert.pair_layout(first, second)
    assert token_ids.tolist() == [s, *first, end, *second, end]
    assert segment_ids.tolist() == [0] * (len(first) + 2) + [1] * (len(second) + 1)


@pytest.mark.parametrize("given", ["roberta", (2, 0), [2, 0], ROBERTA])
def test_a_layout_is_given_by_name_pair_or_value(given):
    assert PairLayout.of(given) == ROBERTA and LAYOUTS["bert"] == BERT == (1, 1)


@pytest.mark.parametrize("given, message", [("xlmr", "Unknown pair layout 'xlmr'"),
                                            ((0, 0), "`separators` must be an integer >= 1"),
                                            ((1, -1), "`second_segment` must be an integer"),
                                            (3, "a \\(separators, second_segment\\) pair")])
def test_a_bad_layout_is_refused_by_name(given, message):
    with pytest.raises(ValueError, match=message):
        xlm_r_like(pair_layout=given)


def test_the_layout_is_saved_and_read_back_with_the_tokenizer(tmp_path):
    tokenizer = xlm_r_like(pair_layout=(2, 0))
    # A .keras archive's record (a task's preprocessor).
    settings = saving.settings(tokenizer)
    assert settings["pair_layout"] == [2, 0]
    saving.write(tokenizer, str(tmp_path / "keras"))
    assert saving.read(json.loads(json.dumps(settings)), str(tmp_path / "keras")).layout == \
        ROBERTA
    # Files (an export, a run's model_dir): tokenizer_config.json says what is not the kind's.
    write_tokenizer_files(tokenizer, str(tmp_path / "files"))
    assert json.loads((tmp_path / "files" / SETTINGS_FILE).read_text())["pair_layout"] == [2, 0]
    again = tokenizer_types.load(tmp_path / "files" / "spiece.model", "sentencepiece",
                                 settings=json.loads((tmp_path / "files" / SETTINGS_FILE)
                                                     .read_text()))
    assert again.layout == ROBERTA
    # Its special and added pieces come back with it (they are not ALBERT's); a kind's own
    # layout is not written.
    assert (again.special_pieces, again.added_pieces) == (XLMR_PIECES, ["<s>", "</s>",
                                                                       "<mask>"])
    write_tokenizer_files(xlm_r_like(), str(tmp_path / "default"))
    assert "pair_layout" not in json.loads((tmp_path / "default" / SETTINGS_FILE).read_text())
    write_tokenizer_files(SentencePieceTokenizer(ALBERT / "spiece.model"),
                          str(tmp_path / "albert"))
    assert not (tmp_path / "albert" / SETTINGS_FILE).exists()
    # Written over another's (a reused directory), none of the other's settings stays.
    write_tokenizer_files(SentencePieceTokenizer(ALBERT / "spiece.model"),
                          str(tmp_path / "default"))
    settings = json.loads((tmp_path / "default" / SETTINGS_FILE).read_text())
    back = tokenizer_types.load(tmp_path / "default" / "spiece.model", "sentencepiece",
                                settings=settings)
    assert back.special_pieces == SentencePieceTokenizer(ALBERT / "spiece.model").special_pieces
    assert back.added_pieces == []


def test_a_tokenizer_json_keeps_its_templates_layout_unless_given():
    folder = FIXTURES / "tokenizer_json" / "mm_bert"
    assert load_tokenizer_json(folder).layout == (1, 0)  # mmBERT's template: B in segment 0
    assert load_tokenizer_json(folder, pair_layout="roberta").layout == ROBERTA


def test_the_family_records_layout_reaches_the_tokenizer_the_loader_builds(monkeypatch):
    assert kbert.convert.load_tokenizer(str(ALBERT)).layout == BERT
    assert kbert.convert.load_tokenizer(
        str(FIXTURES / "hf_tasks" / "roberta_seq_single")).layout == ROBERTA
    # An ALBERT whose record said RoBERTa's layout (as XLM-R's would): one field.
    record = kbert.models.FAMILIES["albert"]
    monkeypatch.setitem(kbert.models.FAMILIES, "albert", record._replace(pair_layout="roberta"))
    tokenizer = kbert.convert.load_tokenizer(str(ALBERT))
    assert type(tokenizer) is SentencePieceTokenizer and tokenizer.layout == ROBERTA
    first, second = [5, 6], [7]
    assert tokenizer.pair_layout(first, second)[0].tolist() == [
        tokenizer.cls_id, 5, 6, tokenizer.sep_id, tokenizer.sep_id, 7, tokenizer.sep_id]
    # A record's kind other than the checkpoint's tokenizer's: the kind's own layout.
    monkeypatch.setitem(kbert.models.FAMILIES, "albert", record._replace(
        tokenizer="wordpiece", pair_layout="roberta"))
    assert kbert.convert.load_tokenizer(str(ALBERT)).layout == BERT


def test_every_family_record_states_its_presets_tokenizer_and_a_layout():
    for name in kbert.presets.list():
        preset = kbert.presets.get(name)
        record = kbert.models.FAMILIES[preset["model"]]
        assert record.tokenizer == preset["tokenizer"]["type"], name
    for name, record in kbert.models.FAMILIES.items():
        if record.pair_layout is not None:
            assert np.asarray(PairLayout.of(record.pair_layout)).shape == (2,), name
    assert kbert.models.FAMILIES["roberta"].pair_layout == "roberta"
