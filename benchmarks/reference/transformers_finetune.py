"""transformers' `Trainer` fine-tuning a sequence classifier, timed: the reference row of
`tools/benchmark.py finetune_real`, run in a Python with torch, transformers and accelerate
(`--reference_python`). kbert never imports this file.

    python benchmarks/reference/transformers_finetune.py --model DIR --train train.csv --test test.csv
        --out DIR [--epochs 1] [--learning_rate 5e-5] [--batch_size 32] [--seed 0]

Reads CSV files with columns `sentence` and `label` (label names), tokenizes (truncation at
--sequence_length, no padding: `DataCollatorWithPadding` pads each batch to its longest),
trains a fresh `AutoModelForSequenceClassification` head on the checkpoint with AdamW,
warm-up 10% and a linear decay, weight decay 0.01, evaluates on the test file and saves the
model. Prints one JSON line: seconds (tokenize + build + train + evaluate + save), the
training rows, held-out accuracy and the versions.
"""

import argparse
import csv
import json
import math
import time


def rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def main():
    parser = argparse.ArgumentParser()
    for name in ("model", "train", "test", "out"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--sequence_length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import numpy as np
    import torch
    import transformers
    from transformers import (AutoModelForSequenceClassification, AutoTokenizer,
                              DataCollatorWithPadding, Trainer, TrainingArguments)

    train, test = rows(args.train), rows(args.test)
    names = sorted({row["label"] for row in train})
    start = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(args.model)

    def encode(data):
        encoded = tokenizer([row["sentence"] for row in data], truncation=True,
                            max_length=args.sequence_length)
        return [{"input_ids": ids, "attention_mask": mask, "labels": names.index(row["label"])}
                for ids, mask, row in zip(encoded["input_ids"], encoded["attention_mask"], data)]

    train_set, test_set = encode(train), encode(test)
    transformers.set_seed(args.seed)
    model = AutoModelForSequenceClassification.from_pretrained(
        args.model, num_labels=len(names),
        id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)})
    # Warm-up over the first 10% of the steps, counted as kbert counts them (given as steps:
    # transformers 5 has no warmup_ratio, transformers 4 no float warmup_steps).
    warmup_steps = math.floor(len(train_set) // args.batch_size * args.epochs * 0.1)
    training = TrainingArguments(
        output_dir=args.out, num_train_epochs=args.epochs, learning_rate=args.learning_rate,
        per_device_train_batch_size=args.batch_size, per_device_eval_batch_size=args.batch_size,
        warmup_steps=warmup_steps, weight_decay=0.01, lr_scheduler_type="linear", seed=args.seed,
        save_strategy="no", report_to=[], logging_strategy="no", use_cpu=True,
        dataloader_drop_last=True)

    def accuracy(prediction):
        return {"accuracy": float((np.argmax(prediction.predictions, -1)
                                   == prediction.label_ids).mean())}

    trainer = Trainer(model=model, args=training, train_dataset=train_set,
                      eval_dataset=test_set, data_collator=DataCollatorWithPadding(tokenizer),
                      compute_metrics=accuracy)
    trainer.train()
    # Every held-out sentence is scored, as kbert scores them (drop_last was for training's
    # batches, as kbert's: it also applies to the evaluation loader built after this line).
    trainer.args.dataloader_drop_last = False
    scores = trainer.evaluate()
    trainer.save_model(args.out)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "rows": len(train_set),
                      "accuracy": scores["eval_accuracy"],
                      "versions": f"torch {torch.__version__}, transformers "
                                  f"{transformers.__version__}"}))


if __name__ == "__main__":
    main()
