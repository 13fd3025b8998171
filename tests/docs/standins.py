"""Offline stand-ins for what the documentation's examples download or take from a long job.

The examples run in a folder (`folder`) where the names they use are tiny checkpoints the
test suite ships (tests/fixtures) or small files written here, and where
`kbert.presets.load` / `load_tokenizer` give tiny models of the preset's family
(`presets_as_tiny_models`): 2 layers, hidden 32, random weights; "pretrained" ones take
the vocabulary of the family's tiny fixture checkpoint, whose tokenizer `load_tokenizer`
returns. Nothing is downloaded. So that the examples' training runs take a second, `fit`
runs eagerly (tracing a train step costs 5-20 s, the 2 steps of a tiny model well under
one; the graph path is tested elsewhere) one epoch of at most 2 batches, and fails if it ran
no step (the stand-in data must fill one batch); and the standard library's docstrings (the
corpus that needs no download) are the stand-in folder's 24 short documents.
"""

import contextlib
import gzip
import json
import os
from itertools import permutations
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ROOT = FIXTURES.parents[1]

# A tiny checkpoint of each family, with its tokenizer (Hugging Face layout).
FAMILY_CHECKPOINTS = {
    "bert": "hf_tiny/tiny_bert_general", "albert": "hf_tiny/albert",
    "distil_bert": "hf_tiny/distil_bert", "electra": "hf_tiny/electra",
    "roberta": "hf_tiny/roberta", "deberta_v3": "hf_tiny/deberta_v3",
    "mobile_bert": "hf_tiny/mobile_bert",
}
TINY = dict(num_layers=2, hidden_size=32, num_heads=2, intermediate_size=64)
FAMILY_TINY = {
    "albert": dict(embedding_size=16), "electra": dict(embedding_size=16),
    "deberta_v3": dict(position_buckets=8),
    "mobile_bert": dict(embedding_size=16, intra_bottleneck_size=16, intermediate_size=32),
}

# Names the examples use -> what stands in for them (a fixture, or a path in the folder).
LINKS = {
    "all-MiniLM-L6-v2": "hf_tasks/st_bert_mean_normalize",
    "sentence-transformers/all-MiniLM-L6-v2": "hf_tasks/st_bert_mean_normalize",
    "distilbert-base-uncased-finetuned-sst-2-english": "hf_tasks/distil_bert_seq_single",
    "distilbert-sst2": "hf_tasks/distil_bert_seq_single",
    "bert-base-NER": "hf_tasks/bert_token",
    "bert-base-uncased": "hf_tiny/tiny_bert_general",
    "path/to/bert": "hf_tiny/tiny_bert_general",
    "uncased_L-12_H-768_A-12": "hf_tiny/tiny_bert_general",
    "runs/base": "hf_tiny/tiny_bert_general",
    "runs/pretrain": "hf_tiny/tiny_bert_general",
    "runs/teacher": "hf_tiny/tiny_bert_general",
    "path/to/fine-tuned-checkpoint": "hf_tasks/bert_seq_single",
    "path/to/squad_checkpoint": "hf_tasks/bert_qa",
    "path/to/ner_checkpoint": "hf_tasks/bert_token",
    "runs/sst2/export": "hf_tasks/bert_seq_single",
    "vocab.txt": "hf_tiny/tiny_bert_general/vocab.txt",
    "30k-clean.model": "hf_tiny/albert/spiece.model",
    "spiece.model": "hf_tiny/albert/spiece.model",
    "vocab.json": "hf_tiny/roberta/vocab.json",
    "merges.txt": "hf_tiny/roberta/merges.txt",
    "bpe/vocab.json": "hf_tiny/roberta/vocab.json",
    "bpe/merges.txt": "hf_tiny/roberta/merges.txt",
}
# Exports that an example on the serving page makes and later examples load.
LATER = {"runs/quickstart/export": "export/kbert/1", "some/export/dir": "export/kbert/1"}

SENTENCES = ["The cat sat on the mat.", "It was a sunny day in the park.",
             "Return the number of items in a container.", "John lives in Paris."]
FILES = {
    # 24 documents (the sentences in every order): 36 examples, a batch of 32 at length 128.
    "corpus/part-0.txt": "\n\n".join("\n".join(order) for order in permutations(SENTENCES)) + "\n",
    # 32 rows: the examples' batch of 32 (training drops a partial batch).
    "train.csv": "sentence,label\n" + "Great!,pos\nAwful.,neg\nLovely.,pos\nBad.,neg\n" * 8,
    "dev.csv": "sentence,label\nGreat!,pos\nTerrible.,neg\n",
    "reviews.csv": "review,label\nA great movie!,pos\nAwful.,neg\n",
    "train.conll": "John B-PER\nlives O\nin O\nParis B-LOC\n. O\n\nMary B-PER\nsat O\n. O\n",
    "sentences.txt": "John lives in Paris.\nMary works in Berlin.\n",
    "questions.jsonl": json.dumps({"question": "Where does John live?",
                                   "context": "John lives in Paris."}) + "\n",
    "dev-v1.1.json": json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [{
        "context": "John lives in Paris.", "qas": [{
            "id": "q1", "question": "Where does John live?",
            "answers": [{"text": "Paris", "answer_start": 14}]}]}]}]}),
    # ACLSum's splits as docs/summarization.md writes them: 16 windows, a batch of 16.
    **{f"data/aclsum/{split}.jsonl": (json.dumps({
        "document": "The cat sat on the mat. It was a sunny day.\n\nJohn lives in Paris.",
        "summary": "John lives in Paris."}) + "\n") * 16 for split in ("train", "val", "test")},
}


# Plain encoders (a Hugging Face BertModel folder, no sentence-transformers modules) made of
# a fixture's files: the encoder all-MiniLM-L6-v2 was trained from is the tiny
# sentence-transformers fixture's encoder, as wide as the teacher that stands in for
# all-MiniLM-L6-v2.
ENCODERS = {"nreimers/MiniLM-L6-H384-uncased": "hf_tasks/st_bert_mean_normalize"}
ENCODER_FILES = ("config.json", "model.safetensors", "vocab.txt", "tokenizer.json",
                 "tokenizer_config.json", "special_tokens_map.json")


def make_folder(folder):
    """Fills `folder` with the stand-ins; returns it."""
    folder = Path(folder)
    (folder / "tools").symlink_to(ROOT / "tools")
    for name, source in ENCODERS.items():
        (folder / name).mkdir(parents=True)
        for file in ENCODER_FILES:
            (folder / name / file).symlink_to(FIXTURES / source / file)
    for name, target in LINKS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).symlink_to(FIXTURES / target)
    for name, target in LATER.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).symlink_to(os.path.relpath(folder / target, (folder / name).parent))
    for name, text in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    with gzip.open(folder / "corpus" / "part-1.txt.gz", "wt", encoding="utf-8") as f:
        f.write(FILES["corpus/part-0.txt"])
    _summarizer(folder / "runs" / "aclsum")
    return folder


def _summarizer(directory):
    """A tiny `ExtractiveSummarizer` (random weights) as tools/finetune.py leaves one in
    --model_dir: model.keras and the tokenizer's files (docs/summarization.md's
    runs/aclsum)."""
    import kbert.convert
    import kbert.models
    from kbert.tokenizers.files import write_tokenizer_files
    from kbert.tasks import ExtractiveSummarizer

    tokenizer = kbert.convert.load_tokenizer(str(FIXTURES / FAMILY_CHECKPOINTS["bert"]))
    config = kbert.models.FAMILIES["bert"].config(
        **TINY, vocabulary_size=tokenizer.vocabulary_size)
    directory.mkdir(parents=True)
    ExtractiveSummarizer(kbert.models.build("bert", config, head=None)).save(
        directory / "model.keras")
    write_tokenizer_files(tokenizer, directory)


def _family(name):
    import kbert.presets

    return kbert.presets.get(name)["model"]


@contextlib.contextmanager
def presets_as_tiny_models():
    """`kbert.presets.load` and `load_tokenizer` give tiny stand-ins while inside."""
    import kbert.convert
    import kbert.presets

    load, load_tokenizer = kbert.presets.load, kbert.presets.load_tokenizer

    def tiny_tokenizer(name, weights=kbert.presets.PRETRAINED, sha256=None):
        return kbert.convert.load_tokenizer(str(FIXTURES / FAMILY_CHECKPOINTS[_family(name)]))

    def tiny_load(name, head="pretrainer", weights=kbert.presets.PRETRAINED, dtype=None,
                  sha256=None, **overrides):
        family = _family(name)
        fields = {**TINY, **FAMILY_TINY.get(family, {})}
        if weights is not None:  # "pretrained", or a checkpoint: the fixture's vocabulary
            fields["vocabulary_size"] = tiny_tokenizer(name).vocabulary_size
        return load(name, head=head, weights=None, dtype=dtype, **{**fields, **overrides})

    import keras
    import tensorflow as tf

    from kbert.data import corpora

    fit, stdlib = keras.Model.fit, corpora.stdlib_docstrings

    def short_fit(self, x=None, y=None, **kwargs):
        if isinstance(x, tf.data.Dataset):
            x = x.take(2)
        kwargs["epochs"] = 1
        self.run_eagerly = True
        history = fit(self, x, y, **kwargs)
        assert history.history, "fit ran no step: the stand-in data is less than one batch"
        return history

    def small_corpus(min_sentences=2, cache=True):
        return corpora.text_files(os.path.join(os.getcwd(), "corpus", "part-0.txt"))

    kbert.presets.load, kbert.presets.load_tokenizer = tiny_load, tiny_tokenizer
    keras.Model.fit, corpora.stdlib_docstrings = short_fit, small_corpus
    try:
        yield
    finally:
        kbert.presets.load, kbert.presets.load_tokenizer = load, load_tokenizer
        keras.Model.fit, corpora.stdlib_docstrings = fit, stdlib
