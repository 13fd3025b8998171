"""What a kbert TFLite model may hold: TFLite's built-in ops and tensorflow-text's TFLite
kernels, nothing else (no Flex op, which needs the TensorFlow runtime on the device).

`model_ops` reads the op list from the flatbuffer itself (the operator codes), without
running anything; `check_ops` refuses a model with any other custom op.
"""

from tensorflow.lite.python import schema_py_generated as schema

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
