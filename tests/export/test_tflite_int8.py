"""Dynamic int8 (`quantize="dynamic"`: int8 weights, float activations) of the zero-shot,
question-answering and token-classification pipelines' TFLite models, on tiny models trained
for a few seconds on synthetic data: the same top label / the same best answer span / the
same tag as the float pipeline on at least 99% of a held-out set, and the largest score
difference printed (as the other int8
tests: a random model's scores are near ties everywhere, which no quantization keeps)."""

import numpy as np
import pytest

import kbert
from kbert.serving.runtimes import interpreter
from kbert.pipelines.tflite_entities import char_offset
from tests.export.test_tflite_pipelines import assert_only_allowed_ops, held_out, run, strings

LETTERS = list("abcdefghijklmnopqrstuvwxyz")
FILLER = ["the", "is", "in", "big", "what", "where", "who"]


def filler(rng, count):
    """`count` words: the tiny vocabulary's (one piece) or random letters (spelled in ##
    pieces)."""
    return [FILLER[rng.integers(len(FILLER))] if rng.random() < 0.5 else
            "".join(rng.choice(LETTERS, rng.integers(1, 5))) for _ in range(count)]


def assert_int8_weights(path):
    """The file holds int8 tensors (the weights): quantize="dynamic" was applied."""
    assert any(detail["dtype"] == np.int8 for detail in interpreter(path).get_tensor_details())


def tiny_model(task, tokenizer, length, seed, hidden=32, initializer_range=0.02, **kwargs):
    """A tiny BERT task model (2 layers) without dropout, seeded: a few seconds of training
    teach it its rule."""
    import keras

    import kbert.models
    from kbert import tasks
    from tests.helpers import TINY

    keras.utils.set_random_seed(seed)
    config = kbert.models.FAMILIES["bert"].config(**{
        **TINY, "vocabulary_size": tokenizer.vocabulary_size, "max_sequence_length": length,
        "hidden_size": hidden, "intermediate_size": 2 * hidden, "dropout": 0.0,
        "attention_dropout": 0.0, "initializer_range": initializer_range})
    return getattr(tasks, task)(kbert.models.build("bert", config, head=None), **kwargs)


# === zero-shot: entailment when the hypothesis's city is in the text ===

CITIES = ["tokyo", "paris", "york"]
NLI_LENGTH = 32
NLI_LABELS = ["contradiction", "neutral", "entailment"]


def city_texts(count, seed):
    """Texts of 0-5 filler words with one city put among them, and the city's index."""
    rng = np.random.default_rng(seed)
    texts, cities = [], []
    for _ in range(count):
        words = filler(rng, int(rng.integers(0, 6)))
        city = int(rng.integers(len(CITIES)))
        words.insert(int(rng.integers(len(words) + 1)), CITIES[city])
        texts.append(" ".join(words))
        cities.append(city)
    return texts, np.array(cities)


def trained_nli(tokenizer, seed=0, epochs=10):
    """A tiny NLI TextClassifier (contradiction, neutral, entailment) trained on 800 pairs:
    each text with the hypothesis of its city (entailment) and of another (contradiction).
    The hypothesis is the city alone ("{}"). Telling whether two segments hold the same word
    is harder for a tiny transformer than finding a keyword: with BERT's initializer range
    (0.02) the accuracy stayed at 0.5 for 10-20 epochs (seeds 0, 1; with dropout or a
    learning rate of 2e-3 or more, for 25 and more), with 0.1 it reaches 1.0 by epoch 4-7
    (seen, seeds 0 and 1). The template "This example is {}." (14 more pieces) stayed at 0.5
    for 12 epochs."""
    import keras

    from kbert.tasks.text_classification.features import classification_dataset

    model = tiny_model("TextClassifier", tokenizer, NLI_LENGTH, seed, hidden=64,
                       initializer_range=0.1, label_names=NLI_LABELS)
    texts, cities = city_texts(400, seed=300 + seed)
    rng = np.random.default_rng(seed)
    pairs, labels = [], []
    for text, city in zip(texts, cities):
        other = (city + 1 + rng.integers(len(CITIES) - 1)) % len(CITIES)
        pairs += [(text, CITIES[city]), (text, CITIES[other])]
        labels += [NLI_LABELS.index("entailment"), NLI_LABELS.index("contradiction")]
    features = next(iter(classification_dataset(pairs, tokenizer, NLI_LENGTH, len(pairs))))
    model.compile(optimizer=keras.optimizers.Adam(1e-3, clipnorm=1.0), jit_compile=False,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(features, np.array(labels), batch_size=32, epochs=epochs, verbose=0)
    return model


@pytest.mark.slow
def test_zero_shot_dynamic_int8(tmp_path, capsys):
    """A trained tiny NLI model's zero-shot pipeline (the cities as candidate labels, the
    hypothesis "{}": the label alone): dynamic int8 TFLite gives the float pipeline's top
    label on >= 99% of 300 held-out texts; the largest score difference is printed."""
    from tests.tokenizers.test_alignment import tiny_tokenizer

    tokenizer = tiny_tokenizer()
    pipe = kbert.pipeline("zero-shot-classification", model=trained_nli(tokenizer),
                          tokenizer=tokenizer)
    options = dict(candidate_labels=CITIES, hypothesis_template="{}")
    path = pipe.export_tflite(str(tmp_path / "zero_shot.tflite"), quantize="dynamic",
                              **options)
    assert_only_allowed_ops(path)
    assert_int8_weights(path)
    texts, cities = city_texts(300, seed=7)
    called = pipe(texts, **options)
    top = np.array([CITIES.index(result["labels"][0]) for result in called])
    # The model learned its rule: the comparison means something.
    found = float(np.mean(top == cities))
    assert found >= 0.95, found
    ours = run(path, text=strings(texts))
    agreement = float(np.mean([label.decode() == result["labels"][0]
                               for label, result in zip(ours["labels"][:, 0], called)]))
    scores = np.array([[dict(zip(r["labels"], r["scores"]))[c] for c in CITIES]
                       for r in called])
    difference = float(np.abs(ours["label_scores"] - scores).max())
    with capsys.disabled():
        print(f"\nzero-shot, dynamic int8: the same top label on {agreement:.2%} of "
              f"{len(texts)} held-out texts x {len(CITIES)} labels (float's top label is the "
              f"text's city on {found:.2%}; its top scores {scores.max(-1).min():.3f}-"
              f"{scores.max(-1).max():.3f}); largest score difference {difference:.4g}")
    assert agreement >= 0.99


# === question answering: the answer follows "the city is" in the context ===

ANSWERS = ["tokyo", "paris", "new york", "muller cafe", "bar", "1990"]
QA_LENGTH = 48


def city_questions(count, seed):
    """SQuAD-like questions: a context of 0-6 filler words with "the city is <answer>" put
    among them (answers of one or two words, one or two pieces), a question asking for it."""
    from kbert.tasks.question_answering.data import QuestionExample

    rng = np.random.default_rng(seed)
    questions = []
    for i in range(count):
        words = filler(rng, int(rng.integers(0, 7)))
        answer = ANSWERS[rng.integers(len(ANSWERS))]
        at = int(rng.integers(len(words) + 1))
        before = " ".join(words[:at] + ["the city is"])
        context = " ".join(words[:at] + ["the city is", answer] + words[at:])
        start = len(before) + 1
        question = ["where?", "what is the city?", "which city is it?"][rng.integers(3)]
        questions.append(QuestionExample(f"q{i}", question, context, ((answer, start),)))
    return questions


def trained_reader(tokenizer, seed=0, epochs=4):
    """A tiny QuestionAnswerer trained briefly (400 questions) to point at the city. One
    fact per context: it may ignore the question (a question-conditioned rule takes a tiny
    model hundreds of steps more, tests/training/test_finetune_learning.py)."""
    import keras

    from kbert.tasks.question_answering.features import encode_questions

    model = tiny_model("QuestionAnswerer", tokenizer, QA_LENGTH, seed)
    encoded = encode_questions(city_questions(400, seed=300 + seed), tokenizer, QA_LENGTH)
    model.compile(optimizer=keras.optimizers.Adam(3e-3), jit_compile=False)
    model.fit(encoded.features, encoded.labels, batch_size=16, epochs=epochs, verbose=0)
    return model


@pytest.mark.slow
def test_question_answering_dynamic_int8(tmp_path, capsys):
    """A trained tiny reader's pipeline: dynamic int8 TFLite gives the float pipeline's best
    span (top_k=1, align_to_words=False: the rule in the graph) on >= 99% of 300 held-out
    questions; the largest score difference is printed."""
    from tests.tokenizers.test_alignment import tiny_tokenizer

    tokenizer = tiny_tokenizer()
    pipe = kbert.pipeline("question-answering", model=trained_reader(tokenizer),
                          tokenizer=tokenizer)
    path = pipe.export_tflite(str(tmp_path / "reader.tflite"), quantize="dynamic")
    assert_only_allowed_ops(path)
    assert_int8_weights(path)
    test = city_questions(300, seed=7)
    called = pipe(question=[q.question for q in test], context=[q.context for q in test],
                  align_to_words=False)
    # The reader learned its rule: the comparison means something.
    found = np.mean([c["answer"] == q.answers[0][0] for c, q in zip(called, test)])
    assert found >= 0.95, found
    ours = run(path, question=strings([q.question for q in test]),
               context=strings([q.context for q in test]))
    spans = [(char_offset(q.context, ours["answer_start"][i]),
              char_offset(q.context, ours["answer_end"][i])) for i, q in enumerate(test)]
    agreement = float(np.mean([span == (c["start"], c["end"])
                               for span, c in zip(spans, called)]))
    scores = np.array([c["score"] for c in called])
    difference = float(np.abs(ours["score"] - scores).max())
    with capsys.disabled():
        print(f"\nquestion answering, dynamic int8: the same span on {agreement:.2%} of "
              f"{len(test)} held-out questions (float finds the answer on {found:.2%}; "
              f"its scores {scores.min():.3f}-{scores.max():.3f}); largest score "
              f"difference {difference:.4g}")
    assert agreement >= 0.99


# === token classification: the keywords are LOC ===

TAGGER_LENGTH = 24
KEYWORDS = ["tokyo", "paris", "york"]


def topics(count, seed):
    """`count` held-out texts, each with one keyword inserted at random."""
    rng = np.random.default_rng(seed)
    texts = []
    for text in held_out(count, seed):
        words = [w for w in text.split() if w not in KEYWORDS]
        words.insert(int(rng.integers(len(words) + 1)), KEYWORDS[rng.integers(len(KEYWORDS))])
        texts.append(" ".join(words))
    return texts


def trained_tagger(tokenizer, seed=0, epochs=12):
    """A tiny token classifier (of TAGGER_LENGTH tokens) trained briefly (400 texts) to tag
    the keywords as LOC: its tags are mostly far from a tie, as a fine-tuned model's."""
    import keras

    from kbert.tasks.text_classification.features import classification_dataset

    model = tiny_model("TokenClassifier", tokenizer, TAGGER_LENGTH, seed,
                       label_names=["O", "B-LOC"])
    features = next(iter(classification_dataset(topics(400, seed=200 + seed), tokenizer,
                                                TAGGER_LENGTH, 400)))
    keywords = [tokenizer.vocabulary.index(k) for k in KEYWORDS]
    labels = np.isin(np.asarray(features["token_ids"]), keywords).astype("int32")
    model.compile(optimizer=keras.optimizers.Adam(5e-3), jit_compile=False)
    model.fit(features, labels, batch_size=16, epochs=epochs, verbose=0)
    return model


@pytest.mark.slow
def test_token_classifier_dynamic_int8(tmp_path, capsys):
    """A trained tiny tagger's pipeline export: float32's logits are the Keras model's and
    `serving_ids`' (1e-4); dynamic int8 gives the same tag on >= 99% of the tokens of 300
    held-out texts."""
    from tests.export.test_tflite_tasks import assert_logits_from_ids
    from tests.tokenizers.test_alignment import tiny_tokenizer

    tokenizer = tiny_tokenizer()
    model = trained_tagger(tokenizer)
    for quantize in (None, "dynamic"):
        kbert.export(model, str(tmp_path / f"{quantize}.tflite"), format="tflite",
                     tokenizer=tokenizer, quantize=quantize)
        assert_only_allowed_ops(tmp_path / f"{quantize}.tflite")
    assert_int8_weights(tmp_path / "dynamic.tflite")
    texts = strings(topics(300, seed=7))
    theirs = run(tmp_path / "None.tflite", text=texts)
    assert theirs["token_ids"].shape[1] == TAGGER_LENGTH  # the model's length
    assert_logits_from_ids(tmp_path / "None.tflite", model, theirs)
    ours = run(tmp_path / "dynamic.tflite", text=texts)
    real = theirs["starts"] >= 0
    tagged = theirs["label_id"][real]
    # The tagger learned its rule (the keywords' tokens are LOC): the comparison means something.
    keywords = np.isin(theirs["token_ids"][real], [tokenizer.vocabulary.index(k)
                                                   for k in KEYWORDS])
    assert np.mean(tagged == keywords) > 0.95 and tagged.sum() >= 100, tagged.sum()
    agreement = float(np.mean(ours["label_id"][real] == tagged))
    difference = float(np.abs(ours["probabilities"] - theirs["probabilities"]).max())
    logits = float(np.abs(ours["logits"] - theirs["logits"])[real].max())
    with capsys.disabled():
        print(f"\ntoken classifier, dynamic int8: tag agrees on {agreement:.2%} of "
              f"{int(real.sum())} tokens of 300 held-out texts; largest probability "
              f"difference {difference:.4g}, logit difference {logits:.4g}")
    assert agreement >= 0.99
