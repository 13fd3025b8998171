"""Sentence embeddings (sentence-transformers' pooling) and search: the task model
(`model.py`) and its record."""

from kbert.tasks.text_embedding.model import TextEmbedder, cosine_similarity, semantic_search
from kbert.tasks.record import TaskRecord

TASK = TaskRecord(
    name="text_embedder",
    summary="one embedding per text, as sentence-transformers",
    pipelines=("sentence-embeddings",),
    aliases={"sentence-similarity": "sentence-embeddings"},
    model=TextEmbedder, preprocessed=True, package=__name__)

__all__ = ["TASK", "TextEmbedder", "cosine_similarity", "semantic_search"]
