"""tools/finetune.py's run on a ModernBERT checkpoint: the masked LM of
hf_tasks/modern_bert_mlm (WordPiece vocabulary) fine-tuned as a mean-pooling classifier from
the flags, saved as a .keras model with ModernBERT's prediction head, and written as a
Hugging Face ModernBertForSequenceClassification."""

import json

import numpy as np

from tests.pipelines.reference import FIXTURES
from tests.tools.test_finetune import parse_flags, sentences, write_csv

CHECKPOINT = FIXTURES / "hf_tasks" / "modern_bert_mlm"


def test_a_modern_bert_classifier_runs_from_the_flags(tmp_path):
    from kbert import convert
    from kbert.models import ModernBertBackbone
    from kbert.training import run_finetuning
    from kbert.untrusted import load_model

    train = write_csv(tmp_path / "train.csv", sentences(32, 0))
    config = parse_flags([f"--checkpoint={CHECKPOINT}", f"--train_data={train}",
                          f"--model_dir={tmp_path}/run",
                          "--head=mean", "--epochs=1", "--global_batch_size=16",
                          "--sequence_length=24", "--learning_rate=1e-3", "--seed=3",
                          "--jit_compile=false", "--verbose=2"])
    result = run_finetuning(config)
    assert np.isfinite(result["logs"]["loss"])

    model = load_model(str(tmp_path / "run" / "model.keras"))
    assert isinstance(model.backbone, ModernBertBackbone)
    assert (model.head, model.label_names) == ("mean", ["no", "yes"])
    assert model.prediction_head is not None
    tokenizer = convert.load_tokenizer(str(CHECKPOINT))
    convert.save_hugging_face(model, tmp_path / "hf", vocabulary=tokenizer)
    written = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert written["architectures"] == ["ModernBertForSequenceClassification"]
    assert written["classifier_pooling"] == "mean"
    again = convert.load(tmp_path / "hf")
    x = {"token_ids": np.array([[2, 7, 9, 11, 3, 0]], "int32"),
         "padding_mask": np.array([[1, 1, 1, 1, 1, 0]], "int32")}
    np.testing.assert_allclose(np.asarray(again(x)), np.asarray(model(x)), atol=1e-6)
