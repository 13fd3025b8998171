"""`Checkpoint`: a model's architecture, weights and vocabulary, read from any format."""

import dataclasses
import logging
from typing import Optional

from kbert import models, tasks
from kbert.convert import _checks, _mapping, families, task_heads

# Config fields a caller may change on pretrained weights: they do not change any weight's
# shape. max_sequence_length may only shrink (the position table is cut). `activation` is here
# to reproduce other loaders (keras-hub uses the tanh GELU for every BERT).
FREE_FIELDS = ("dropout", "attention_dropout", "initializer_range", "activation")


@dataclasses.dataclass
class Checkpoint:
    """A checkpoint in kbert's common form, whatever format it came from.

    Attributes:
        family: the model family, a key of `kbert.models.FAMILIES` ("bert", "albert",
            "distil_bert", "electra").
        config: the family's config (a `BertConfig`, `AlbertConfig`, ...).
        weights: numpy arrays keyed by Hugging Face names without the model prefix (see
            `kbert.convert.bert` and the other family modules; `kbert.convert.families`
            holds their records).
        vocabulary: the WordPiece (or byte-level BPE) tokens (index = id), or `None` when the
            checkpoint has none.
        lowercase: whether the tokenizer lower-cases (uncased models).
        source: where it was read from, for messages.
        sentencepiece_model: the bytes of a SentencePiece model (ALBERT's spiece.model), the
            tokenizer of checkpoints that have no WordPiece vocabulary.
        task: the fine-tuned task model the checkpoint holds (a
            `kbert.convert.task_heads.TaskHead`: task, labels, problem type, pooling), or
            `None`; its head's weights are in `weights`.
        architecture: the class the checkpoint names (config.json's `architectures`), or
            `None`; for messages.
        merges: the merge pairs of a byte-level BPE (RoBERTa's merges.txt), whose tokens are
            `vocabulary`; `None` for other tokenizers.
        tokenizer_json: (the text of a tokenizer.json, its tokenizer_config.json's fields):
            the tokenizer of a checkpoint that ships one (ModernBERT, mmBERT), read by
            `kbert.tokenizers.tokenizer_from_json`; `None` otherwise.
    """

    family: str
    config: object
    weights: dict
    vocabulary: Optional[list] = None
    lowercase: bool = True
    source: str = "checkpoint"
    sentencepiece_model: Optional[bytes] = None
    task: Optional[task_heads.TaskHead] = None
    architecture: Optional[str] = None
    merges: Optional[list] = None
    tokenizer_json: Optional[tuple] = None

    @property
    def head(self):
        """The richest `head` the weights support: "pretrainer", "mlm" or `None`."""
        return families.get(self.family).heads_in(self.weights)

    def build(self, head="auto", dtype=None, name=None, **config_overrides):
        """The kbert model with these weights.

        Args:
            head: "auto" (every head the checkpoint has), "pretrainer", "mlm" or `None`.
            dtype: a Keras dtype policy, e.g. "mixed_bfloat16".
            name: the model's name.
            **config_overrides: `dropout`, `attention_dropout`, `initializer_range`,
                `activation`, or a `max_sequence_length` no longer than the checkpoint's.
        """
        if head == "auto":
            head = self.head
        if head not in models.HEADS:
            raise ValueError(
                f"Unknown head {head!r}. Allowed: 'auto', {', '.join(map(repr, models.HEADS))}."
            )
        config = self.config_with(**config_overrides)
        _checks.check_sizes(config, self.source)  # whatever read it: before any allocation
        family = families.get(self.family)
        arguments = {}
        if head == "pretrainer" and family.pretrainer_arguments is not None:
            if self.head != "pretrainer":
                raise ValueError(
                    f"{self.source} has no {self.family} pretraining heads (it has "
                    f"{self.head or 'no heads'}); use head='auto', 'mlm' or None."
                )
            arguments = family.pretrainer_arguments(config, self.weights)
        model = models.build(self.family, config, head=head, dtype=dtype, name=name,
                             **arguments)
        entries = family.entries(model)
        if self.task is not None:  # transformers' token classifiers and readers: no pooler
            entries = task_heads.optional_pooler(entries, getattr(model, "backbone", model))
        self._assign(entries, head or "backbone")
        return model

    def build_task(self, task="auto", dtype=None, name=None, **config_overrides):
        """The fine-tuned task model of the checkpoint (a `TextClassifier`,
        `TokenClassifier`, `QuestionAnswerer` or `TextEmbedder`) with its head's weights,
        labels and problem type.

        Args:
            task: "auto" (the one the checkpoint holds), or the task asked for: a key of
                `kbert.tasks.TASKS` or a transformers pipeline name ("text-classification",
                "ner", ...). ValueError, naming what the checkpoint holds and the task it
                serves, when it holds another or none.
            dtype, name, **config_overrides: as in `build`.
        """
        task_head = task_heads.check(self.task, task, self.source, self.architecture)
        config = self.config_with(**config_overrides)
        _checks.check_sizes(config, self.source)
        arguments = dict(task_head.arguments)
        if arguments.get("max_length") is not None:  # no longer than the positions kept
            arguments["max_length"] = min(arguments["max_length"], config.max_sequence_length)
        backbone = models.build(self.family, config, head=None, dtype=dtype, name=name)
        model = tasks.build(task_head.task, backbone, name=name, **arguments)
        unused = self._assign(task_heads.entries(model), task_head.task)
        # A head tensor left out would make a model whose outputs are not the checkpoint's.
        head = [n for n in unused
                if n.startswith(task_heads.head_prefixes(families.get(self.family)))]
        if head and task_head.task != "text_embedder":
            raise ValueError(
                f"{self.source} holds a {task_head.architecture} with head tensors that the "
                f"kbert {type(model).__name__} built for it does not use: {', '.join(head)}. "
                "Its outputs would not be the checkpoint's; kbert reads transformers' head "
                "of the architecture (kbert.convert.task_heads). Load the encoder with "
                "task=None to put another head on it."
            )
        return model

    def _assign(self, entries, what):
        """Assigns the weights to `entries`; returns the names of the tensors not used."""
        unused, kept = _mapping.assign(entries, self.weights, source=self.source)
        if unused:
            logging.info("%s: %d tensors not used by the %s model: %s", self.source,
                         len(unused), what, ", ".join(unused[:10]))
        if kept:
            logging.warning("%s has no %s; the model keeps their initial values.", self.source,
                            ", ".join(kept))
        return unused

    def config_with(self, **config_overrides):
        """The checkpoint's config with the overrides that keep every weight's shape."""
        changed = {}
        for key, value in config_overrides.items():
            if key == "max_sequence_length":
                if not isinstance(value, int) or not 0 < value <= self.config.max_sequence_length:
                    raise ValueError(
                        f"max_sequence_length={value!r}: the checkpoint has "
                        f"{self.config.max_sequence_length} positions; pass a positive int "
                        "no larger than that."
                    )
            elif key not in FREE_FIELDS:
                raise ValueError(
                    f"{key}={value!r} would change the pretrained architecture. With pretrained "
                    f"weights only {', '.join(FREE_FIELDS)} and a shorter max_sequence_length "
                    "may change; use weights=None for a new architecture."
                )
            changed[key] = value
        return self.config.replace(**changed)

    def tokenizer(self):
        """The checkpoint's tokenizer: a `kbert.tokenizers.WordPieceTokenizer` on its
        vocab.txt, a `SentencePieceTokenizer` on its spiece.model (ALBERT), or a
        `BytePairTokenizer` on its vocab.json + merges.txt (RoBERTa), or the tokenizer of its
        tokenizer.json (`kbert.tokenizers.tokenizer_from_json`).

        A tokenizer of the family's kind (`kbert.models.Family.tokenizer`) packs pairs by the
        family's `pair_layout`; one of another kind (a run's own vocabulary) by its kind's."""
        record = models.FAMILIES[self.family]

        def layout(kind):
            return record.pair_layout if record.tokenizer == kind else None

        if self.tokenizer_json is not None:
            from kbert.tokenizers import tokenizer_from_json

            text, settings = self.tokenizer_json
            return tokenizer_from_json(text, settings, source=f"{self.source}/tokenizer.json",
                                       pair_layout=layout("tokenizer_json"))
        if self.merges is not None:
            from kbert.tokenizers import BytePairTokenizer

            return BytePairTokenizer(self.vocabulary, self.merges, pair_layout=layout("bpe"))
        if self.sentencepiece_model is not None:
            from kbert.tokenizers import SentencePieceTokenizer

            return SentencePieceTokenizer(
                self.sentencepiece_model, lowercase=self.lowercase,
                pair_layout=layout("sentencepiece"),
                **families.get(self.family).sentencepiece_arguments)
        if self.vocabulary is None:
            raise ValueError(f"{self.source} has no vocabulary (vocab.txt or spiece.model).")
        from kbert.tokenizers import WordPieceTokenizer

        return WordPieceTokenizer(self.vocabulary, lowercase=self.lowercase,
                                  pair_layout=layout("wordpiece"))

    @classmethod
    def from_model(cls, model, vocabulary=None, lowercase=True):
        """A `Checkpoint` of a kbert model: a backbone, a pretrainer or a task model.

        `vocabulary` is a `WordPieceTokenizer`, `SentencePieceTokenizer` or
        `BytePairTokenizer`, a path of a vocab.txt or a list of tokens.
        """
        if getattr(model, "exit_heads", None):
            raise ValueError(f"{model.name} has early-exit heads (exit_layers="
                             f"{model.exit_layers}), which no checkpoint format holds: write "
                             f"its classifier alone (model.without_exits()), or save the "
                             f"whole model as a .keras file (kbert.load reads it).")
        family = families.of_model(model)
        backbone = getattr(model, "backbone", model)
        sentencepiece = merges = None
        tokenizer_json = getattr(vocabulary, "json_files", lambda: None)()
        if hasattr(vocabulary, "checkpoint_assets"):  # a kbert tokenizer
            vocabulary, lowercase, sentencepiece, merges = vocabulary.checkpoint_assets()
        elif vocabulary is not None and not isinstance(vocabulary, (list, tuple)):
            from kbert.tokenizers import read_vocabulary

            vocabulary = read_vocabulary(str(vocabulary))
        task_head = task_heads.of_model(model)
        entries = family.entries(model) if task_head is None else task_heads.entries(model)
        weights = _mapping.weights_of(entries)
        return cls(family.name, backbone.config, weights,
                   None if vocabulary is None else list(vocabulary), lowercase,
                   source=f"model {model.name!r}", sentencepiece_model=sentencepiece,
                   task=task_head, architecture=None if task_head is None
                   else task_head.architecture, merges=merges, tokenizer_json=tokenizer_json)


def uppercase_free(vocabulary):
    """True when no token but the [XXX] specials has an upper-case letter: an uncased vocab."""
    return not any(
        token != token.lower() for token in vocabulary
        if not (token.startswith("[") and token.endswith("]"))
    )
