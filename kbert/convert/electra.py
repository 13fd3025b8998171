"""ELECTRA weights in Hugging Face names (without the `electra.` prefix).

- The discriminator is BERT's names plus `embeddings_project`, and its head
  `discriminator_predictions.{dense,dense_prediction}` (Hugging Face's `ElectraForPreTraining`).
- A released generator on its own is an `ElectraForMaskedLM`: the same encoder names and
  `generator_predictions.{dense,LayerNorm}` + `generator_lm_head.bias`; kbert builds it as
  an `ElectraMaskedLM` (`head="mlm"`).
- A whole `ElectraPretrainer` (what the original TF1 release holds) adds the generator's own
  encoder under `generator.` (`generator.embeddings_project`, `generator.encoder.layer.N`);
  the generator reads the discriminator's embedding tables, as in ELECTRA.

Neither Hugging Face nor the original release has a pooler (the ELECTRA paper fine-tunes on
the [CLS] vector); kbert's `ElectraBackbone` has keras-hub's, which keeps its initial value
on import, and Hugging Face exports leave it out.
"""

import logging
import re
import types

import numpy as np

from kbert.convert import _family, _mapping, bert
from kbert.convert._family import Companion
from kbert.models import ElectraConfig
from kbert.models.electra.electra_generator import generator_size

MODEL_TYPE = "electra"
GENERATOR = "generator."  # the generator encoder's prefix in an ElectraPretrainer's weights
_GENERATOR_HEAD = ("generator_predictions.", "generator_lm_head.")

CONFIG_FIELDS = {**bert.CONFIG_FIELDS, "embedding_size": "embedding_size"}


def config_from_hf(values, source="config.json"):
    bert.check_model_type(values, MODEL_TYPE, source)
    kwargs = bert.config_kwargs(values, CONFIG_FIELDS, _mapping.HF_ACTIVATIONS, source)
    if kwargs.get("embedding_size", 128) == kwargs.get("hidden_size"):
        kwargs["embedding_size"] = None
    kwargs.setdefault("embedding_size", 128)  # Hugging Face's default
    return ElectraConfig(**kwargs)


def config_from_google(values, source="config.json"):
    """From a google-research-style config dict ("gelu" there is the tanh form), for a TF1
    checkpoint given one; the releases have none (see `config_from_weights`)."""
    return ElectraConfig(**bert.config_kwargs(values, CONFIG_FIELDS, _mapping.GOOGLE_ACTIVATIONS,
                                              source))


def config_to_hf(config):
    values = bert.config_values(config, CONFIG_FIELDS, MODEL_TYPE)
    values.update(embedding_size=config.embedding_size or config.hidden_size,
                  position_embedding_type="absolute")
    return values


def config_from_keras_hub(values):
    """An `ElectraConfig` from keras-hub's `ElectraBackbone.get_config()`."""
    embedding = values["embedding_dim"]
    return ElectraConfig(**bert.keras_hub_config_kwargs(values),
                         embedding_size=None if embedding == values["hidden_dim"] else embedding)


def _google_shape(hidden):
    """(heads, intermediate size) of an encoder of width `hidden` as google-research/electra
    sizes it (one head per 64 units, 4 x width feed-forward): the rule of kbert's
    `generator_size`, asked for a generator as wide as `hidden`."""
    _, _, heads, intermediate = generator_size(
        types.SimpleNamespace(hidden_size=hidden, num_layers=1), 1.0, 1.0)
    return heads, intermediate


def generator_config_to_hf(config, weights):
    """The config.json of the generator in an `ElectraPretrainer`'s `weights`."""
    hidden = weights[f"{GENERATOR}encoder.layer.0.attention.self.query.weight"].shape[0]
    heads, intermediate = _google_shape(hidden)
    values = config_to_hf(config)
    values.update(hidden_size=hidden, num_hidden_layers=_layers(weights, GENERATOR),
                  num_attention_heads=heads, intermediate_size=intermediate)
    return values


def _encoder_entries(embeddings_project, blocks, prefix=""):
    result = []
    if embeddings_project is not None:
        result += _mapping.dense_entries(f"{prefix}embeddings_project", embeddings_project)
    return result + _mapping.encoder_entries(blocks, bert.BLOCK, prefix)


def _generator_head_entries(head):
    return _mapping.masked_lm_entries(head, "generator_predictions.dense",
                                      "generator_predictions.LayerNorm", "generator_lm_head.bias")


def entries(model):
    """The weight map of a kbert `ElectraBackbone`, `ElectraMaskedLM` or `ElectraPretrainer`."""
    backbone = getattr(model, "backbone", model)
    result = [*_mapping.embedding_entries(backbone.embeddings),
              *_encoder_entries(backbone.embeddings.projection, backbone.transformer_layers),
              *_mapping.dense_entries("pooler.dense", backbone.pooler.dense, optional=True)]
    generator = getattr(model, "generator", None)
    if generator is not None:  # an ElectraPretrainer
        result += _encoder_entries(generator.projection, generator.transformer_layers,
                                   GENERATOR)
        result += _generator_head_entries(model.mlm_head)
        result += [*_mapping.dense_entries("discriminator_predictions.dense",
                                           model.rtd_head.dense),
                   *_mapping.dense_entries("discriminator_predictions.dense_prediction",
                                           model.rtd_head.output_dense)]
    elif getattr(model, "mlm_head", None) is not None:  # an ElectraMaskedLM: a generator
        result += _generator_head_entries(model.mlm_head)
    return result


def heads_in(weights):
    """"pretrainer" for generator + discriminator, "mlm" for a generator on its own, and
    `None` for a discriminator (kbert has no model of a discriminator head alone)."""
    if f"{GENERATOR}encoder.layer.0.attention.self.query.weight" in weights:
        return "pretrainer"
    if "generator_predictions.dense.weight" in weights:
        return "mlm"
    return None


def split_pretrainer(weights):
    """An `ElectraPretrainer`'s weights -> (the discriminator's, the generator's), each as a
    Hugging Face model of its own names; both keep the shared embedding tables."""
    discriminator = {k: v for k, v in weights.items()
                     if not k.startswith((GENERATOR, *_GENERATOR_HEAD))}
    generator = {k[len(GENERATOR):]: v for k, v in weights.items() if k.startswith(GENERATOR)}
    generator.update({k: v for k, v in weights.items()
                      if k.startswith(("embeddings.", *_GENERATOR_HEAD))})
    return discriminator, generator


def join_generator(generator):
    """A generator's own weights (an `ElectraForMaskedLM`) as the generator part of an
    `ElectraPretrainer`'s: its encoder under `generator.`, its head, not its embeddings."""
    result = {}
    for name, value in generator.items():
        if name.startswith(("embeddings_project.", "encoder.")):
            result[GENERATOR + name] = value
        elif name.startswith(_GENERATOR_HEAD):
            result[name] = value
    return result


def _layers(weights, prefix):
    pattern = re.compile(rf"^{re.escape(prefix)}encoder\.layer\.(\d+)\.")
    found = {int(m.group(1)) for m in map(pattern.match, weights) if m}
    return max(found) + 1 if found else 0


def pretrainer_arguments(config, weights):
    """`ElectraPretrainer` arguments that give the generator of `weights` its shape.

    kbert sizes the generator as google-research/electra does (one head per 64 units, 4 x
    width feed-forward); a generator of any other shape has no kbert form.
    """
    query = weights[f"{GENERATOR}encoder.layer.0.attention.self.query.weight"]
    intermediate = weights[f"{GENERATOR}encoder.layer.0.intermediate.dense.weight"]
    hidden, layers = query.shape[0], _layers(weights, GENERATOR)
    if intermediate.shape[0] != _google_shape(hidden)[1]:
        raise ValueError(
            f"The generator has intermediate size {intermediate.shape[0]} for width {hidden}; "
            "kbert's ElectraPretrainer uses 4 x width, as google-research/electra does."
        )
    return {"generator_hidden_fraction": hidden / config.hidden_size,
            "generator_layers_fraction": layers / config.num_layers}


def check_generator_config(values, source):
    """A Hugging Face generator config.json must size its heads as kbert's generator does."""
    hidden, heads = values["hidden_size"], values["num_attention_heads"]
    expected_heads, expected_intermediate = _google_shape(hidden)
    if heads != expected_heads or values["intermediate_size"] != expected_intermediate:
        raise ValueError(
            f"{source}: the generator has {heads} heads and intermediate size "
            f"{values['intermediate_size']} for width {hidden}; kbert's ElectraPretrainer "
            f"uses {expected_heads} heads (one per 64 units) and {expected_intermediate}, as "
            "google-research/electra does."
        )
    if values.get("hidden_act", "gelu") != "gelu":
        logging.warning(
            "%s: hidden_act=%r, but Hugging Face's generator head always uses the exact "
            "GELU; kbert's uses the config's activation, so its MLM logits will differ a little.",
            source, values["hidden_act"])


def config_from_weights(weights, source="checkpoint"):
    """The discriminator's `ElectraConfig` from the weights' shapes (the original release has
    no config file): google-research/electra's one head per 64 units and tanh GELU."""
    table = weights["embeddings.word_embeddings.weight"]
    project = weights.get("embeddings_project.weight")
    hidden = table.shape[1] if project is None else project.shape[0]
    layers = _layers(weights, "")
    if not layers:
        raise ValueError(f"{source} has no encoder.layer.* weights: not an ELECTRA checkpoint.")
    segments = weights.get("embeddings.token_type_embeddings.weight")
    return ElectraConfig(
        vocabulary_size=table.shape[0],
        num_layers=layers,
        hidden_size=hidden,
        num_heads=_google_shape(hidden)[0],
        intermediate_size=weights["encoder.layer.0.intermediate.dense.weight"].shape[0],
        activation="gelu_approximate",
        max_sequence_length=weights["embeddings.position_embeddings.weight"].shape[0],
        type_vocab_size=0 if segments is None else segments.shape[0],
        embedding_size=None if project is None else table.shape[1],
    )


def _split_for_hf(config, weights):
    """A pretrainer's weights -> (the discriminator's, the generator's config.json, the
    generator's); `None` when the weights have no generator."""
    if heads_in(weights) != "pretrainer":
        return None
    discriminator, generator = split_pretrainer(weights)
    return discriminator, generator_config_to_hf(config, weights), generator


def _join_from_hf(generator, weights, source):
    """A generator read beside a discriminator: its part of the pretrainer's weights."""
    different = [n for n, v in generator.items() if n.startswith("embeddings.")
                 and (n not in weights or not np.array_equal(v, weights[n]))]
    if different:
        logging.warning("%s: the generator's embeddings differ from the discriminator's "
                        "(%s); kbert's generator shares the discriminator's.", source,
                        ", ".join(different))
    return join_generator(generator)


def tf1_name(name):
    """`electra/encoder/layer_0/output/dense/kernel` -> (`encoder.layer.0.output.dense.weight`,
    transpose?); the generator's encoder gets `generator.`. `None` for other names."""
    if name == "generator_predictions/output_bias":
        return "generator_lm_head.bias", False
    parts = name.split("/")
    if parts[0] == "electra":
        parts = parts[1:]
    elif parts[0] == "generator":
        if len(parts) > 1 and parts[1] == "embeddings":
            return None  # untied generator embeddings: kbert's generator shares the tables
        parts = ["generator", *parts[1:]]
    elif parts[0] not in ("discriminator_predictions", "generator_predictions"):
        return None
    parts = ["dense_prediction" if p == "dense_1" else p for p in parts]
    hf_name, transpose = bert.tf1_parts_to_hf(parts)
    return hf_name, transpose


FAMILY = _family.record(
    globals(),
    name="electra",
    prefix="electra.",
    head_prefixes=("discriminator_predictions.", "generator_predictions.", "generator_lm_head.",
                   GENERATOR),
    hf_name="Electra",
    tied=("generator_lm_head.weight",),
    shapes=bert.SHAPES,
    not_in_hf=("pooler.dense.weight", "pooler.dense.bias"),
    companion=Companion(folder="generator", description="an ELECTRA generator", head="mlm",
                        split=_split_for_hf, check_config=check_generator_config,
                        join=_join_from_hf),
    task_dropout=_family.classifier_dropout(),
    tf1_pattern=r"^(electra|generator|discriminator_predictions)/",
    tf1_config_files=(),  # the releases have none: the architecture comes from the weights
    keras_hub_class="ElectraBackbone",
)
