"""`pipeline.export` on MobileBERT and DeBERTa-v3: every task their pipelines serve, each
SavedModel checked by `kbert.untrusted.check_saved_model` and run in a fresh process with only
TensorFlow and tensorflow-text (test_export.FRESH), gives the pipeline's answers on the
reference cases of that model and options and on the inputs below. MobileBERT's graph is
BERT's WordPiece one on another encoder (its three-token embedding window, bottlenecks);
DeBERTa-v3's is the SentencePiece graph without ALBERT's preprocessing (nmt_nfkc only, accents
kept) on relative-position attention."""

import json
import pickle
import subprocess
import sys

import pytest

from tests.pipelines import reference, test_export
from tests.pipelines.conftest import load_pipeline

FAMILIES = ("mobile_bert", "deberta_v3")
# The tiny masked-LM checkpoints (the task checkpoints have no MLM head).
FILL_MASK = {"mobile_bert": "hf_tiny/mobile_bert", "deberta_v3": "hf_tiny/deberta_v3_mlm"}
LABELS = {"candidate_labels": ["sports", "politics", "travel"]}


def _exports(family):
    """(task, model, options) of one family: each task once (token classification by words),
    and for DeBERTa-v3 (its own SentencePiece graph: tokens, words, groups) every
    aggregation strategy and question answering's token spans.

    Each export costs about 10 s (export, check, load in the fresh process): the list holds
    what is the family's own. Left out, as their graph code is the family-independent code
    test_export.py runs on BERT, DistilBERT, ELECTRA and ALBERT: question answering's
    windows, MobileBERT's other strategies and token spans (BERT's WordPiece graph on
    MobileBERT's scores, which "first" and the default question answering already check),
    and the multi-label and one-output classifiers (the family's head layers are the
    single-label one's; their sigmoid runs in DistilBERT's multi-label and ELECTRA's
    one-output exports there)."""
    tasks = f"hf_tasks/{family}"
    exports = [
        ("text-classification", f"{tasks}_seq_single", {}),
        ("zero-shot-classification", f"{tasks}_nli", LABELS),
        ("feature-extraction", f"{tasks}_token", {}),
        ("fill-mask", FILL_MASK[family], {}),
        ("token-classification", f"{tasks}_token", {"aggregation_strategy": "first"}),
        ("question-answering", f"{tasks}_qa", {}),
    ]
    if family == "deberta_v3":
        exports += [
            *[("token-classification", f"{tasks}_token", {"aggregation_strategy": strategy})
              for strategy in ("none", "simple", "average", "max")],
            ("question-answering", f"{tasks}_qa", {"align_to_words": False}),
        ]
    return exports


EXPORTS = [(family, *export) for family in FAMILIES for export in _exports(family)]

# Inputs beyond the reference's (fill-mask and feature-extraction have no reference cases on
# these checkpoints): accents the SentencePiece graph must keep as DeBERTa-v3 keeps them,
# special literals typed in a text, whitespace runs, emoji. {(family, task): [inputs]}.
_MASK = "[MASK]"  # both tokenizers' mask token
_TEXTS = ["Naïve café owners visited Zürich, São Paulo and Tokyo (東京).",
          "John [SEP] Smith works [CLS]in  London\t🍕.", "Résumé: ÉCOLE, déjà vu"]
# Characters whose form depends on their neighbours (nmt_nfkc composes "e\u0301" into "é",
# Hangul jamo into a syllable): offsets by the word's prefixes (`offsets._by_prefixes`).
_COMPOSED = ["e\u0301tude \u1100\u1161\u11a8 han a\u0301\u0301b", "``quoted'' ﬃe\u0301 Å"]
EXTRA = {
    **{(family, "feature-extraction"): [_TEXTS, "   \t\n  "] for family in FAMILIES},
    **{(family, "fill-mask"): [
        f"Paris is the {_MASK} of France.",
        [f"the {_MASK} is big", f"a {_MASK}{_MASK} café"],
        [f"Zürich {_MASK}  déjà", "no mask here"]] for family in FAMILIES},
    **{(family, "token-classification"): [_TEXTS, _COMPOSED] for family in FAMILIES},
    **{(family, "text-classification"): [
        _TEXTS, [{"text": _TEXTS[0], "text_pair": _COMPOSED[0]}]] for family in FAMILIES},
    # A special literal in a context is its token in the export as in the pipeline, with
    # WordPiece (MobileBERT) as with SentencePiece (DeBERTa-v3).
    **{(family, "question-answering"): [
        {"question": ["Where do the owners live?", "Who works in London?", "What is it?"],
         "context": [_TEXTS[0], _TEXTS[1], _COMPOSED[0]]}] for family in FAMILIES},
}

def _key(family, task, model, options):
    return family, task, model, json.dumps(options, sort_keys=True)


def _inputs(family, task, model, options):
    """[(label, inputs, options)]: the reference cases of this model and options, then the
    extra inputs."""
    name = task.replace("-", "_")
    cases = [(f"case {i}", reference.expand(name, reference.load(name)["cases"][i]["inputs"]),
              reference.load(name)["cases"][i]["options"])
             for i in test_export._cases(task, model, options)]
    return cases + [(f"extra input {n}", reference.expand(name, inputs), options)
                    for n, inputs in enumerate(EXTRA.get((family, task), []))]


@pytest.fixture(scope="module")
def served(tmp_path_factory, request, pipeline_export):
    """{export key: (check_saved_model's error or None, [((label, inputs, options),
    results, placement)])} for the exports the run's selected tests need."""
    from kbert.untrusted import check_saved_model

    tmp = tmp_path_factory.mktemp("family_exports")
    wanted = {_key(*item.callspec.params.values()) for item in request.session.items
              if item.originalname == "test_the_export_answers_as_the_pipeline"
              and item.module is request.module}
    calls, plan = [], {}
    for family, task, model, options in EXPORTS:
        key = _key(family, task, model, options)
        if key not in wanted:
            continue
        path = pipeline_export(task, model, options)
        try:
            check_saved_model(path)
            refused = None
        except Exception as error:  # the test names it
            refused = error
        entries = []
        for label, inputs, case_options in _inputs(family, task, model, options):
            case_calls, placement = test_export._calls(task, inputs, options)
            first = len(calls)
            calls.extend((path, signature, args) for signature, args in case_calls)
            entries.append(((label, inputs, case_options), range(first, len(calls)),
                            placement))
        plan[key] = refused, entries
    with open(tmp / "calls.pkl", "wb") as f:
        pickle.dump(calls, f)
    script = tmp / "fresh.py"
    script.write_text(test_export.FRESH)  # plain tf.saved_model.load, no kbert imported
    subprocess.run([sys.executable, str(script), str(tmp / "calls.pkl"),
                    str(tmp / "results.pkl")], check=True, timeout=1500)
    with open(tmp / "results.pkl", "rb") as f:
        results = pickle.load(f)
    return {key: (refused, [(case, [results[c] for c in span], placement)
                            for case, span, placement in entries])
            for key, (refused, entries) in plan.items()}


def _params():
    out = []
    for family, task, model, options in EXPORTS:
        assert len(_inputs(family, task, model, options)) >= 2, (family, task, options)
        out.append(pytest.param(family, task, model, options, marks=pytest.mark.slow,
                                id=f"{family}-{task}-{json.dumps(options)[:40]}"))
    return out


@pytest.mark.parametrize("family, task, model, options", _params())
def test_the_export_answers_as_the_pipeline(served, family, task, model, options):
    refused, entries = served[_key(family, task, model, options)]
    assert refused is None, f"check_saved_model refuses the export: {refused}"
    pipe = load_pipeline(task, model)
    answered = 0
    for (label, inputs, case_options), results, placement in entries:
        try:
            expected = pipe(**inputs, **case_options) if task == "question-answering" else \
                pipe(inputs, **case_options)
        except ValueError as error:
            failed = [r for r in results if isinstance(r, str)]
            assert failed, f"{label}: the pipeline refuses it ({error}), the export not"
            if type(error).__name__ == "InputTooLongError":
                assert "InputTooLongError" in failed[0], failed[0]
            else:
                assert str(error).split(":")[0][:40] in failed[0], (str(error), failed[0])
            continue
        assert not any(isinstance(r, str) for r in results), (label, results)
        ours = test_export._answer(task, inputs, case_options, results, placement)
        reference.assert_same(ours, expected, label, tolerance=1e-5)
        answered += 1
    assert answered >= 1


@pytest.mark.parametrize("model", ["hf_tasks/deberta_v3_token", "hf_tasks/albert_token"])
def test_the_sentence_piece_graph_encodes_as_the_pipeline(model):
    """`sentence_piece_graph.encode` (the exports' tokens and characters) is `Encoder.encode`:
    DeBERTa-v3 keeps accents ("ï" is its own piece, of its own character), and a chunk whose
    form depends on neighbouring characters gets its pieces' characters by its prefixes."""
    import tensorflow as tf

    from kbert.tokenizers.sentencepiece import graph as sentence_piece_graph

    pipe = load_pipeline("token-classification", model)
    texts = [t for t in reference.load("token_classification")["cases"][40]["inputs"]
             if t != "@long"] + _TEXTS + _COMPOSED + [
        "x" * 70 + "e\u0301 y",  # past offsets.PREFIX_LIMIT: the chunk's span
        "Naïve café [MASK] Zürich[SEP]e\u0301x", "ＡＢＣ ﬁne ½ №5 Ⅻ"]
    graph = sentence_piece_graph.encode(tf.constant([t.encode() for t in texts]),
                                        pipe.tokenizer, pipe.specials)
    narrower = 0
    for row, (text, encoding) in enumerate(zip(texts, pipe.encoder.encode(texts,
                                                                          pipe.specials))):
        assert graph["ids"][row].numpy().tolist() == encoding.ids.tolist(), text
        assert graph["starts"][row].numpy().tolist() == encoding.offsets[:, 0].tolist(), text
        assert graph["ends"][row].numpy().tolist() == encoding.offsets[:, 1].tolist(), text
        assert graph["literal"][row].numpy().tolist() == (encoding.words < 0).tolist(), text
        words = encoding.word_spans[encoding.words[encoding.words >= 0]]
        spans = encoding.offsets[encoding.words >= 0]
        narrower += int(((spans[:, 1] - spans[:, 0]) < (words[:, 1] - words[:, 0])).sum())
    assert narrower > 50  # pieces of their own characters, not their chunk's
