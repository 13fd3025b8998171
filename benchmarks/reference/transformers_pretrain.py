"""transformers' masked-LM pretraining as its `examples/pytorch/language-modeling/run_mlm.py`
runs it, timed, with held-out predictions: the reference rows of `tools/benchmark.py
pretrain_real`, run in a Python with torch, transformers and accelerate
(`--reference_python`). kbert never imports this file.

    python benchmarks/reference/transformers_pretrain.py --train train.txt --vocab vocab.txt
        --held_out held_out.npz --out DIR [--steps 2000] [--eval_every 200]
        [--mlm_probability 0.15] [--batch_size 32] [--sequence_length 128]
        [--learning_rate 1e-3] [--seed 0] [--num_layers 4] [--hidden_size 256]
        [--num_heads 4] [--intermediate_size 1024]

What run_mlm.py does without --line_by_line: each non-empty line of the text file tokenized
with [CLS] and [SEP] (`BertTokenizerFast` on the given vocab.txt, lower-cased), all of them
concatenated and cut into rows of --sequence_length (`group_texts`, the remainder dropped),
`DataCollatorForLanguageModeling` masking --mlm_probability of the tokens (80% [MASK], 10%
random, 10% kept) anew in every batch, `Trainer` with its defaults (AdamW, weight decay
0.01 here, a linear decay after a 10% warm-up), a random `BertForMaskedLM` of the given
sizes (GELU tanh approximation, as BERT-Mini's). Every --eval_every steps the held-out rows
(kbert's masked rows, the same for every run) are predicted; the clock (started before
tokenizing) leaves that time out. Prints one JSON line: the curve (step, seconds, the argmax
and the log-probability of the true token at each chosen position) and the versions.
"""

import argparse
import json
import os
import shutil
import time


def main():
    parser = argparse.ArgumentParser()
    for name in ("train", "vocab", "held_out", "out"):
        parser.add_argument(f"--{name}", required=True)
    for name, default in (("steps", 2000), ("eval_every", 200), ("batch_size", 32),
                          ("sequence_length", 128), ("seed", 0), ("num_layers", 4),
                          ("hidden_size", 256), ("num_heads", 4), ("intermediate_size", 1024)):
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--mlm_probability", type=float, default=0.15)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    args = parser.parse_args()

    import numpy as np
    import torch
    import transformers
    from transformers import (BertConfig, BertForMaskedLM, BertTokenizerFast,
                              DataCollatorForLanguageModeling, Trainer, TrainerCallback,
                              TrainingArguments)

    held_out = dict(np.load(args.held_out))
    start = time.perf_counter()
    transformers.set_seed(args.seed)
    # From a folder holding the vocab.txt: how every transformers version reads one.
    folder = os.path.join(args.out, "tokenizer")
    os.makedirs(folder, exist_ok=True)
    shutil.copy(args.vocab, os.path.join(folder, "vocab.txt"))
    tokenizer = BertTokenizerFast.from_pretrained(folder, do_lower_case=True)
    with open(args.train, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    encoded = tokenizer(lines, return_special_tokens_mask=True)
    # group_texts: everything concatenated, cut into full rows, the remainder dropped.
    size = args.sequence_length
    columns = {k: [t for row in v for t in row] for k, v in encoded.items()}
    total = len(columns["input_ids"]) // size * size
    rows = [{k: v[i:i + size] for k, v in columns.items()} for i in range(0, total, size)]

    # The table has a row per line of vocab.txt (a duplicate line keeps its id in kbert).
    with open(args.vocab, encoding="utf-8") as f:
        vocabulary_size = sum(1 for _ in f)
    config = BertConfig(vocab_size=vocabulary_size, hidden_size=args.hidden_size,
                        num_hidden_layers=args.num_layers,
                        num_attention_heads=args.num_heads,
                        intermediate_size=args.intermediate_size, hidden_act="gelu_new",
                        max_position_embeddings=max(512, size))
    model = BertForMaskedLM(config)
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=args.mlm_probability)

    inputs = {"input_ids": torch.tensor(held_out["token_ids"], dtype=torch.long),
              "attention_mask": torch.tensor(held_out["padding_mask"], dtype=torch.long),
              "token_type_ids": torch.zeros(held_out["token_ids"].shape, dtype=torch.long)}
    positions = torch.tensor(held_out["mask_positions"], dtype=torch.long)
    labels = torch.tensor(held_out["mask_ids"], dtype=torch.long)
    curve, evaluating = [], [0.0]

    def evaluate(step):
        stopped = time.perf_counter()
        model.eval()
        predicted, label_log_probs = [], []
        with torch.no_grad():
            for first in range(0, len(labels), 64):
                batch = {k: v[first:first + 64] for k, v in inputs.items()}
                logits = model(**batch).logits
                at = torch.gather(logits, 1, positions[first:first + 64, :, None].expand(
                    -1, -1, logits.shape[-1])).double()
                log_probs = torch.log_softmax(at, dim=-1)
                predicted.append(at.argmax(-1))
                label_log_probs.append(torch.gather(
                    log_probs, 2, labels[first:first + 64, :, None])[..., 0])
        model.train()
        curve.append({"step": step, "seconds": stopped - start - evaluating[0],
                      "predicted": torch.cat(predicted).tolist(),
                      "label_log_probs": torch.cat(label_log_probs).float().tolist()})
        evaluating[0] += time.perf_counter() - stopped

    class HeldOut(TrainerCallback):
        def on_step_end(self, arguments, state, control, **kwargs):
            if state.global_step % args.eval_every == 0:
                evaluate(state.global_step)

    training = TrainingArguments(
        output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=args.batch_size,
        learning_rate=args.learning_rate, weight_decay=0.01,
        warmup_steps=args.steps // 10, lr_scheduler_type="linear", seed=args.seed,
        save_strategy="no", report_to=[], logging_steps=args.eval_every,
        dataloader_num_workers=0, disable_tqdm=True, use_cpu=True)
    Trainer(model=model, args=training, train_dataset=rows, data_collator=collator,
            callbacks=[HeldOut()]).train()
    print(json.dumps({"curve": curve, "rows": len(rows),
                      "versions": {"torch": torch.__version__,
                                   "transformers": transformers.__version__}}))


if __name__ == "__main__":
    main()
