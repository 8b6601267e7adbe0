"""The semantic companion: finds things by meaning, in chromadb; rebuildable from the SQLite truth at any time.

Every chromadb failure (a corrupt folder, a server that is down, a missing or stale collection) surfaces as
`CompanionUnavailable` with a reason a person can act on, so callers fall back to lexical search and say why.
We embed texts ourselves (see `sherpa_skills.semantic.embeddings`) and hand chromadb plain vectors: collections carry no
embedding function, so chromadb never tries to download its default ONNX model.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import structlog

from ..errors import SherpaError, UsageError
from .embeddings import Embedder, default_embedder

if TYPE_CHECKING:  # chromadb loads on first use, never at import
    from types import ModuleType

    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import GetResult, QueryResult
    from chromadb.config import Settings

_T = TypeVar("_T")

log = structlog.get_logger(__name__)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,490}[A-Za-z0-9]$")
_REBUILD_SUFFIX = "--rebuilding"
_BATCH = 256
# chromadb's cache of one System per folder is unguarded: two threads opening one folder at once each build a System
# (one never stopped, its files held) or fail half-way (KeyError, "Could not connect to tenant"). Opens take turns.
_OPENING = threading.Lock()
_MetadataValue = str | int | float | bool


class CompanionUnavailable(SherpaError):
    """The companion index cannot answer; `reason` says why (and lookups should fall back to lexical search)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextmanager
def _chroma(doing: str, where: str) -> Iterator[None]:
    """Turn anything chromadb raises (its own errors, httpx errors, Rust panics) into CompanionUnavailable."""
    try:
        yield
    except (CompanionUnavailable, UsageError, KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except BaseException as exc:  # pyo3's PanicException is a BaseException: a corrupt index must not escape raw
        raise CompanionUnavailable(f"companion index at {where} failed to {doing}: {_describe(exc)}") from exc


def _clean_metadata(metadata: dict[str, Any] | None) -> dict[str, _MetadataValue] | None:
    """chromadb takes flat scalar metadata and rejects empty dicts; None values are dropped."""
    if not metadata:
        return None
    clean: dict[str, _MetadataValue] = {}
    for key, value in metadata.items():
        if value is None:
            continue
        if not isinstance(key, str) or not isinstance(value, (str, int, float, bool)):
            raise UsageError(f"companion metadata must map str to str/int/float/bool; got {key!r}: {value!r}")
        clean[key] = value
    return clean or None


class Companion:
    """A chromadb index beside the truth store: embedded in a folder, or a `chroma run` server when `host` is given.

    Opening is lazy and retried on each call until it succeeds, so a server that comes up later is picked up.
    Each collection records the embedder that filled it; a collection filled by another embedder is stale:
    `query` and `upsert` refuse it (its vectors live in another space) until `rebuild` refills it.
    """

    def __init__(
        self,
        path: Path | None = None,
        *,
        embedder: Embedder | None = None,
        host: str | None = None,
        port: int | None = None,
        timeout: float = 30.0,
    ):
        if host is not None and path is not None:
            raise UsageError("Companion takes a folder (embedded chromadb) or a host (chroma server), not both")
        if host is None and port is not None:
            raise UsageError("Companion: a port was given without a host")
        if host is None:
            if path is None:
                from ..home import resolve_home

                path = resolve_home() / "companion"
            self.path: Path | None = Path(path).expanduser().resolve()
        else:
            self.path = None
        self.host = host
        self.port = port if port is not None else 8000
        self.timeout = timeout
        self.embedder: Embedder = embedder if embedder is not None else default_embedder()
        self._client: ClientAPI | None = None
        # The last single text embedded: a memory write queries its own text for near-duplicates, then upserts it.
        self._last: tuple[str, list[float]] | None = None
        self._fresh: dict[
            str, Collection
        ] = {}  # collections already checked: a lookup costs ~5 ms, a match makes several

    @property
    def where(self) -> str:
        return f"http://{self.host}:{self.port}" if self.host is not None else str(self.path)

    # ------------------------------------------------------------ connection

    def _settings(self) -> Settings:
        from chromadb.config import Settings

        return Settings(anonymized_telemetry=False, allow_reset=True)

    def _open(self) -> ClientAPI:
        if self._client is not None:
            return self._client
        try:
            import chromadb
        except ImportError as exc:
            raise CompanionUnavailable(f"chromadb is not installed ({exc})") from exc
        if self.host is not None:
            self._client = self._open_http(chromadb)
        else:
            self._client = self._open_folder(chromadb)
        return self._client

    def _open_folder(self, chromadb: ModuleType) -> ClientAPI:
        assert self.path is not None
        if self.path.exists() and not self.path.is_dir():
            raise CompanionUnavailable(f"companion index path {self.path} exists and is not a folder")
        with _OPENING:
            if not self.path.exists():
                _forget_shared_system(str(self.path))  # a folder deleted under a cached system: start afresh
            try:
                self.path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise CompanionUnavailable(f"cannot create the companion folder {self.path}: {_describe(exc)}") from exc
            try:
                with _chroma("open", self.where):
                    return chromadb.PersistentClient(path=str(self.path), settings=self._settings())
            except CompanionUnavailable:
                _forget_shared_system(str(self.path))  # else chromadb hands the half-built system to the next open
                raise

    def _open_http(self, chromadb: ModuleType) -> ClientAPI:
        import httpx

        url = f"{self.where}/api/v2/heartbeat"
        try:
            httpx.get(url, timeout=min(self.timeout, 5.0)).raise_for_status()
        except Exception as exc:
            raise CompanionUnavailable(f"chroma server at {self.where} is not answering: {_describe(exc)}") from exc
        with _chroma("connect", self.where):
            client = chromadb.HttpClient(host=self.host, port=self.port, settings=self._settings())
        session = getattr(getattr(client, "_server", None), "_session", None)
        if isinstance(session, httpx.Client):  # chromadb's own session never times out; a hung server must not hang us
            session.timeout = httpx.Timeout(self.timeout)
        return client

    def close(self) -> None:
        """Release chromadb's handles (the SQLite file, the HTTP session); the next call reopens."""
        client, self._client = self._client, None
        self._fresh.clear()
        if client is not None and hasattr(client, "close"):
            try:
                client.close()
            except Exception as exc:  # closing must never be what fails
                log.debug("companion_close_failed", where=self.where, reason=_describe(exc))

    def __enter__(self) -> Companion:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ collections

    def _metadata(self) -> dict[str, _MetadataValue]:
        return {
            "hnsw:space": "cosine",
            "embedder": self.embedder.name,
            "dim": self.embedder.dim,
            "semantic": bool(self.embedder.semantic),
        }

    def _check_name(self, collection: str) -> None:
        if (
            not isinstance(collection, str)
            or not _NAME.match(collection)
            or ".." in collection
            or collection.endswith(_REBUILD_SUFFIX)
        ):
            raise UsageError(
                f"companion collection name {collection!r} must be 3-492 characters of "
                f"[A-Za-z0-9._-], start and end alphanumeric, without '..' or '{_REBUILD_SUFFIX}'"
            )

    def _stale_reason(self, collection: str, col: Collection) -> str | None:
        meta = col.metadata or {}
        built_with = meta.get("embedder")
        if built_with != self.embedder.name:
            return (
                f"companion collection {collection!r} was built with embedder {built_with!r}, but the current "
                f"embedder is {self.embedder.name!r}: its vectors are stale; rebuild it from the store"
            )
        return None

    @overload
    def _get(self, collection: str, *, create: Literal[True], fresh: bool = True) -> Collection: ...

    @overload
    def _get(self, collection: str, *, create: bool = False, fresh: bool = True) -> Collection | None: ...

    def _get(self, collection: str, *, create: bool = False, fresh: bool = True) -> Collection | None:
        """The collection, created if asked; None when missing and not created; stale ones refused if `fresh`."""
        self._check_name(collection)
        client = self._open()
        with _chroma(f"open collection {collection!r}", self.where):
            if create:
                col = client.get_or_create_collection(collection, metadata=self._metadata(), embedding_function=None)
            else:
                found = _get_or_none(client, collection)
                if found is None:
                    return None
                col = found
        if fresh:
            reason = self._stale_reason(collection, col)
            if reason:
                raise CompanionUnavailable(reason)
        return col

    def _require(self, collection: str, *, fresh: bool = True) -> Collection:
        if fresh and collection in self._fresh:
            return self._fresh[collection]
        col = self._get(collection, fresh=fresh)
        if col is None:
            raise CompanionUnavailable(
                f"companion collection {collection!r} does not exist at {self.where} "
                f"(never indexed, or removed); rebuild it from the store"
            )
        if fresh and self.path is not None:  # another process may swap a server's collections; a folder's are ours
            self._fresh[collection] = col
        return col

    def _embed(self, texts: list[str]) -> list[list[float]]:
        last = self._last
        if len(texts) == 1 and last is not None and last[0] == texts[0]:
            return [last[1]]
        try:
            vectors = self.embedder.embed(texts)
        except Exception as exc:
            raise CompanionUnavailable(f"embedder {self.embedder.name!r} failed: {_describe(exc)}") from exc
        if len(texts) == 1:
            self._last = (texts[0], vectors[0])
        return vectors

    # ------------------------------------------------------------ public operations

    def upsert(
        self,
        collection: str,
        ids: list[str],
        texts: list[str],
        metadatas: list[dict[str, Any]] | None = None,
        vectors: list[list[float]] | None = None,
    ) -> None:
        """Add or replace items; the collection is created on first use. A repeated id keeps its last text.
        `vectors`, when the caller already embedded `texts` with this embedder, are stored as given."""
        if len(ids) != len(texts) or any(x is not None and len(x) != len(ids) for x in (metadatas, vectors)):
            raise UsageError("upsert needs as many texts (and metadatas and vectors, if given) as ids")
        metas = [_clean_metadata(m) for m in metadatas] if metadatas is not None else [None] * len(ids)
        last = {str(i): n for n, i in enumerate(ids)}  # chromadb rejects duplicate ids within one call
        order = sorted(last.values())
        rows = [(str(ids[n]), texts[n], metas[n]) for n in order]
        if not rows:
            return
        col = self._get(collection, create=True)
        self._write(col, collection, rows, "upsert", None if vectors is None else [list(vectors[n]) for n in order])

    def _write(
        self,
        col: Collection,
        collection: str,
        rows: list[tuple[str, str, dict[str, Any] | None]],
        how: str,
        given: list[list[float]] | None = None,
    ) -> int:
        with _chroma("report its batch size", self.where):
            limit = min(_BATCH, int(self._open().get_max_batch_size()))
        written = 0
        for start in range(0, len(rows), limit):
            chunk = rows[start : start + limit]
            vectors = given[start : start + limit] if given is not None else self._embed([text for _, text, _ in chunk])
            metas = [m for _, _, m in chunk]
            with _chroma(f"{how} into {collection!r}", self.where):
                getattr(col, how)(
                    ids=[i for i, _, _ in chunk],
                    embeddings=vectors,
                    documents=[t for _, t, _ in chunk],
                    metadatas=metas if any(m is not None for m in metas) else None,
                )
            written += len(chunk)
        return written

    def delete(self, collection: str, ids: list[str]) -> None:
        """Remove items by id; ids (or a collection) that do not exist are not an error."""
        if not ids:
            return  # never hand chromadb an empty id list: a filterless delete must not be possible
        col = self._get(collection, fresh=False)
        if col is None:
            return
        with _chroma(f"delete from {collection!r}", self.where):
            col.delete(ids=[str(i) for i in ids])

    def query(
        self,
        collection: str,
        text: str,
        n: int = 10,
        where: dict[str, Any] | None = None,
        vector: list[float] | None = None,
    ) -> list[tuple[str, float]]:
        """The `n` nearest items as (id, similarity), best first; similarity is cosine clamped to [0, 1].

        Approximate (HNSW); pass `vector` when the caller already embedded `text`, so it is embedded once.
        """
        if n <= 0:
            return []
        vectors = [list(vector)] if vector is not None else self._embed([text])

        def run(col: Collection) -> QueryResult:
            # chromadb 1.x returns fewer results when n exceeds the collection:
            # no count needed (it costs ~11 ms at 100k).
            with _chroma(f"query {collection!r}", self.where):
                return col.query(
                    query_embeddings=vectors,  # type: ignore[arg-type]  # chromadb's list type is invariant: list[list[float]] is what it reads
                    n_results=n,
                    where=where or None,
                    include=["distances"],
                )

        result = self._with_collection(collection, run)
        ids = (result.get("ids") or [[]])[0]
        distances = (result.get("distances") or [[]])[0]
        return [(str(i), max(0.0, min(1.0, 1.0 - float(d)))) for i, d in zip(ids, distances, strict=True)]

    def _with_collection(self, collection: str, run: Callable[[Collection], _T]) -> _T:
        """Run against the (cached) collection; a handle gone stale under a rebuild elsewhere is fetched again once."""
        cached = collection in self._fresh
        try:
            return run(self._require(collection))
        except CompanionUnavailable:
            if not cached:
                raise
            self._fresh.pop(collection, None)
            return run(self._require(collection))

    def embed_query(self, text: str) -> list[float]:
        """The current embedder's vector for one text (CompanionUnavailable if the embedder fails)."""
        return self._embed([text])[0]

    def vectors(self, collection: str, ids: list[str]) -> dict[str, list[float]]:
        """The stored vectors of these items (missing ids are left out), for exact scoring of approximate neighbours."""
        if not ids:
            return {}

        def run(col: Collection) -> GetResult:
            with _chroma(f"read vectors from {collection!r}", self.where):
                return col.get(ids=[str(i) for i in ids], include=["embeddings"])

        got = self._with_collection(collection, run)
        embeddings = got.get("embeddings")
        if embeddings is None:
            return {}
        return {str(i): list(map(float, v)) for i, v in zip(got.get("ids") or [], embeddings, strict=True)}

    def ids(self, collection: str) -> set[str]:
        """Every item id in the collection: what a sync with the truth compares (a missing one is unavailable)."""

        def run(col: Collection) -> GetResult:
            with _chroma(f"list ids of {collection!r}", self.where):
                return col.get(include=[])

        return {str(i) for i in self._with_collection(collection, run).get("ids") or []}

    def count(self, collection: str) -> int:
        """How many items the collection holds (a stale collection still counts; a missing one is unavailable)."""
        col = self._require(collection, fresh=False)
        with _chroma(f"count {collection!r}", self.where):
            return int(col.count())

    def stale(self, collection: str) -> str | None:
        """Why the collection's vectors do not fit the current embedder, or None when they do."""
        return self._stale_reason(collection, self._require(collection, fresh=False))

    def rebuild(
        self,
        collection: str,
        items: Iterable[tuple[str, str, dict[str, Any] | None]],
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Refill a collection from scratch with the current embedder; returns how many items it holds.

        The new index is built beside the old one and swapped in at the end, so lookups keep answering
        during a rebuild and a crash part-way leaves the old collection in place.
        """
        self._check_name(collection)
        client = self._open()
        self._fresh.pop(collection, None)
        staging = collection + _REBUILD_SUFFIX
        with _chroma(f"start rebuilding {collection!r}", self.where):
            if _get_or_none(client, staging) is not None:
                client.delete_collection(staging)
            col = client.create_collection(staging, metadata=self._metadata(), embedding_function=None)
        total = 0
        batch: dict[str, tuple[str, str, dict[str, Any] | None]] = {}
        for item_id, text, metadata in items:
            batch[str(item_id)] = (str(item_id), text, _clean_metadata(metadata))
            if len(batch) >= _BATCH:
                total += self._write(col, collection, list(batch.values()), "upsert")
                batch.clear()
                if progress is not None:
                    progress(total)  # a long rebuild is never silent: the caller shows how far it got
        if batch:
            total += self._write(col, collection, list(batch.values()), "upsert")
            if progress is not None:
                progress(total)
        with _chroma(f"swap in the rebuilt {collection!r}", self.where):
            if _get_or_none(client, collection) is not None:
                client.delete_collection(collection)
            col.modify(name=collection)
            size = int(col.count())
        log.info("companion_rebuilt", collection=collection, items=size, embedder=self.embedder.name, where=self.where)
        return size

    def healthy(self, *, deep: bool = False) -> tuple[bool, str]:
        """(ok, why): opens the index and checks every collection's embedder. Never raises.

        `deep` also reads every collection in a child process first, for an embedded folder: a corrupt
        vector file can crash chromadb's native code outright, and it must crash the child, not us.
        """
        try:
            if deep and self.path is not None:
                problem = _probe_in_child(self.path)
                if problem:
                    return False, problem
            client = self._open()
            with _chroma("list collections", self.where):
                client.heartbeat()
                names = sorted(c.name if hasattr(c, "name") else str(c) for c in client.list_collections())
            parts, problems = [], []
            for name in names:
                if name.endswith(_REBUILD_SUFFIX):
                    continue  # an interrupted rebuild; the next rebuild replaces it
                with _chroma(f"open collection {name!r}", self.where):
                    col = client.get_collection(name, embedding_function=None)
                    size = col.count()
                reason = self._stale_reason(name, col)
                if reason:
                    problems.append(reason)
                parts.append(f"{name} ({size} items)")
            summary = f"companion at {self.where}, embedder {self.embedder.name!r}: " + (
                ", ".join(parts) or "no collections"
            )
            if problems:
                return False, "; ".join(problems)
            return True, summary
        except CompanionUnavailable as exc:
            return False, exc.reason

    def __repr__(self) -> str:
        return f"Companion({self.where!r}, embedder={self.embedder.name!r})"


def _get_or_none(client: ClientAPI, name: str) -> Collection | None:
    from chromadb.errors import NotFoundError

    try:
        return client.get_collection(name, embedding_function=None)
    except NotFoundError:
        return None
    except ValueError as exc:  # some chromadb versions and transports say "does not exist" with a ValueError
        if "does not exist" in str(exc):
            return None
        raise


def _forget_shared_system(identifier: str) -> None:
    """chromadb caches one System per folder, even a failed one; drop it so the next open tries afresh."""
    try:
        from chromadb.api.shared_system_client import SharedSystemClient

        SharedSystemClient._identifier_to_system.pop(identifier, None)
        SharedSystemClient._identifier_to_refcount.pop(identifier, None)
    except Exception:  # a chromadb without this cache has nothing to forget
        pass


_PROBE = """
import sys
import chromadb
from chromadb.config import Settings
client = chromadb.PersistentClient(path=sys.argv[1], settings=Settings(anonymized_telemetry=False))
for c in client.list_collections():
    col = client.get_collection(c.name if hasattr(c, "name") else str(c), embedding_function=None)
    if col.count():
        dim = int((col.metadata or {}).get("dim") or len(col.peek(1)["embeddings"][0]))
        col.query(query_embeddings=[[1.0] + [0.0] * (dim - 1)], n_results=1, include=["distances"])
"""


def _probe_in_child(path: Path) -> str | None:
    """Read every collection in a separate interpreter; a crash or an error there is reported, not suffered."""
    if not path.exists():
        return None
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE, str(path)], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return f"companion index at {path} did not answer a test query within 120 s"
    if done.returncode == 0:
        return None
    if done.returncode < 0:
        return (
            f"companion index at {path} crashed chromadb (signal {-done.returncode}) when read: it is corrupt; "
            f"delete that folder and rebuild it from the store"
        )
    last = (done.stderr.strip().splitlines() or ["no message"])[-1]
    return f"companion index at {path} failed a test read: {last}"
