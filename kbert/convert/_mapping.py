"""What every family's weight map shares: the layouts, and assigning or reading a whole map.

A family module (`bert`, `albert`, `distil_bert`, ...) lists its model's variables as
`Entry`s: the Hugging Face names of a tensor (the model prefix such as `bert.` dropped), the
kbert variable, and how the two layouts differ. Every reader turns its format into those
names, so one `assign` and one `weights_of` serve all formats and families. The families
differ in names, not in rules: each gives its block's names (`BlockNames`, or a table of
(name, attribute) rows where the block's projections are separate layers) and its heads'
(`Heads`), and the builders here walk the model.
"""

import collections
import dataclasses
from typing import Optional

import keras
import numpy as np

# Hugging Face `hidden_act` -> kbert activation. Hugging Face's "gelu" is the exact erf form;
# google-research's "gelu" is the tanh form, which Hugging Face calls "gelu_new".
HF_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_new": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
    "tanh": "tanh",
    "linear": "linear",
}
KBERT_TO_HF_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_approximate": "gelu_new",
    "relu": "relu",
    "silu": "silu",
    "tanh": "tanh",
    "linear": "linear",
}
# google-research's bert_config.json / albert_config.json: "gelu" is the tanh approximation.
GOOGLE_ACTIVATIONS = {"gelu": "gelu_approximate", "relu": "relu", "tanh": "tanh",
                      "linear": "linear"}


def activation(value, table, source):
    if value not in table:
        raise ValueError(
            f"{source}: hidden_act={value!r} is not supported. Supported: "
            f"{', '.join(sorted(table))}."
        )
    return table[value]


# Kinds convert between layouts:
#   copy       same array (position tables may be cut to a shorter max_sequence_length)
#   dense      HF [out, in] <-> Keras [in, out]
#   qkv        three HF [H, H] (query, key, value) <-> kbert's fused [H, 3, N, D]
#   qkv_bias   three HF [H] <-> [3, N, D]
#   attn_out   HF [H, N*D] <-> [N, D, H]
# `optional`: the model keeps its initial value when the checkpoint lacks the tensor (the
# pooler of ELECTRA, which Hugging Face and the original release do not have).
Entry = collections.namedtuple("Entry", "names variable kind optional", defaults=(False,))


# The Hugging Face names of the parts of one kbert `TransformerEncoder` block (each a module
# path without `.weight` / `.bias`), under `layers` (a template of the block index: BERT's
# "encoder.layer.{}.").
BlockNames = collections.namedtuple(
    "BlockNames",
    "layers query key value attention_output attention_norm intermediate output output_norm")


def block_entries(block, prefix, names):
    """The entries of one kbert `TransformerEncoder` under `prefix` + the `BlockNames`."""
    qkv = tuple(prefix + n for n in (names.query, names.key, names.value))
    attention_output = prefix + names.attention_output
    return [
        Entry(tuple(f"{n}.weight" for n in qkv), block.qkv_dense.kernel, "qkv"),
        Entry(tuple(f"{n}.bias" for n in qkv), block.qkv_dense.bias, "qkv_bias"),
        Entry((f"{attention_output}.weight",), block.attention_output_dense.kernel, "attn_out"),
        Entry((f"{attention_output}.bias",), block.attention_output_dense.bias, "copy"),
        *layer_norm_entries(prefix + names.attention_norm, block.attention_layer_norm),
        *dense_entries(prefix + names.intermediate, block.intermediate_dense),
        *dense_entries(prefix + names.output, block.output_dense),
        *layer_norm_entries(prefix + names.output_norm, block.output_layer_norm),
    ]


def encoder_entries(blocks, names, prefix=""):
    """The entries of kbert `TransformerEncoder` blocks: block i under
    `prefix + names.layers.format(i)` (`names` a `BlockNames`)."""
    result = []
    for i, block in enumerate(blocks):
        result += block_entries(block, prefix + names.layers.format(i), names)
    return result


def backbone_entries(backbone, block, projection=None, pooler=None):
    """The entries of a backbone of the common layout: its `Embeddings`, the Dense layer that
    projects them to the blocks' width under `projection` (ALBERT's), the blocks (`block` a
    `BlockNames`), and the pooler's Dense layer under `pooler`; `None`: the backbone has none."""
    result = embedding_entries(backbone.embeddings)
    if projection is not None:
        result += dense_entries(projection, backbone.embeddings.projection)
    result += encoder_entries(backbone.transformer_layers, block)
    if pooler is not None:
        result += dense_entries(pooler, backbone.pooler.dense)
    return result


def layer_entries(name, layer):
    """A Dense layer's (kernel, bias), or a normalization's (gamma, beta: a LayerNormalization
    or MobileBERT's NoNorm), under `name.weight` and `name.bias`."""
    if hasattr(layer, "kernel"):
        return dense_entries(name, layer)
    return layer_norm_entries(name, layer)


def layers_entries(prefix, owner, table):
    """`layer_entries` for each (name, attribute of `owner`) of `table`, the names under
    `prefix`: the blocks whose projections are separate layers (DeBERTa-v3's, MobileBERT's)."""
    return [entry for name, attribute in table
            for entry in layer_entries(prefix + name, getattr(owner, attribute))]


def dense_entries(name, layer, optional=False):
    return [Entry((f"{name}.weight",), layer.kernel, "dense", optional),
            Entry((f"{name}.bias",), layer.bias, "copy", optional)]


def layer_norm_entries(name, layer):
    return [Entry((f"{name}.weight",), layer.gamma, "copy"),
            Entry((f"{name}.bias",), layer.beta, "copy")]


def embedding_entries(embeddings, prefix="embeddings."):
    """The token, position and segment tables and the LayerNorm of an `Embeddings` layer."""
    result = [
        Entry((f"{prefix}word_embeddings.weight",), embeddings.token_embedding.embeddings,
              "copy"),
        Entry((f"{prefix}position_embeddings.weight",), embeddings.position_embedding, "copy"),
        *layer_norm_entries(f"{prefix}LayerNorm", embeddings.layer_norm),
    ]
    if embeddings.segment_embedding is not None:
        result.append(Entry((f"{prefix}token_type_embeddings.weight",),
                            embeddings.segment_embedding.embeddings, "copy"))
    return result


def masked_lm_entries(head, dense, layer_norm, bias):
    """A kbert `MaskedLMHead` (its output weights are tied to the token table)."""
    return [*dense_entries(dense, head.dense), *layer_norm_entries(layer_norm, head.layer_norm),
            Entry((bias,), head.output_bias, "copy")]


@dataclasses.dataclass(frozen=True)
class Heads:
    """Where a family keeps its pretraining heads, in Hugging Face names (module paths).

    Attributes:
        mlm: the masked LM's (dense, LayerNorm, output bias).
        decoder: the masked LM's output layer, whose weight is the token table again (not
            kept) and whose bias, where it has its own name, is the output bias; `None` where
            the file has no such layer.
        nsp: the sentence-pair classifier (BERT's next sentence, ALBERT's sentence order), or
            `None` where pretraining is the masked LM alone.
        mlm_extra: the masked LM's extra output rows (MobileBERT's [hidden - embedding,
            vocabulary] `cls.predictions.dense`), or `None`.
    """

    mlm: tuple
    decoder: Optional[str] = None
    nsp: Optional[str] = None
    mlm_extra: Optional[str] = None

    @property
    def prefixes(self):
        """The first parts of the heads' names (`FamilyFormat.head_prefixes`)."""
        names = (*self.mlm, self.nsp, self.mlm_extra)
        return tuple(dict.fromkeys(n.split(".")[0] + "." for n in names if n is not None))

    @property
    def tied(self):
        """The decoder's copy of the token table (`FamilyFormat.tied`)."""
        return () if self.decoder is None else (f"{self.decoder}.weight",)

    @property
    def aliases(self):
        """The decoder's bias -> the output bias (`FamilyFormat.aliases`)."""
        bias = f"{self.decoder}.bias"
        return {} if self.decoder is None or bias == self.mlm[2] else {bias: self.mlm[2]}

    def entries(self, model):
        """The entries of the heads `model` has (none for a backbone)."""
        result = []
        head = getattr(model, "mlm_head", None)
        if head is not None:
            result += masked_lm_entries(head, *self.mlm)
            if self.mlm_extra is not None:
                result.append(Entry((f"{self.mlm_extra}.weight",), head.extra_output_kernel,
                                    "dense"))
        if self.nsp is not None and getattr(model, "nsp_head", None) is not None:
            result += dense_entries(self.nsp, model.nsp_head.dense)
        return result

    def heads_in(self, weights):
        """The `head` argument that uses every head present in `weights` ("pretrainer",
        "mlm" or None); "pretrainer" and "mlm" are the same where there is no `nsp`."""
        if f"{self.mlm[0]}.weight" not in weights:
            return None
        if self.nsp is None or f"{self.nsp}.weight" in weights:
            return "pretrainer"
        return "mlm"

    def model_entries(self, backbone_entries):
        """A family's `entries`: `model -> the entries of its backbone (by `backbone_entries`,
        `backbone -> [Entry]`) and of these heads`."""
        def entries(model):
            return backbone_entries(getattr(model, "backbone", model)) + self.entries(model)
        return entries


def _to_kbert(arrays, kind, shape):
    if kind == "copy":
        (a,) = arrays
        if a.ndim == 2 and len(shape) == 2 and a.shape[1] == shape[1] and a.shape[0] > shape[0]:
            a = a[: shape[0]]  # a position table cut to a shorter max_sequence_length
        return a
    if kind == "dense":
        return arrays[0].T
    if kind == "qkv":
        hidden, _, heads, size = shape
        return np.stack([a.T.reshape(hidden, heads, size) for a in arrays], axis=1)
    if kind == "qkv_bias":
        return np.stack([a.reshape(shape[1:]) for a in arrays], axis=0)
    if kind == "attn_out":
        return arrays[0].T.reshape(shape)
    raise AssertionError(kind)


def _to_hf(value, kind):
    if kind == "copy":
        return (value,)
    if kind == "dense":
        return (value.T,)
    if kind == "qkv":
        hidden = value.shape[0]
        return tuple(value[:, c].reshape(hidden, -1).T for c in range(3))
    if kind == "qkv_bias":
        return tuple(value[c].reshape(-1) for c in range(3))
    if kind == "attn_out":
        return (value.reshape(-1, value.shape[-1]).T,)
    raise AssertionError(kind)


def assign(entries, weights, source="checkpoint"):
    """Assigns `weights` (Hugging Face names) to the variables of `entries`.

    Raises a ValueError naming every missing tensor and every shape that does not fit, before
    any variable changes. Returns (the names in `weights` that no entry used, the names of the
    optional entries that kept their initial value).
    """
    missing = [n for e in entries if not e.optional for n in e.names if n not in weights]
    if missing:
        shown = ", ".join(missing[:8]) + (f" (and {len(missing) - 8} more)" if len(missing) > 8
                                          else "")
        raise ValueError(f"{source} lacks {len(missing)} tensors the model needs: {shown}.")
    updates, kept = [], []
    for names, variable, kind, _ in entries:
        if any(n not in weights for n in names):
            kept += names
            continue
        value = _to_kbert([np.asarray(weights[n]) for n in names], kind, tuple(variable.shape))
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(
                f"{source}: {names[0]} gives shape {tuple(value.shape)} for {variable.path}, "
                f"which has shape {tuple(variable.shape)}."
            )
        updates.append((variable, value))
    for variable, value in updates:
        # Through numpy: under JAX, assigning one variable's value to another shares a buffer.
        variable.assign(np.asarray(value, dtype=variable.dtype))
    used = {n for e in entries for n in e.names}
    return sorted(set(weights) - used), kept


def weights_of(entries, values=None):
    """The variables of `entries` as float32 numpy arrays keyed by Hugging Face names.

    `values`, when given, holds an array in kbert's layout for every variable, keyed by
    `id(variable)`, to name instead of the variables' own values: how another format's weights
    (keras-hub's), paired with a kbert model's variables, reach the common form.
    """
    result = {}
    for names, variable, kind, _ in entries:
        value = variable if values is None else values[id(variable)]
        value = keras.ops.convert_to_numpy(value).astype("float32")
        for name, array in zip(names, _to_hf(value, kind)):
            result[name] = np.ascontiguousarray(array)
    return result


def numpy_value(variable):
    """A variable's or an array's value as a numpy array."""
    return np.asarray(variable.numpy() if hasattr(variable, "numpy") else variable)


def keras_hub_block_pairs(ours, theirs):
    """(kbert variable, keras-hub value) for what follows the attention scores in a block:
    the attention output, both LayerNorms and the feed-forward layers of keras-hub's
    `TransformerEncoder` (`theirs`, BERT's and DeBERTa-v3's alike) and kbert's block
    (`ours`). The query / key / value projections differ between the families: the caller's."""
    attention = theirs._self_attention_layer
    return [
        (ours.attention_output_dense.kernel, attention._output_dense.kernel),
        (ours.attention_output_dense.bias, attention._output_dense.bias),
        (ours.attention_layer_norm.gamma, theirs._self_attention_layer_norm.gamma),
        (ours.attention_layer_norm.beta, theirs._self_attention_layer_norm.beta),
        (ours.intermediate_dense.kernel, theirs._feedforward_intermediate_dense.kernel),
        (ours.intermediate_dense.bias, theirs._feedforward_intermediate_dense.bias),
        (ours.output_dense.kernel, theirs._feedforward_output_dense.kernel),
        (ours.output_dense.bias, theirs._feedforward_output_dense.bias),
        (ours.output_layer_norm.gamma, theirs._feedforward_layer_norm.gamma),
        (ours.output_layer_norm.beta, theirs._feedforward_layer_norm.beta),
    ]
