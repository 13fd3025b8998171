"""Where a pretraining run's vocabulary (any kbert tokenizer) and batches come from."""

import os

import tensorflow as tf

from kbert.data import inputs, pretraining_dataset, tfrecords
from kbert.training.objectives import OBJECTIVES
from kbert.training.config_fields import ConfigError


def tokenizer(config, model_dir, teacher=None):
    """The run's tokenizer, of `config.resolved_tokenizer_type`: the teacher's (distillation:
    any kind, its files written into model_dir once), `vocab_file`, or one learned from the
    input into model_dir (vocab.txt, spiece.model, vocab.json + merges.txt: once, a resumed
    run reads it)."""
    from kbert.tokenizers import tokenizer_types

    if teacher is not None:  # the student speaks the teacher's vocabulary
        return _teacher_tokenizer(config, model_dir, teacher)
    kind = tokenizer_types.get(config.resolved_tokenizer_type)
    path = config.vocab_file or os.path.join(model_dir, kind.file_name)
    if config.vocab_file is None and not tf.io.gfile.exists(path):
        print(f"Learning a {kind.name} vocabulary (~{config.learned_vocabulary_size} tokens) "
              f"from {config.input} ...", flush=True)
        tokenizer_types.learn(kind.name, inputs.documents(config.input), path,
                              config.learned_vocabulary_size, lowercase=config.resolved_lowercase)
    try:
        return tokenizer_types.load_written(path, kind.name,
                                            lowercase=config.resolved_lowercase)
    except ValueError as e:  # e.g. a vocabulary without the special tokens
        raise ConfigError(f"--vocab_file={path!r}: {e}") from None


def _teacher_tokenizer(config, model_dir, teacher):
    """The teacher's tokenizer; its files (vocab.txt, spiece.model or vocab.json +
    merges.txt) written into model_dir on the first start, checked on a resume."""
    from kbert.tokenizers.files import write_tokenizer_files
    from kbert.tokenizers import tokenizer_types

    kind = tokenizer_types.get(teacher.tokenizer_type)
    path = config.vocab_file or os.path.join(model_dir, kind.file_name)
    if config.vocab_file is None and not all(
            tf.io.gfile.exists(p) for p in tokenizer_types.files(path, kind.name)):
        write_tokenizer_files(teacher.tokenizer, model_dir)
    try:
        tokenizer = tokenizer_types.load_written(path, kind.name, lowercase=teacher.lowercase)
    except ValueError as e:
        raise ConfigError(f"--vocab_file={path!r}: {e}") from None
    if _contents(tokenizer) != _contents(teacher.tokenizer):
        raise ConfigError(f"{path} is not the vocabulary of the teacher ({teacher.description})"
                          "; leave --vocab_file unset to use the teacher's.")
    return tokenizer


def _contents(tokenizer):
    """What makes a tokenizer's vocabulary (its tokens, merges and SentencePiece model) and
    the ids of its special tokens (a DeBERTa-v3 model's [PAD] and [UNK] are not ALBERT's)."""
    return tokenizer.identity(), tuple(getattr(tokenizer, f"{name}_id", None)
                                       for name in ("cls", "sep", "pad", "unk", "mask"))


def dataset(config, tokenizer, repeat):
    """The training batches; `repeat=True`: the endless stream, the same from every iterator.

    `input` "tfrecord:GLOB" reads examples masked ahead of time (original BERT format);
    anything else is a corpus masked on the fly.
    """
    sentence_task = OBJECTIVES[config.objective].sentence_task
    if config.input.startswith("tfrecord:"):
        return tfrecords.read(config.input.removeprefix("tfrecord:"), config.sequence_length,
                              config.max_predictions, config.global_batch_size,
                              next_sentence_labels=sentence_task != "none", seed=config.seed,
                              repeat=repeat)
    return pretraining_dataset(
        inputs.documents(config.input), tokenizer, sequence_length=config.sequence_length,
        max_predictions=config.max_predictions, batch_size=config.global_batch_size,
        sentence_task=sentence_task, masking=config.masking,
        masked_lm_prob=config.masked_lm_prob, short_seq_prob=config.short_seq_prob,
        seed=config.seed, repeat=repeat, pack_across_documents=config.pack_across_documents,
        fill_rows=config.fill_rows, shuffle_buffer=config.shuffle_buffer,
        document_ids=getattr(config, "separate_documents", False),
    )


def train_steps(config, tokenizer):
    """`train_steps`, or for `epochs` the steps of that many passes (whole loops only)."""
    if config.epochs is None:
        return config.train_steps
    steps_per_epoch = sum(1 for _ in dataset(config, tokenizer, repeat=False))
    steps = steps_per_epoch * config.epochs
    steps -= steps % config.steps_per_loop
    print(f"{steps_per_epoch} batches per epoch: {steps} steps in all.")
    if not steps:
        raise ConfigError(f"--epochs={config.epochs} is less than one loop of "
                          f"--steps_per_loop={config.steps_per_loop} steps.")
    if config.warmup_steps > steps:
        raise ConfigError(f"--warmup_steps={config.warmup_steps} is more than the "
                          f"{steps} steps of --epochs={config.epochs}.")
    return steps
