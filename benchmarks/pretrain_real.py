"""`tools/benchmark.py pretrain_real`: pretraining time to accuracy on real text, kbert's
recipes against transformers' `run_mlm.py`, one run on one machine.

The corpus: the docstrings of this Python's standard library (`kbert.data.corpora`, what the
Quickstart pretrains on; public domain-like PSF-licensed English, one document per module).
After a shuffle with `--seed`, `--pr_held_out_documents` documents are held out and the rest
written to one text file (a sentence a line, a blank line between documents) that every run
trains on. One lower-cased WordPiece vocabulary (`--pr_vocabulary_size`) is learned from that
file by kbert and given to every run (transformers reads the same vocab.txt with
`BertTokenizerFast`).

The held-out set, the same for every run: each held-out document's sentences, tokenized by
that vocabulary, packed into rows of `[CLS] ... [SEP]` of at most `--sequence_length` tokens
(a row never spans two documents); in each row 15% of the tokens other than [CLS] and [SEP]
(at least 1, at most `--predictions`) are chosen with a fixed seed and replaced by [MASK].
Every run predicts those positions from those rows; `masked_lm_figures` turns each run's
predictions (the argmax and the log-probability of the true token at each position) into
held-out accuracy and loss, the same function for every run.

The model: `--pr_size` mini (BERT-Mini: 4 layers, hidden 256, 4 heads, FFN 1,024) or small
(BERT-Small: 4 layers, hidden 512, 8 heads, FFN 2,048), random weights; ModernBERT the same
depth, width and heads with a GLU FFN of two thirds the width (the same parameters), global
attention every third layer and a window of 128. Every run: batches of `--batch_size`
sequences of `--sequence_length` tokens, `--pr_steps` steps, AdamW at `--pr_learning_rate`
(weight decay 0.01), 10% linear warm-up, seed `--seed`.

Runs (`--pr_runs`, any of):
    kbert_classic      BERT: masked LM + next-sentence prediction, 15% masked (80/10/10),
                       sentence pairs padded to the length (short ones 10% of the time),
                       linear decay: BERT's recipe (tools/flags/bert_base_phase1.flags).
    kbert_run_mlm      BERT: the recipe of transformers' run_mlm.py: masked LM alone, 15%
                       masked, the rows of its `group_texts` (each line of the text file
                       [CLS] line [SEP], one after the other, cut into full rows: kbert's
                       packed rows of a corpus with each line its own document), the
                       Trainer's AdamW epsilon 1e-8 (kbert's other runs: BERT's 1e-6).
    kbert_modern       BERT: masked LM alone, 30% masked, packed full rows, warmup-stable-
                       decay (the last 20% of the steps decay).
    kbert_modern_bert  ModernBERT: kbert_modern, each document of a row attending only to
                       itself (--separate_documents): tools/flags/modern_bert.flags' recipe.
    hf_run_mlm         transformers' Trainer as run_mlm.py runs it (each line tokenized with
                       [CLS] and [SEP], concatenated, cut into rows: `group_texts`;
                       `DataCollatorForLanguageModeling` at 15%, 80/10/10), BertForMaskedLM,
                       linear decay; in `--reference_python`.
    hf_run_mlm_30      the same at 30% masked.

The clock of each run starts before its data pipeline and model are built (tokenizing the
corpus, building, compiling: what a user waits for) and stops at each evaluation, every
`--pr_eval_every` steps; the evaluations themselves are not counted. Reported: each run's
curve (steps, seconds, held-out accuracy and loss), its final figures, and the seconds each
run took to first reach an evaluation at or above two thresholds: transformers' final
held-out accuracy (hf_run_mlm), and kbert's classic run's. The targets: kbert_run_mlm reaches
hf_run_mlm's final accuracy in at most 2/3 of its time; kbert_modern reaches kbert_classic's
final accuracy in at most 2/3 of kbert_classic's time.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks import pipeline as benchmark_pipeline

RUNS = ("kbert_classic", "kbert_run_mlm", "kbert_modern", "kbert_modern_bert", "hf_run_mlm",
        "hf_run_mlm_30")
SIZES = {"mini": dict(num_layers=4, hidden_size=256, num_heads=4, intermediate_size=1024),
         "small": dict(num_layers=4, hidden_size=512, num_heads=8, intermediate_size=2048)}
TIMING_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference",
                             "transformers_pretrain.py")
EVAL_RATE = 0.15
EVAL_SEED = 12345


def split_documents(documents, held_out, seed):
    """(training, held-out) lists of documents (each a list of sentences), shuffled with
    `seed`; `held_out` documents held out."""
    if not 0 < held_out < len(documents):
        raise ValueError(f"--pr_held_out_documents={held_out}: must be in [1, "
                         f"{len(documents) - 1}] (the corpus has {len(documents)} documents)")
    order = np.random.default_rng(seed).permutation(len(documents))
    shuffled = [documents[i] for i in order]
    return shuffled[held_out:], shuffled[:held_out]


def write_corpus(path, documents):
    """A sentence a line, a blank line between documents (kbert's text-file corpus)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n\n".join("\n".join(s.replace("\n", " ") for s in d) for d in documents))
        f.write("\n")
    return path


def write_lines_as_documents(path, documents):
    """The same sentences, each its own document (a blank line after every line): what
    run_mlm.py makes of a text file, each line [CLS] line [SEP], for kbert's packing
    (`fill_rows`), which wraps each document so."""
    return write_corpus(path, [[sentence] for document in documents for sentence in document])


def corpus_of(run, corpus, lines):
    """The text file that run `run` trains on: `lines` (`write_lines_as_documents`) for
    kbert_run_mlm, run_mlm.py's rows; `corpus` for every other run."""
    return lines if run == "kbert_run_mlm" else corpus


def held_out_rows(documents, sequence_length, cls_id, sep_id):
    """Rows of token ids: each document's sentences (lists of ids) packed into
    `[CLS] ... [SEP]` rows of at most `sequence_length` tokens, a row never spanning two
    documents; a sentence longer than a row is cut."""
    room = sequence_length - 2
    rows = []
    for sentences in documents:
        row = []
        for tokens in sentences:
            tokens = list(tokens)[:room]
            if row and len(row) + len(tokens) > room:
                rows.append([cls_id, *row, sep_id])
                row = []
            row.extend(tokens)
        if row:
            rows.append([cls_id, *row, sep_id])
    return rows


def mask_rows(rows, sequence_length, max_predictions, mask_id, pad_id, rate=EVAL_RATE,
              seed=EVAL_SEED):
    """The held-out set of `rows` (lists of ids, [CLS] first and [SEP] last): {"token_ids"
    [N, S] with the chosen positions replaced by `mask_id` and `pad_id` after each row,
    "padding_mask" [N, S], "mask_positions" [N, P], "mask_ids" [N, P] (the true tokens),
    "mask_weights" [N, P] (1 where a position is chosen)}, P = `max_predictions`. In each
    row round(`rate` x its tokens but [CLS] and [SEP]) positions, at least 1 and at most P,
    chosen by a generator of `seed` (the same rows give the same set)."""
    rng = np.random.default_rng(seed)
    n = len(rows)
    token_ids = np.full((n, sequence_length), pad_id, np.int32)
    padding_mask = np.zeros((n, sequence_length), np.int32)
    positions = np.zeros((n, max_predictions), np.int32)
    labels = np.zeros((n, max_predictions), np.int32)
    weights = np.zeros((n, max_predictions), np.float32)
    for i, row in enumerate(rows):
        if len(row) > sequence_length or len(row) < 3:
            raise ValueError(f"held-out row {i} has {len(row)} tokens: it must have 3 to "
                             f"{sequence_length} ([CLS], a token at least, [SEP])")
        inner = len(row) - 2
        count = min(max_predictions, max(1, int(round(rate * inner))))
        chosen = np.sort(rng.choice(np.arange(1, inner + 1), size=count, replace=False))
        token_ids[i, :len(row)] = row
        padding_mask[i, :len(row)] = 1
        positions[i, :count] = chosen
        labels[i, :count] = token_ids[i, chosen]
        weights[i, :count] = 1
        token_ids[i, chosen] = mask_id
    return {"token_ids": token_ids, "padding_mask": padding_mask, "mask_positions": positions,
            "mask_ids": labels, "mask_weights": weights}


def predictions(logits, labels):
    """(argmax ids, log-probability of `labels`) of mask-position `logits` [N, P, V]."""
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    label_log_probs = np.take_along_axis(log_probs, labels[..., None], axis=-1)[..., 0]
    return logits.argmax(axis=-1).astype(np.int32), label_log_probs.astype(np.float32)


def masked_lm_figures(predicted, label_log_probs, held_out):
    """(accuracy, loss) on the held-out set: the share of chosen positions whose argmax is
    the true token, and the mean negative log-probability of the true token there."""
    weights = np.asarray(held_out["mask_weights"], np.float64)
    correct = (np.asarray(predicted) == held_out["mask_ids"]) * weights
    loss = -np.asarray(label_log_probs, np.float64) * weights
    return float(correct.sum() / weights.sum()), float(loss.sum() / weights.sum())


def first_reaching(curve, accuracy):
    """The seconds of the first evaluation of `curve` ([{"seconds", "accuracy"}]) at or above
    `accuracy`; None where none is."""
    for point in curve:
        if point["accuracy"] >= accuracy:
            return point["seconds"]
    return None


class HeldOut:
    """A Keras callback (built by `callback()`) that evaluates the held-out set after each
    loop of a kbert run and keeps the curve: {"step", "seconds", "accuracy", "loss"} with
    the seconds since `start`, the evaluations' own time taken out."""

    def __init__(self, held_out, steps_per_loop, start, batch_size=64):
        self.held_out, self.steps_per_loop, self.start = held_out, steps_per_loop, start
        self.batch_size = batch_size
        self.curve, self.evaluating, self.calls = [], 0.0, {}

    def evaluate(self, model):
        import tensorflow as tf

        names = set(getattr(model, "feature_names", None) or model.input)
        features = dict(self.held_out)
        features["segment_ids"] = np.zeros_like(features["token_ids"])
        features["document_ids"] = features["padding_mask"].copy()  # one document a row
        features = {k: v for k, v in features.items() if k in names}
        if id(model) not in self.calls:  # traced once a model (and a last, smaller batch)
            self.calls[id(model)] = tf.function(
                lambda x: model(x, training=False)["mlm_logits"])
        call = self.calls[id(model)]
        predicted, log_probs = [], []
        n = len(self.held_out["token_ids"])
        for first in range(0, n, self.batch_size):
            batch = {k: tf.constant(v[first:first + self.batch_size])
                     for k, v in features.items()}
            p, lp = predictions(call(batch).numpy(),
                                self.held_out["mask_ids"][first:first + self.batch_size])
            predicted.append(p)
            log_probs.append(lp)
        return masked_lm_figures(np.concatenate(predicted), np.concatenate(log_probs),
                                 self.held_out)

    def callback(self):
        import keras

        outer = self

        class Callback(keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                stopped = time.perf_counter()
                accuracy, loss = outer.evaluate(self.model)
                outer.curve.append({"step": (epoch + 1) * outer.steps_per_loop,
                                    "seconds": stopped - outer.start - outer.evaluating,
                                    "accuracy": accuracy, "loss": loss})
                outer.evaluating += time.perf_counter() - stopped
                print(f"    step {outer.curve[-1]['step']}: {outer.curve[-1]['seconds']:.1f} "
                      f"s, held-out accuracy {accuracy:.4f}, loss {loss:.3f}", flush=True)

        return Callback()


# kbert_run_mlm's shuffle buffer: more rows than a pass over the training lines makes at 64
# tokens (about 6,800), so that each batch is drawn from the whole corpus as the Trainer's
# random sampler draws it (kbert's default, 1,000, draws from a window of the corpus's order).
ROWS_SHUFFLED = 10000


def kbert_config(run, folder, corpus, vocab, size, steps, eval_every, batch_size,
                 sequence_length, predictions_per_row, learning_rate, seed):
    """The `PretrainingConfig` of kbert run `run` (a kbert_* name of RUNS)."""
    from kbert.training import PretrainingConfig

    common = dict(input=corpus, vocab_file=vocab, sequence_length=sequence_length,
                  global_batch_size=batch_size, train_steps=steps, steps_per_loop=eval_every,
                  optimizer="adamw", learning_rate=learning_rate, weight_decay=0.01,
                  warmup_steps=steps // 10, seed=seed, verbose=0,
                  model_dir=os.path.join(folder, run))
    sizes = dict(SIZES[size], max_sequence_length=max(512, sequence_length))
    modern = dict(objective="mlm", masked_lm_prob=0.3, short_seq_prob=0.0,
                  max_predictions=max(predictions_per_row, int(round(0.3 * sequence_length))),
                  pack_across_documents=True, fill_rows=True, decay="warmup_stable_decay",
                  decay_steps=max(1, steps // 5))
    if run == "kbert_classic":
        return PretrainingConfig(preset="bert_mini", config_overrides=sizes,
                                 objective="mlm_nsp", max_predictions=predictions_per_row,
                                 decay="linear", **common)
    if run == "kbert_run_mlm":
        return PretrainingConfig(preset="bert_mini", config_overrides=sizes, objective="mlm",
                                 short_seq_prob=0.0, max_predictions=predictions_per_row,
                                 pack_across_documents=True, fill_rows=True, decay="linear",
                                 adam_epsilon=1e-8, shuffle_buffer=ROWS_SHUFFLED, **common)
    if run == "kbert_modern":
        return PretrainingConfig(preset="bert_mini", config_overrides=sizes, **modern,
                                 **common)
    if run == "kbert_modern_bert":
        glu = dict(sizes, intermediate_size=SIZES[size]["intermediate_size"] * 2 // 3,
                   local_attention=128, global_attn_every_n_layers=3)
        return PretrainingConfig(preset="modern_bert_base", config_overrides=glu,
                                 separate_documents=True, **modern, **common)
    raise ValueError(f"{run!r} is not a kbert run: one of {', '.join(RUNS[:4])}")


def kbert_run(config, held_out):
    """The curve of one kbert run."""
    from kbert.training import run_pretraining

    start = time.perf_counter()
    watcher = HeldOut(held_out, config.steps_per_loop, start)
    run_pretraining(config, callbacks=[watcher.callback()])
    return watcher.curve


def reference_run(python, run, folder, corpus, vocab, held_out_path, size, steps, eval_every,
                  batch_size, sequence_length, learning_rate, seed):
    """The curve of transformers' run `run` (hf_run_mlm or hf_run_mlm_30) in `python`, and
    its versions."""
    out = os.path.join(folder, run)
    args = [python, TIMING_SCRIPT, "--train", corpus, "--vocab", vocab, "--held_out",
            held_out_path, "--out", out, "--steps", str(steps), "--eval_every", str(eval_every),
            "--batch_size", str(batch_size), "--sequence_length", str(sequence_length),
            "--learning_rate", str(learning_rate), "--seed", str(seed),
            "--mlm_probability", "0.3" if run.endswith("_30") else "0.15"]
    for key, value in SIZES[size].items():
        args += [f"--{key}", str(value)]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"transformers' {run} failed in {python}:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["curve"], result["versions"]


def _curve_from_predictions(points, held_out):
    curve = []
    for point in points:
        accuracy, loss = masked_lm_figures(np.array(point["predicted"]),
                                           np.array(point["label_log_probs"]), held_out)
        curve.append({"step": point["step"], "seconds": point["seconds"],
                      "accuracy": accuracy, "loss": loss})
    return curve


def summary(curves):
    """Each run's final figures and its seconds to the thresholds, and the two targets:
    {"rows": [...], "thresholds": {...}, "targets": {...}}."""
    thresholds = {}
    if curves.get("hf_run_mlm"):
        thresholds["transformers' final accuracy"] = curves["hf_run_mlm"][-1]["accuracy"]
    if curves.get("kbert_classic"):
        thresholds["kbert classic's final accuracy"] = curves["kbert_classic"][-1]["accuracy"]
    rows = []
    for run, curve in curves.items():
        rows.append({"run": run, "steps": curve[-1]["step"], "seconds": curve[-1]["seconds"],
                     "accuracy": curve[-1]["accuracy"], "loss": curve[-1]["loss"],
                     "to_thresholds": {name: first_reaching(curve, value)
                                       for name, value in thresholds.items()}})
    targets = {}
    pairs = (("kbert_run_mlm", "hf_run_mlm", "transformers' final accuracy"),
             ("kbert_modern", "kbert_classic", "kbert classic's final accuracy"))
    for run, reference, threshold in pairs:
        if run in curves and reference in curves:
            reached = first_reaching(curves[run], thresholds[threshold])
            whole = curves[reference][-1]["seconds"]
            targets[f"{run} to {threshold}"] = {
                "seconds": reached, "reference_seconds": whole,
                "fraction": None if reached is None else reached / whole,
                "met": reached is not None and reached <= 2 / 3 * whole}
    return {"rows": rows, "thresholds": thresholds, "targets": targets}


def check(runs, steps, eval_every):
    """ValueError naming the flag where the runs or the steps cannot be run."""
    unknown = [r for r in runs if r not in RUNS]
    if unknown or not runs:
        raise ValueError(f"--pr_runs={','.join(runs)}: {', '.join(unknown) or 'none given'}: "
                         f"each must be one of {', '.join(RUNS)}")
    if steps % eval_every:
        raise ValueError(f"--pr_steps={steps} must be a multiple of --pr_eval_every="
                         f"{eval_every}")


def run(runs, size, steps, eval_every, held_out_documents, vocabulary_size, batch_size,
        sequence_length, predictions_per_row, learning_rate, seed, reference_python):
    from kbert.data import corpora
    from kbert.tokenizers import WordPieceTokenizer
    from kbert.tokenizers.vocab_learning import learn_vocabulary, write_vocabulary

    check(runs, steps, eval_every)
    documents = [[s.decode() for s in d]
                 for d in corpora.stdlib_docstrings().as_numpy_iterator()]
    train, held = split_documents(documents, held_out_documents, seed)
    curves, versions, problem = {}, None, None
    with tempfile.TemporaryDirectory() as folder:
        corpus = write_corpus(os.path.join(folder, "train.txt"), train)
        lines = write_lines_as_documents(os.path.join(folder, "train_lines.txt"), train)
        vocab = os.path.join(folder, "vocab.txt")
        write_vocabulary(learn_vocabulary(corpora.text_files(corpus), vocabulary_size), vocab)
        tokenizer = WordPieceTokenizer(vocab)
        tokenized = [tokenizer.tokenize(d).to_list() for d in held]
        held_out = mask_rows(
            held_out_rows(tokenized, sequence_length, tokenizer.cls_id, tokenizer.sep_id),
            sequence_length, predictions_per_row, tokenizer.mask_id, tokenizer.pad_id)
        held_out_path = os.path.join(folder, "held_out.npz")
        np.savez(held_out_path, **held_out)
        chosen = int(held_out["mask_weights"].sum())
        print(f"pretrain_real: {len(train)} training documents ({os.path.getsize(corpus):,} "
              f"bytes of the stdlib's docstrings), {len(held)} held out: "
              f"{len(held_out['token_ids'])} rows, {chosen} masked positions; a WordPiece "
              f"vocabulary of {tokenizer.vocabulary_size}; BERT-{size.capitalize()} size, "
              f"{steps} steps of {batch_size} x {sequence_length} tokens, learning rate "
              f"{learning_rate:g}, seed {seed}", flush=True)
        python = reference_python or sys.executable
        for name in runs:
            print(f"  {name}:", flush=True)
            if name.startswith("kbert_"):
                config = kbert_config(name, folder, corpus_of(name, corpus, lines), vocab,
                                      size, steps, eval_every, batch_size, sequence_length,
                                      predictions_per_row, learning_rate, seed)
                curves[name] = kbert_run(config, held_out)
                continue
            problem = problem or benchmark_pipeline.reference_python_problem(python)
            if problem:
                print(f"    skipped: {problem}", flush=True)
                continue
            points, versions = reference_run(python, name, folder, corpus, vocab,
                                             held_out_path, size, steps, eval_every,
                                             batch_size, sequence_length, learning_rate, seed)
            curves[name] = _curve_from_predictions(points, held_out)
            for point in curves[name]:
                print(f"    step {point['step']}: {point['seconds']:.1f} s, held-out "
                      f"accuracy {point['accuracy']:.4f}, loss {point['loss']:.3f}", flush=True)
    result = summary(curves)
    names = list(result["thresholds"])
    print("\n| run | steps | seconds | held-out accuracy | held-out loss | "
          + " | ".join(f"seconds to {n}" for n in names) + " |")
    print("| --- | ---: | ---: | ---: | ---: |" + " ---: |" * len(names))
    for row in result["rows"]:
        reached = [f"{row['to_thresholds'][n]:.1f}" if row["to_thresholds"][n] is not None
                   else "not reached" for n in names]
        print(f"| {row['run']} | {row['steps']} | {row['seconds']:.1f} | {row['accuracy']:.4f} "
              f"| {row['loss']:.3f} | " + " | ".join(reached) + " |")
    for name, target in result["targets"].items():
        fraction = "not reached" if target["fraction"] is None else \
            f"{target['fraction']:.2f} of the reference's time"
        print(f"target: {name}: {fraction} ({'met' if target['met'] else 'not met'}: <= 2/3)")
    return {"size": size, "steps": steps, "eval_every": eval_every, "batch_size": batch_size,
            "sequence_length": sequence_length, "learning_rate": learning_rate, "seed": seed,
            "training_documents": len(train), "held_out_rows": len(held_out["token_ids"]),
            "held_out_positions": chosen, "vocabulary_size": tokenizer.vocabulary_size,
            "transformers_versions": versions, "curves": curves, **result}
