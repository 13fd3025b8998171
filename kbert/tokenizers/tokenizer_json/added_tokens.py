"""The added tokens of a tokenizer.json, found in a text as the `tokenizers` package finds
them: first those matched in the raw text (`normalized: false`; the special ones only where
the tokenizer keeps special literals whole), then, in the normalised text between them, those
matched there (`normalized: true`, whose literal is normalised too). The longest literal wins
where several start at one place; `lstrip` / `rstrip` take the whitespace before / after.
"""

import re

import tensorflow as tf

from kbert.tokenizers.byte_level import SPACE
from kbert.tokenizers.encoding import _python_class
from kbert.tokenizers.tokenizer_json.normalizers import normalize

_FENCE = b"\xff"  # never in UTF-8


class AddedTokens:
    """The added tokens of one tokenizer, split into the raw and the normalised stage.

    Args:
        added: the tokenizer.json's added tokens (dicts: content, id, special, normalized,
            lstrip, rstrip).
        normalizer, prepend: the tokenizer's normaliser (`normalizers.normalize`).
        split_special_tokens: special tokens typed in the text are text.
    """

    def __init__(self, added, normalizer, prepend, split_special_tokens):
        kept = [a for a in added if not (split_special_tokens and a["special"])]
        self.raw = {a["content"]: (a["id"], a["lstrip"], a["rstrip"])
                    for a in kept if not a["normalized"]}
        self.normalized = {normalize(a["content"], normalizer, prepend)[0]:
                           (a["id"], a["lstrip"], a["rstrip"])
                           for a in kept if a["normalized"]}

    @staticmethod
    def _patterns(tokens, space):
        """{literal: its regex}, the longest literal first."""
        return {literal: (f"{space}*" if lstrip else "") + re.escape(literal)
                + (f"{space}*" if rstrip else "")
                for literal, (_, lstrip, rstrip) in sorted(tokens.items(),
                                                           key=lambda t: -len(t[0]))}

    # === Python ===

    def python_split(self, text, stage):
        """[(start, end, id or None)] of `text` cut at the literals of `stage` ("raw" or
        "normalized"); None for the text between them."""
        tokens = getattr(self, stage)
        if not tokens:
            return [(0, len(text), None)]
        patterns = self._patterns(tokens, _python_class(SPACE))
        literals = list(patterns)
        pattern = re.compile("|".join(f"({p})" for p in patterns.values()))
        out, position = [], 0
        for match in pattern.finditer(text):
            if match.start() == match.end():
                continue
            out.append((position, match.start(), None))
            out.append((match.start(), match.end(),
                        tokens[literals[match.lastindex - 1]][0]))
            position = match.end()
        out.append((position, len(text), None))
        return [(a, b, i) for a, b, i in out if a < b or i is not None]

    # === Graph ===

    def graph_split(self, text, stage):
        """`python_split` of strings [N] in the graph: ragged [N, (parts)] strings and int32
        [parts]: each part's token id, -1 for text."""
        tokens = getattr(self, stage)
        if not tokens:
            parts = tf.RaggedTensor.from_tensor(text[:, None])
            return parts, -tf.ones_like(parts.flat_values, tf.int32)
        patterns = self._patterns(tokens, SPACE)
        fenced = tf.strings.regex_replace(text, "(" + "|".join(patterns.values()) + ")",
                                          _FENCE + rb"\1" + _FENCE)
        parts = tf.strings.split(fenced, _FENCE)
        ids = -tf.ones_like(parts.flat_values, tf.int32)
        for literal, pattern in patterns.items():
            ids = tf.where(tf.strings.regex_full_match(parts.flat_values, pattern),
                           tokens[literal][0], ids)
        keep = (tf.strings.length(parts.flat_values) > 0) | (ids >= 0)
        return tf.ragged.boolean_mask(parts, parts.with_flat_values(keep)), \
            tf.boolean_mask(ids, keep)
