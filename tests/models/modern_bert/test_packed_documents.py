"""ModernBERT on packed rows (`document_ids`): each document's hidden states are those of the
document alone, as ModernBERT's unpadded attention (flash attention's cumulative sequence
lengths) gives them: attention inside each document, rotary positions restarting at each."""

import numpy as np
import pytest

from kbert import models
from kbert.models.modern_bert import modern_bert_attention

# A window of 6 tokens (3 each side), smaller than every document; a global layer every 2nd.
SIZES = dict(vocabulary_size=60, num_layers=3, hidden_size=16, num_heads=2,
             intermediate_size=24, max_sequence_length=64, local_attention=6,
             global_attn_every_n_layers=2)
LENGTHS = (9, 14, 7)  # three documents in a row of 30, then 2 tokens of padding


@pytest.fixture(scope="module")
def backbone():
    return models.ModernBertBackbone(**SIZES)


def _packed_row():
    rng = np.random.default_rng(0)
    documents = [rng.integers(5, 60, size=n).astype("int32") for n in LENGTHS]
    length = sum(LENGTHS) + 2
    token_ids = np.zeros((2, length), "int32")
    document_ids = np.zeros((2, length), "int32")
    token_ids[0, :sum(LENGTHS)] = np.concatenate(documents)
    document_ids[0, :sum(LENGTHS)] = np.repeat([1, 2, 3], LENGTHS)
    # Row 2: the same documents in another order, ids that are not 1, 2, 3 (any run of
    # equal ids is a document).
    order = [2, 0, 1]
    token_ids[1, :sum(LENGTHS)] = np.concatenate([documents[i] for i in order])
    document_ids[1, :sum(LENGTHS)] = np.repeat([7, 4, 9], [LENGTHS[i] for i in order])
    padding_mask = (document_ids > 0).astype("int32")
    return documents, order, {"token_ids": token_ids, "padding_mask": padding_mask,
                              "document_ids": document_ids}


def _alone(backbone, document):
    inputs = {"token_ids": document[None], "padding_mask": np.ones((1, len(document)), "int32")}
    return np.asarray(backbone(inputs)["sequence_output"])[0]


def _each_document(out, documents, order):
    """(packed hidden states, document) pairs of both rows."""
    for row, sequence in enumerate([range(len(documents)), order]):
        start = 0
        for i in sequence:
            yield out[row, start:start + len(documents[i])], documents[i]
            start += len(documents[i])


def test_each_packed_document_equals_the_document_alone(backbone):
    """Global and window layers (a window of 6 under documents of 7 to 14 tokens): each
    document's tokens in a packed row of three give the hidden states of that document run
    alone (positions from 0), within 1e-5; and without `document_ids` they do not."""
    assert [backbone.config.is_global(i) for i in range(3)] == [True, False, True]
    documents, order, inputs = _packed_row()
    packed = np.asarray(backbone.features(inputs)["sequence_output"])
    for got, document in _each_document(packed, documents, order):
        np.testing.assert_allclose(got, _alone(backbone, document), atol=1e-5, rtol=0)
    plain = {k: v for k, v in inputs.items() if k != "document_ids"}
    across = np.asarray(backbone(plain)["sequence_output"])
    assert np.abs(across[0, LENGTHS[0]:sum(LENGTHS)]
                  - packed[0, LENGTHS[0]:sum(LENGTHS)]).max() > 1e-3  # 100x the tolerance


def test_the_whole_matrix_path_keeps_documents_apart_too(backbone):
    """The whole-matrix attention (attention probabilities, as `with_internals` computes them)
    gives the chunked window's outputs and no probability across documents."""
    documents, order, inputs = _packed_row()
    block = backbone.transformer_layers[1]  # a window layer
    x = np.random.default_rng(1).normal(size=inputs["token_ids"].shape + (16,))
    x = x.astype("float32")
    kwargs = dict(padding_mask=inputs["padding_mask"], document_ids=inputs["document_ids"])
    chunked = np.asarray(block(x, **kwargs))
    whole, probs = block(x, return_attention_probs=True, **kwargs)
    real = inputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(whole)[real], chunked[real], atol=1e-5, rtol=0)
    ids = inputs["document_ids"]
    across = (ids[:, :, None] != ids[:, None, :])[:, None] & real[:, None, :, None]
    assert np.asarray(probs)[np.broadcast_to(across, probs.shape)].max() == 0.0


def test_document_runs_number_documents_and_restart_positions():
    runs, positions = modern_bert_attention.document_runs(
        np.array([[1, 1, 1, 2, 2, 3, 0, 0], [5, 5, 5, 5, 5, 5, 5, 5]], "int32"))
    np.testing.assert_array_equal(np.asarray(runs), [[1, 1, 1, 2, 2, 3, 4, 4], [1] * 8])
    np.testing.assert_array_equal(np.asarray(positions),
                                  [[0, 1, 2, 0, 1, 0, 0, 1], list(range(8))])


def test_a_pretrainer_on_packed_rows_shares_the_plain_ones_variables(backbone):
    """`document_ids=True` adds an input, not a weight: its variables (what checkpoints
    hold, in order) are the plain pretrainer's; it saves the setting; `without_document_ids`
    is the plain graph with the same head, for serving."""
    packed = models.ModernBertPretrainer(backbone, document_ids=True)
    plain = models.ModernBertPretrainer(backbone)
    assert "document_ids" in packed.input and "document_ids" not in plain.input
    assert [v.path for v in packed.variables] == [v.path for v in plain.variables]
    assert packed.get_config()["document_ids"] is True
    assert "document_ids" not in plain.get_config()
    assert models.ModernBertPretrainer.from_config(packed.get_config()).document_ids

    _, _, inputs = _packed_row()
    inputs = {**inputs, "mask_positions": np.array([[1, 12, 25], [0, 3, 20]], "int32")}
    served = packed.without_document_ids()
    assert "document_ids" not in served.input and served.backbone is backbone
    one_document = {**inputs, "document_ids": np.ones_like(inputs["document_ids"])}
    np.testing.assert_allclose(
        np.asarray(served({k: v for k, v in inputs.items() if k != "document_ids"})[
            "mlm_logits"]),
        np.asarray(packed(one_document)["mlm_logits"]), atol=1e-5, rtol=0)
    # Internals come from the plain graph (one text a row); the packed one says so.
    with pytest.raises(ValueError, match=r"without_document_ids\(\)\.with_internals"):
        packed.with_internals()
    assert "hidden_states" in served.with_internals(attentions=False).output
