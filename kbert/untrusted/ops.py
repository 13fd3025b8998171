"""The ops a SavedModel may hold to pass `kbert.untrusted.check_saved_model`: exactly those in
kbert's own exports (every family, task, fill-mask, and the pipelines' exports) and in a
plain Keras `model.export()`.

Drawn by exporting each of them tiny and listing the op types of every graph and function
(`python -m tests.export.kbert_exports`); the slow test
`test_every_kbert_export_passes_and_the_allowlist_is_no_wider` fails when an op here is in
none of them, and the fast ones fail when an export holds one that is not here.
"""

ALLOWED_OPS = frozenset({
    # Tensor math: the encoders, the heads, softmax / top-k, the signatures' decoding.
    "Add", "AddV2", "All", "Any", "ArgMax", "BatchMatMulV2", "BiasAdd", "Cast", "Cumsum",
    "Einsum", "Equal", "Erfc", "FloorDiv", "Greater", "GreaterEqual", "Less", "LessEqual",
    "LogicalAnd", "LogicalNot", "LogicalOr", "MatMul", "Max", "Maximum", "Mean", "Min",
    "Minimum", "Mul", "Neg", "NotEqual", "Pow", "Prod", "RealDiv", "Relu", "Rsqrt",
    "SelectV2", "Sigmoid", "Softmax", "Sqrt", "Square", "SquaredDifference", "Sub", "Sum",
    "Tanh", "TopKV2", "Where",
    # DeBERTa-v3's log-bucketed relative positions.
    "Abs", "Ceil", "Log", "Sign",
    # ModernBERT's rotary positions.
    "Cos", "Sin",
    # Shapes, indexing, segments: packing, padding, word and answer spans.
    # (Pad: MobileBERT's three-token embedding window.)
    "BroadcastTo", "ConcatV2", "Const", "DenseBincount", "ExpandDims", "Fill", "GatherNd",
    "GatherV2", "Identity", "LowerBound", "OnesLike", "Pack", "Range",
    "Pad", "Reshape", "ReverseV2", "Shape", "Size", "Slice", "Squeeze", "StopGradient",
    "StridedSlice", "Tile", "Transpose", "UnsortedSegmentMax", "UnsortedSegmentMin",
    "UnsortedSegmentSum", "UpperBound", "ZerosLike",
    # Ragged tensors: wordpieces per word, words per text.
    "RaggedGather", "RaggedRange", "RaggedTensorToTensor",
    # Strings: splitting on [MASK], word texts and offsets, labels.
    "StaticRegexFullMatch", "StaticRegexReplace", "StringLength", "StringLower",
    "StringJoin", "StringSplitV2", "Substr", "UnicodeDecode", "UnicodeEncode",
    "UnicodeTranscode", "UnsortedSegmentJoin",
    # RoBERTa's byte-level BPE (kbert.tokenizers.BytePairTokenizer): a word's bytes
    # (StringSplit, DecodeRaw), the merge table of its pairs (a hash table filled at load from
    # constants: TABLE_FILL_OPS), the rank and merged id of a pair (FloorDiv, FloorMod), and
    # the merge loop (While: bounded, see the note on loops below).
    "DecodeRaw", "FloorMod", "HashTableV2", "LookupTableFindV2", "LookupTableImportV2",
    "StringSplit", "While",
    # The extractive summarizer's windows and sentence choice: a loop step per sentence
    # (StatelessWhile: a loop whose body holds no stateful op; bounded as While is).
    "StatelessWhile",
    # tensorflow-text: the WordPiece and SentencePiece tokenizers (their models are constants
    # of the graph, never files), normalisation, pre-tokenization.
    "FastBertNormalize", "FastWordpieceTokenizeWithOffsets", "NormalizeUTF8",
    "SentencepieceOp", "SentencepieceTokenizeOp",
    # Variables and resources: the weights, read by the signatures.
    "AssignVariableOp", "ReadVariableOp", "VarHandleOp", "VarIsInitializedOp",
    # Graph structure and control flow: inputs, calls of library functions, branches
    # (their functions are checked too), assertions.
    "Assert", "If", "NoOp", "PartitionedCall", "Placeholder", "StatefulPartitionedCall",
    "StatelessIf",
})

# The functions that run inside `tf.saved_model.load` itself (resources' `_create_resource`,
# `_initialize`, `_destroy_resource`, the restore and save functions of `saveable_objects`,
# and what they call) hold only these: exactly what kbert's exports run there (the
# SentencePiece model's resource, made from a constant of the graph; the byte-level BPE's
# merge table, an empty HashTableV2 filled by LookupTableImportV2 from constants; the slow
# test checks the list is no wider). No arithmetic, no allocation, no calls: a size computed
# at load time is refused, never counted.
LOAD_TIME_OPS = frozenset({"Const", "HashTableV2", "Identity", "LookupTableImportV2", "NoOp",
                           "SentencepieceOp"})

# TensorFlow's own checkpoint functions (`_traced_save` / `_traced_restore`, which only the
# saver_def's save and restore nodes call) read and write variables/. These ops pass only
# there, and their inputs listed here (file names) must come from the path the loader passes.
CHECKPOINT_OPS = {
    "RestoreV2": (0,), "SaveV2": (0,), "MergeV2Checkpoints": (0, 1), "ShardedFilename": (0,),
    "StringJoin": (), "Select": (), "DisableCopyOnRead": (),
}

# Tables read from a file (input 1): never in kbert's exports, which hold their vocabularies
# in the graph; the refusal says where the file name comes from.
TABLE_FILE_OPS = frozenset({"InitializeTableFromTextFile", "InitializeTableFromTextFileV2"})

# Tables filled from tensors: the inputs (keys, values) that must be constants of the SavedModel
# (a Const, or a captured constant the object graph binds), and only inside
# tf.saved_model.load (a resource's `_initialize`): the table holds data the check has read,
# capped by `max_elements` (all fills together: elements, and bytes of strings as they
# expand), and never grows while serving. (Mutable tables, `LookupTableInsertV2` and the like
# are refused: kbert's exports have none.)
TABLE_FILL_OPS = {"LookupTableImportV2": (1, 2)}

# Loops (`While`, `StatelessWhile`): kbert's byte-level BPE merges pairs until none applies,
# with `maximum_iterations` = size(ids) + 1 (each step but the last merges a pair: one id
# fewer); the extractive summarizer packs sentences into windows and chooses them, a step
# per sentence (`maximum_iterations` = their number).
# A loop passes when `tf.while_loop`'s counter against `maximum_iterations` bounds it and that
# bound is a constant up to `max_loop_constant` (1024) or the sum of at most 4 sizes of tensors
# the loop is given plus constants up to that cap (`kbert.untrusted.loops.size_bound`), and it
# runs in no other loop's condition or body; its condition and body are library functions,
# checked like every other (a file op in a body is refused as anywhere). What a bound loop may
# still do is what a graph without loops may: allocate sizes computed from the request (a loop
# variable that doubles each step grows as 2**size; `Pow` does that without a loop), which
# the check does not bound (see `kbert.untrusted.saved_model`'s docstring). TensorList and
# TensorArray ops, which would accumulate a tensor per step, are not in ALLOWED_OPS.

# Allowed ops that allocate a tensor whose shape (or size) is an input: the input's index. A
# shape that folds to constants (`kbert.untrusted.graph.Body.array`) over `max_elements` is
# refused; one computed from the request cannot be seen at call time, and is refused at load
# time. `Range` and `RaggedRange` are counted from their bounds the same way.
SHAPE_INPUTS = {
    "Fill": (0,), "BroadcastTo": (1,), "Tile": (1,), "RaggedTensorToTensor": (0,),
    "DenseBincount": (1,), "UnsortedSegmentMax": (2,), "UnsortedSegmentMin": (2,),
    "UnsortedSegmentSum": (2,), "UnsortedSegmentJoin": (2,),
}
RANGE_OPS = frozenset({"Range", "RaggedRange"})
# Allowed ops that grow their input by amounts that are an input (index 1): those amounts
# must fold to constants, and the output's least size, prod(1 + before + after) over the axes,
# is capped by `max_elements` (MobileBERT's Pad adds one position at one end).
PADDING_OPS = frozenset({"Pad"})

_PYTHON = {"PyFunc", "PyFuncStateless", "EagerPyFunc"}
_READS = {"ReadFile", "MatchingFiles", "ImmutableConst", "RestoreV2", "Restore", "RestoreSlice",
          "LoadAndRemapMatrix", "GenerateVocabRemapping", "InitializeTableFromTextFile",
          "InitializeTableFromTextFileV2", "WholeFileReader", "WholeFileReaderV2",
          "ReaderReadV2", "ReaderReadUpToV2", "ReaderRestoreStateV2"}
_WRITES = {"WriteFile", "SaveV2", "Save", "SaveSlices", "MergeV2Checkpoints", "PrintV2",
           "DebugIdentityV2", "DebugIdentityV3", "DatasetToTFRecord", "WriteAudioSummary"}
_CHECKPOINT = {"SaveV2", "Save", "SaveSlices", "MergeV2Checkpoints", "RestoreV2", "Restore",
               "RestoreSlice"}


def why_refused(op):
    """Why `op` is refused, and whether it is a known harm (file, Python, I/O) rather than
    merely an op kbert's exports never hold."""
    if op in _PYTHON:
        return "runs Python code in the loading process.", True
    if op in _CHECKPOINT:
        return (f"{'writes' if op in _WRITES else 'reads'} checkpoint files outside the "
                f"loader's own restore of variables/."), True
    if op in _READS or op.startswith(("ReadFile", "Matching")) or "Reader" in op:
        return "reads files.", True
    if op in _WRITES or "Summary" in op or "Record" in op:
        return f"writes {'summaries (event files)' if 'Summary' in op else 'files'}.", True
    if op.endswith("Dataset") or op.startswith(("_Send", "_Recv", "_Host", "Collective")):
        return "reads files or talks to other processes.", True
    return "is not among the ops kbert's exports use.", False


ALLOWED = (f"kbert loads SavedModels whose ops are among the {len(ALLOWED_OPS)} of its own "
           f"exports (kbert.untrusted.ops.ALLOWED_OPS); load one you trust with "
           f"trusted=True.")
