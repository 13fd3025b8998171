"""RoBERTa (byte-level BPE) in the pipelines: what the reference cases do not show. Byte-level
tokens' character offsets as transformers' fast tokenizer reports them, a pair packed as
RoBERTa packs it (also in question-answering's windows)."""

import numpy as np
import pytest

from kbert.pipelines import question_answering
from kbert.tokenizers.encoding import Encoder
from tests.pipelines import reference
from tests.pipelines.conftest import load_pipeline
from tests.pipelines.reference import FIXTURES


@pytest.fixture(scope="module")
def byte_pair():
    from kbert import convert

    return Encoder(convert.load_tokenizer(str(FIXTURES / "hf_tasks" / "roberta_token")))


# transformers 4.57.6's RobertaTokenizerFast (trim_offsets=True) on roberta_token's files:
# (token, (start, end)) of each token, printed by `tokenizer(text, return_offsets_mapping=True)`.
_TRANSFORMERS_OFFSETS = {
    "Naïve café 東京 in": [
        ("N", (0, 1)), ("a", (1, 2)), ("Ã", (2, 3)), ("¯", (2, 3)), ("ve", (3, 5)),
        ("Ġc", (6, 7)), ("af", (7, 9)), ("Ã", (9, 10)), ("©", (9, 10)), ("Ġ", (11, 11)),
        ("æ", (11, 12)), ("Ŀ", (11, 12)), ("±", (11, 12)), ("ä", (12, 13)), ("º", (12, 13)),
        ("¬", (12, 13)), ("Ġin", (14, 16))],
    "I love pizza 🍕😀 so": [
        ("I", (0, 1)), ("Ġlo", (2, 4)), ("ve", (4, 6)), ("Ġp", (7, 8)), ("i", (8, 9)),
        ("z", (9, 10)), ("z", (10, 11)), ("a", (11, 12)), ("Ġ", (13, 13)), ("ð", (13, 14)),
        ("Ł", (13, 14)), ("į", (13, 14)), ("ķ", (13, 14)), ("ð", (14, 15)), ("Ł", (14, 15)),
        ("ĺ", (14, 15)), ("Ģ", (14, 15)), ("Ġso", (16, 18))],
    "   \t\n  ": [
        ("Ġ", (1, 1)), ("Ġ", (2, 2)), ("Ġ", (3, 3)), ("ĉ", (3, 4)), ("Ċ", (4, 5)),
        ("Ġ", (6, 6)), ("Ġ", (7, 7))],
    "Paris   is\tthe  capital\n\nof": [
        ("P", (0, 1)), ("ar", (1, 3)), ("is", (3, 5)), ("Ġ", (6, 6)), ("Ġ", (7, 7)),
        ("Ġ", (8, 8)), ("is", (8, 10)), ("ĉ", (10, 11)), ("th", (11, 13)), ("e", (13, 14)),
        ("Ġ", (15, 15)), ("Ġcapital", (16, 23)), ("Ċ", (23, 24)), ("Ċ", (24, 25)),
        ("o", (25, 26)), ("f", (26, 27))],
    "e\u0301tude ab\u200bcd tab\x00null": [
        ("e", (0, 1)), ("Ì", (1, 2)), ("ģ", (1, 2)), ("t", (2, 3)), ("ude", (3, 6)),
        ("Ġa", (7, 8)), ("b", (8, 9)), ("â", (9, 10)), ("Ģ", (9, 10)), ("ĭ", (9, 10)),
        ("c", (10, 11)), ("d", (11, 12)), ("Ġt", (13, 14)), ("a", (14, 15)), ("b", (15, 16)),
        ("Ā", (16, 17)), ("n", (17, 18)), ("u", (18, 19)), ("ll", (19, 21))],
    " x  y ": [("Ġ", (1, 1)), ("x", (1, 2)), ("Ġ", (3, 3)), ("Ġy", (4, 5)), ("Ġ", (6, 6))],
}


@pytest.mark.parametrize("text", list(_TRANSFORMERS_OFFSETS))
def test_byte_level_offsets_are_transformers(byte_pair, text):
    """A token covers the characters of its bytes (each byte of a split character: the whole
    character), without its leading / trailing "Ġ"; a lone "Ġ" is empty, at its end."""
    encoding = byte_pair.encode([text])[0]
    got = [(byte_pair.token(i), tuple(int(x) for x in o))
           for i, o in zip(encoding.ids, encoding.offsets)]
    assert got == _TRANSFORMERS_OFFSETS[text]
    # A word is a GPT-2 piece: its span runs from its first token's start to its last's end.
    for word, (start, end) in enumerate(encoding.word_spans):
        inside = encoding.offsets[encoding.words == word]
        assert (start, end) == (inside[0, 0], inside[-1, 1])


def test_byte_level_tokens_to_string_joins_bytes(byte_pair):
    encoding = byte_pair.encode(["Naïve café 東京"])[0]
    tokens = [byte_pair.token(i) for i in encoding.ids]
    assert byte_pair.tokens_to_string(tokens) == "Naïve café 東京"
    assert byte_pair.tokens_to_string(tokens[:3]) == "Na\ufffd"  # half of "ï"


def test_question_answering_windows_leave_room_for_four_special_tokens(pipelines):
    """<s> question </s></s> window </s>: every window of a long context fits max_seq_len,
    and the answers are the context's characters."""
    pipe = pipelines("question-answering", "hf_tasks/roberta_qa")
    context = "John Smith works for Google in London. Paris is the capital of France. " * 6
    question = "Where does John work?"
    q_len = len(pipe.encoder.ids([question])[0])
    windows = question_answering.windows(len(pipe.encoder.encode([context])[0].ids), q_len,
                                         32, 8, pipe.special_count(True))
    assert len(windows) > 2 and all(stop - start + q_len + 4 <= 32 for start, stop in windows)
    answers = pipe(question=question, context=context, max_seq_len=32, doc_stride=8, top_k=3)
    for answer in answers:
        assert answer["answer"] == context[answer["start"]:answer["end"]]


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


# pipeline.export on RoBERTa: one export per task it serves (each about 20 s), every reference
# case of that model and those options run on it in a fresh process with TensorFlow alone.
EXPORTS = [
    ("text-classification", "hf_tasks/roberta_seq_single", {}),
    ("zero-shot-classification", "hf_tasks/roberta_nli",
     {"candidate_labels": ["sports", "politics", "travel"]}),
    ("feature-extraction", "hf_tasks/roberta_token", {}),
    ("fill-mask", "hf_tiny/roberta", {}),
    ("token-classification", "hf_tasks/roberta_token", {"aggregation_strategy": "first"}),
    ("question-answering", "hf_tasks/roberta_qa", {}),
]
# Beyond the reference: a pair cut to the model (4 special tokens), and masks next to
# whitespace runs, emoji and special literals, whose sequences the graph decodes from bytes.
EXTRA = {
    "text-classification": [[{"text": "@long", "text_pair": "Naïve café 東京 😀"}],
                            ["   \t\n  ", "", "I love pizza 🍕😀 so much 👍"]],
    "fill-mask": [["she<mask> it\t \n<mask>", "東京<mask>😀", "<s><mask></s>  <mask>  "]],
    # Literals typed in a text are tokens of no entity; "<mask>" takes its spaces along.
    "token-classification": [["John <mask> Smith</s> works  <s>in\tLondon 🍕.", "<pad>",
                              "Zürich  <mask>東京<unk>x", ""]],
    # Windows of <s> question </s></s> window </s> over a long context; literals in one.
    "question-answering": [{"question": ["Where does John work?", "Who founded Apple?"],
                            "context": ["@long", "Apple </s> was founded by <mask> Steve"
                                        "<s>Jobs in Zürich 東京 😀."]}],
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory, pipeline_export):
    """{task: [(inputs, options, the fresh process's results, placement)]}."""
    import pickle
    import subprocess
    import sys

    from tests.pipelines import test_export

    tmp = tmp_path_factory.mktemp("roberta_exports")
    calls, plan = [], {}
    for task, model, options in EXPORTS:
        path = pipeline_export(task, model, options)
        name = task.replace("-", "_")
        inputs_list = [(reference.expand(name, case["inputs"]), case["options"])
                       for index, case in enumerate(reference.load(name)["cases"])
                       if index in test_export._cases(task, model, options)]
        inputs_list += [(reference.expand(name, inputs), options)
                        for inputs in EXTRA.get(task, [])]
        entries = []
        for inputs, case_options in inputs_list:
            case_calls, placement = test_export._calls(task, inputs, options)
            first = len(calls)
            calls.extend((path, signature, args) for signature, args in case_calls)
            entries.append((inputs, case_options, range(first, len(calls)), placement))
        plan[task] = entries
    with open(tmp / "calls.pkl", "wb") as f:
        pickle.dump(calls, f)
    script = tmp / "fresh.py"
    script.write_text(test_export.FRESH)  # plain tf.saved_model.load, no kbert imported
    subprocess.run([sys.executable, str(script), str(tmp / "calls.pkl"),
                    str(tmp / "results.pkl")], check=True, timeout=900)
    with open(tmp / "results.pkl", "rb") as f:
        results = pickle.load(f)
    return {task: [(inputs, options, [results[c] for c in span], placement)
                   for inputs, options, span, placement in entries]
            for task, entries in plan.items()}


@pytest.mark.slow
@pytest.mark.parametrize("task, model", [(task, model) for task, model, _ in EXPORTS])
def test_the_export_answers_as_the_pipeline(exported, task, model):
    from tests.pipelines import test_export

    pipe = load_pipeline(task, model)
    answered = 0
    for inputs, options, results, placement in exported[task]:
        try:
            expected = pipe(**inputs, **options) if task == "question-answering" else \
                pipe(inputs, **options)
        except ValueError as error:
            failed = [r for r in results if isinstance(r, str)]
            assert failed, f"{inputs!r:.60}: the pipeline refuses it ({error}), the export not"
            continue
        assert not any(isinstance(r, str) for r in results), (inputs, results)
        ours = test_export._answer(task, inputs, options, results, placement)
        reference.assert_same(ours, expected, f"{inputs!r:.60}", tolerance=1e-5)
        answered += 1
    assert answered >= 3


def test_the_graph_encodes_as_the_pipeline(byte_pair):
    """`byte_pair_graph.encode` (the exports' tokens and offsets) is `Encoder.encode` on the
    hostile texts of the reference, with special literals typed in them."""
    import tensorflow as tf

    from kbert.tokenizers.bpe import graph as byte_pair_graph

    tokenizer = byte_pair.tokenizer
    specials = {tokenizer.vocabulary[i]: int(i) for i in tokenizer.special_ids}
    texts = list(_TRANSFORMERS_OFFSETS) + [
        "", "she<mask> it\t \n<mask>", "東京<mask>😀", "<s><mask></s>  <mask>  ",
        "a\u2003 <mask>b", "Mary said: \"I'm sure we'll go, won't we?\""]
    graph = byte_pair_graph.encode(tf.constant([t.encode() for t in texts]), tokenizer,
                                   specials)
    literals = 0
    for row, (text, encoding) in enumerate(zip(texts, byte_pair.encode(texts, specials))):
        assert graph["ids"][row].numpy().tolist() == encoding.ids.tolist(), text
        assert graph["starts"][row].numpy().tolist() == encoding.offsets[:, 0].tolist(), text
        assert graph["ends"][row].numpy().tolist() == encoding.offsets[:, 1].tolist(), text
        assert graph["literal"][row].numpy().tolist() == (encoding.words < 0).tolist(), text
        literals += int((encoding.words < 0).sum())
    assert literals == 8
    tokens = [[byte_pair.token(i) for i in e.ids] for e in byte_pair.encode(texts)]
    tokens += [["café", "東京", "é東"]]  # words joined again, as the grouped entities are
    decoded = tokenizer.graph_tokens_to_string(tf.ragged.constant(tokens, tf.string))
    assert [d.decode() for d in decoded.numpy()] == [byte_pair.tokens_to_string(t)
                                                     for t in tokens]
