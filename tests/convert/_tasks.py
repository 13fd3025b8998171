"""The fine-tuned checkpoints of tests/fixtures/hf_tasks (made by make_hf_tasks.py) and what
transformers computed on them."""

from pathlib import Path

import keras
import numpy as np

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf_tasks"
FAMILIES = {"bert": "Bert", "distil_bert": "DistilBert", "albert": "Albert",
            "electra": "Electra", "roberta": "Roberta", "mobile_bert": "MobileBert",
            "deberta_v3": "DebertaV2", "modern_bert": "ModernBert"}
SEQ_LABELS = ["NEGATIVE", "NEUTRAL", "POSITIVE"]
TOPICS = ["sports", "politics", "technology", "business"]
NER_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-MISC", "I-MISC"]
NLI_LABELS = ["contradiction", "neutral", "entailment"]
# kind -> (kbert task, transformers class suffix, label names, problem type)
KINDS = {
    "seq_single": ("text_classifier", "ForSequenceClassification", SEQ_LABELS, "single_label"),
    "seq_multi": ("text_classifier", "ForSequenceClassification", TOPICS, "multi_label"),
    "seq_regression": ("text_classifier", "ForSequenceClassification", ["LABEL_0"],
                       "regression"),
    "token": ("token_classifier", "ForTokenClassification", NER_LABELS, None),
    "qa": ("question_answerer", "ForQuestionAnswering", None, None),
}
ATOL = 1e-4  # the bound; the differences seen are under 1e-5
INPUTS = ("token_ids", "segment_ids", "padding_mask")


def reference(name):
    with np.load(FIXTURES / name / "reference.npz") as data:
        return dict(data)


def features(arrays, model, prefix=""):
    return {k: arrays[prefix + k] for k in INPUTS if k in model.input}


def outputs(model, x):
    """The model's outputs as a dict of numpy arrays, keyed like reference.npz."""
    y = model(x, training=False)
    if isinstance(y, dict):
        return {k: keras.ops.convert_to_numpy(v) for k, v in y.items()}
    key = "embeddings" if type(model).__name__ == "TextEmbedder" else "logits"
    return {key: keras.ops.convert_to_numpy(y)}


def largest_difference(model, arrays):
    """The largest |kbert - transformers| over the fixed and the text inputs; per-token
    outputs at real tokens only (QA logits: kbert gives padding -1e9; a padded position's
    tag logits are no one's, and DeBERTa's differ there: transformers' DeBERTa also masks
    the padded positions' own attention rows)."""
    largest = 0.0
    for prefix in ("", "text_"):
        mask = arrays[f"{prefix}padding_mask"].astype(bool)
        for key, got in outputs(model, features(arrays, model, prefix)).items():
            expected = arrays[prefix + key]
            if key in ("start_logits", "end_logits") or (key == "logits" and got.ndim == 3):
                assert got.shape == expected.shape, (key, got.shape, expected.shape)
                got, expected = got[mask], expected[mask]
            assert got.shape == expected.shape, (key, got.shape, expected.shape)
            largest = max(largest, float(np.abs(got - expected).max()))
    return largest
