"""`Encoder.encode` of a SentencePiece (ALBERT, DeBERTa-v3) tokenizer in the TensorFlow graph,
for `pipeline.export`: each text's ids with the characters of each token in the text as given
(`kbert.tokenizers.offsets`' rule), special-token literals as their tokens.

As in Python: the text is cut at the special-token literals the pipeline keeps (exact
matches, longest first), the rest into whitespace-separated chunks (Python's `str.isspace`),
and each chunk is tokenized alone. A piece covers the characters whose normalised forms
(each character alone, `forms`: ALBERT's NFKD without combining marks, lower-case; the
model's charsmap; DeBERTa-v3 keeps accents) it spells, a "▁" inside a chunk
the character the model made a space (U+200B); an unknown piece spells the run of characters
that no piece holds where it stands. A chunk whose pieces do not spell its characters' forms
so, but spell the chunk's form as a whole (a form that depends on the neighbouring
characters: "``" -> '"', "e\u0301" -> "é"), gets its pieces' characters from its prefixes'
forms (`offsets._by_prefixes`, chunks up to `offsets.PREFIX_LIMIT` characters); any other
chunk gives every piece the whole chunk. The first piece of a chunk, when it carries "▁",
starts at the whitespace before the chunk (but in a chunk whose form starts with a space of
its own).
"""

import tensorflow as tf

from kbert.tokenizers import normalization
from kbert.tokenizers.literals_graph import split_at_literals
from kbert.tokenizers.offsets import PREFIX_LIMIT, SENTENCE_PIECE_MARK
from kbert.tokenizers.sentencepiece import forms as sentence_piece_forms


def _member(codes, ranges):
    """Whether each code point (int32) lies in the sorted inclusive `ranges`."""
    firsts = tf.constant([a for a, _ in ranges] or [0x7FFFFFFF], tf.int32)
    lasts = tf.constant([b for _, b in ranges] or [-1], tf.int32)
    at = tf.searchsorted(firsts, codes, side="right") - 1
    return (at >= 0) & (codes <= tf.gather(lasts, tf.maximum(at, 0)))


def _ranges(codes):
    """Sorted inclusive ranges of a set of code points."""
    out = []
    for code in sorted(codes):
        if out and out[-1][1] == code - 1:
            out[-1] = (out[-1][0], code)
        else:
            out.append((code, code))
    return out


def encode(text, tokenizer, specials):
    """Valid UTF-8 strings [B] -> a dict of ragged [B, (tokens)] tensors: `ids` (int32),
    `starts` / `ends` (int32 code points into the text) and `literal` (bool: a special
    literal typed in the text, which is no entity), `words` (int32: the token's word, its
    whitespace-separated chunk as `Encoder.encode`'s words, numbered over the batch in
    order; -1 for a special literal) and `codes` (ragged [B, (chars)] int32: the texts'
    code points)."""
    batch = tf.size(text, out_type=tf.int64)
    parts, part_special = split_at_literals(text, specials)
    part_codes = tf.strings.unicode_decode(parts.flat_values, "UTF-8")  # [P, (chars)]
    codes = part_codes.flat_values  # every text's code points, in order
    count = tf.size(codes)
    index = tf.range(count)
    char_part = tf.cast(part_codes.value_rowids(), tf.int32)
    char_row = tf.gather(tf.cast(parts.value_rowids(), tf.int32), char_part)
    row_chars = tf.math.bincount(char_row, minlength=tf.cast(batch, tf.int32),
                                 maxlength=tf.cast(batch, tf.int32))
    row_start = tf.cumsum(row_chars, exclusive=True)
    position = index - tf.gather(row_start, char_row)  # in its text
    space = _member(codes, normalization.character_ranges("whitespace"))
    previous = tf.maximum(index - 1, 0)
    # A chunk starts at a non-space character after a space, a text's or a part's start.
    new = ~space & ((position == 0) | tf.gather(space, previous)
                    | tf.not_equal(tf.gather(char_part, previous), char_part))
    chunk = tf.cumsum(tf.cast(new, tf.int32)) - 1
    chunks = tf.reduce_sum(tf.cast(new, tf.int32))
    inside = tf.boolean_mask(index, ~space)  # the chunks' characters, in order
    inside_chunk = tf.gather(chunk, inside)
    first = tf.math.unsorted_segment_min(inside, inside_chunk, chunks)
    last = tf.math.unsorted_segment_max(inside, inside_chunk, chunks)
    rows = tf.gather(char_row, first)
    starts = tf.gather(position, first)
    ends = starts + last - first + 1
    special = tf.gather(part_special, tf.gather(char_part, first))
    is_special = special >= 0
    chunk_text = tf.strings.substr(tf.gather(text, rows), starts, ends - starts,
                                   unit="UTF8_CHAR")
    pieces = tokenizer.tokenize(tf.where(is_special, "", chunk_text))  # [chunks, (pieces)]
    pieces = tf.concat([tf.cast(pieces, tf.int32), tf.RaggedTensor.from_row_lengths(
        tf.boolean_mask(special, is_special), tf.cast(is_special, tf.int64))], axis=1)
    piece_starts, piece_ends, leading = _piece_spans(
        pieces, codes, inside, inside_chunk, first, starts,
        tf.where(is_special, "", chunk_text), tokenizer)
    # The literal's own characters.
    piece_chunk = tf.cast(pieces.value_rowids(), tf.int32)
    literal = tf.gather(is_special, piece_chunk)
    piece_starts = tf.where(literal, tf.gather(starts, piece_chunk), piece_starts)
    piece_ends = tf.where(literal, tf.gather(ends, piece_chunk), piece_ends)
    # A chunk's first "▁" piece starts at the whitespace before it, "▁" alone covers it.
    piece_index = tf.range(tf.size(piece_chunk))
    is_first = tf.equal(piece_index, tf.gather(tf.cast(pieces.row_starts(), tf.int32),
                                               piece_chunk))
    marked = tf.constant([p.startswith(SENTENCE_PIECE_MARK) for p in tokenizer.vocabulary])
    marked = (is_first & ~literal & tf.gather(marked, pieces.flat_values)
              & ~tf.gather(leading, piece_chunk))
    chunk_first = tf.gather(first, piece_chunk)
    after_space = (tf.gather(starts, piece_chunk) > 0) & tf.gather(
        space, tf.maximum(chunk_first - 1, 0))
    mark = tf.gather(starts, piece_chunk) - tf.cast(after_space, tf.int32)
    empty = tf.equal(piece_starts, piece_ends)
    piece_ends = tf.where(marked & empty, mark + 1, piece_ends)
    piece_starts = tf.where(marked, mark, piece_starts)

    def per_text(values):
        by_chunk = pieces.with_flat_values(values)
        return tf.RaggedTensor.from_value_rowids(by_chunk, tf.cast(rows, tf.int64),
                                                 nrows=batch).merge_dims(1, 2)

    return {"ids": per_text(pieces.flat_values), "starts": per_text(piece_starts),
            "ends": per_text(piece_ends), "literal": per_text(literal),
            "words": per_text(tf.where(literal, -1, piece_chunk)),
            "codes": tf.RaggedTensor.from_row_lengths(codes, tf.cast(row_chars, tf.int64))}


def _piece_spans(pieces, codes, inside, inside_chunk, first, starts, chunk_text, tokenizer):
    """(start, end) code points in the text of every piece of every chunk (flat over
    `pieces`), by `offsets._by_characters`; where a chunk's pieces do not spell its
    characters' forms, by `offsets._by_prefixes` (the pieces spell the chunk's form as a
    whole: a form that depends on the neighbouring characters, as DeBERTa-v3's nmt_nfkc
    composing "e\u0301" into "é"); else the chunk's `offsets._whole` span."""
    # What each piece spells: "▁" a space but at the start of a chunk (the mark).
    start_texts = [_text(p, True) for p in tokenizer.vocabulary]
    inner_texts = [_text(p, False) for p in tokenizer.vocabulary]
    start_texts[tokenizer.unk_id] = inner_texts[tokenizer.unk_id] = ""
    chunk_count = tf.size(first)
    forms = sentence_piece_forms.char_forms(tf.gather(codes, inside), tokenizer)
    forms = sentence_piece_forms.collapse_spaces(forms, inside_chunk)  # [inside chars]
    leading = sentence_piece_forms.leading_space(forms, inside_chunk, chunk_count)
    is_first = tf.equal(tf.range(tf.size(pieces.flat_values, out_type=tf.int64)),
                        tf.gather(pieces.row_starts(), pieces.value_rowids()))
    word_start = is_first & ~tf.gather(leading, pieces.value_rowids())
    texts = (start_texts, inner_texts, word_start)
    form_lengths = tf.strings.length(forms, unit="UTF8_CHAR")
    chunk_forms = tf.RaggedTensor.from_value_rowids(forms, tf.cast(inside_chunk, tf.int64),
                                                    nrows=tf.size(first, out_type=tf.int64))
    spelled = tf.strings.reduce_join(chunk_forms, axis=1)  # [chunks]: the forms joined
    a, b, total, matched = _spell(pieces, spelled, texts, tokenizer.unk_id)
    piece_chunk = tf.cast(pieces.value_rowids(), tf.int32)
    # The character holding each normalised character (its chunk's index of it).
    chunk_chars = tf.math.bincount(inside_chunk, minlength=chunk_count, maxlength=chunk_count)
    char_index = tf.range(tf.size(inside)) - tf.gather(tf.cumsum(chunk_chars, exclusive=True),
                                                       inside_chunk)
    owner = tf.repeat(char_index, form_lengths)  # flat over every chunk's normal form
    normal_base = tf.gather(tf.cumsum(tf.strings.length(spelled, unit="UTF8_CHAR"),
                                      exclusive=True), piece_chunk)
    chunk_length = tf.gather(chunk_chars, piece_chunk)
    safe = tf.maximum(tf.size(owner) - 1, 0)
    owner = tf.concat([owner, [0]], 0)
    start = tf.gather(owner, tf.minimum(normal_base + a, safe))
    end = tf.gather(owner, tf.minimum(normal_base + tf.maximum(b - 1, 0), safe)) + 1
    at = tf.where(a < total, start, chunk_length)
    empty = tf.equal(a, b)
    start, end = tf.where(empty, at, start), tf.where(empty, at, end)
    # Chunks whose pieces spell the chunk's form as a whole: by its prefixes' forms.
    whole_form = sentence_piece_forms.word_forms(chunk_text, tokenizer)
    word_a, word_b, _, word_matched = _spell(
        pieces, tf.strings.regex_replace(whole_form, " $", ""), texts, tokenizer.unk_id)
    by_prefixes = ~matched & word_matched & (chunk_chars <= PREFIX_LIMIT)
    prefix_start, prefix_end = _prefix_spans(chunk_text, whole_form, piece_chunk, word_a,
                                             word_b, by_prefixes, tokenizer)
    use_prefixes = tf.gather(by_prefixes, piece_chunk)
    start = tf.where(use_prefixes, prefix_start, start)
    end = tf.where(use_prefixes, prefix_end, end)
    # The others: every piece spans from the first character with a form to the last.
    has_form = form_lengths > 0
    kept_first = tf.math.unsorted_segment_min(tf.where(has_form, char_index, 2 ** 30),
                                              inside_chunk, chunk_count)
    kept_last = tf.math.unsorted_segment_max(tf.where(has_form, char_index, -1),
                                             inside_chunk, chunk_count)
    none_kept = kept_last < 0
    whole_start = tf.where(none_kept, 0, kept_first)
    whole_end = tf.where(none_kept, chunk_chars, kept_last + 1)
    use_whole = ~tf.gather(matched | by_prefixes, piece_chunk)
    start = tf.where(use_whole, tf.gather(whole_start, piece_chunk), start)
    end = tf.where(use_whole, tf.gather(whole_end, piece_chunk), end)
    base = tf.gather(starts, piece_chunk)
    return start + base, end + base, leading


def _text(piece, word_start):
    """`offsets.Rule.piece_text` of a SentencePiece piece (not the unknown one)."""
    if word_start and piece.startswith(SENTENCE_PIECE_MARK):
        piece = piece[len(SENTENCE_PIECE_MARK):]
    return piece.replace(SENTENCE_PIECE_MARK, " ")


def _spell(pieces, spelled, texts, unk_id):
    """`offsets._segments` of every chunk: (a, b) [pieces], the normalised characters of
    `spelled` [chunks] each piece spells, the chunk's length in them [pieces], and whether
    the chunk's pieces spell it [chunks]. An unknown piece takes the characters up to the
    next piece with text. `texts`: (each piece's text at a word start, elsewhere, and
    whether each piece starts its chunk's word: bool [pieces])."""
    start_texts, inner_texts, word_start = texts
    # A character a piece can stand for alone; the others come out as the unknown piece.
    alone = _ranges({ord(t) for t in start_texts + inner_texts if len(t) == 1})
    normal = tf.strings.unicode_decode(spelled, "UTF-8")  # [chunks, (normalised chars)]
    known = _member(normal.flat_values, alone)
    # The unknown runs of each chunk's normalised characters, in order.
    flat_index = tf.range(tf.size(known))
    normal_chunk = tf.cast(normal.value_rowids(), tf.int32)
    run_start = ~known & ((flat_index == tf.gather(tf.cast(normal.row_starts(), tf.int32),
                                                   normal_chunk))
                          | tf.gather(tf.concat([[True], known[:-1]], 0), flat_index))
    run = tf.cumsum(tf.cast(run_start, tf.int32)) - 1
    runs = tf.reduce_sum(tf.cast(run_start, tf.int32))
    run_lengths = tf.math.unsorted_segment_sum(tf.cast(~known, tf.int32),
                                               tf.where(known, runs, run), runs + 1)[:runs]
    chunk_count = tf.size(spelled)
    chunk_runs = tf.math.unsorted_segment_sum(tf.cast(run_start, tf.int32), normal_chunk,
                                              chunk_count)
    # Each piece's length in normalised characters. As `offsets._segments` places them, the
    # first unknown piece after a piece with text (or the chunk's start) takes the run up to
    # the next piece with text; another unknown piece there is empty, which places the
    # chunk only after its last piece with text.
    ids = pieces.flat_values
    piece_chunk = tf.cast(pieces.value_rowids(), tf.int32)
    index = tf.range(tf.size(ids))
    unknown = tf.equal(ids, unk_id)
    piece_length = tf.where(word_start,
                            tf.gather(tf.constant([len(t) for t in start_texts], tf.int32), ids),
                            tf.gather(tf.constant([len(t) for t in inner_texts], tf.int32), ids))
    spelling = ~unknown & (piece_length > 0)
    chunk_first_piece = tf.cast(pieces.row_starts(), tf.int32)
    reset = spelling | tf.equal(index, tf.gather(chunk_first_piece, piece_chunk))
    gap = tf.cumsum(tf.cast(reset, tf.int32)) - 1
    unknown_rank = tf.cumsum(tf.cast(unknown, tf.int32), exclusive=True)
    gap_first = tf.gather(tf.math.unsorted_segment_min(unknown_rank, gap, tf.size(ids)), gap)
    takes_run = unknown & tf.equal(unknown_rank, gap_first)
    last_spelling = tf.math.unsorted_segment_max(tf.where(spelling, index, -1), piece_chunk,
                                                 chunk_count)
    misplaced = unknown & ~takes_run & (index < tf.gather(last_spelling, piece_chunk))
    run_rank = tf.cumsum(tf.cast(takes_run, tf.int32), exclusive=True)
    taken = tf.math.unsorted_segment_sum(tf.cast(takes_run, tf.int32), piece_chunk,
                                         chunk_count)
    # The j-th run-taking piece of a chunk takes the chunk's j-th run.
    this_run = tf.gather(tf.cumsum(chunk_runs, exclusive=True)
                         - tf.cumsum(taken, exclusive=True), piece_chunk) + run_rank
    lengths = tf.where(takes_run, tf.gather(tf.concat([run_lengths, [0]], 0),
                                            tf.clip_by_value(this_run, 0, runs)),
                       tf.where(unknown, 0, piece_length))
    before = tf.cumsum(lengths, exclusive=True)
    chunk_before = tf.gather(tf.concat([before, [0]], 0), chunk_first_piece)
    a = before - tf.gather(chunk_before, piece_chunk)  # in its chunk's normal form
    b = a + lengths
    total = tf.gather(tf.cast(normal.row_lengths(), tf.int32), piece_chunk)
    piece_text = tf.where(unknown, tf.strings.substr(tf.gather(spelled, piece_chunk),
                                                     tf.minimum(a, total), lengths,
                                                     unit="UTF8_CHAR"),
                          tf.where(word_start, tf.gather(tf.constant(start_texts), ids),
                                   tf.gather(tf.constant(inner_texts), ids)))
    matched = tf.equal(tf.strings.reduce_join(pieces.with_flat_values(piece_text), axis=1),
                       spelled) & tf.equal(taken, chunk_runs) & tf.equal(
        tf.math.unsorted_segment_sum(tf.cast(misplaced, tf.int32), piece_chunk,
                                     chunk_count), 0)
    return a, b, total, matched


def _starts_with(strings, prefixes):
    """Elementwise `strings[i].startswith(prefixes[i])` (valid UTF-8: by bytes)."""
    size = tf.strings.length(prefixes)
    return (size <= tf.strings.length(strings)) & tf.equal(
        tf.strings.substr(strings, tf.zeros_like(size), size), prefixes)


def _prefix_spans(chunk_text, whole_form, piece_chunk, a, b, chosen, tokenizer):
    """`offsets._by_prefixes` for the pieces of the `chosen` chunks (the others' values are
    not used): a prefix of the chunk whose form is a prefix of the chunk's form cuts it into
    units; the normalised character i belongs to the character k + min(i - n(k), k' - k - 1)
    of its unit, k the last cut whose form's length n(k) <= i, k' the first longer."""
    prefixes = tf.where(chosen, tf.strings.length(chunk_text, unit="UTF8_CHAR") + 1, 0)
    first_prefix = tf.cumsum(prefixes, exclusive=True)
    prefix_chunk = tf.repeat(tf.range(tf.size(prefixes)), prefixes)
    size = tf.ragged.range(prefixes).flat_values  # each prefix's characters
    prefix_forms = sentence_piece_forms.word_forms(
        tf.strings.substr(tf.gather(chunk_text, prefix_chunk), tf.zeros_like(size), size,
                          unit="UTF8_CHAR"), tokenizer)
    cut = _starts_with(tf.gather(whole_form, prefix_chunk), prefix_forms)
    form_length = tf.strings.length(prefix_forms, unit="UTF8_CHAR")
    # Every (piece, prefix of its chunk) pair.
    per_piece = tf.gather(prefixes, piece_chunk)
    pair_piece = tf.repeat(tf.range(tf.size(piece_chunk)), per_piece)
    pair_size = tf.ragged.range(per_piece).flat_values
    pair_prefix = tf.gather(tf.gather(first_prefix, piece_chunk), pair_piece) + pair_size
    pair_cut = tf.gather(cut, pair_prefix)
    pair_length = tf.gather(form_length, pair_prefix)
    count = tf.size(piece_chunk)
    chunk_size = tf.gather(prefixes, piece_chunk) - 1  # the chunk's characters
    normal_size = tf.strings.length(tf.gather(whole_form, piece_chunk), unit="UTF8_CHAR")

    def owner(i):  # [pieces] normalised characters -> their characters
        unit = tf.math.unsorted_segment_max(
            tf.where(pair_cut & (pair_length <= tf.gather(i, pair_piece)), pair_size, -1),
            pair_piece, count)
        after = tf.math.unsorted_segment_min(
            tf.where(pair_cut & (pair_length > tf.gather(i, pair_piece)), pair_size, 2 ** 30),
            pair_piece, count)
        after = tf.minimum(after, chunk_size)
        unit = tf.maximum(unit, 0)
        unit_length = tf.gather(tf.concat([form_length, [0]], 0), tf.minimum(
            tf.gather(first_prefix, piece_chunk) + unit, tf.size(form_length)))
        return unit + tf.minimum(i - unit_length, tf.maximum(after - unit - 1, 0))

    start = owner(a)
    end = owner(tf.maximum(b - 1, 0)) + 1
    empty = tf.equal(a, b)
    at = tf.where(a < normal_size, start, chunk_size)
    return tf.where(empty, at, start), tf.where(empty, at, end)
