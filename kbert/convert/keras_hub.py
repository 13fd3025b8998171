"""keras-hub's BERT-family backbones: their preset directories, and their weights in kbert's
common form.

keras-hub's weights go through the family's weight map like every other format's: each is
paired with the kbert variable at the same place of the architecture, which the four families
share (embeddings, an optional projection, post-LN blocks, an optional pooler), and the family's
`entries` give it its common (Hugging Face) name. keras-hub keeps separate query/key/value
projections ([H, N, D] kernels) where kbert fuses them ([H, 3, N, D]), so the pairing stacks
them.
"""

import logging
from pathlib import Path

import numpy as np

from kbert import _extras, _keras_private
from kbert.convert import _checks, _mapping, families


_numpy = _mapping.numpy_value


def _blocks(source):
    """The backbone's transformer blocks; ALBERT's groups must hold one block each."""
    blocks = source.transformer_layers
    if blocks and isinstance(blocks[0], (list, tuple)):  # ALBERT: groups of inner layers
        if any(len(group) != 1 for group in blocks):
            raise ValueError("keras-hub ALBERT with num_inner_repetitions > 1 has no kbert form.")
        blocks = [group[0] for group in blocks]
    return blocks


class _ZeroSegments:
    """An all-zero segment table in keras-hub's place, for a backbone that has none."""

    name = "segment_embedding"

    def __init__(self, shape):
        self.embeddings = np.zeros(tuple(shape), "float32")


def _pairs(source, target):
    """(variable of the kbert backbone `target`, the keras-hub value for it in kbert's layout)
    for every weight. Raises ValueError where the architectures differ (block count, a weight
    one side lacks, or any weight shape)."""
    _keras_private.guard("keras_hub_encoder_sublayers")
    blocks = _blocks(source)
    if len(blocks) != len(target.transformer_layers):
        raise ValueError(
            f"keras-hub backbone has {len(blocks)} transformer blocks, "
            f"kbert backbone {len(target.transformer_layers)}."
        )
    embeddings = getattr(source, "embeddings", None)  # DistilBERT: TokenAndPositionEmbedding
    if embeddings is not None and hasattr(embeddings, "position_embedding"):
        token_table = embeddings.token_embedding.embeddings
        position_table = embeddings.position_embedding.position_embeddings
    else:
        token_table = source.token_embedding.embeddings
        position_table = source.position_embedding.position_embeddings
    ours = target.embeddings
    position_table = _numpy(position_table)
    if ours.position_offset:
        # RoBERTa: keras-hub counts the positions from row 0 and has no rows for the padding
        # index, which kbert's table has first (padding tokens' outputs are masked anyway).
        position_table = np.concatenate(
            [np.zeros((ours.position_offset, position_table.shape[1]), position_table.dtype),
             position_table])
    segment_table = getattr(source, "segment_embedding", None)
    if (segment_table is None and ours.segment_embedding is not None
            and ours.segment_embedding.input_dim == 1):
        # RoBERTa's one segment row, added to every token: keras-hub has none, i.e. zeros.
        segment_table = _ZeroSegments(ours.segment_embedding.embeddings.shape)
    pairs = [
        (ours.token_embedding.embeddings, token_table),
        (ours.position_embedding, position_table),
        (ours.layer_norm.gamma, source.embeddings_layer_norm.gamma),
        (ours.layer_norm.beta, source.embeddings_layer_norm.beta),
    ]
    optional = [  # (kbert layer, keras-hub layer): both present or both absent
        (ours.segment_embedding, segment_table, ("embeddings",)),
        (ours.projection, getattr(source, "embeddings_projection", None), ("kernel", "bias")),
        (target.pooler and target.pooler.dense, getattr(source, "pooled_dense", None),
         ("kernel", "bias")),
    ]
    for mine, theirs, names in optional:
        if (mine is None) != (theirs is None):
            raise ValueError(
                f"keras-hub {type(source).__name__} and kbert {type(target).__name__} differ: "
                f"one has {getattr(theirs, 'name', None) or getattr(mine, 'name', '?')}, the "
                "other not."
            )
        if mine is not None:
            pairs += [(getattr(mine, n), getattr(theirs, n)) for n in names]
    for ours, theirs in zip(target.transformer_layers, blocks):
        attention = theirs._self_attention_layer
        projections = (attention._query_dense, attention._key_dense, attention._value_dense)
        qkv_kernel = np.stack([_numpy(p.kernel) for p in projections], axis=1)  # [H, 3, N, D]
        qkv_bias = np.stack([_numpy(p.bias) for p in projections], axis=0)  # [3, N, D]
        pairs += [(ours.qkv_dense.kernel, qkv_kernel), (ours.qkv_dense.bias, qkv_bias)]
        pairs += _mapping.keras_hub_block_pairs(ours, theirs)
    result = []
    for variable, value in pairs:
        value = _numpy(value)
        if tuple(variable.shape) != value.shape:
            raise ValueError(
                f"Shape mismatch for {variable.path}: kbert {tuple(variable.shape)}, "
                f"keras-hub {value.shape}."
            )
        result.append((variable, value))
    return result


def keras_hub_weights(source, template):
    """A keras-hub backbone's weights in the common form (numpy arrays keyed by Hugging Face
    names), as the family's weight map names the variables of `template`, a kbert backbone of
    the same architecture (only its structure is used)."""
    family = families.of_model(template)
    pairs = (family.keras_hub_pairs or _pairs)(source, template)
    for variable, value in pairs:
        if tuple(variable.shape) != np.shape(value):
            raise ValueError(f"Shape mismatch for {variable.path}: kbert "
                             f"{tuple(variable.shape)}, keras-hub {np.shape(value)}.")
    values = {id(variable): value for variable, value in pairs}
    return _mapping.weights_of(family.entries(template), values)


def weights_from_keras_hub(source, target):
    """Copies a keras-hub backbone's weights into the kbert backbone of the same architecture.

    Works for keras-hub's `BertBackbone` -> `BertBackbone`, `AlbertBackbone` ->
    `AlbertBackbone`, `DistilBertBackbone` -> `DistilBertBackbone`, `ElectraBackbone` ->
    `ElectraBackbone` and `RobertaBackbone` -> `RobertaBackbone`. Raises ValueError when the architectures differ (block count, a weight
    one side lacks, or any weight shape).
    """
    _mapping.assign(families.of_model(target).entries(target), keras_hub_weights(source, target),
                    source=f"keras-hub {type(source).__name__}")
    return target


bert_weights_from_keras_hub = weights_from_keras_hub  # the name of kbert 0.1's BERT-only copy


def is_keras_hub(path):
    config = Path(path) / "config.json"
    if not config.is_file():
        return False
    try:
        return "registered_name" in _checks.read_json(config)
    except _checks.CheckpointError:  # the reader of the format it is names the problem
        return False


def read(path):
    """Reads a keras-hub BERT, ALBERT, DistilBERT, ELECTRA or RoBERTa preset directory (config.json,
    model.weights.h5, tokenizer assets) into a `Checkpoint`.

    The backbone's weights come across. keras-hub's task heads (task.json) are not read: its
    `BertMaskedLM` head, for one, applies the exact GELU where the backbone and kbert's head
    use the tanh form.
    """
    keras_hub = _extras.require("keras_hub", "keras-hub", f"Reading the keras-hub preset {path}")

    from kbert import models
    from kbert.convert.checkpoint import Checkpoint
    from kbert.tokenizers import tokenizer_types
    from kbert.tokenizers.bpe.tokenizer import merge_pairs

    path = Path(path)
    config_file = path / "config.json"
    values = _checks.read_json(config_file, "a keras-hub backbone config (registered_name, "
                                            "config)")
    family = families.by_keras_hub_class(
        str(values.get("registered_name", "")).rsplit(">", 1)[-1], source=str(config_file))
    if not isinstance(values.get("config"), dict):
        raise _checks.CheckpointError(f"{config_file} has no backbone config object.")
    config = _checks.make_config(lambda v, source: family.config_from_keras_hub(v),
                                 values["config"], str(config_file))
    _checks.check_sizes(config, str(config_file))  # before keras-hub allocates the backbone
    try:
        source = keras_hub.models.Backbone.from_preset(str(path))
    except (ValueError, OSError, KeyError, TypeError) as error:
        raise _checks.CheckpointError(f"{path}: keras-hub cannot load the preset "
                                      f"({error}).") from None
    if family is not families.by_keras_hub_class(type(source).__name__, source=str(path)):
        raise _checks.CheckpointError(f"{config_file} names {values['registered_name']}, "
                                      f"keras-hub built a {type(source).__name__}.")
    config = family.config_from_keras_hub(source.get_config())
    weights = keras_hub_weights(source, models.build(family.name, config, head=None))
    if (path / "task.json").is_file():
        logging.info("%s: task.json is not read; only the backbone is imported.", path)
    vocabulary, lowercase, sentencepiece, merges = None, True, None, None
    if (path / "tokenizer.json").is_file():
        vocabulary, lowercase, sentencepiece, merges = tokenizer_types.keras_hub_assets(
            keras_hub.models.Tokenizer.from_preset(str(path)), family.lowercase)
    return Checkpoint(family.name, config, weights, vocabulary, lowercase, source=str(path),
                      sentencepiece_model=sentencepiece,
                      merges=None if merges is None else merge_pairs(merges, str(path)))
