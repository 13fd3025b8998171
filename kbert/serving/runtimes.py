"""What each runtime kbert exports to allows: a SavedModel, every TensorFlow op and
tensorflow-text's (a call can fail); TFLite, its built-in ops and tensorflow-text's TFLite
kernels only (no Flex op: no TensorFlow runtime on the device), the tokenizer's TFLite twin
(`tflite_tokenizer`) and the quantizations (`QUANTIZE`). `model_ops` reads a TFLite model's
op list from the flatbuffer's operator codes; `check_ops` refuses any other custom op.
"""

import os

from tensorflow.lite.python import schema_py_generated as schema

from kbert import _extras

# tensorflow-text's TFLite kernels (`tensorflow_text`'s `tflite_registrar.SELECT_TFTEXT_OPS`
# registers them in an interpreter): the custom ops a kbert TFLite model may use.
TEXT_OPS = frozenset({
    "ByteSplit", "ByteSplitByOffsets", "FastBertNormalize", "FastSentencepieceDetokenize",
    "FastSentencepieceTokenize", "FastWordpieceDetokenize", "FastWordpieceTokenize",
    "FastWordpieceTokenizeWithOffsets", "NgramsStringJoin", "RaggedTensorToTensor",
    "RoundRobinGenerateMasks", "RoundRobinTrim", "SentenceFragmenterV2", "Utf8Binarize",
    "WhitespaceTokenize",
    # Registered under the converter's op name, with its "TFText>" prefix (the registrar
    # library holds these names; run in the interpreter by tests/export/test_tflite_tasks.py).
    "TFText>FastSentencepieceTokenize", "TFText>ByteSplitWithOffsets",
})

_BUILTIN_NAMES = {code: name for name, code in vars(schema.BuiltinOperator).items()
                  if not name.startswith("_")}


def model_ops(flatbuffer):
    """The op types of a TFLite model (bytes), sorted: built-in ops by their schema name
    ("FULLY_CONNECTED"), custom ops by their custom code ("FastBertNormalize",
    "FlexStringLower")."""
    model = schema.Model.GetRootAsModel(bytearray(flatbuffer), 0)
    names = set()
    for i in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(i)
        # The schema keeps the code in two fields: the old int8 one saturates at 127.
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if builtin == schema.BuiltinOperator.CUSTOM:
            names.add(code.CustomCode().decode("utf-8"))
        else:
            names.add(_BUILTIN_NAMES.get(builtin, f"BUILTIN_{builtin}"))
    return sorted(names)


def custom_ops(flatbuffer):
    """The custom ops of a TFLite model that are not built-in (tensorflow-text's and any
    other, Flex ops included)."""
    builtin = set(_BUILTIN_NAMES.values())
    return [name for name in model_ops(flatbuffer) if name not in builtin]


def check_ops(flatbuffer):
    """Raises ValueError naming every op that is neither built-in nor tensorflow-text's."""
    bad = [name for name in custom_ops(flatbuffer) if name not in TEXT_OPS]
    if bad:
        raise ValueError(
            f"The TFLite model needs ops that TFLite has no kernel for: {', '.join(bad)} "
            f"(Flex ops need TensorFlow on the device). Allowed: TFLite's built-in ops and "
            f"tensorflow-text's {', '.join(sorted(TEXT_OPS))}.")


# The runtimes of the pipelines' endpoints of text (each task folder's); FORMATS adds ONNX,
# whose export is the model of token ids alone (`kbert.serving.onnx`: the tokenizer stays on
# the host).
RUNTIMES = ("saved_model", "tflite")
FORMATS = (*RUNTIMES, "onnx")
QUANTIZE = (None, "dynamic", "float16")


def check_runtime(runtime):
    """ValueError for a format kbert does not export to."""
    if runtime not in FORMATS:
        raise ValueError(f"format={runtime!r}; allowed: {', '.join(map(repr, FORMATS))} "
                         f"(Keras' own formats, token ids in: a task model's "
                         f"model.export(path, format=...)).")


def check_quantize(quantize):
    """ValueError for a quantization TFLite's converter is not asked for by kbert (ONNX's:
    `kbert.serving.onnx.check_quantize`)."""
    if quantize not in QUANTIZE:
        raise ValueError(f"quantize={quantize!r}; allowed: None (float32), 'dynamic' (int8 "
                         f"weights, float activations) or 'float16'.")


def tflite_tokenizer(tokenizer, split_literals=False):
    """The TFLite twin of a kbert tokenizer (`Tokenizer.tflite_tokenizer`: a ValueError
    naming what TFLite cannot follow where it has none; see `kbert.serving.tflite` for where
    the two differ). A tokenizer with `split_special_tokens=False` is refused unless
    `split_literals` (its literals are then split as text, as the pipelines document)."""
    fast = tokenizer.tflite_tokenizer()
    if not (tokenizer.split_special_tokens or split_literals):
        raise ValueError(
            "The tokenizer has split_special_tokens=False (a literal \"[SEP]\" in a text gives "
            "the [SEP] id), which needs a regex split that TFLite has no kernel for. Make the "
            "tokenizer with split_special_tokens=True (literals are split as text) to export "
            "it, or export token ids in (kbert.serving.export_tflite).")
    return fast


def interpreter(path):
    """An `ai_edge_litert` interpreter on the TFLite model at `path` with tensorflow-text's
    kernels registered (what an app on the device does, in Python). Needs the extra
    `tflite` (ai-edge-litert)."""
    litert = _extras.require("ai_edge_litert.interpreter", "tflite", "Running a .tflite export")
    from tensorflow_text.core.pybinds import tflite_registrar

    return litert.InterpreterWithCustomOps(
        model_path=os.fspath(path), custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS)
