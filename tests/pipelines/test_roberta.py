"""RoBERTa (byte-level BPE) in the pipelines: what the reference cases do not show. The
tasks whose answers point into the text, and pipeline.export, are refused by name; a pair is
packed as RoBERTa packs it."""

import numpy as np
import pytest

from tests.pipelines.reference import FIXTURES


@pytest.mark.parametrize("task, model", [
    ("token-classification", "hf_tasks/roberta_token"),
    ("ner", "hf_tasks/roberta_token"),
    ("question-answering", "hf_tasks/roberta_qa"),
])
def test_the_tasks_that_need_character_offsets_are_refused_by_name(task, model):
    import kbert

    with pytest.raises(NotImplementedError, match=(
            "no token-classification|no question-answering") + " pipeline on RoBERTa .*"
            "text-classification, zero-shot-classification, feature-extraction, fill-mask"):
        kbert.pipeline(task, model=str(FIXTURES / model))


def test_a_pair_is_packed_as_roberta_packs_it(pipelines):
    pipe = pipelines("text-classification", "hf_tasks/roberta_seq_single")
    tokenizer = pipe.tokenizer
    first, second = pipe.encoder.ids(["Paris is nice", "London"])
    sequence = pipe.pack(first, second)
    cls, sep = tokenizer.cls_id, tokenizer.sep_id
    assert (cls, sep) == (0, 2)
    assert sequence.token_ids.tolist() == [cls, *first, sep, sep, *second, sep]
    assert pipe.special_count(True) == 4 and pipe.special_count(False) == 2
    # The budget of a pair leaves room for the four special tokens (transformers' rule).
    long = np.arange(5, 5 + pipe.max_length, dtype=np.int32)
    kept, other = pipe.fit(long, second, "only_first")
    assert len(kept) + len(other) + 4 == pipe.max_length


def test_pipeline_export_is_refused_for_roberta(pipelines, tmp_path):
    pipe = pipelines("fill-mask", "hf_tiny/roberta")
    with pytest.raises(NotImplementedError, match="does not cover byte-level BPE models "
                                                  r"\(RoBERTa's BytePairTokenizer\)"):
        pipe.export(str(tmp_path / "export"))
    assert not (tmp_path / "export").exists()
