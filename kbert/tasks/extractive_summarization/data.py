"""Documents and their reference summaries: a CSV/TSV/JSONL file of (document, summary) rows
or TFDS `cnn_dailymail`, and each document's sentences as character spans of the text as
given.

Sentences are the pretraining pipeline's (`kbert.data.corpora.split_sentences`: breaks
after . ! ? before a capital, digit or quote, not after an abbreviation or an initial;
paragraphs at blank lines, each sentence's kept as `Sentence.paragraph`), which cleans each
sentence (whitespace runs become one space, control and format characters go). Each
sentence is then found back in the original text (`sentence_spans`), so that what a summary
returns is `document[start:end]` exactly.
"""

import dataclasses
import unicodedata
from typing import Optional

from kbert.data.corpora import split_paragraphs
from kbert.tasks.datasets import DataError, TfdsTask, builder_rows
from kbert.tasks.datasets import text as _text
from kbert.tasks.text_classification.data import read_classification_file

# TFDS builders kbert reads, by name: the document and the reference summary features.
TFDS_TASKS = {
    "cnn_dailymail": TfdsTask("summarization", "article", None, "highlights"),
}


@dataclasses.dataclass(frozen=True)
class Sentence:
    """One sentence of a document: its cleaned text (what the tokenizer reads), its
    characters in the document (`document[start:end]`) and the paragraph it is in (0 for
    the first; paragraphs end at blank lines)."""

    text: str
    start: int
    end: int
    paragraph: int = 0


@dataclasses.dataclass
class SummaryExample:
    """A document, its sentences and its reference summary (`None`: unlabelled)."""

    document: str
    summary: Optional[str] = None
    origin: str = ""
    sentences: list = dataclasses.field(default=None)

    def __post_init__(self):
        if not isinstance(self.document, str) or not self.document.strip():
            raise DataError(f"{self.origin or 'a document'}: empty document; expected a "
                            f"non-empty string, got {self.document!r:.80}.")
        if self.sentences is None:
            self.sentences = sentences_of(self.document)


@dataclasses.dataclass
class SummaryData:
    """The examples of a split and where they came from (for messages)."""

    examples: list
    source: str = ""


def _deleted(char):
    """What `clean_text` drops besides whitespace: control, format, private-use and
    unassigned characters."""
    return unicodedata.category(char).startswith("C")


def sentence_spans(text, sentences):
    """The (start, end) characters in `text` of each of `sentences` (`split_sentences(text)`,
    in order): each sentence's characters matched in turn, a space standing for any run of
    whitespace and deleted characters. ValueError where one is not found (a sentence not
    from `text`)."""
    spans, i = [], 0
    for sentence in sentences:
        while i < len(text) and (text[i].isspace() or _deleted(text[i])):
            i += 1
        start = i
        for char in sentence:
            if char == " ":
                while i < len(text) and (text[i].isspace() or _deleted(text[i])):
                    i += 1
                continue
            while i < len(text) and _deleted(text[i]) and not text[i].isspace():
                i += 1
            if i >= len(text) or text[i] != char:
                raise ValueError(f"The sentence {sentence!r:.60} is not in the text at "
                                 f"character {start}.")
            i += 1
        spans.append((start, i))
    return spans


def sentences_of(document):
    """The `Sentence`s of `document`, in order."""
    paragraphs = split_paragraphs(document)
    texts = [text for paragraph in paragraphs for text in paragraph]
    numbers = [k for k, paragraph in enumerate(paragraphs) for _ in paragraph]
    return [Sentence(t, s, e, k) for t, (s, e), k in
            zip(texts, sentence_spans(document, texts), numbers)]


def read_summaries_file(path, document_column="document", summary_column="summary", *,
                        file_format=None, header=True, delimiter=None, encoding="utf-8"):
    """`SummaryData` of a .csv, .tsv or .jsonl file, a document and its reference summary a
    row (columns: header names, 0-based indices, or JSON keys; `summary_column=None`:
    documents alone, for prediction). Empty documents or summaries are errors naming the
    row."""
    rows = read_classification_file(
        path, document_column, summary_column, file_format=file_format, header=header,
        delimiter=delimiter, encoding=encoding)
    return SummaryData([SummaryExample(e.text_a, e.text_b, e.origin) for e in rows.examples],
                       rows.source)


def read_tfds(name, split="train", data_dir=None, download=True, limit=None):
    """`SummaryData` of a TFDS summarization builder (`TFDS_TASKS`: cnn_dailymail's
    `article` and `highlights`, whose lines are the summary's sentences) at `split`; the
    first `limit` examples where given."""
    if name not in TFDS_TASKS:
        raise ValueError(f"Unknown TFDS summarization dataset {name!r}; kbert reads "
                         f"{sorted(TFDS_TASKS)}.")
    task = TFDS_TASKS[name]
    rows, _, where = builder_rows(name, task, split, data_dir, download)
    examples = []
    for i, row in enumerate(rows):
        if limit is not None and i >= limit:
            break
        examples.append(SummaryExample(_text(row[task.text_a]), _text(row[task.label]),
                                       f"{where} example {i}"))
    return SummaryData(examples, where)
