"""Extractive summarization (kbert.tasks.extractive_summarization): BERTSum's layout, the
greedy ROUGE oracle, trigram blocking, offsets into the document, the model, the pipeline,
and a tiny model that learns a planted rule and beats lead-1."""

import re
from pathlib import Path

import keras
import numpy as np
import pytest

import kbert
from kbert.tasks import ExtractiveSummarizer
from kbert.tasks.extractive_summarization import decode, features, finetuning, metrics, oracle
from kbert.tasks.extractive_summarization.data import (
    SummaryData,
    SummaryExample,
    read_summaries_file,
    sentences_of,
)
from kbert.tokenizers import WordPieceTokenizer
from tests.tasks import _checks
from tests.tasks._checks import inputs_for, tiny_backbone

ROOT = Path(__file__).resolve().parents[2]
WORDS = ["the", "of", "to", "and", "in", "it", "that", "was", "for", "on", "with", "as",
         "they", "at", "one", "this", "from", "or", "had", "by", "word", "but", "what", "some"]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCABULARY = SPECIALS + [".", "key"] + WORDS  # ids: [CLS] 2, [SEP] 3, "." 5, "key" 6


def tokenizer():
    return WordPieceTokenizer(VOCABULARY)


def test_layout_has_a_cls_per_sentence_and_interval_segments():
    tok = tokenizer()
    document = "The word was. It had one word! On the key."
    example = SummaryExample(document)
    assert [s.text for s in example.sentences] == ["The word was.", "It had one word!",
                                                   "On the key."]
    [[window]] = features.document_windows([example], tok, 24)
    ids = [VOCABULARY[i] for i in window.token_ids]
    assert ids == ["[CLS]", "the", "word", "was", ".", "[SEP]",
                   "[CLS]", "it", "had", "one", "word", "[UNK]", "[SEP]",
                   "[CLS]", "on", "the", "key", ".", "[SEP]"]
    assert window.positions.tolist() == [0, 6, 13] and window.first == 0
    assert window.segment_ids.tolist() == [0] * 6 + [1] * 7 + [0] * 6
    # Too long for one row: windows cut at sentence boundaries, segments from 0 again; a
    # sentence longer than a row keeps what fits.
    windows = features.windows([[7, 8, 9], [10, 11], [12, 13, 14], list(range(7, 30))], 12,
                               cls_id=2, sep_id=3, second_segment=0)
    assert [w.first for w in windows] == [0, 2, 3]
    assert windows[0].token_ids.tolist() == [2, 7, 8, 9, 3, 2, 10, 11, 3]
    assert windows[0].positions.tolist() == [0, 5] and windows[1].positions.tolist() == [0]
    assert windows[0].segment_ids.tolist() == [0] * 9  # RoBERTa: one segment type
    assert windows[2].token_ids.tolist() == [2, *range(7, 17), 3]
    # segments="paragraph": a paragraph's sentences share its id (blank lines end one; one
    # left empty is not counted), and a window's first sentence has 0.
    document = "The word was. It had one word!\n\nOn the key. It was.\n \n\u200b\n\nThe key."
    example = SummaryExample(document)
    assert [s.paragraph for s in example.sentences] == [0, 0, 1, 1, 2]
    [[window]] = features.document_windows([example], tok, 64, segments="paragraph")
    lengths = np.diff([*window.positions, len(window.token_ids)])
    assert window.segment_ids.tolist() == np.repeat([0, 0, 1, 1, 0], lengths).tolist()
    windows = features.windows([[7, 8], [9], [10, 11], [12]], 9, cls_id=2, sep_id=3,
                               groups=[0, 0, 1, 2])
    assert [w.first for w in windows] == [0, 2]
    assert windows[0].segment_ids.tolist() == [0] * 7
    assert windows[1].segment_ids.tolist() == [0] * 4 + [1] * 3


def test_sentences_point_into_the_document_as_given():
    document = "  First  one\there.\n\nSecond\u200b one \x07 is\nhere!  Third (one)?"
    sentences = sentences_of(document)
    assert [s.text for s in sentences] == ["First one here.", "Second one is here!",
                                           "Third (one)?"]
    assert [document[s.start:s.end] for s in sentences] == [
        "First  one\there.", "Second\u200b one \x07 is\nhere!", "Third (one)?"]
    assert [s.paragraph for s in sentences] == [0, 1, 1]


def test_the_graph_splits_sentences_as_the_pipeline():
    """`serving.split_sentences` (the SavedModel's RE2 rules) gives the Python splitter's
    sentences and paragraphs: on abbreviations, initials and decimals, and on every
    docstring of a few standard-library modules (real text, citations and "e.g." among it)."""
    import tensorflow as tf

    from kbert.data import corpora
    from kbert.tasks.extractive_summarization import pipeline_serving as serving
    from tests.data.test_corpora import PROSE, PROSE_SENTENCES

    files = [f for f in corpora._stdlib_files() if f.endswith(
        ("/ftplib.py", "/poplib.py", "/platform.py", "/textwrap.py", "/fractions.py"))]
    assert len(files) == 5
    documents = ["Dr. Smith, the chair, thanked everyone.", PROSE] + [
        doc for path in files for doc in corpora._module_docstrings(path)]
    sentences, paragraphs = serving.split_sentences(tf.constant(documents))
    numbers = tf.RaggedTensor.from_row_lengths(paragraphs, sentences.row_lengths()).to_list()
    got = [[s.decode() for s in row] for row in sentences.to_list()]
    assert got[:2] == [["Dr. Smith, the chair, thanked everyone."], PROSE_SENTENCES]
    for text, row, paragraph in zip(documents, got, numbers):
        assert row == corpora.split_sentences(text)
        assert [n - paragraph[0] for n in paragraph] == [
            k for k, ones in enumerate(corpora.split_paragraphs(text)) for _ in ones]
    assert "Based on the J. Myers POP3 draft, Jan. 96" in sum(got, [])


def test_the_graph_lays_out_paragraphs_and_segments_as_the_pipeline():
    """`serving.summarizer` (serving_default's graph, run eagerly here) numbers paragraphs
    as `sentences_of` does and lays out BERT's segment ids as the Python pipeline, by
    sentence and by paragraph: the same scores for every sentence."""
    import tensorflow as tf

    from kbert.tasks.extractive_summarization import pipeline_serving as serving

    tok = tokenizer()
    documents = ["The word was. It had one word!\n\nOn the key. It was.\n \n\n\nThe key.",
                 "One.\n\n\u200b\n\nThe word. It was.\n\nOn it.",
                 " ".join(f"The word {w} was one of {w}." for w in WORDS[:7])]
    sentences, paragraphs = serving.split_sentences(tf.constant(documents))
    numbers = tf.RaggedTensor.from_row_lengths(paragraphs, sentences.row_lengths())
    for text, row in zip(documents, numbers.to_list()):
        assert [n - row[0] for n in row] == [s.paragraph for s in sentences_of(text)]
    options = dict(num_sentences=20, trigram_blocking=False)
    for segments in ("sentence", "paragraph"):
        model = ExtractiveSummarizer(tiny_backbone("bert", vocabulary_size=len(VOCABULARY)),
                                     windows="all", segments=segments)
        out = serving.summarizer(model, tok, 24, 20, False)(tf.constant(documents))
        answers = kbert.pipeline("summarization", model=model, tokenizer=tok)(documents,
                                                                              **options)
        for row, [answer] in enumerate(answers):
            count = int(out["num_sentences"][row])
            assert count == len(answer["sentences"]) == len(sentences_of(documents[row]))
            np.testing.assert_allclose(out["scores"].numpy()[row, :count],
                                       [s["score"] for s in answer["sentences"]], atol=1e-5)


def test_greedy_oracle_picks_the_best_pair_and_stops_when_nothing_helps():
    sentences = ["The storm closed every school in the city.",
                 "Officials met on Tuesday.",
                 "Ten thousand homes lost power overnight.",
                 "The storm closed schools.",
                 "A local team won its game."]
    reference = "A storm closed every school in the city. Ten thousand homes lost power."
    assert oracle.greedy_oracle(sentences, reference) == [0, 2]
    assert oracle.greedy_oracle(sentences, reference, size=1) == [0]
    assert oracle.greedy_oracle(["Nothing related."], reference) == []
    with pytest.raises(ValueError, match="`size` must be an integer >= 1, got 0"):
        oracle.greedy_oracle(sentences, reference, size=0)


def test_oracle_labels_mark_the_cls_of_the_oracle_sentences_in_every_window():
    """The training labels: 1 at the [CLS] of each sentence the oracle picks, wherever its
    window falls; the label weights: 1 at every sentence's [CLS], nowhere else."""
    tok = tokenizer()
    document = ("The word was one. It had the key. On it was that. The key was one word. "
                "As for this, it was.")
    data = SummaryData([SummaryExample(document, "It had the key. The key was one word.")])
    encoded = features.encode_summaries(data, tok, 16)
    assert encoded.oracles == [[1, 3]]
    assert [w.first for _, w in encoded.rows] == [0, 2, 4]  # two sentences to a window
    labels, weights = encoded.labels["labels"], encoded.labels["label_weights"]
    for r, (_, window) in enumerate(encoded.rows):
        assert np.flatnonzero(weights[r]).tolist() == window.positions.tolist()
        picked = [p for k, p in enumerate(window.positions) if window.first + k in (1, 3)]
        assert np.flatnonzero(labels[r]).tolist() == picked
        assert all(encoded.features["token_ids"][r, p] == tok.cls_id for p in picked)
    assert labels.sum() == 2


def test_rouge_labels_grade_every_sentence_by_its_own_rouge_in_every_window():
    """labels="rouge": each sentence's ROUGE-1 F + ROUGE-2 F alone against the reference
    (rouge-score's, recomputed here), over the document's best, at its [CLS]; the oracle's
    picks are still kept; an unknown setting is refused."""
    tok = tokenizer()
    document = ("The word was one. It had the key. On it was that. The key was one word. "
                "As for this, it was.")
    reference = "It had the key. The key was one word."
    data = SummaryData([SummaryExample(document, reference)])
    encoded = features.encode_summaries(data, tok, 16, labels="rouge")
    assert encoded.oracles == [[1, 3]]
    rouge = metrics.scorer()
    sentences = [s.text for s in data.examples[0].sentences]
    raw = [rouge.score(reference, s)["rouge1"].fmeasure + rouge.score(reference, s)[
        "rouge2"].fmeasure for s in sentences]
    expected = np.array(raw) / max(raw)
    labels, weights = encoded.labels["labels"], encoded.labels["label_weights"]
    got = []
    for r, (_, window) in enumerate(encoded.rows):
        assert np.flatnonzero(weights[r]).tolist() == window.positions.tolist()
        assert not np.delete(labels[r], window.positions).any()  # nothing off a [CLS]
        got.extend(labels[r, window.positions].tolist())
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert max(got) == 1.0 and 0 < min(got) < 1  # graded, not 0/1
    assert oracle.sentence_rouge(["Nothing related."], reference).tolist() == [0.0]
    with pytest.raises(ValueError, match="labels must be one of .*got 'soft'"):
        features.encode_summaries(data, tok, 16, labels="soft")
    # --summary_labels reaches the rows through the fine-tuning hook.
    from kbert.training import FinetuningConfig

    for setting, graded in (("oracle", False), ("rouge", True)):
        config = FinetuningConfig(task="extractive_summarizer", model_dir="unused",
                                  sequence_length=16, summary_windows="all",
                                  summary_labels=setting)
        rows = finetuning.encode(config, data, tok).labels["labels"]
        assert (0 < rows[rows > 0].min() < 1) == graded, setting
    # So do --summary_segments (to the rows and the model) and --summary_windows.
    split = SummaryData([SummaryExample("The key. It was.\n\nOn it. The word.")])
    for segments, expected in (("sentence", [0, 1, 0, 1]), ("paragraph", [0, 0, 1, 1])):
        config = FinetuningConfig(task="extractive_summarizer", model_dir="unused",
                                  sequence_length=32, summary_segments=segments)
        [(_, window)] = finetuning.encode(config, split, tok).rows
        assert window.segment_ids[window.positions].tolist() == expected, segments
        model = finetuning.build(config, tiny_backbone("bert", vocabulary_size=len(
            VOCABULARY)), None)
        assert (model.segments, model.windows) == (segments, "first")
    # Accuracy takes soft targets as 0/1 at half the best (hard ones as they are).
    accuracy = ExtractiveSummarizer.default_metrics(None)[1][0]
    accuracy.update_state(np.array([[1.0, 0.6, 0.4, 0.0]]), np.array([[2.0, 1.0, -1.0, 3.0]]))
    assert float(accuracy.result()) == 0.75


def test_trigram_blocking_skips_a_sentence_repeating_a_chosen_trigram():
    texts = ["The storm closed every school.", "Power lines fell across the town.",
             "The storm closed every road.", "Power came back."]
    scores = [0.9, 0.5, 0.8, 0.1]
    assert decode.select(texts, scores, 2) == [0, 1]  # 2 shares "the storm closed" with 0
    assert decode.select(texts, scores, 2, trigram_blocking=False) == [0, 2]
    assert decode.select(texts, scores, 3) == [0, 1, 3]


def test_the_model_trains_and_round_trips_and_needs_its_weights(tmp_path):
    model = ExtractiveSummarizer(tiny_backbone("bert"))
    x = inputs_for(model)
    assert _checks.numpy_outputs(model, x).shape == (4, 16)
    _checks.check_round_trips(model, tmp_path)
    labels = (np.arange(16)[None] % 5 == 0).astype("float32").repeat(4, 0)
    weights = ((np.arange(16)[None] % 4 == 0) * x["padding_mask"]).astype("float32")
    logs = _checks.check_train_step(model, x, labels, sample_weight=weights)
    assert sorted(logs) == ["accuracy", "loss"]
    with pytest.raises(ValueError, match="pass the label weights as sample weights"):
        model.train_on_batch(x, labels)


def _document(rng, count):
    """Sentences of common words; one of them (not the first) holds "key": the summary."""
    sentences = [" ".join(rng.choice(WORDS, int(rng.integers(3, 6)))) for _ in range(count)]
    keyed = int(rng.integers(1, count))
    words = sentences[keyed].split()
    words.insert(int(rng.integers(0, len(words) + 1)), "key")
    sentences[keyed] = " ".join(words)
    return " ".join(s.capitalize() + "." for s in sentences), sentences[keyed].capitalize() + "."


def test_a_tiny_model_learns_which_sentence_summarizes_and_beats_lead_1():
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    tok = tokenizer()

    def split(n):
        return SummaryData([SummaryExample(*_document(rng, int(rng.integers(3, 6))))
                            for _ in range(n)])

    train, test = split(320), split(40)
    encoded = features.encode_summaries(train, tok, 48, oracle_size=1)
    # The oracle finds the planted sentence.
    assert all(e.sentences[o[0]].text == e.summary
               for e, o in zip(train.examples, encoded.oracles))
    model = ExtractiveSummarizer(tiny_backbone("bert", vocabulary_size=len(VOCABULARY),
                                               max_sequence_length=48))
    model.compile(optimizer=keras.optimizers.Adam(5e-3))
    model.fit(encoded.features, encoded.labels["labels"],
              sample_weight=encoded.labels["label_weights"], batch_size=16, epochs=12,
              verbose=0)

    class Split:
        data = test
        encoded = features.encode_summaries(test, tok, 48)

    logits = model.predict(Split.encoded.features, verbose=0)
    found = finetuning.summaries(Split, logits, count=1)
    references = [e.summary for e in test.examples]
    lead = metrics.rouge_scores([metrics.lead([s.text for s in e.sentences], 1)
                                 for e in test.examples], references)
    learned = metrics.rouge_scores(found, references)
    assert learned["rouge2"] > 0.9 > lead["rouge2"] + 0.5, (learned, lead)

    pipe = kbert.pipeline("summarization", model=model, tokenizer=tok, num_sentences=1)
    document = test.examples[0].document
    [answer] = pipe(document)
    assert set(answer) == {"summary_text", "sentences"}
    [chosen] = answer["sentences"]
    assert set(chosen) == {"text", "score", "start", "end"} and 0 < chosen["score"] < 1
    assert chosen["text"] == document[chosen["start"]:chosen["end"]] == answer["summary_text"]
    assert "key" in chosen["text"].lower()


def test_the_pipeline_scores_every_sentence_of_a_long_document_and_checks_options():
    tok = tokenizer()
    model = ExtractiveSummarizer(tiny_backbone("bert", vocabulary_size=len(VOCABULARY)),
                                 windows="all")
    pipe = kbert.pipeline("summarization", model=model, tokenizer=tok)
    document = " ".join(f"The word {w} was one of {w}." for w in WORDS[:12])
    assert len(features.document_windows([SummaryExample(document)], tok, 24)[0]) == 6
    answers = pipe([document, "It was one.\n\nOn it!"], num_sentences=12,
                   trigram_blocking=False)
    assert len(answers) == 2 and len(answers[0][0]["sentences"]) == 12
    for text, [answer] in zip([document, "It was one.\n\nOn it!"], answers):
        starts = [s["start"] for s in answer["sentences"]]
        assert starts == sorted(starts)
        assert all(text[s["start"]:s["end"]] == s["text"] for s in answer["sentences"])
    # Every sentence repeats "the word ... was": blocking keeps one.
    assert len(pipe(document, num_sentences=12)[0]["sentences"]) == 1
    with pytest.raises(ValueError, match="`num_sentences` must be an integer >= 1, got 0"):
        pipe(document, num_sentences=0)
    with pytest.raises(ValueError, match="takes a document or a non-empty list"):
        pipe([])


def test_first_window_rows_and_a_pipeline_that_chooses_among_its_sentences_alone():
    """windows="first" (BERTSum's truncation, the default): one row per document, its first
    window, whose position ids are the document's; labels there alone (the oracle still
    reads every sentence); the pipeline chooses among those sentences, in order, with their
    offsets. The setting is checked and saved with the model."""
    tok = tokenizer()
    document = ("The word was one. It had the key. On it was that. The key was one word. "
                "As for this, it was.")
    data = SummaryData([SummaryExample(document, "It had the key. The key was one word.")])
    encoded = features.encode_summaries(data, tok, 16, which="first")
    assert encoded.oracles == [[1, 3]]
    [(example, window)] = encoded.rows
    assert example == 0 and window.first == 0 and len(window.positions) == 2
    assert np.flatnonzero(encoded.labels["labels"][0]).tolist() == [window.positions[1]]
    assert [len(s) for s in encoded.sentence_scores(np.zeros([1, 16]))] == [2]
    [[only]] = features.document_windows(data.examples, tok, 16, "first")
    assert only.token_ids.tolist() == window.token_ids.tolist()

    backbone = tiny_backbone("bert", vocabulary_size=len(VOCABULARY))
    model = ExtractiveSummarizer(backbone)
    assert model.windows == "first" and model.get_config()["windows"] == "first"
    assert ExtractiveSummarizer.from_config(model.get_config()).windows == "first"
    # Saved before `windows` existed: every window was scored, and it reloads that way.
    older = {k: v for k, v in model.get_config().items() if k != "windows"}
    assert ExtractiveSummarizer.from_config(older).windows == "all"
    pipe = kbert.pipeline("summarization", model=model, tokenizer=tok)
    long = " ".join(f"The word {w} was one of {w}." for w in WORDS[:12])
    [first, *_] = features.document_windows([SummaryExample(long)], tok,
                                            backbone.config.max_sequence_length)[0]
    [answer] = pipe(long, num_sentences=12, trigram_blocking=False)
    sentences = sentences_of(long)[:len(first.positions)]
    assert len(sentences) < 12
    assert [(s["start"], s["end"]) for s in answer["sentences"]] == [
        (s.start, s.end) for s in sentences]
    assert all(long[s["start"]:s["end"]] == s["text"] for s in answer["sentences"])
    with pytest.raises(ValueError, match=r"windows must be one of \('first', 'all'\).*'last'"):
        ExtractiveSummarizer(backbone, windows="last")
    # `segments`: by sentence unless told; saved, and by sentence for a model saved before.
    assert model.segments == "sentence"
    by_paragraph = ExtractiveSummarizer(backbone, segments="paragraph")
    assert ExtractiveSummarizer.from_config(by_paragraph.get_config()).segments == "paragraph"
    older = {k: v for k, v in by_paragraph.get_config().items() if k != "segments"}
    assert ExtractiveSummarizer.from_config(older).segments == "sentence"
    with pytest.raises(ValueError, match=r"segments must be one of \('sentence', "
                                         r"'paragraph'\).*'word'"):
        ExtractiveSummarizer(backbone, segments="word")


def test_a_saved_summarizer_loads_with_its_trained_scorer_and_windows(tmp_path):
    """A run's model.keras, loaded by `kbert.pipeline(model=directory)` (kbert.convert's
    weight map), keeps its scorer's weights and its `windows`: the same scores as the model
    it saved."""
    from kbert.tokenizers.files import write_tokenizer_files

    tok = tokenizer()
    model = ExtractiveSummarizer(tiny_backbone("bert", vocabulary_size=len(VOCABULARY)),
                                 windows="all")
    model.scorer.bias.assign([0.5])
    model.save(str(tmp_path / "model.keras"))
    write_tokenizer_files(tok, str(tmp_path))
    document = " ".join(f"The word {w} was one of {w}." for w in WORDS[:6])
    options = dict(num_sentences=6, trigram_blocking=False)
    [saved] = kbert.pipeline("summarization", model=str(tmp_path))(document, **options)
    [answer] = kbert.pipeline("summarization", model=model, tokenizer=tok)(document, **options)
    assert len(saved["sentences"]) == 6
    np.testing.assert_allclose([s["score"] for s in saved["sentences"]],
                               [s["score"] for s in answer["sentences"]], atol=1e-6)


def test_summaries_file_and_rouge(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text('{"document": "One word. Two words.", "summary": "Two words."}\n'
                    '{"document": "", "summary": "x"}\n')
    with pytest.raises(ValueError, match="line 2: empty text in column 'document'"):
        read_summaries_file(path)
    path.write_text('{"article": "One word. Two words.", "highlights": "Two words."}\n')
    [example] = read_summaries_file(path, "article", "highlights").examples
    assert [s.text for s in example.sentences] == ["One word.", "Two words."]
    assert example.summary == "Two words."
    scores = metrics.rouge_scores(["Two words.", "a b"], ["Two words.", "c d"])
    assert scores == {"rouge1": 0.5, "rouge2": 0.5, "rougeL": 0.5}
    # Each document's own, whose means those are: rouge-score's F1 of each pair.
    each = metrics.document_scores(["Two words.", "a b c", "x"], ["Two words.", "a b d", "y"])
    np.testing.assert_allclose(each, [[1, 1, 1], [2 / 3, 1 / 2, 2 / 3], [0, 0, 0]])
    with pytest.raises(ValueError, match="2 predictions for 1 references"):
        metrics.document_scores(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="No summaries to score"):
        metrics.rouge_scores([], [])


def test_the_saved_models_summarize_as_the_pipeline(tmp_path, monkeypatch):
    """model.export's and pipeline.export's `serving_default` take documents and choose the
    pipeline's sentences (windows "first" and "all", trigram blocking) in the graph;
    DistilBERT has no segment ids, the BERT exported by pipeline.export alternates them by
    paragraph. docs/summarization.md's serving example runs on the export, and the pipeline
    runs on each (loaded checked, its `windows` and `segments` read from export.json)."""
    import tensorflow as tf

    tok = tokenizer()
    model = ExtractiveSummarizer(tiny_backbone("distil_bert", vocabulary_size=len(VOCABULARY)))
    pipe = kbert.pipeline("summarization", model=model, tokenizer=tok)
    by_paragraph = ExtractiveSummarizer(tiny_backbone("bert", vocabulary_size=len(VOCABULARY)),
                                        windows="all", segments="paragraph")
    every = kbert.pipeline("summarization", tokenizer=tok, model=by_paragraph)
    documents = ["The word was. It had one word! On the key.\n\nThe  word\tof it.  Key one?",
                 "One.", " ".join(f"The word {w} was one of {w}." for w in WORDS[:7]),
                 # Python's whitespace, not RE2's \s, between paragraphs; a record separator.
                 "The key was\n\u00a0\x0b\nit was one", "The key.\x1eit had one.",
                 "", " \n\n ", "\u200b The key was. On it."]
    model.export(str(tmp_path / "model"), tokenizer=tok)
    every.export(str(tmp_path / "pipe"), num_sentences=5, trigram_blocking=False)
    unblocked = dict(num_sentences=5, trigram_blocking=False)
    assert len(every(documents[2], **unblocked)[0]["sentences"]) > len(
        pipe(documents[2], **unblocked)[0]["sentences"])  # "all" reaches past window 1
    for path, options, runs in (("model", {}, pipe), ("pipe", unblocked, every)):
        serve = tf.saved_model.load(str(tmp_path / path)).signatures["serving_default"]
        out = serve(text=tf.constant(documents))
        for row, [answer] in enumerate(runs(documents, **options)):
            chosen = answer["sentences"]
            count = int(out["num_sentences"][row])
            assert count == len(chosen)
            assert [s.decode() for s in out["sentences"].numpy()[row, :count]] == [
                " ".join(s["text"].split()) for s in chosen]
            np.testing.assert_allclose(out["scores"].numpy()[row, :count],
                                       [s["score"] for s in chosen], atol=1e-5)
    on_export = kbert.pipeline("summarization", model=str(tmp_path / "model"))
    assert (on_export.source.windows, on_export.source.segments,
            on_export.source.max_length) == ("first", "sentence",
                                             model.backbone.config.max_sequence_length)
    for options in ({}, unblocked):
        for saved, [answer] in zip(on_export(documents, **options), pipe(documents, **options)):
            assert [(s["start"], s["end"]) for s in saved[0]["sentences"]] == [
                (s["start"], s["end"]) for s in answer["sentences"]]
            np.testing.assert_allclose([s["score"] for s in saved[0]["sentences"]],
                                       [s["score"] for s in answer["sentences"]], atol=1e-5)
    # The paragraph-segmented "all" export: the pipeline on it lays documents out as its
    # export.json says, and chooses the sentences its graph chose.
    on_every = kbert.pipeline("summarization", model=str(tmp_path / "pipe"))
    assert (on_every.source.windows, on_every.source.segments) == ("all", "paragraph")
    out = tf.saved_model.load(str(tmp_path / "pipe")).signatures["serving_default"](
        text=tf.constant(documents))
    for row, (text, [answer]) in enumerate(zip(documents, on_every(documents, **unblocked))):
        starts = [s.start for s in sentences_of(text)]
        count = int(out["num_sentences"][row])
        assert [starts.index(s["start"]) for s in answer["sentences"]] == (
            out["sentence_ids"].numpy()[row, :count].tolist())
        np.testing.assert_allclose(out["scores"].numpy()[row, :count],
                                   [s["score"] for s in answer["sentences"]], atol=1e-5)
    [serve_example] = [block for block in re.findall(
        r"```python\n(.*?)```", (ROOT / "docs" / "summarization.md").read_text(), re.S)
        if "tf.saved_model.load" in block]
    (tmp_path / "runs" / "aclsum").mkdir(parents=True)
    (tmp_path / "runs" / "aclsum" / "export").symlink_to(tmp_path / "model")
    monkeypatch.chdir(tmp_path)
    namespace = {"document": documents[0]}
    exec(serve_example, namespace)
    [answer] = pipe(documents[0])
    assert namespace["count"] == len(answer["sentences"])
    np.testing.assert_allclose(namespace["scores"], [s["score"] for s in answer["sentences"]],
                               atol=1e-5)
