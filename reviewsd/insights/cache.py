"""
Per-review analyses kept between derivations, in memory and optionally in
an SQLite file in the state directory.

An entry is valid for one review id, the SHA-256 of its text and the
engine version (L{reviewsd.insights.analysis.ENGINE_VERSION}: the analysis
code, the data files and VADER's version); anything else is analysed
again.  Each entry also remembers which technicians, services and places
the text mentions, valid for one fingerprint of the business's names,
aliases and keywords, so that a change to the business metadata re-runs
only the (cheap) matching, never VADER.

An analysis is stored in a compact JSON form that only L{to_stored} and
L{from_stored} know; a change to that form bumps the file's schema, so
that a file in the old one is discarded, as for another engine version.

A cache given a C{memo_version} also keeps in the file what derivation
made of each entry (its memo, L{reviewsd.insights.tally.Memo}: the verdict
and the review's C{per_review} JSON), valid for that version and the
entry's mentions; a start then reads the memos instead of the analyses,
and makes none again.  Memos of another version are ignored and replaced.
Such a file also keeps derivation's checkpoint (L{ReviewCache.checkpoint}),
written in the same transaction as the memos it adds up: a start that finds
it still holds reads the memos of the reviews after it only.

The file is this module's only I/O.  Its entries are read at construction,
their memos when derivation needs them (L{ReviewCache.recall});
L{ReviewCache.save} writes what changed since.  An analysis the file holds
is not kept in memory too: derivation keeps what it made of it, and reads
it back in the rare case it must make that again.  A file that is not a
readable cache (corrupt, truncated, another program's, written by another
engine version) is discarded and rebuilt, never fatal.  The cache is meant
for one worker thread at a time; a lock keeps concurrent use from
corrupting it, not from doing the work twice.
"""

from __future__ import annotations

import hashlib
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from reviewsd.insights.analysis import ENGINE_VERSION, Analysis, analyse
from reviewsd.memory import paused

if TYPE_CHECKING:
    from reviewsd.data.mentions import Matcher
    from reviewsd.data.model import Business

Mentions = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]
"""
The technicians, services (ids) and places a text names, each sorted: a
plain tuple, as the records of an analysis (L{Analysis}), for it is kept
for every review.
"""

NOTHING: Mentions = ((), (), ())

Reading = tuple[str, Mentions]
"""What is read of a new text: its analysis in the stored form, and its mentions."""

Workers = Callable[[Sequence[str], "Business"], "list[Reading] | None"]
"""
Reads a batch of new texts at once, in their order, their mentions those of
the business given; or declines with C{None}
(L{reviewsd.insights.workers.AnalysisWorkers}).
"""


def mentions_in(matcher: Matcher, text: str) -> Mentions:
    """What C{text} mentions of C{matcher}'s business, in the form kept."""
    found = matcher.find(text)
    return (
        tuple(sorted(found.technicians)),
        tuple(sorted(found.services)),
        tuple(sorted(found.areas)),
    )


#: Bumped when the tables or the stored form of an analysis change.
_SCHEMA = 3
_MENTION_KEYS = ("technicians", "services", "areas")
#: How many memos L{ReviewCache.recall} asks the file for at once.
_BATCH = 500


def to_stored(analysis: Analysis) -> str:
    """
    The stored form of an analysis: a JSON object with one-letter keys, as
    small as it can be for every review of the file.  C{"s"}: score; C{"c"}:
    sentence_scores; C{"a"}: aspects, C{[[id, score, [phrase, ...]], ...]};
    C{"t"}: topics; C{"p"}: problems, C{[[id, [[compound, [phrase, ...]],
    ...]], ...]}; C{"q"}: quotes, C{[[sentence, compound, [aspect id,
    ...]], ...]}; C{"e"}: extremes, C{[highest, lowest]}.  L{from_stored}
    reads it back.
    """
    return _to_json(
        {
            "s": analysis.score,
            "c": analysis.sentence_scores,
            "a": analysis.aspects,
            "t": analysis.topics,
            "p": analysis.problems,
            "q": analysis.quotes,
            "e": analysis.extremes,
        }
    )


def from_stored(stored: str) -> Analysis:
    """
    The analysis L{to_stored} stored.  Ids and phrases repeat across
    reviews, and derivation keeps them for every review: each is read as
    the one shared string of its value.  Problems stay as stored
    (L{reviewsd.insights.analysis.ProblemMention}).

    @raise ValueError: C{stored} is not the stored form of an analysis
        (C{orjson.JSONDecodeError} is one).
    """
    value = orjson.loads(stored)
    intern = sys.intern
    try:
        # positionally: a start makes one for every review
        return Analysis(
            value["s"],
            value["c"],
            tuple(
                [
                    (intern(aspect), score, tuple(map(intern, phrases)))
                    for aspect, score, phrases in value["a"]
                ]
            ),
            tuple(map(intern, value["t"])),
            value["p"],
            tuple(
                [
                    (sentence, compound, tuple(map(intern, aspect_ids)))
                    for sentence, compound, aspect_ids in value["q"]
                ]
            ),
            _extremes(value["e"]),
        )
    except (TypeError, KeyError, ValueError) as e:
        raise ValueError(f"not an analysis: {e}") from e


def _extremes(value: Any) -> tuple[float, float]:
    highest, lowest = value
    if not isinstance(highest, (int, float)) or not isinstance(lowest, (int, float)):
        raise ValueError("extremes must be numbers")
    return (highest, lowest)


def text_hash(text: str) -> str:
    """The SHA-256 of C{text} as UTF-8, in hex."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class StoredMemo(Protocol):
    """What derivation makes of an entry, as the cache saves it."""

    def stored(self) -> tuple[str, bytes]:
        """The memo as the file keeps it: compact JSON, and raw bytes."""


class StoredCheckpoint(Protocol):
    """Where the next derivation may start, as the cache saves it."""

    def stored(self) -> tuple[bytes, bytes]:
        """
        The checkpoint as the file keeps it: compact JSON, and the
        C{per_review} members of its reviews.
        """

    def mark(self) -> Any:
        """What the cache remembers of it once the file holds it."""

    def supersedes(self, saved: Any) -> bool:
        """
        Whether a file holding the checkpoint C{saved} names (L{mark}), or
        none (C{None}), is to be given this one.
        """


#: What L{ReviewCache} knows the file holds of the checkpoint before
#: anything is saved or adopted: not known, so that the first save writes it.
_UNKNOWN: Any = object()


class Entry:
    """
    One review's analysis, as the JSON it is stored as (a tenth of the
    memory of the objects it stands for), parsed only when derivation's
    memo of it has to be made again; C{raw} is C{None} once the file holds
    it.
    """

    __slots__ = ("digest", "text", "raw", "mentions_key", "mentions", "memo", "kept")

    def __init__(
        self,
        digest: str,
        raw: str | None,
        mentions_key: str | None = None,
        mentions: Mentions | None = None,
        text: str | None = None,
    ) -> None:
        self.digest = digest
        #: The text last seen with this digest, if any: comparing it is
        #: cheaper than hashing the text again on every derivation.
        self.text = text
        self.raw = raw
        self.mentions_key = mentions_key
        self.mentions = mentions
        #: Derivation's memo of what this entry contributes (L{remember}).
        self.memo: Any = None
        #: The file's memo (L{StoredMemo.stored}), from L{ReviewCache.recall}
        #: until derivation reads it.
        self.kept: tuple[str, bytes] | None = None


def _mentions_from_json(raw: str | None) -> Mentions | None:
    found = None if raw is None else orjson.loads(raw)
    if not isinstance(found, dict) or found.keys() != set(_MENTION_KEYS):
        return None
    lists = [found[key] for key in _MENTION_KEYS]
    if not all(isinstance(names, list) for names in lists):
        return None
    technicians, services, areas = map(tuple, lists)
    return technicians, services, areas


def _names(names: Iterable[str]) -> tuple[str, ...]:
    """Names as one shared string each: they repeat across many reviews."""
    return tuple(map(sys.intern, names))


class ReviewCache:
    """
    Per-review analyses keyed by (review id, SHA-256 of the text, engine
    version); with a C{path}, persisted there as SQLite.  C{workers}, when
    given, reads a batch of new texts at once (L{prepare}, L{Workers}), or
    declines and leaves them to C{analyser} and the matcher, one by one.
    C{memo_version}, when given, is the version of derivation's memos
    (L{reviewsd.insights.tally.MEMO_VERSION}) the file keeps beside the
    analyses; without it, memos live in memory only.

    @ivar analysed: how many texts were analysed (cache misses) since
        construction.
    @ivar reused: how many analyses were taken from the cache.
    @ivar discarded: why the file was discarded at load, or C{None}.
    """

    def __init__(
        self,
        path: Path | None = None,
        *,
        analyser: Callable[[str], Analysis] = analyse,
        workers: Workers | None = None,
        memo_version: str | None = None,
    ) -> None:
        self.path = path
        self._memo_version = memo_version
        self._analyse = analyser
        self._workers = workers
        #: What L{prepare} read, by review id: (text, stored analysis,
        #: mentions), the mentions for the business fingerprint
        #: C{_prepared_key}.
        self._prepared: dict[str, tuple[str, str, Mentions]] = {}
        self._prepared_key = ""
        #: The mentions entries hold, each kept once (L{_shared}).
        self._named: dict[Mentions, Mentions] = {}
        self._entries: dict[str, Entry] = {}
        self._dirty: set[str] = set()
        self._removed: set[str] = set()
        self._rewrite = False
        #: Whether the file holds memos of another version, to be cleared.
        self._stale_memos = False
        self._lock = threading.RLock()
        self._file: sqlite3.Connection | None = None  # for reading back
        self.analysed = 0
        self.reused = 0
        self.discarded: str | None = None
        #: Where the next derivation may start (derive.Checkpoint): kept
        #: here, beside the analyses it adds up, and saved with them.
        self.checkpoint: Any = None
        #: The checkpoint the file holds, as L{StoredCheckpoint.stored}
        #: wrote it, until derivation reads it back (L{adopt}).
        self.stored_checkpoint: tuple[bytes, bytes] | None = None
        #: Whether the file's memos are of C{memo_version}, to be recalled.
        self._memos_in_file = False
        #: The file's checkpoint, as L{StoredCheckpoint.mark} names it.
        self._saved_checkpoint: Any = _UNKNOWN
        #: The last derivation's C{per_review} members (tally.Tally), until
        #: tally.share_per_review points them at the published bytes.
        self.published: Any = None
        self.load()

    def __len__(self) -> int:
        return len(self._entries)

    # --- use ---------------------------------------------------------------

    def entry(self, review_id: str, text: str) -> Entry:
        """The entry for one review, analysing the text when needed."""
        with self._lock:
            entry = self._held(review_id, text)
            if entry is not None:
                self.reused += 1
                return entry
            return self._analysed(review_id, text)

    def _held(self, review_id: str, text: str) -> Entry | None:
        """The entry of C{review_id} if it holds the analysis of C{text}."""
        entry = self._entries.get(review_id)
        if entry is not None:
            known = entry.text
            if known is text or (
                known == text if known is not None else entry.digest == text_hash(text)
            ):
                # Keep the newest string, so that older datasets' copies of
                # the same text can be freed, and the next look is by identity.
                entry.text = text
                return entry
        return None

    def prepare(
        self, reviews: Iterable[tuple[str, str]], business: Business, key: str
    ) -> None:
        """
        Have the workers read at once the texts of C{reviews} (review id,
        text) that the cache holds no analysis of: each one's analysis, and
        what it mentions of C{business}, whose fingerprint is C{key}.
        L{entry} then takes each as if it had just made it, mentions and
        all.  Without workers, or when they decline, nothing is done.
        """
        if self._workers is None:
            return
        with self._lock:
            missing = [(i, t) for i, t in reviews if self._held(i, t) is None]
        self._prepared = {}
        if not missing:
            return
        read = self._workers([text for _, text in missing], business)
        if read is None:
            return
        for (review_id, text), (raw, found) in zip(missing, read, strict=True):
            self._prepared[review_id] = (text, raw, self._shared(found))
        self._prepared_key = key

    def _shared(self, found: Mentions) -> Mentions:
        """
        C{found} as entries keep it: most texts name the same few things,
        so each such tuple, and each name in it, is kept once.
        """
        mentions = self._named.get(found)
        if mentions is None:
            technicians, services, areas = map(_names, found)
            mentions = (technicians, services, areas)
            self._named[mentions] = mentions
        return mentions

    def _analysed(self, review_id: str, text: str) -> Entry:
        """
        A new entry for C{review_id}, with the analysis of C{text}: the one
        L{prepare} read, with its mentions, else one made now.
        """
        prepared = self._prepared.pop(review_id, None)
        if prepared is not None and prepared[0] == text:
            _, raw, mentions = prepared
            entry = Entry(text_hash(text), raw, self._prepared_key, mentions, text=text)
        else:
            entry = Entry(text_hash(text), to_stored(self._analyse(text)), text=text)
        self.analysed += 1
        self._entries[review_id] = entry
        self._dirty.add(review_id)
        self._removed.discard(review_id)
        return entry

    def read(self, review_id: str, entry: Entry) -> tuple[Entry, Analysis]:
        """
        The analysis C{entry} holds; one the file held that does not read as
        an analysis is made again, in a new entry.
        """
        raw = entry.raw
        if raw is None:
            raw = self._stored(review_id, entry.digest)
        if raw is not None:
            try:
                return entry, from_stored(raw)
            except ValueError:
                pass
        with self._lock:
            entry = self._analysed(review_id, entry.text or "")
        assert entry.raw is not None  # a new entry holds its analysis
        return entry, from_stored(entry.raw)

    def _stored(self, review_id: str, digest: str) -> str | None:
        """The file's analysis of C{review_id}'s text, if it still has it."""
        if self.path is None:
            return None
        with self._lock:
            try:
                if self._file is None:
                    self._file = _connect_read_only(self.path, threads=True)
                row = self._file.execute(
                    "SELECT digest, analysis FROM reviews WHERE id = ?", (review_id,)
                ).fetchone()
            except sqlite3.Error:
                return None
        if row is None or row[0] != digest:
            return None
        analysis = row[1]
        return analysis if isinstance(analysis, str) else None

    def _close_file(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def mentions(
        self,
        review_id: str,
        entry: Entry,
        key: str,
        find: Callable[[], Mentions],
    ) -> Mentions:
        """
        The mentions of C{entry}'s text for the business fingerprint C{key},
        from C{find()} when not already known for that key.
        """
        if entry.mentions_key == key and entry.mentions is not None:
            return entry.mentions
        with self._lock:
            entry.mentions = self._shared(find())
            entry.mentions_key = key
            entry.memo = entry.kept = None
            self._dirty.add(review_id)
            return entry.mentions

    def remember(self, review_id: str, entry: Entry, memo: StoredMemo) -> None:
        """Keep derivation's new memo of C{entry}, to be saved with it."""
        with self._lock:
            entry.memo = memo
            entry.kept = None
            self._dirty.add(review_id)

    def adopt(self, checkpoint: StoredCheckpoint) -> None:
        """
        Make C{checkpoint}, read back from L{stored_checkpoint}, the one
        the next derivation may start at: the file holds it already.
        """
        self.checkpoint = checkpoint
        self._saved_checkpoint = checkpoint.mark()
        self.stored_checkpoint = None

    def recall(self, review_ids: Iterable[str]) -> None:
        """
        Read from the file, at once, the memos of those of C{review_ids}
        that derivation has not made (L{Entry.kept}): the file holds them,
        and memory only those derivation uses (a start that adopts a
        checkpoint, the newest reviews').
        """
        if self.path is None or not self._memos_in_file:
            return
        with self._lock:
            wanted = []
            for review_id in review_ids:
                entry = self._entries.get(review_id)
                if (
                    entry is not None
                    and entry.memo is None
                    and entry.kept is None
                    and entry.mentions is not None
                ):
                    wanted.append(review_id)
            if not wanted:
                return
            try:
                connection = _connect_read_only(self.path)
                try:
                    self._read_memos(connection, wanted)
                finally:
                    connection.close()
            except sqlite3.Error:
                pass  # made again from the analyses

    def _read_memos(self, connection: sqlite3.Connection, wanted: list[str]) -> None:
        """The memos of C{wanted} that the file holds: each entry's L{Entry.kept}."""
        select = (
            "SELECT id, digest, mentions_key, memo, member FROM reviews"
            " WHERE memo IS NOT NULL"
        )
        if len(wanted) > len(self._entries) // 2:  # most of the file: one pass
            queries: list[tuple[str, Sequence[str]]] = [(select, ())]
        else:
            batches = [wanted[i : i + _BATCH] for i in range(0, len(wanted), _BATCH)]
            queries = [
                (f"{select} AND id IN ({', '.join('?' * len(batch))})", batch)
                for batch in batches
            ]
        ids = set(wanted)
        for query, parameters in queries:
            rows = connection.execute(query, parameters)
            for review_id, digest, mentions_key, held, member in rows:
                entry = self._entries[review_id] if review_id in ids else None
                if (
                    entry is not None
                    and entry.digest == digest
                    and entry.mentions_key == mentions_key
                    and isinstance(held, str)
                    and isinstance(member, bytes)
                ):
                    entry.kept = (held, member)

    def mentioned(self, review_id: str) -> Mentions:
        """What the review's text was last found to mention."""
        entry = self._entries.get(review_id)
        return NOTHING if entry is None or entry.mentions is None else entry.mentions

    def retain(self, review_ids: Iterable[str]) -> None:
        """Forget the reviews not in C{review_ids} (deleted or unpublished)."""
        keep = set(review_ids)
        with self._lock:
            self._prepared = {}
            for review_id in [r for r in self._entries if r not in keep]:
                del self._entries[review_id]
                self._dirty.discard(review_id)
                self._removed.add(review_id)

    # --- persistence -------------------------------------------------------

    def load(self) -> None:
        """Read the file, if any; discard it when it is not a usable cache."""
        with self._lock:
            self._close_file()
            self.discarded = None
            self._entries.clear()
            self._named.clear()
            self._dirty.clear()
            self._removed.clear()
            self._rewrite = self._stale_memos = self._memos_in_file = False
            self.stored_checkpoint, self._saved_checkpoint = None, _UNKNOWN
            if self.path is None or not self.path.exists():
                self._rewrite = self.path is not None
                return
            try:
                with paused():
                    entries = self._read(self.path)
            except (sqlite3.Error, OSError, ValueError, TypeError, KeyError) as e:
                self.discarded = f"{type(e).__name__}: {e}"
                self._rewrite = True
                return
            if entries is None:
                self.discarded = "written by another engine version"
                self._rewrite = True
                return
            self._entries = entries

    def _read(self, path: Path) -> dict[str, Entry] | None:
        connection = _connect_read_only(path)
        try:
            meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
            if meta.get("schema") != str(_SCHEMA) or meta.get("engine") != (
                ENGINE_VERSION
            ):
                return None
            memos = meta.get("memos")
            usable = memos is not None and memos == self._memo_version
            self._stale_memos = not usable and None not in (memos, self._memo_version)
            entries = {}
            # most rows name the same few things: each text is read once
            known: dict[str | None, Mentions | None] = {}
            # an analysis is read with its entry only where no memo stands
            # for it; the others, when used (ReviewCache.read); memos, when
            # derivation needs them (ReviewCache.recall)
            rows = connection.execute(
                "SELECT id, digest, CASE WHEN memo IS NULL THEN analysis END,"
                " mentions_key, mentions, memo IS NOT NULL FROM reviews"
                if usable
                else "SELECT id, digest, analysis, mentions_key, mentions,"
                " 0 FROM reviews"
            )
            for row in rows:
                review_id, digest, analysis, mentions_key, mentions, memo = row
                if mentions in known:
                    found = known[mentions]
                else:
                    parsed = _mentions_from_json(mentions)
                    found = known[mentions] = (
                        None if parsed is None else self._shared(parsed)
                    )
                # one business fingerprint for all, not one string per row
                key = None if found is None else sys.intern(mentions_key)
                entries[review_id] = Entry(digest, analysis, key, found)
                if not memo and not isinstance(analysis, str):
                    raise ValueError(f"entry {review_id!r} is not an analysis")
            if usable:
                self._memos_in_file = True
                self.stored_checkpoint = _checkpoint(connection)
            return entries
        finally:
            connection.close()

    def save(self) -> None:
        """
        Write what changed since the last load or save.  A file that cannot
        be updated in place is replaced; when even that fails (a state
        directory that cannot be written), C{sqlite3.Error} or C{OSError} is
        raised and the changes stay pending for the next save.
        """
        if self.path is None:
            return
        with self._lock, paused():
            self._close_file()
            # only memos of this version make a checkpoint worth keeping
            checkpoint = None if self._memo_version is None else self.checkpoint
            renew = self._renews(checkpoint)
            if (
                self._rewrite
                or self._dirty
                or self._removed
                or self._stale_memos
                or renew
            ):
                if not self._rewrite:
                    try:
                        self._write(self.path, checkpoint, renew, full=False)
                    except sqlite3.Error:
                        self._rewrite = True
                if self._rewrite:
                    self._recover(self.path)
                    self.path.unlink(missing_ok=True)
                    for suffix in ("-journal", "-wal", "-shm"):
                        Path(f"{self.path}{suffix}").unlink(missing_ok=True)
                    self._write(self.path, checkpoint, True, full=True)
                    renew = True
                self._dirty.clear()
                self._removed.clear()
                self._rewrite = self._stale_memos = False
                if renew:
                    self._saved_checkpoint = (
                        None if checkpoint is None else checkpoint.mark()
                    )
                self._memos_in_file = self._memo_version is not None
            # the file holds every analysis, and every memo read, now
            for entry in self._entries.values():
                entry.raw = entry.kept = None

    def _renews(self, checkpoint: StoredCheckpoint | None) -> bool:
        """Whether the file is to be given C{checkpoint} (or none)."""
        saved = self._saved_checkpoint
        if saved is _UNKNOWN:
            return True
        if checkpoint is None:
            return saved is not None
        return checkpoint.supersedes(saved)

    def _recover(self, path: Path) -> None:
        """
        Before a file is replaced, read back the analyses only it holds;
        those it no longer gives are forgotten, to be made again when used.
        """
        stored: dict[str, tuple[str, str]] = {}
        if any(entry.raw is None for entry in self._entries.values()):
            try:
                connection = _connect_read_only(path)
                try:
                    rows = connection.execute(
                        "SELECT id, digest, analysis FROM reviews"
                    )
                    stored = {r: (d, a) for r, d, a in rows if isinstance(a, str)}
                finally:
                    connection.close()
            except sqlite3.Error:
                pass
        for review_id, entry in list(self._entries.items()):
            if entry.raw is None:
                digest, analysis = stored.get(review_id, ("", ""))
                if digest == entry.digest:
                    entry.raw = analysis
                else:
                    del self._entries[review_id]

    def _write(
        self,
        path: Path,
        checkpoint: StoredCheckpoint | None,
        renew: bool,
        *,
        full: bool,
    ) -> None:
        ids = list(self._entries) if full else sorted(self._dirty)
        connection = sqlite3.connect(path)
        try:
            with connection:
                if full:
                    connection.execute(
                        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)"
                    )
                    connection.execute(
                        "CREATE TABLE reviews (id TEXT PRIMARY KEY, digest TEXT,"
                        " analysis TEXT, mentions_key TEXT, mentions TEXT,"
                        " memo TEXT, member BLOB)"
                    )
                    connection.executemany(
                        "INSERT INTO meta VALUES (?, ?)",
                        [("schema", str(_SCHEMA)), ("engine", ENGINE_VERSION)],
                    )
                else:
                    if self._stale_memos:
                        connection.execute(
                            "UPDATE reviews SET memo = NULL, member = NULL"
                        )
                    connection.executemany(
                        "DELETE FROM reviews WHERE id = ?",
                        [(r,) for r in sorted(self._removed)],
                    )
                if self._memo_version is not None:
                    connection.execute(
                        "INSERT OR REPLACE INTO meta VALUES ('memos', ?)",
                        (self._memo_version,),
                    )
                if renew:
                    connection.execute(
                        "CREATE TABLE IF NOT EXISTS checkpoint"
                        " (value BLOB, members BLOB)"
                    )
                    connection.execute("DELETE FROM checkpoint")
                    if checkpoint is not None:
                        connection.execute(
                            "INSERT INTO checkpoint VALUES (?, ?)", checkpoint.stored()
                        )
                rows = [self._row(review_id) for review_id in ids]
                # a row whose analysis the file holds changed the rest only
                connection.executemany(
                    "INSERT OR REPLACE INTO reviews VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [row for row in rows if row[2] is not None],
                )
                connection.executemany(
                    "UPDATE reviews SET mentions_key = ?, mentions = ?, memo = ?,"
                    " member = ? WHERE id = ?",
                    [(*row[3:], row[0]) for row in rows if row[2] is None],
                )
        finally:
            connection.close()

    def _row(self, review_id: str) -> tuple[Any, ...]:
        entry = self._entries[review_id]
        memo: tuple[str | None, bytes | None] = (None, None)
        if entry.mentions is not None and self._memo_version is not None:
            if entry.memo is not None:
                memo = entry.memo.stored()
            elif entry.kept is not None:
                memo = entry.kept
        return (
            review_id,
            entry.digest,
            entry.raw,
            entry.mentions_key,
            None
            if entry.mentions is None
            else _to_json(dict(zip(_MENTION_KEYS, entry.mentions, strict=True))),
            *memo,
        )


def _checkpoint(connection: sqlite3.Connection) -> tuple[bytes, bytes] | None:
    """The checkpoint a file holds; none in a file written before they were."""
    try:
        row = connection.execute("SELECT value, members FROM checkpoint").fetchone()
    except sqlite3.OperationalError:  # no such table
        return None
    if row is None or not all(isinstance(part, bytes) for part in row):
        return None
    value, members = row
    return value, members


def _connect_read_only(path: Path, threads: bool = False) -> sqlite3.Connection:
    return sqlite3.connect(
        path.absolute().as_uri() + "?mode=ro", uri=True, check_same_thread=not threads
    )


def _to_json(value: Any) -> str:
    return orjson.dumps(value).decode("utf-8")
