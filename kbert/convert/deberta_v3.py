"""DeBERTa-v3 weights in Hugging Face names (`DebertaV2ForMaskedLM` without `deberta.`).

The encoder: `embeddings.word_embeddings`, `embeddings.LayerNorm`, `encoder.rel_embeddings`
and `encoder.LayerNorm` (the relative table and its LayerNorm), and per block
`encoder.layer.N.attention.self.{query,key,value}_proj`, `attention.output.{dense,LayerNorm}`,
`intermediate.dense`, `output.{dense,LayerNorm}`. The masked-LM head is the released models'
`lm_predictions.lm_head.{dense,LayerNorm,bias}` (transformers' `legacy=False`); transformers'
legacy names `cls.predictions.transform.*` / `cls.predictions.bias` read as the same head.
The released checkpoints also hold the discriminator's `mask_predictions.*`, which no
transformers class reads; kbert leaves them unused.

Fine-tuned: `DebertaV2ForSequenceClassification` is a `ContextPooler` (`pooler.dense` on the
[CLS] hidden state, then `pooler_hidden_act`) and `classifier`, outside the `deberta.`
prefix: kbert's `TextClassifier` with head="cls" computes it (a `ClassificationHead` whose
`dense` and `out_proj` are those two). transformers drops out before the pooler's dense at
`pooler_dropout` (0 by default) and before `classifier` at `cls_dropout`; kbert's head has
one rate for both, read from `cls_dropout` (training only: inference has no dropout).
`DebertaV2ForTokenClassification` (`classifier`, at the encoder's dropout) and
`DebertaV2ForQuestionAnswering` (`qa_outputs`) are the common heads.
"""

from kbert import _keras_private
from kbert.convert import _family, _mapping, bert
from kbert.convert._family import Shapes
from kbert.models import DebertaV3Config

MODEL_TYPE = "deberta-v2"  # transformers' DebertaV2* classes serve DeBERTa-v2 and -v3

CONFIG_FIELDS = {**bert.CONFIG_FIELDS, "position_buckets": "position_buckets"}
_BLOCK = "encoder.layer.0."
SHAPES = Shapes(
    sizes={"vocabulary_size": ("embeddings.word_embeddings.weight", 0),
           "embedding_size": ("embeddings.word_embeddings.weight", 1),
           "type_vocab_size": ("embeddings.token_type_embeddings.weight", 0),
           "hidden_size": (f"{_BLOCK}attention.self.query_proj.weight", 0),
           "intermediate_size": (f"{_BLOCK}intermediate.dense.weight", 0)},
    layers=r"encoder\.layer\.(\d+)\.",
)
_HEAD = "lm_predictions.lm_head."
# The ContextPooler's activation that kbert's DeBERTa-v3 `ClassificationHead` computes.
POOLER_ACTIVATION = "gelu"


def _refuse(source, field, value, expected):
    raise ValueError(f"{source}: {field}={value!r}; kbert's DeBERTa-v3 has {expected}, as "
                     "every released DeBERTa-v3.")


def config_from_hf(values, source="config.json"):
    """A `DebertaV3Config` from a Hugging Face deberta-v2 config.json dict; the variants
    kbert has no form of (DeBERTa-v2's convolution, absolute positions, separate position
    projections, no relative attention) are refused by name."""
    if values.get("model_type", MODEL_TYPE) != MODEL_TYPE:
        raise ValueError(f"{source}: model_type={values['model_type']!r}, expected "
                         f"{MODEL_TYPE!r}.")
    checks = (("relative_attention", False, True, "relative attention (true)"),
              ("position_biased_input", True, False, "no absolute positions (false)"),
              ("share_att_key", False, True, "position projections shared with the "
                                             "content ones (share_att_key=true)"),
              ("conv_kernel_size", 0, 0, "no convolution layer (conv_kernel_size 0)"))
    for field, default, expected, what in checks:
        if values.get(field, default) != expected:
            _refuse(source, field, values.get(field, default), what)
    norm = [x.strip() for x in str(values.get("norm_rel_ebd", "none")).lower().split("|")]
    if "layer_norm" not in norm:
        _refuse(source, "norm_rel_ebd", values.get("norm_rel_ebd", "none"),
                "a layer-normalized relative table ('layer_norm')")
    if values.get("position_buckets", -1) <= 0:
        _refuse(source, "position_buckets", values.get("position_buckets", -1),
                "log-bucketed relative positions (position_buckets > 0)")
    if values.get("embedding_size", values.get("hidden_size")) != values.get("hidden_size"):
        _refuse(source, "embedding_size", values.get("embedding_size"),
                "embeddings as wide as hidden_size")
    if values.get("attention_head_size", None) not in (None, values["hidden_size"]
                                                       // values["num_attention_heads"]):
        _refuse(source, "attention_head_size", values["attention_head_size"],
                "hidden_size / num_attention_heads units per head")
    kwargs = bert.config_kwargs(values, CONFIG_FIELDS, _mapping.HF_ACTIVATIONS, source)
    kwargs.setdefault("layer_norm_epsilon", 1e-7)
    relative = values.get("max_relative_positions", -1)
    kwargs["max_relative_positions"] = relative if relative and relative > 0 else None
    types = values.get("pos_att_type") or ()
    kwargs["attention_types"] = types.split("|") if isinstance(types, str) else list(types)
    return DebertaV3Config(**kwargs)


def check_task_config(task, values, source="config.json"):
    """A sequence classifier's ContextPooler must be the one kbert's head computes: as wide
    as the encoder, with the exact GELU (transformers' defaults). Only the classification
    head reads the pooler, so only a task load checks it (`FamilyFormat.check_task_config`): the
    encoder of such a checkpoint loads with task=None."""
    if task != "text_classifier":
        return
    classifier = FAMILY.task_architectures["text_classifier"]
    size = values.get("pooler_hidden_size", values.get("hidden_size"))
    if size != values.get("hidden_size"):
        raise ValueError(
            f"{source}: a {classifier} with pooler_hidden_size={size} (hidden_size="
            f"{values.get('hidden_size')}); kbert's DeBERTa-v3 TextClassifier serves a "
            "pooler as wide as the encoder.")
    activation = values.get("pooler_hidden_act", POOLER_ACTIVATION)
    if activation != POOLER_ACTIVATION:
        raise ValueError(
            f"{source}: a {classifier} with pooler_hidden_act={activation!r}; kbert's "
            f"DeBERTa-v3 TextClassifier serves pooler_hidden_act={POOLER_ACTIVATION!r} "
            "(transformers' default).")


def config_to_hf(config):
    """A Hugging Face config.json dict for a `DebertaV3Config` (without `architectures`)."""
    values = bert.config_values(config, CONFIG_FIELDS, MODEL_TYPE)
    values.update(
        relative_attention=True, position_biased_input=False, share_att_key=True,
        norm_rel_ebd="layer_norm", pos_att_type=list(config.attention_types),
        max_relative_positions=config.max_relative_positions or -1,
        legacy=False,  # the head under lm_predictions.lm_head, as in the releases
        # transformers 4.57 would tie lm_head.dense (its "output embeddings") to the token
        # table and fail; the head reads the table itself.
        tie_word_embeddings=False,
    )
    return values


def config_from_keras_hub(values):
    """A `DebertaV3Config` from keras-hub's `DebertaV3Backbone.get_config()` (exact GELU,
    LayerNorm epsilon 1e-7, one dropout rate; the buckets reach max_sequence_length)."""
    return DebertaV3Config(
        vocabulary_size=values["vocabulary_size"], num_layers=values["num_layers"],
        hidden_size=values["hidden_dim"], num_heads=values["num_heads"],
        intermediate_size=values["intermediate_dim"], dropout=values["dropout"],
        attention_dropout=values["dropout"],
        max_sequence_length=values["max_sequence_length"],
        position_buckets=values["bucket_size"])


# (Hugging Face name, attribute of kbert's block): DeBERTa-v3's projections are separate.
_BLOCK = (
    ("attention.self.query_proj", "query_dense"),
    ("attention.self.key_proj", "key_dense"),
    ("attention.self.value_proj", "value_dense"),
    ("attention.output.dense", "attention_output_dense"),
    ("intermediate.dense", "intermediate_dense"),
    ("output.dense", "output_dense"),
    ("attention.output.LayerNorm", "attention_layer_norm"),
    ("output.LayerNorm", "output_layer_norm"),
)
# DeBERTa's Hugging Face form has one head, the masked LM: "pretrainer" and "mlm" alike.
HEADS = _mapping.Heads(mlm=(f"{_HEAD}dense", f"{_HEAD}LayerNorm", f"{_HEAD}bias"))


def backbone_entries(backbone):
    """The weight map of a kbert `DebertaV3Backbone`."""
    embeddings, relative = backbone.embeddings, backbone.relative_embedding
    result = [
        _mapping.Entry(("embeddings.word_embeddings.weight",),
                       embeddings.token_embedding.embeddings, "copy"),
        *_mapping.layer_norm_entries("embeddings.LayerNorm", embeddings.layer_norm),
        _mapping.Entry(("encoder.rel_embeddings.weight",), relative.embeddings, "copy"),
        *_mapping.layer_norm_entries("encoder.LayerNorm", relative.layer_norm),
    ]
    for i, block in enumerate(backbone.transformer_layers):
        result += _mapping.layers_entries(f"encoder.layer.{i}.", block, _BLOCK)
    return result


def entries(model):
    """The weight map of a kbert `DebertaV3Backbone` or `DebertaV3Pretrainer`."""
    if getattr(model, "generator", None) is not None:
        raise ValueError(
            "A DebertaV3RtdPretrainer has no Hugging Face form (transformers has no DeBERTa "
            "replaced-token-detection class); convert its pretrainer.discriminator().")
    return HEADS.model_entries(backbone_entries)(model)


_numpy = _mapping.numpy_value


def keras_hub_pairs(source, target):
    """(kbert variable, keras-hub value in kbert's layout) for every weight of keras-hub's
    `DebertaV3Backbone` `source` and the kbert `DebertaV3Backbone` `target`."""
    _keras_private.guard("keras_hub_encoder_sublayers")
    if len(source.transformer_layers) != len(target.transformer_layers):
        raise ValueError(f"keras-hub backbone has {len(source.transformer_layers)} blocks, "
                         f"kbert backbone {len(target.transformer_layers)}.")
    relative = source.relative_embeddings
    pairs = [
        (target.embeddings.token_embedding.embeddings, source.token_embedding.embeddings),
        (target.embeddings.layer_norm.gamma, source.embeddings_layer_norm.gamma),
        (target.embeddings.layer_norm.beta, source.embeddings_layer_norm.beta),
        (target.relative_embedding.embeddings, relative.rel_embeddings),
        (target.relative_embedding.layer_norm.gamma, relative.layer_norm.gamma),
        (target.relative_embedding.layer_norm.beta, relative.layer_norm.beta),
    ]
    for ours, theirs in zip(target.transformer_layers, source.transformer_layers):
        attention = theirs._self_attention_layer
        hidden = _numpy(attention._query_dense.kernel).shape[0]
        for mine, dense in ((ours.query_dense, attention._query_dense),
                            (ours.key_dense, attention._key_dense),
                            (ours.value_dense, attention._value_dense)):
            pairs += [(mine.kernel, _numpy(dense.kernel).reshape(hidden, -1)),
                      (mine.bias, _numpy(dense.bias).reshape(-1))]
        pairs += _mapping.keras_hub_block_pairs(ours, theirs)
    return [(variable, _numpy(value)) for variable, value in pairs]


FAMILY = _family.record(
    globals(),
    name="deberta_v3",
    prefix="deberta.",
    hf_name="DebertaV2",
    tied=("cls.predictions.decoder.weight",),  # the legacy head's copy of the token table
    aliases={"cls.predictions.transform.dense.weight": f"{_HEAD}dense.weight",
             "cls.predictions.transform.dense.bias": f"{_HEAD}dense.bias",
             "cls.predictions.transform.LayerNorm.weight": f"{_HEAD}LayerNorm.weight",
             "cls.predictions.transform.LayerNorm.bias": f"{_HEAD}LayerNorm.bias",
             "cls.predictions.decoder.bias": f"{_HEAD}bias",
             "cls.predictions.bias": f"{_HEAD}bias"},
    sentencepiece_file="spm.model",
    # kbert.tokenizers' DEBERTA_SPECIAL_PIECES (that module imports TensorFlow); [MASK] is
    # transformers' added token after the pieces; the text goes to SentencePiece as it is.
    sentencepiece_arguments={
        "special_pieces": {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]",
                           "mask": "[MASK]"},
        "added_pieces": ("[MASK]",),
        "albert_preprocess": False,
    },
    spare_vocabulary_rows=True,
    lowercase=False,
    task_dropout={"text_classifier": "cls_dropout"},
    task_head_names={"classifier.dense": "pooler.dense", "classifier.out_proj": "classifier"},
    keras_hub_class="DebertaV3Backbone",
)
