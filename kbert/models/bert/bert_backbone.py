"""BERT encoder: embeddings, post-LN transformer blocks, tanh pooler."""

import keras

from kbert.layers import Embeddings, Pooler, TransformerEncoder
from kbert.models.backbone import Backbone, encoder_blocks, layer_from_config
from kbert.models.bert.bert_config import BertConfig


@keras.saving.register_keras_serializable(package="kbert")
class BertBackbone(Backbone):
    """BERT encoder: embeddings, `num_layers` post-LN transformer blocks, tanh pooler. ALBERT,
    DistilBERT, ELECTRA and RoBERTa are BERT's network with other settings (their subclasses).

    It takes the fields of `BertConfig` (validated there; its defaults apply), plus `dtype` (a
        dtype policy such as "mixed_bfloat16") and the usual `keras.Model` keyword arguments.

    Inputs (a dict): `token_ids`, `segment_ids`, `padding_mask`, each int [B, S].
    Outputs (a dict): `sequence_output` [B, S, H] and `pooled_output` [B, H].

    Example:
        ```python
        backbone = kbert.presets.load("bert_tiny", head=None)
        backbone = BertBackbone.from_config(BertConfig(30522, 2, 128, 2, 512))
        ```
    """

    # Subclasses change the structure through their config class, whose fields (with their
    # defaults) are the constructor's arguments: num_groups, type_vocab_size, embedding_size.
    config_class = BertConfig
    has_pooler = True
    # RoBERTa: no `segment_ids` input (its one segment row is added to every token), and
    # positions counted from an offset (`position_offset`, see `Embeddings`).
    has_segment_input = True

    def make_layers(self, config, dtype):
        embeddings = layer_from_config(Embeddings, config, position_offset=self.position_offset,
                                       dtype=dtype, name="embeddings")
        # ALBERT shares one block among num_layers / num_groups consecutive layers
        # (`config.blocks`); a pruned model's blocks (`kbert.models.pruning`) each have their
        # own sizes.
        blocks = encoder_blocks(TransformerEncoder, config, config.blocks[0], dtype,
                                per_layer=config.block_arguments)
        pooler = None
        if self.has_pooler:
            pooler = Pooler(initializer_range=config.initializer_range, dtype=dtype,
                            name="pooler")
        return {"embeddings": embeddings, "transformer_layers": blocks, "pooler": pooler}

    def input_names(self, config):
        if config.type_vocab_size and self.has_segment_input:
            return ("token_ids", "segment_ids", "padding_mask")
        return ("token_ids", "padding_mask")

    def network(self, config, layers, inputs, internals):
        blocks = layers["transformer_layers"]
        positions = {"padding_mask": inputs["padding_mask"]} if self.position_offset else {}
        x = layers["embeddings"](inputs["token_ids"], inputs.get("segment_ids"),
                                 **positions)  # [B, S, H]
        x = internals.embedded(x)
        for i in range(config.num_layers):
            block = blocks[config.block_of(i)]
            x = internals.block(block, x, padding_mask=inputs["padding_mask"])  # [B, S, H]
        outputs = {"sequence_output": x}  # [B, S, H]
        if layers["pooler"] is not None:
            outputs["pooled_output"] = layers["pooler"](x)  # [B, H]
        return outputs
