"""The contract between the checkpoint formats and a model family: one `FamilyFormat` record.

Each family module (`bert`, `albert`, `distil_bert`, `electra`, `roberta`, `deberta_v3`,
`mobile_bert`) builds exactly one record, `FAMILY`, with `record` (which reads the module's
hooks and tables by their names); `kbert.convert.families` registers them. The formats
(`hugging_face`, `tf1`, `keras_hub`) and `Checkpoint` read a family only through its record:
every name, translation and hook they use is a field here, and a hook a family does not need
is `None`, not a missing attribute.
"""

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Optional

from kbert.tasks import registry

# The kbert tasks that have a fine-tuned Hugging Face class (`*For<Task>`: a record's
# `hf_class`); the embedder is a sentence-transformers directory around the base model instead.
HF_TASKS = registry.hugging_face_tasks()


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class Companion:
    """A second Hugging Face model written in a folder beside the main one: ELECTRA's
    generator (`ElectraForMaskedLM`) next to its discriminator, as Google published them.

    Attributes:
        folder: the sub-folder's name.
        description: what it holds, for messages ("an ELECTRA generator").
        head: the `head` its weights are written as ("mlm": `*ForMaskedLM`).
        split: `(config, weights) -> None or (main weights, companion config.json dict,
            companion weights)`; `None` when the weights have no companion part.
        check_config: `(config.json dict, source)`; raises ValueError when kbert has no form
            of the companion.
        join: `(companion weights, main weights, source) -> dict`: the companion's weights
            under the names they have in the main checkpoint.
    """

    folder: str
    description: str
    head: Optional[str]
    split: Callable
    check_config: Callable
    join: Callable


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class Shapes:
    """Where a family's tensors show the config's sizes, so that a checkpoint is checked
    against its config from the tensor headers alone, before a model is built
    (`kbert.convert._checks.check_shapes`).

    Attributes:
        sizes: config field -> (common tensor name, axis) whose length is that field
            ("vocabulary_size": ("embeddings.word_embeddings.weight", 0)); "embedding_size"
            is the token table's width (the hidden size where the config has none).
        layers: a regex whose group 1 is the block index of a block's tensor names.
        layer_field: the config field that counts those blocks ("num_layers"; ALBERT's
            shared blocks: "num_groups").
        optional: fields whose tensor may be absent, meaning 0 (no segment table).
        offsets: field -> how many more rows its tensor has than the config's value
            (RoBERTa's position table: `max_sequence_length` + 2, the rows up to fairseq's
            padding index); the file's field holds the table's length.
    """

    sizes: Mapping
    layers: str
    layer_field: str = "num_layers"
    optional: tuple = ("type_vocab_size",)
    offsets: Mapping = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class FamilyFormat:
    """What the formats need to know about one model family.

    Weights in every format are translated to one common form: numpy arrays keyed by the
    Hugging Face names without the model prefix (see `kbert.convert.bert`).

    Attributes:
        name: the family, a key of `kbert.models.FAMILIES` ("bert").
        entries: `model -> [_mapping.Entry]`, the weight map of a kbert model of the family
            (backbone, masked LM or pretrainer).
        heads_in: `weights -> "pretrainer", "mlm" or None`: the richest head the weights hold.
        pretrainer_arguments: optional `(config, weights) -> dict` of pretrainer arguments the
            weights fix (ELECTRA's generator size); `None`: the config says everything.

        model_type: Hugging Face config.json's `model_type`.
        hf_name: the start of transformers' class names of the family ("Bert", "DebertaV2"):
            `<hf_name>Model`, `<hf_name>ForMaskedLM`, `<hf_name>Tokenizer`, and each task's
            `<hf_name><the task record's hf_class>` (`BertForSequenceClassification`).
        pretrainer_hf_class: the class of `head="pretrainer"` after `hf_name`:
            "ForPreTraining", or "ForMaskedLM" where pretraining is the masked LM alone.
        prefix: the encoder's prefix in Hugging Face's head models (`bert.`).
        head_prefixes: the names outside the encoder (the heads), which keep no prefix.
        tied: names that repeat the token table (the MLM decoder); dropped on reading.
        aliases: old Hugging Face names -> the common ones.
        config_fields: config.json field -> config field (`vocab_size` -> `vocabulary_size`),
            for messages that name the file's field.
        shapes: where the tensors show the config's sizes (a `Shapes`).
        config_from_hf: `(config.json dict, source) -> config`.
        config_to_hf: `config -> config.json dict` (without `architectures`).
        not_in_hf: common names Hugging Face's models have no place for (not written).
        to_hf_weights: optional `(config.json dict, weights) -> weights`: what the family's
            Hugging Face files hold where kbert's weights differ without changing kbert's
            outputs (MobileBERT: the pad id's token row, which transformers reads and kbert
            does not, written as zeros); `None`: the weights as they are.
        companion: a second Hugging Face model beside the main one, or `None`.
        task_dropout: kbert task -> the config.json field with its head's dropout rate
            (`classifier_dropout`); a task not named here uses the encoder's dropout.
        task_head_names: the names of kbert's head layers (`kbert.convert.task_heads`) that
            the family's task classes name otherwise: kbert's name -> the family's, outside
            the encoder's prefix (DeBERTa's ContextPooler: `classifier.dense` is
            `pooler.dense`, `classifier.out_proj` is `classifier`).
        check_task_config: optional `(task, config.json dict, source)`; raises ValueError
            when kbert's task model of `task` would not compute the checkpoint's (DeBERTa's
            ContextPooler other than transformers' default). Only a task load runs it
            (`kbert.convert.task_heads`): the encoder of that checkpoint still loads.
        hf_tokenizer: the `tokenizer_class` kbert writes where transformers has no
            `<hf_name>Tokenizer` (ModernBERT), or `None`.
        task_config_to_hf: optional `(TaskHead) -> dict`: the config.json entries a task
            model's own arguments fix, written over the encoder's (ModernBERT's
            `classifier_pooling`: a TextClassifier's head "cls" or "mean").

        tf1_name: `TF1 variable name -> (common name, transpose?) or None`; `None` when the
            family has no original TF1 release.
        tf1_pattern: a regex that some variable name of the family's TF1 checkpoints matches
            and no other family's do; `None` for the one family of the TF1 checkpoints that
            no pattern matches (BERT).
        tf1_config_files: the config file names of the releases, first found wins.
        config_from_google: `(config dict, source) -> config` for those files.
        config_from_weights: optional `(weights, source) -> config` for releases without a
            config file (ELECTRA).

        keras_hub_class: the class name of keras-hub's backbone of the family; `None` when
            keras-hub has none (MobileBERT).
        config_from_keras_hub: `backbone.get_config() dict -> config`; `None` with it.
        keras_hub_pairs: optional `(keras-hub backbone, kbert backbone) -> [(variable,
            value)]`, each kbert variable with keras-hub's value in kbert's layout; `None`:
            the BERT-like pairing of `kbert.convert.keras_hub` (embeddings, post-LN blocks).

        sentencepiece_file: the SentencePiece model's file name in a Hugging Face directory
            (ALBERT's spiece.model, DeBERTa-v3's spm.model).
        sentencepiece_arguments: keyword arguments of `kbert.tokenizers.SentencePieceTokenizer`
            for the family's SentencePiece model (plain data: `special_pieces`,
            `added_pieces`, `albert_preprocess`); empty: ALBERT's.
        spare_vocabulary_rows: the token table may have more rows than the tokenizer has
            tokens (DeBERTa-v3: 128100 rows, 128001 tokens).
        lowercase: whether the family's SentencePiece tokenizer lower-cases where the
            checkpoint does not say (keras-hub presets, a directory without
            tokenizer_config.json): ALBERT's does, DeBERTa-v3's is cased.
    """

    name: str
    entries: Callable
    heads_in: Callable
    pretrainer_arguments: Optional[Callable] = None

    model_type: str
    hf_name: str
    pretrainer_hf_class: str = "ForPreTraining"
    prefix: str
    head_prefixes: tuple
    tied: tuple = ()
    aliases: Mapping = dataclasses.field(default_factory=dict)
    config_fields: Mapping
    shapes: Shapes
    config_from_hf: Callable
    config_to_hf: Callable
    not_in_hf: tuple = ()
    to_hf_weights: Optional[Callable] = None
    companion: Optional[Companion] = None
    task_dropout: Mapping = dataclasses.field(default_factory=dict)
    task_head_names: Mapping = dataclasses.field(default_factory=dict)
    check_task_config: Optional[Callable] = None
    task_config_to_hf: Optional[Callable] = None
    hf_tokenizer: Optional[str] = None

    tf1_name: Optional[Callable] = None
    tf1_pattern: Optional[str] = None
    tf1_config_files: tuple = ()
    config_from_google: Optional[Callable] = None
    config_from_weights: Optional[Callable] = None

    keras_hub_class: Optional[str] = None
    config_from_keras_hub: Optional[Callable] = None
    keras_hub_pairs: Optional[Callable] = None

    sentencepiece_file: str = "spiece.model"
    sentencepiece_arguments: Mapping = dataclasses.field(default_factory=dict)
    spare_vocabulary_rows: bool = False
    lowercase: bool = True

    def __post_init__(self):
        # A record that breaks the contract fails when its module is imported, not when a
        # user first reads a checkpoint of that family.
        unknown = set(self.task_dropout) - set(HF_TASKS)
        if unknown:
            raise TypeError(f"{self.name}: task_dropout takes the tasks {', '.join(HF_TASKS)}, "
                            f"not {sorted(unknown)}.")
        if self.tf1_name is None and (self.tf1_pattern or self.tf1_config_files
                                      or self.config_from_google or self.config_from_weights):
            raise TypeError(f"{self.name}: TF1 fields without tf1_name.")
        if self.tf1_name is not None and self.config_from_google is None:
            raise TypeError(f"{self.name}: tf1_name without config_from_google.")

    @property
    def architectures(self):
        """`head` (None, "mlm", "pretrainer") -> the Hugging Face class in config.json."""
        return {None: f"{self.hf_name}Model", "mlm": f"{self.hf_name}ForMaskedLM",
                "pretrainer": f"{self.hf_name}{self.pretrainer_hf_class}"}

    @property
    def task_architectures(self):
        """kbert task ("text_classifier") -> the Hugging Face class of that fine-tuned model
        (`BertForSequenceClassification`), for every task with one (`kbert.tasks.registry`'s
        `hf_class`). The heads' weight names are the same in every family
        (`kbert.convert.task_heads`)."""
        return {task: self.hf_name + registry.RECORDS[task].hf_class for task in HF_TASKS}

    @property
    def tokenizer_class(self):
        """tokenizer_config.json's `tokenizer_class`: `hf_tokenizer`, or
        `<hf_name>Tokenizer`."""
        return self.hf_tokenizer or f"{self.hf_name}Tokenizer"


def classifier_dropout(field="classifier_dropout"):
    """`task_dropout` where the sequence and token classifiers read one config.json field (as
    transformers' BERT-like `*ForSequenceClassification` / `*ForTokenClassification` do)."""
    return {"text_classifier": field, "token_classifier": field}


# Where the tensors of every family show the embedding sizes (`FamilyFormat.shapes`).
EMBEDDING_SIZES = {
    "vocabulary_size": ("embeddings.word_embeddings.weight", 0),
    "embedding_size": ("embeddings.word_embeddings.weight", 1),
    "max_sequence_length": ("embeddings.position_embeddings.weight", 0),
    "type_vocab_size": ("embeddings.token_type_embeddings.weight", 0),
}


def block_shapes(block, **fields):
    """The `Shapes` of a family with the common embeddings and blocks named by `block` (a
    `kbert.convert._mapping.BlockNames`): the width and the feed-forward size are those of
    block 0's query and intermediate layers, and the blocks are counted by their index in
    `block.layers`. `fields`: the other `Shapes` fields."""
    first = block.layers.format(0)
    sizes = {**EMBEDDING_SIZES, "hidden_size": (f"{first}{block.query}.weight", 0),
             "intermediate_size": (f"{first}{block.intermediate}.weight", 0)}
    layers = re.escape(block.layers.split("{}")[0]) + r"(\d+)\."
    return Shapes(sizes=sizes, layers=layers, **fields)


# The module-level names a family module gives its record's tables.
_MODULE_TABLES = {"model_type": "MODEL_TYPE", "config_fields": "CONFIG_FIELDS",
                  "shapes": "SHAPES"}


def record(namespace, **fields):
    """A family module's `FamilyFormat`: `fields`, and where they do not name them,
    - the hooks the module defines under their field's names (`entries`, `heads_in`,
      `config_from_hf`, `tf1_name`, ...), and its `MODEL_TYPE`, `CONFIG_FIELDS` and `SHAPES`;
    - from its `HEADS` (a `kbert.convert._mapping.Heads`), where it has one: `heads_in`,
      `head_prefixes`, `tied`, `aliases`, "ForMaskedLM" as `pretrainer_hf_class` where
      pretraining is the masked LM alone (no `nsp` head), and with its `backbone_entries`
      (`backbone -> [Entry]`), `entries`.

    `namespace` is the module's `globals()`; a hook it does not define stays `None` (or the
    record refuses a required one by name)."""
    found = {}
    heads = namespace.get("HEADS")
    if heads is not None:
        found.update(heads_in=heads.heads_in, head_prefixes=heads.prefixes, tied=heads.tied,
                     aliases=heads.aliases)
        if heads.nsp is None:
            found["pretrainer_hf_class"] = "ForMaskedLM"
        if "backbone_entries" in namespace:
            found["entries"] = heads.model_entries(namespace["backbone_entries"])
    found.update({f.name: namespace[f.name] for f in dataclasses.fields(FamilyFormat)
                  if "Callable" in str(f.type) and callable(namespace.get(f.name))})
    found.update({field: namespace[name] for field, name in _MODULE_TABLES.items()
                  if name in namespace})
    return FamilyFormat(**{**found, **fields})
