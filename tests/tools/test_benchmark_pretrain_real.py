"""`tools/benchmark.py pretrain_real`'s held-out set and figures: the rows, the masked
positions, accuracy and loss counted by hand, the thresholds and targets, and a tiny kbert run
whose curve comes from its own model (the benchmark itself is not a test)."""

import numpy as np
import pytest

from benchmarks import pretrain_real

CLS, SEP, MASK, PAD = 2, 3, 4, 0


def test_rows_pack_each_documents_sentences_and_never_span_two_documents():
    documents = [[[10, 11], [12, 13, 14], [15]], [[20] * 9], [[30]]]
    rows = pretrain_real.held_out_rows(documents, 7, CLS, SEP)
    assert rows == [[CLS, 10, 11, 12, 13, 14, SEP], [CLS, 15, SEP],  # 5 + 1 > 5: a new row
                    [CLS, 20, 20, 20, 20, 20, SEP],  # a sentence longer than a row is cut
                    [CLS, 30, SEP]]


def test_masking_chooses_fifteen_percent_of_the_inner_tokens_the_same_each_time():
    rows = [[CLS, *range(10, 30), SEP], [CLS, 7, SEP]]
    held_out = pretrain_real.mask_rows(rows, 24, 5, MASK, PAD)
    again = pretrain_real.mask_rows(rows, 24, 5, MASK, PAD)
    for key in held_out:
        assert np.array_equal(held_out[key], again[key]), key
    # 20 inner tokens x 0.15 = 3 positions; 1 token: at least 1.
    assert held_out["mask_weights"].tolist() == [[1, 1, 1, 0, 0], [1, 0, 0, 0, 0]]
    chosen = held_out["mask_positions"][0, :3]
    assert ((chosen >= 1) & (chosen <= 20)).all() and len(set(chosen.tolist())) == 3
    assert held_out["mask_ids"][0, :3].tolist() == [9 + p for p in chosen]  # the true tokens
    assert (held_out["token_ids"][0, chosen] == MASK).all()
    assert held_out["token_ids"][0, 0] == CLS and held_out["token_ids"][0, 21] == SEP
    assert (held_out["token_ids"][0, 22:] == PAD).all()
    assert held_out["padding_mask"][1].tolist() == [1, 1, 1] + [0] * 21
    assert held_out["mask_positions"][1, 0] == 1 and held_out["token_ids"][1, 1] == MASK
    with pytest.raises(ValueError, match="held-out row 0 has 30 tokens: it must have 3 to 24"):
        pretrain_real.mask_rows([[CLS, *range(28), SEP]], 24, 5, MASK, PAD)


def test_accuracy_and_loss_count_the_chosen_positions_only():
    held_out = {"mask_ids": np.array([[5, 6, 7], [8, 0, 0]]),
                "mask_weights": np.array([[1, 1, 1], [1, 0, 0]], np.float32)}
    # By hand: right at (0, 0) and (1, 0); wrong at (0, 1), (0, 2); the padded positions
    # (1, 1) and (1, 2) "right" but not counted: 2 of 4.
    predicted = np.array([[5, 9, 9], [8, 0, 0]])
    log_probs = np.log(np.array([[0.5, 0.25, 0.125], [1.0, 1e-9, 1e-9]]))
    accuracy, loss = pretrain_real.masked_lm_figures(predicted, log_probs, held_out)
    assert accuracy == 0.5
    assert loss == pytest.approx((np.log(2) + np.log(4) + np.log(8) + 0) / 4)


def test_predictions_are_the_argmax_and_the_true_tokens_log_probability():
    logits = np.log(np.array([[[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]]]))
    predicted, log_probs = pretrain_real.predictions(logits, np.array([[2, 0]]))
    assert predicted.tolist() == [[1, 0]]
    assert np.allclose(np.exp(log_probs), [[0.3, 0.5]])


def test_thresholds_and_targets_come_from_the_first_evaluation_that_reaches_them():
    def curve(*points):
        return [{"step": 10 * (i + 1), "seconds": s, "accuracy": a, "loss": 1.0}
                for i, (s, a) in enumerate(points)]

    curves = {"kbert_classic": curve((10, 0.1), (20, 0.2), (30, 0.3)),
              "kbert_run_mlm": curve((5, 0.15), (9, 0.25), (14, 0.35)),
              "kbert_modern": curve((8, 0.2), (16, 0.31), (24, 0.4)),
              "hf_run_mlm": curve((30, 0.1), (60, 0.2), (90, 0.25))}
    result = pretrain_real.summary(curves)
    assert result["thresholds"] == {"transformers' final accuracy": 0.25,
                                    "kbert classic's final accuracy": 0.3}
    rows = {row["run"]: row for row in result["rows"]}
    assert rows["kbert_classic"]["to_thresholds"] == {"transformers' final accuracy": 30,
                                                      "kbert classic's final accuracy": 30}
    assert rows["hf_run_mlm"]["to_thresholds"]["kbert classic's final accuracy"] is None
    run_mlm = result["targets"]["kbert_run_mlm to transformers' final accuracy"]
    assert (run_mlm["seconds"], run_mlm["fraction"], run_mlm["met"]) == (9, 0.1, True)
    modern = result["targets"]["kbert_modern to kbert classic's final accuracy"]
    assert (modern["seconds"], modern["met"]) == (16, True) and modern["fraction"] == 16 / 30
    slow = pretrain_real.summary({**curves, "kbert_modern": curve((25, 0.31))})
    assert not slow["targets"]["kbert_modern to kbert classic's final accuracy"]["met"]


def test_kbert_run_mlms_rows_are_group_texts_rows(tmp_path, stdlib_vocab_file):
    """Each line its own document, kbert's packed rows (`fill_rows`) are run_mlm.py's
    `group_texts` rows: every line [CLS] line [SEP], one after the other, cut into rows (the
    last, shorter one padded by kbert, dropped by transformers)."""
    from kbert.data import corpora
    from kbert.data.pretraining_examples import examples
    from kbert.tokenizers import WordPieceTokenizer

    tokenizer = WordPieceTokenizer(stdlib_vocab_file)
    documents = [["The value of the attribute is returned.", "Open the file in binary mode."],
                 ["Return a new list of the items.", "Close it.", "Raise an error."]]
    path = pretrain_real.write_lines_as_documents(str(tmp_path / "lines.txt"), documents)
    read = [[s.decode() for s in d] for d in corpora.text_files(path).as_numpy_iterator()]
    assert read == [[s] for d in documents for s in d]
    stream = [t for d in documents for s in d
              for t in [tokenizer.cls_id, *tokenizer.tokenize(s).numpy(), tokenizer.sep_id]]
    length = 8
    expected = [stream[i:i + length] for i in range(0, len(stream) // length * length, length)]
    rows = [r["token_ids"].tolist() for r in examples(
        corpora.text_files(path), tokenizer, length, "none", 0.0, pack_across_documents=True,
        fill_rows=True).as_numpy_iterator()]
    assert len(expected) > 3 and rows[:len(expected)] == expected
    assert rows[-1][:len(stream) % length] == stream[len(stream) // length * length:]
    # kbert_run_mlm, and it alone, trains on that file.
    assert [pretrain_real.corpus_of(run, "train.txt", path) for run in pretrain_real.RUNS
            if run.startswith("kbert_")] == ["train.txt", path, "train.txt", "train.txt"]


def test_flags_that_cannot_run_are_refused_naming_them():
    with pytest.raises(ValueError, match="--pr_runs=kbert_classic,bert: bert: each must be "
                                         "one of kbert_classic, kbert_run_mlm"):
        pretrain_real.check(["kbert_classic", "bert"], 10, 5)
    with pytest.raises(ValueError, match="--pr_steps=10 must be a multiple of "
                                         "--pr_eval_every=3"):
        pretrain_real.check(["kbert_classic"], 10, 3)
    with pytest.raises(ValueError, match=r"--pr_held_out_documents=5: must be in \[1, 2\]"):
        pretrain_real.split_documents([["a"], ["b"], ["c"]], 5, 0)


@pytest.mark.parametrize("run", ["kbert_classic", "kbert_modern_bert"])
def test_a_kbert_runs_curve_is_its_models_held_out_figures(run, tmp_path, stdlib_vocab_file):
    """Two loops of a tiny run (BERT's classic recipe, ModernBERT's packed rows of separate
    documents): a held-out evaluation after each, the seconds growing, the figures moving as
    the model trains."""
    from kbert.tokenizers import WordPieceTokenizer

    tokenizer = WordPieceTokenizer(stdlib_vocab_file)
    documents = [["The value of the attribute is returned.", "Open the file in binary mode."],
                 ["Return a new list of the items."]] * 20
    corpus = pretrain_real.write_corpus(str(tmp_path / "train.txt"), documents)
    tokenized = [tokenizer.tokenize(d).to_list() for d in documents[:4]]
    held_out = pretrain_real.mask_rows(
        pretrain_real.held_out_rows(tokenized, 32, tokenizer.cls_id, tokenizer.sep_id), 32, 5,
        tokenizer.mask_id, tokenizer.pad_id)
    config = pretrain_real.kbert_config(run, str(tmp_path), corpus, stdlib_vocab_file, "mini",
                                        4, 2, 4, 32, 5, 1e-3, 0)
    import dataclasses

    config = dataclasses.replace(config, config_overrides={
        **config.config_overrides, "num_layers": 1, "hidden_size": 16, "num_heads": 2,
        "intermediate_size": 32}, jit_compile=False)
    curve = pretrain_real.kbert_run(config, held_out)
    assert [p["step"] for p in curve] == [2, 4]
    assert 0 < curve[0]["seconds"] < curve[1]["seconds"]
    assert all(0 <= p["accuracy"] <= 1 and p["loss"] > 0 for p in curve)
    assert curve[0]["loss"] != curve[1]["loss"]  # the model trained between them
