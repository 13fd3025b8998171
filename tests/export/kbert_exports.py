"""Every kind of SavedModel kbert exports, tiny: what `kbert.untrusted.ops`'s allowlist
is drawn from, and what tests/untrusted/test_saved_model_check.py checks against it.

Run as a script, it exports them all and prints the op types they contain (the union, and
what each export adds), and the op types of a plain Keras `model.export()`:

    .venv/bin/python -m tests.export.kbert_exports
"""

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEQUENCE_LENGTH = 16
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]

# name -> (family, head or task, task arguments, export arguments, SentencePiece tokenizer),
# each written by `kbert.export` (a pretrainer: fill-mask; a backbone: feature extraction; a
# task model: its pipeline's answers; the export arguments are the pipeline's options).
EXPORTS = {
    "bert_pretrainer": ("bert", "pretrainer", {}, {}, False),
    "bert_backbone": ("bert", None, {}, {}, False),
    "albert_pretrainer": ("albert", "pretrainer", {}, {}, True),
    "distil_bert_pretrainer": ("distil_bert", "pretrainer", {}, {}, False),
    "electra_pretrainer": ("electra", "pretrainer", {}, {}, False),
    "deberta_v3_pretrainer": ("deberta_v3", "pretrainer", {}, {}, True),
    "mobile_bert_pretrainer": ("mobile_bert", "pretrainer", {}, {}, False),
    "text_classifier": ("bert", "text_classifier", {"num_classes": 3}, {}, False),
    "multi_label": ("distil_bert", "text_classifier",
                    {"num_classes": 3, "problem_type": "multi_label"}, {}, False),
    "regression": ("electra", "text_classifier", {"problem_type": "regression"}, {}, False),
    "token_classifier": ("bert", "token_classifier", {"label_names": TAGS},
                         {"aggregation_strategy": "simple"}, False),
    "token_classifier_sp": ("albert", "token_classifier", {"label_names": TAGS}, {}, True),
    "question_answerer": ("distil_bert", "question_answerer", {},
                          {"doc_stride": 4, "max_question_len": 6}, False),
    "question_answerer_v2": ("albert", "question_answerer", {},
                             {"doc_stride": 4, "max_question_len": 6,
                              "handle_impossible_answer": True}, True),
    "text_embedder": ("electra", "text_embedder", {"pooling": "mean", "normalize": True}, {},
                      False),
    # Its serving_default splits, windows and chooses sentences in the graph (bounded loops).
    "extractive_summarizer": ("bert", "extractive_summarizer", {}, {}, False),
}

# name -> (pipeline task, fixture checkpoint under tests/fixtures, options of
# pipeline.export): the pipelines' SavedModels, post-processing in the graph. Those in EACH
# are exports that tests/pipelines/test_export.py or test_roberta.py also check against the
# pipeline, so that a test run makes each once (the `pipeline_export` fixture shares them).
PIPELINE_EXPORTS = {
    "pipeline_text_classification": ("text-classification", "hf_tasks/bert_seq_single",
                                     {"top_k": None}),
    "pipeline_zero_shot": ("zero-shot-classification", "hf_tasks/bert_nli",
                           {"candidate_labels": ["sports", "politics", "travel"]}),
    "pipeline_token_classification": ("token-classification", "hf_tasks/distil_bert_token",
                                      {"aggregation_strategy": "average"}),
    "pipeline_fill_mask": ("fill-mask", "hf_tiny/albert", {}),
    "pipeline_feature_extraction": ("feature-extraction", "hf_tasks/distil_bert_seq_single",
                                    {"truncation": True}),
    "pipeline_sentence_embeddings": ("sentence-embeddings", "hf_tasks/st_bert_mean_normalize",
                                     {}),
    "pipeline_question_answering": ("question-answering", "hf_tasks/bert_qa",
                                    {"top_k": 2, "handle_impossible_answer": True}),
    # RoBERTa's: byte-level BPE with character offsets in the graph (byte_pair_graph).
    "pipeline_roberta_question_answering": ("question-answering", "hf_tasks/roberta_qa", {}),
    "pipeline_roberta_token_classification": ("token-classification", "hf_tasks/roberta_token",
                                              {"aggregation_strategy": "first"}),
    # MobileBERT's (its Pad window) and DeBERTa-v3's (SentencePiece offsets without ALBERT's
    # preprocessing, by prefixes where nmt_nfkc composes characters): every task of both is
    # checked by tests/pipelines/test_export_families.py.
    "pipeline_mobile_bert_question_answering": ("question-answering", "hf_tasks/mobile_bert_qa",
                                                {}),
    "pipeline_deberta_v3_token_classification": ("token-classification",
                                                 "hf_tasks/deberta_v3_token",
                                                 {"aggregation_strategy": "first"}),
    # ModernBERT's: rotary positions (Sin, Cos), windows in chunks padded by constants.
    "pipeline_modern_bert_text_classification": ("text-classification",
                                                 "hf_tasks/modern_bert_seq_single", {}),
    # The same family, task, options and graph code (kbert.export is the pipeline's export)
    # as EXPORTS' distil_bert_pretrainer, mobile_bert_pretrainer, multi_label and
    # token_classifier and CHECKPOINT_EXPORTS' roberta_text_classifier, with the same op
    # types (token_classifier's GELU is the tiny config's tanh form, Pow, which
    # bert_pretrainer has; the fixture's is the exact one, Erfc): made by
    # tests/pipelines/test_export.py, test_export_families.py and test_roberta.py anyway.
    "pipeline_distil_bert_fill_mask": ("fill-mask", "hf_tiny/distil_bert", {}),
    "pipeline_mobile_bert_fill_mask": ("fill-mask", "hf_tiny/mobile_bert", {}),
    "pipeline_multi_label": ("text-classification", "hf_tasks/distil_bert_seq_multi", {}),
    "pipeline_token_classification_simple": ("token-classification", "hf_tasks/bert_token",
                                             {"aggregation_strategy": "simple"}),
    "pipeline_roberta_text_classification": ("text-classification",
                                             "hf_tasks/roberta_seq_single", {}),
}

# name -> (checkpoint under tests/fixtures, export arguments): models read by kbert.convert.load
# with their own tokenizer (kbert.convert.load_tokenizer). RoBERTa's: its byte-level BPE in the
# graph (a bounded While loop, a hash table filled at load from constants).
CHECKPOINT_EXPORTS = {
    "roberta_pretrainer": ("hf_tiny/roberta", {"top_k": 2}),
    "roberta_text_classifier": ("hf_tasks/roberta_seq_single", {}),
}

# Each family (its pretrainer: fill-mask, and the backbone on ids) and each task once; the
# tests check these (the rest of EXPORTS adds no op type, as the script shows). Where another
# test's pipeline export is the same family and task, EACH names it (`pipeline_export` makes
# it once per run): ALBERT's fill-mask is pipeline_fill_mask's (albert_pretrainer has the
# same op types), DistilBERT's and MobileBERT's the fixtures', and so on.
EACH = ("bert_pretrainer", "pipeline_fill_mask", "pipeline_distil_bert_fill_mask",
        "electra_pretrainer", "deberta_v3_pretrainer", "pipeline_mobile_bert_fill_mask",
        "roberta_pretrainer", "pipeline_multi_label", "pipeline_token_classification_simple",
        "question_answerer_v2", "text_embedder", "extractive_summarizer",
        "pipeline_roberta_text_classification",
        "pipeline_text_classification", "pipeline_zero_shot", "pipeline_token_classification",
        "pipeline_question_answering",
        "pipeline_roberta_question_answering", "pipeline_roberta_token_classification",
        "pipeline_modern_bert_text_classification")


# Sizes a family needs beyond tests.helpers.TINY's.
FAMILY_SIZES = {"mobile_bert": {"embedding_size": 8, "intra_bottleneck_size": 16,
                                "num_feedforward_networks": 2}}


def tokenizer(sentence_piece):
    if sentence_piece:
        from kbert.tokenizers import SentencePieceTokenizer

        return SentencePieceTokenizer(str(ROOT / "tests" / "fixtures" / "tokenizer_parity" /
                                          "spiece.model"))
    from tests.tokenizers.test_alignment import tiny_tokenizer

    return tiny_tokenizer()


def export(name, directory, pipeline_export=None):
    """Exports the tiny model `name` of EXPORTS, CHECKPOINT_EXPORTS or PIPELINE_EXPORTS under
    `directory`; returns the path. A PIPELINE_EXPORTS one is `pipeline_export(task, model,
    options)`'s where given (the tests' fixture, which shares the exports of a run)."""
    if name in CHECKPOINT_EXPORTS:
        import kbert
        import kbert.convert

        checkpoint, options = CHECKPOINT_EXPORTS[name]
        checkpoint = str(ROOT / "tests" / "fixtures" / checkpoint)
        model, words = kbert.convert.load(checkpoint), kbert.convert.load_tokenizer(checkpoint)
        return kbert.export(model, os.path.join(directory, name), tokenizer=words, **options)
    if name in PIPELINE_EXPORTS:
        import kbert

        task, model, options = PIPELINE_EXPORTS[name]
        if pipeline_export is not None:
            return pipeline_export(task, model, options)
        pipe = kbert.pipeline(task, model=str(ROOT / "tests" / "fixtures" / model))
        return pipe.export(os.path.join(directory, name), **options)
    import kbert
    import kbert.models
    from kbert import tasks
    from tests.helpers import TINY

    family, head, task_kwargs, export_kwargs, sentence_piece = EXPORTS[name]
    words = tokenizer(sentence_piece)
    config = kbert.models.FAMILIES[family].config(
        **{**TINY, "num_layers": 1, "vocabulary_size": words.vocabulary_size,
           "max_sequence_length": SEQUENCE_LENGTH, **FAMILY_SIZES.get(family, {})})
    path = os.path.join(directory, name)
    if head in tasks.TASKS:
        model = tasks.TASKS[head](kbert.models.build(family, config, head=None), **task_kwargs)
        return model.export(path, tokenizer=words, **export_kwargs)
    model = kbert.models.build(family, config, head=head)
    if hasattr(model, "discriminator"):  # what a replaced-token detection run exports
        model = model.discriminator()
    return kbert.export(model, path, tokenizer=words, **export_kwargs)


def keras_export(directory):
    """A plain Keras `model.export()` of a small dense model (no kbert in it)."""
    import keras

    model = keras.Sequential([keras.Input([4]), keras.layers.Dense(3, activation="relu"),
                              keras.layers.Dense(2)])
    path = os.path.join(directory, "keras_dense")
    model.export(path, format="tf_saved_model", verbose=False)
    return path


def op_types(path, checkpoint=False):
    """The op types in the SavedModel's graph and function library (read, not run): outside
    TensorFlow's checkpoint functions (the ones the saver_def's save and restore nodes
    call), or with `checkpoint=True` in them."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString(Path(path, "saved_model.pb").read_bytes())
    meta = saved.meta_graphs[0]
    saver = meta.saver_def
    sites = {saver.save_tensor_name.split(":")[0], saver.restore_op_name}
    savers = {node.attr["f"].func.name for node in meta.graph_def.node if node.name in sites}
    library = {f.signature.name for f in meta.graph_def.library.function}
    ops = set() if checkpoint else {node.op for node in meta.graph_def.node}
    for function in meta.graph_def.library.function:
        if (function.signature.name in savers) == checkpoint:
            ops |= {node.op for node in function.node_def}
    return ops - library


def main():
    names = sys.argv[1:] or [*EXPORTS, *CHECKPOINT_EXPORTS, *PIPELINE_EXPORTS]
    union, each, checkpoint = set(), {}, set()
    with tempfile.TemporaryDirectory() as directory:
        for name in names:
            path = export(name, directory)
            each[name] = op_types(path)
            union |= each[name]
            checkpoint |= op_types(path, checkpoint=True)
        dense = keras_export(directory)
        dense_ops = op_types(dense)
        checkpoint |= op_types(dense, checkpoint=True)
    print(f"{len(union)} op types in kbert's exports ({', '.join(names)}):")
    print(" ".join(sorted(union)))
    for name, ops in each.items():
        others = set().union(*(o for n, o in each.items() if n != name))
        print(f"only in {name}: {' '.join(sorted(ops - others)) or '-'}")
    print(f"keras Dense export: {len(dense_ops)} op types; not in kbert's: "
          f"{' '.join(sorted(dense_ops - union)) or '-'}")
    print(f"in the checkpoint functions: {' '.join(sorted(checkpoint))}; of these only "
          f"there: {' '.join(sorted(checkpoint - union - dense_ops))}")


if __name__ == "__main__":
    main()
