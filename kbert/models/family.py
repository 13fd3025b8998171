"""`Family`: one model family's record, kept in its folder (`kbert/models/<family>/`, its
`FAMILY`) and gathered by `kbert.models.FAMILIES`: its classes, its tokenizer's kind and pair
layout (plain data, read where kbert builds a checkpoint's tokenizer: `kbert.convert`), and
the choices of the task heads that follow transformers' layout for it (read by
`kbert.tasks`)."""

import types
import typing


class Family(typing.NamedTuple):
    """The classes of one model family, its tokenizer's kind and layout, and its task heads'
    choices.

    Attributes:
        config, backbone, pretrainer: its classes.
        tokenizer: the kind of tokenizer its releases ship: "wordpiece", "sentencepiece",
            "bpe" (`kbert.tokenizers.tokenizer_types`) or "tokenizer_json" (a tokenizer.json).
        pair_layout: how that tokenizer packs a pair of texts: a layout's name ("bert":
            [CLS] A [SEP] B [SEP], B in segment 1; "roberta": <s> A </s></s> B </s>, all in
            segment 0) or a (separators, second_segment) pair
            (`kbert.tokenizers.packing.PairLayout.of` reads either); None: the tokenizer's
            own (a tokenizer.json's template). XLM-R would be `tokenizer="sentencepiece",
            pair_layout="roberta"`.
        classifier_head: the text classifier's `head` for head="auto": transformers'
            `*ForSequenceClassification` layout ("pooled": the pooler's output; "cls": the
            [CLS] hidden state through ELECTRA's head).
        classifier_heads: every `head` with that layout where there are several
            (ModernBERT's `classifier_pooling`: "cls" and "mean"); empty: `classifier_head`.
        cls_activation: the activation of the "cls" classification head (RoBERTa's tanh).
        head_dropout: task head ("classifier", "token_classifier", "question_answerer") ->
            its dropout where transformers does not take the backbone's hidden dropout
            (ALBERT's classifier_dropout_prob, DistilBERT's seq_classif_dropout, qa_dropout).
    """

    config: type
    backbone: type
    pretrainer: type
    tokenizer: str = "wordpiece"
    pair_layout: typing.Optional[typing.Union[str, tuple]] = "bert"
    classifier_head: str = "cls"
    classifier_heads: tuple = ()
    cls_activation: str = "gelu"
    head_dropout: typing.Mapping = types.MappingProxyType({})

    @classmethod
    def of(cls, config, backbone, pretrainer, **choices):
        """The record, its `head_dropout` read-only (one table shared by every reader)."""
        if "head_dropout" in choices:
            choices["head_dropout"] = types.MappingProxyType(dict(choices["head_dropout"]))
        return cls(config, backbone, pretrainer, **choices)
