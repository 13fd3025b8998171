"""No code outside `kbert/tokenizers` asks which kind of tokenizer it holds (issue 29): each
kind answers for itself (`Tokenizer.tokenizer_type`, `bert_words`, `tflite_offsets`,
`continuation_prefix`, `graph_encode`, `write_files`, `identity`, `checkpoint_assets`,
`tflite_tokenizer`, the decoders and the offsets), so a kind added in `kbert/tokenizers` needs
no branch anywhere else."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
KINDS = r"(BytePair|SentencePiece|WordPiece)Tokenizer"
# Each: a test of a tokenizer's kind, by class, by an attribute only one kind has, or by name.
KIND_CHECKS = [
    re.compile(rf"isinstance\([^)]*\b{KINDS}\b"),
    re.compile(rf"\btype\([^)]*\)\s*(is|==|!=)\s*{KINDS}\b"),
    re.compile(r"(getattr|hasattr)\([^)]*[\"'](merges|proto|model|albert_preprocess|"
               r"add_prefix_space)[\"']"),
    re.compile(r"\.(sentence_piece|byte_pair)\b(?!_)"),
    re.compile(r"(==|!=)\s*[\"'](wordpiece|sentencepiece|bpe)[\"']"),
    re.compile(r"[\"'](wordpiece|sentencepiece|bpe)[\"']\s*(==|!=)"),
]


def kind_checks(paths):
    """["path:line: text"] of every line of `paths` that tests a tokenizer's kind."""
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if any(pattern.search(code) for pattern in KIND_CHECKS):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def _outside_tokenizers():
    tokenizers = ROOT / "kbert" / "tokenizers"
    paths = [p for p in sorted((ROOT / "kbert").rglob("*.py")) if tokenizers not in p.parents]
    return paths + sorted((ROOT / "tools").rglob("*.py")) + sorted(
        (ROOT / "benchmarks").rglob("*.py"))


def test_no_code_outside_the_tokenizers_branches_on_a_tokenizers_kind():
    found = kind_checks(_outside_tokenizers())
    assert not found, ("These lines test which kind of tokenizer they hold; ask the tokenizer "
                       "instead (a method or attribute of kbert.tokenizers' Tokenizer that "
                       "each kind implements):\n" + "\n".join(found))


def test_the_check_finds_the_kind_tests_it_is_for(tmp_path):
    """The patterns catch the forms the issue counted (so that the test above can fail)."""
    lines = ["if isinstance(tokenizer, BytePairTokenizer):",
             "self.sentence_piece = isinstance(tok, (SentencePieceTokenizer, X))",
             'if getattr(tokenizer, "merges", None) is not None:',
             'elif getattr(tokenizer, "proto", None) is not None:',
             'sentence_piece = getattr(tokenizer, "model", None) is not None',
             'if hasattr(vocabulary, "merges") and hasattr(vocabulary, "vocabulary"):',
             "if pipe.encoder.sentence_piece or pipe.encoder.byte_pair:",
             'if config.resolved_tokenizer_type == "bpe":',
             "if type(tokenizer) is WordPieceTokenizer:"]
    kept = ["tokenizer.write_files(directory)", "from kbert.pipelines import byte_pair_graph",
            "if not tokenizer.bert_words:", "def byte_pair_words(texts):",
            'if self.tokenizer_type != "auto":',
            "x = 1  # isinstance(tokenizer, BytePairTokenizer) in a comment"]
    path = tmp_path / "module.py"
    path.write_text("\n".join(lines + kept) + "\n", encoding="utf-8")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        found = kind_checks([path])
    finally:
        ROOT = saved
    assert [f.split(": ", 1)[1] for f in found] == lines
