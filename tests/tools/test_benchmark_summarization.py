"""tools/benchmark.py summarization: how it reads ACLSum out of the wheel file and the files it
writes for tools/flags/aclsum.flags (on a stand-in wheel of one paper a split; the benchmark
itself is not a test)."""

import json
import zipfile

import numpy as np
import pytest
from scipy import stats

from kbert.tasks.extractive_summarization import metrics
from kbert.tasks.extractive_summarization.data import SummaryExample, read_summaries_file
from benchmarks import summarization as bench

PAPER = {"id": "x", "title": "T",
         "summary": {"challenge": "Terms are hard.", "approach": "We use analogy.",
                     "outcome": "It works."},
         "sentences": {"abstract": ["Terms are hard .", "We use analogy ."],
                       "introduction": ["Translation needs terms ."],
                       "conclusion": ["It works well ."]},
         "highlights": {}, "heuristic_highlights": {}}


def test_papers_are_read_out_of_the_wheel_and_written_for_the_flagfile(tmp_path):
    wheel = tmp_path / "aclsum-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as f:
        for split in ("train", "val", "test"):
            f.writestr(f"aclsum/dataset/{split}.jsonl", json.dumps(PAPER) + "\n")
    corpus = bench.read_wheel(str(wheel))
    assert corpus["val"] == [{
        "document": "Terms are hard . We use analogy .\n\nTranslation needs terms .\n\n"
                    "It works well .",
        "summary": "Terms are hard.\nWe use analogy.\nIt works."}]
    paths = bench.write_splits(corpus, str(tmp_path / "data"))
    [example] = read_summaries_file(paths["train"], "document", "summary").examples
    assert [s.text for s in example.sentences] == [
        "Terms are hard .", "We use analogy .", "Translation needs terms .", "It works well ."]
    # Sections are paragraphs (what --summary_segments=paragraph alternates by).
    assert [s.paragraph for s in example.sentences] == [0, 0, 1, 2]
    assert bench.training_files(corpus, paths, str(tmp_path), False) == (
        paths["train"], paths["val"])
    joined, none = bench.training_files(corpus, paths, str(tmp_path), True)
    assert none is None and len(read_summaries_file(joined, "document", "summary").examples) == 2
    lead, oracle = bench.baselines(corpus["test"])
    assert lead == ["Terms are hard .\nWe use analogy .\nTranslation needs terms ."]
    assert oracle == ["Terms are hard .\nWe use analogy .\nIt works well ."]
    with pytest.raises(SystemExit, match="--aclsum_wheel='nowhere' is not a file: download"):
        bench.read_wheel("nowhere")


def test_places_and_each_paper_against_lead_3():
    a = {"document": "Terms are hard . We use analogy . Translation needs terms . It works "
                     "well .\n\nData is small . Code is public . More work remains .",
         "summary": "Terms are hard.\nWe use analogy.\nIt works."}
    b = {"document": "Short one . Another one .", "summary": "Short one."}
    c = {"document": "Nothing here . Cats sleep . Dogs bark . Results are strong .",
         "summary": "Results are strong."}
    rows = [a, a, a, b, c]

    def answer(row, *places):
        texts = [s.text for s in SummaryExample(row["document"]).sentences]
        sentences = [{"text": texts[p], "start": row["document"].index(texts[p])}
                     for p in places]
        return [{"sentences": sentences,
                 "summary_text": " ".join(s["text"] for s in sentences)}]

    answers = [answer(a, 0, 1, 3),  # the reference's own sentences: above lead-3
               answer(a, 0, 1, 2),  # lead-3's: equal
               answer(a, 4, 5, 6),  # off the point: below
               answer(b, 0, 1),  # all of a short paper, lead-3's too: equal
               answer(c, 3)]  # the one sentence that matters: above
    lead = ["\n".join(s.text for s in SummaryExample(row["document"]).sentences[:3])
            for row in rows]
    assert bench.places(rows, answers) == ({0: 3, 1: 3, 2: 1, 3: 2, 4: 1, 5: 2}, 2)
    references = [row["summary"] for row in rows]
    mine = metrics.document_scores([answer["summary_text"] for [answer] in answers],
                                   references)
    theirs = metrics.document_scores(lead, references)
    assert bench.against_lead(mine, theirs) == {"above": 2, "equal": 2, "below": 1}
    # The difference from lead-3, paper by paper, with its paired-bootstrap interval.
    difference = bench.lead_difference(mine, theirs, resamples=200)
    for k, name in enumerate(("rouge1", "rouge2", "rougeL")):
        mean, low, high = difference[name]
        # Paired: each paper's difference resampled (BCa, 95%), not the two sides apart.
        paired = stats.bootstrap(((mine[:, k] - theirs[:, k]),), np.mean, n_resamples=200,
                                 random_state=np.random.default_rng(0)).confidence_interval
        assert (mean, low, high) == pytest.approx(
            ((mine[:, k] - theirs[:, k]).mean(), paired.low, paired.high))
        assert low <= mean <= high and low < high
    assert bench.lead_difference(mine, theirs, resamples=200) == difference  # seeded
    # Lead-3 against itself: nothing between them; a summary above it on every paper (the
    # 1st and 5th papers': rows a and c): an interval above 0.
    assert bench.lead_difference(mine[[1, 1]], theirs[[1, 1]])["rouge1"] == (0, 0, 0)
    better = bench.lead_difference(mine[[0, 0, 4, 4]], theirs[[0, 0, 4, 4]], resamples=200)
    assert better["rouge1"][1] > 0
