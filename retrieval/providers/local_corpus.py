"""Search over a local JSONL corpus with BM25 (bm25s), optionally reranked by meaning.

Tokens are lower-cased ``\\w+`` words, English stop words removed; runs of CJK characters, which
carry no spaces, become overlapping character pairs, so that Chinese pages (as in MR2) can be
searched too.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import date
from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel

from m3d_agents.errors import InputError
from m3d_agents.safe_files import OwnedFolder
from retrieval.providers.base import SearchHit

_WORD = re.compile(r"\w+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def tokenize(text: str, stopwords: frozenset[str] | None = None) -> list[str]:
    stop = _stopwords() if stopwords is None else stopwords
    tokens: list[str] = []
    for word in _WORD.findall(text.lower()):
        start = 0
        for run in _CJK.finditer(word):
            tokens.extend(w for w in [word[start : run.start()]] if w and w not in stop)
            chars = run.group(0)
            tokens.extend([chars] if len(chars) == 1 else [chars[i : i + 2] for i in range(len(chars) - 1)])
            start = run.end()
        rest = word[start:]
        if rest and rest not in stop:
            tokens.append(rest)
    return tokens


class CorpusDocument(BaseModel):
    id: str
    text: str
    title: str | None = None
    url: str | None = None
    published: date | None = None
    """When the document appeared, if the corpus knows: the leakage filter drops documents after a claim."""


class CorpusHit(BaseModel):
    document: CorpusDocument
    score: float


class LocalCorpus:
    """A BM25 index over documents; ``search`` gives the best ``limit`` documents for a query."""

    name = "corpus"
    offline = True
    """Answers from files on disk: its searches are not network fetches."""

    def __init__(self, documents: list[CorpusDocument], retriever: Any, reranker: Any = None, name: str = "corpus") -> None:
        self.documents = documents
        self.retriever = retriever
        self.reranker = reranker
        self.name = name

    @classmethod
    def build(cls, documents: Iterable[CorpusDocument], reranker: Any = None, name: str = "corpus") -> "LocalCorpus":
        import bm25s

        docs = list(documents)
        if not docs:
            raise InputError("corpus", "no documents to index")
        from bm25s.tokenization import Tokenized

        token_lists = [tokenize(_indexed_text(d)) for d in docs]
        vocab = {token: i for i, token in enumerate(sorted({t for tokens in token_lists for t in tokens}))}
        retriever = bm25s.BM25()
        # Ids from a sorted vocabulary make the saved index byte-for-byte reproducible.
        retriever.index(Tokenized(ids=[[vocab[t] for t in tokens] for tokens in token_lists], vocab=vocab), show_progress=False)
        return cls(docs, retriever, reranker, name)

    @classmethod
    def from_jsonl(
        cls, path: Path, text_field: str = "text", id_field: str = "id", title_field: str | None = "title",
        url_field: str | None = "url", reranker: Any = None,
    ) -> "LocalCorpus":
        return cls.build(read_jsonl_documents(path, text_field, id_field, title_field, url_field), reranker, path.stem)

    def save(self, directory: Path, prefix: str) -> None:
        """Index files plus ``<prefix>.documents.jsonl``, all flat in ``directory``; written in a fresh private folder
        and moved in (:meth:`~m3d_agents.safe_files.OwnedFolder.staging`), since the index library writes its own way."""
        with OwnedFolder(directory).staging() as staged:
            self.retriever.save(str(staged), **_file_names(prefix), show_progress=False)
            lines = "".join(doc.model_dump_json(exclude_none=True) + "\n" for doc in self.documents)
            OwnedFolder(staged).write(f"{prefix}.documents.jsonl", lines.encode("utf-8"))  # public text, kept byte for byte

    @classmethod
    def load(cls, directory: Path, prefix: str, reranker: Any = None) -> "LocalCorpus":
        import bm25s

        docs_file = directory / f"{prefix}.documents.jsonl"
        if not docs_file.is_file():
            raise InputError("corpus", f"no saved index {prefix!r} in {directory}")
        retriever = bm25s.BM25.load(str(directory), **_file_names(prefix), show_progress=False)
        docs = [CorpusDocument.model_validate_json(line) for line in docs_file.read_text(encoding="utf-8").splitlines() if line]
        return cls(docs, retriever, reranker, prefix)

    def search_sync(self, query: str, limit: int = 5, candidates: int = 50) -> list[CorpusHit]:
        tokens = tokenize(query)
        if not tokens:
            return []
        vocab = getattr(self.retriever, "vocab_dict", {}) or {}
        tokens = [t for t in tokens if t in vocab]
        if not tokens:
            return []
        k = min(len(self.documents), max(limit, candidates if self.reranker else limit))
        indices, scores = self.retriever.retrieve([tokens], k=k, show_progress=False, n_threads=0)
        hits = [
            CorpusHit(document=self.documents[int(i)], score=float(s))
            for i, s in zip(indices[0], scores[0])
            if float(s) > 0
        ]
        if self.reranker is not None and hits:
            similarity = self.reranker.scores(query, [_indexed_text(h.document) for h in hits])
            hits = [CorpusHit(document=h.document, score=s) for h, s in zip(hits, similarity)]
            hits.sort(key=lambda h: -h.score)
        return hits[:limit]

    async def search_documents(self, query: str, limit: int = 5) -> list[CorpusHit]:
        return await asyncio.to_thread(self.search_sync, query, limit)

    async def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        """The :class:`~retrieval.providers.base.WebSearch` view: documents as hits with their text as snippet."""
        return [
            SearchHit(
                url=h.document.url or f"corpus:{self.name}/{h.document.id}",
                title=h.document.title, snippet=h.document.text, provider=self.name, rank=rank, match="page",
                published=h.document.published,
            )
            for rank, h in enumerate(await self.search_documents(query, limit))
        ]


def _indexed_text(doc: CorpusDocument) -> str:
    return f"{doc.title}. {doc.text}" if doc.title else doc.text


def _file_names(prefix: str) -> dict[str, str]:
    return {
        "data_name": f"{prefix}.data.csc.index.npy",
        "indices_name": f"{prefix}.indices.csc.index.npy",
        "indptr_name": f"{prefix}.indptr.csc.index.npy",
        "vocab_name": f"{prefix}.vocab.index.json",
        "params_name": f"{prefix}.params.index.json",
        "nnoc_name": f"{prefix}.nonoccurrence_array.index.npy",
    }


def read_jsonl_documents(
    path: Path, text_field: str, id_field: str, title_field: str | None, url_field: str | None
) -> list[CorpusDocument]:
    if not path.is_file():
        raise InputError("corpus", f"{path} does not exist")
    docs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path.name}:{number}", f"not valid JSON: {exc}") from exc
        text = row.get(text_field)
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{path.name}:{number}", f"no text in field {text_field!r}")
        published = row.get("published")
        try:
            day = date.fromisoformat(str(published)[:10]) if published else None
        except ValueError as exc:
            raise InputError(f"{path.name}:{number}", f"published {published!r} is not a YYYY-MM-DD date") from exc
        docs.append(
            CorpusDocument(
                id=str(row.get(id_field, number)), text=text,
                title=row.get(title_field) if title_field else None, url=row.get(url_field) if url_field else None,
                published=day,
            )
        )
    return docs
