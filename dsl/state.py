"""Full-state dumps: the plain-data form of a sandbox database that the diff and labeler read.

A dump holds every table of the sandbox schema, every row, keyed by its full primary key. Values are
already normalized by the writer to canonical JSON-safe forms: numeric as decimal strings, timestamps
as ISO-8601 UTC strings (``2026-01-02T03:04:05Z``), dates as ``YYYY-MM-DD``, booleans, integers, text
and null. Rows are stored as tuples in column order, because tuple equality is what makes a 200,000-row
diff cheap.

On disk a dump is gzipped JSONL: one header line with the table metadata, then one line per row,
``[table, [key...], [values...]]``, tables and keys in sorted order. The digest is SHA-256 over the
header and each table's content hash (not the gzip bytes), so it is stable across compression settings
and machines. A post-run state can also be stored as a delta against its pre-run state (the rows that
differ, ``[table, [key...], null]`` for deletions); loading it rebuilds and re-checks the full state.

This module is pure apart from ``load``/``save``; it does not know Postgres.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import secrets
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "agentrel-dump/1"
DELTA_FORMAT = "agentrel-delta/1"
DIGEST_VERSION = "2"  # bump when the digest definition changes: templates keyed on it are rebuilt

Value = str | int | bool | None
Key = tuple[Value, ...]
Row = tuple[Value, ...]


class DumpFormatError(ValueError):
    """A dump file that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class TableInfo:
    """What the diff and the spec checker need to know about one table."""

    name: str
    columns: tuple[str, ...]
    primary_key: tuple[str, ...]
    volatile: frozenset[str] = frozenset()
    # Column kind per column: int, text, numeric, bool, date, timestamp, json.
    kinds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        missing = [c for c in self.primary_key if c not in self.columns]
        if missing:
            raise ValueError(f"table {self.name}: primary key column(s) {missing} not among its columns")

    @property
    def key_positions(self) -> tuple[int, ...]:
        return tuple(self.columns.index(c) for c in self.primary_key)

    def kind(self, column: str) -> str:
        if not self.kinds:
            return "text"
        return self.kinds[self.columns.index(column)]

    def header(self) -> dict[str, Any]:
        return {
            "columns": list(self.columns),
            "primary_key": list(self.primary_key),
            "volatile": sorted(self.volatile),
            "kinds": list(self.kinds),
        }


@dataclass
class TableState:
    info: TableInfo
    rows: dict[Key, Row] = field(default_factory=dict)
    _hash: str | None = field(default=None, compare=False, repr=False)

    def sorted_keys(self) -> list[Key]:
        try:
            return sorted(self.rows)
        except TypeError:  # mixed types in a key column (None beside int): order by type tag first
            return sorted(self.rows, key=key_order)

    def content_hash(self) -> str:
        """SHA-256 of the table's rows in key order, one JSON encoding for the whole table (C speed)."""
        if self._hash is None:
            rows = self.rows
            chunk = _canonical([self.info.name, [rows[k] for k in self.sorted_keys()]])
            self._hash = hashlib.sha256(chunk.encode()).hexdigest()
        return self._hash

    def add(self, row: Row) -> None:
        self._hash = None
        if len(row) != len(self.info.columns):
            raise ValueError(
                f"table {self.info.name}: row has {len(row)} values, expected {len(self.info.columns)}"
            )
        key = tuple(row[i] for i in self.info.key_positions)
        self.rows[key] = tuple(row)

    def as_dict(self, key: Key) -> dict[str, Value]:
        return dict(zip(self.info.columns, self.rows[key], strict=True))


@dataclass
class State:
    """A full-state dump in memory: table name to its rows keyed by primary key."""

    tables: dict[str, TableState] = field(default_factory=dict)

    @classmethod
    def empty(cls, infos: Iterable[TableInfo]) -> State:
        return cls({i.name: TableState(i) for i in infos})

    def schema(self) -> dict[str, TableInfo]:
        return {name: t.info for name, t in self.tables.items()}

    def row_count(self) -> int:
        return sum(len(t.rows) for t in self.tables.values())

    def header_line(self) -> str:
        return _canonical(
            {"format": FORMAT, "tables": {n: self.tables[n].info.header() for n in sorted(self.tables)}}
        )

    def lines(self) -> Iterator[str]:
        """The file text of the dump, one line at a time (header first, then rows by table and key)."""
        yield self.header_line()
        for name in sorted(self.tables):
            rows = self.tables[name].rows
            for key in self.tables[name].sorted_keys():
                yield _canonical([name, list(key), list(rows[key])])

    def digest(self, base: State | None = None) -> str:
        """SHA-256 over the canonical content: the header line, then each table's name and content hash.

        With `base` (the pre-run state), a table whose rows equal the base's reuses its cached hash, so
        digesting a post-run state costs only its changed tables.
        """
        h = hashlib.sha256(self.header_line().encode())
        for name in sorted(self.tables):
            table = self.tables[name]
            if base is not None and table._hash is None:
                same = base.tables.get(name)
                if same is not None and same.info == table.info and same.rows == table.rows:
                    table._hash = same.content_hash()
            h.update(f"\n{name}:{table.content_hash()}".encode())
        return h.hexdigest()

    def delta(self, base: State) -> dict[str, tuple[dict[Key, Row], list[Key]]]:
        """Per changed table: rows inserted or changed relative to `base`, and keys deleted."""
        out: dict[str, tuple[dict[Key, Row], list[Key]]] = {}
        for name, table in self.tables.items():
            old = base.tables[name].rows
            new = table.rows
            if old == new:
                continue
            upserts = {k: r for k, r in new.items() if old.get(k) != r}
            deletes = [k for k in old if k not in new]
            out[name] = (upserts, deletes)
        return out

    def save_delta(self, path: Path, base: State) -> str:
        """Write this state as a delta against `base` (gzipped JSONL); return this state's digest.

        The header names both digests; `load_delta` rebuilds the full state and checks it."""
        digest = self.digest(base)
        header = {"format": DELTA_FORMAT, "base": base.digest(), "digest": digest}
        lines = [_canonical(header)]
        for name, (upserts, deletes) in sorted(self.delta(base).items()):
            lines += [_canonical([name, list(k), list(upserts[k])]) for k in sorted(upserts, key=key_order)]
            lines += [_canonical([name, list(k), None]) for k in sorted(deletes, key=key_order)]
        _write_gz(path, lines)
        return digest

    def save(self, path: Path) -> str:
        """Write gzipped JSONL; return the digest."""
        _write_gz(path, self.lines())
        return self.digest()


def _write_gz(path: Path, lines: Iterable[str]) -> None:
    """Write lines atomically; ``mtime=0`` keeps the gzip bytes reproducible."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # A unique temporary name: concurrent writers of the same content-addressed file must not collide.
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=3) as gz:
        gz.write("".join(line + "\n" for line in lines).encode())
    tmp.replace(path)


def load_delta(path: Path, base: State) -> State:
    """Rebuild the full state a delta file describes; errors name the file and line."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            header = json.loads(fh.readline())
            if not isinstance(header, dict) or header.get("format") != DELTA_FORMAT:
                raise DumpFormatError(f"{path}:1: not an {DELTA_FORMAT} header")
            if header["base"] != base.digest():
                raise DumpFormatError(f"{path}:1: delta is against {header['base'][:12]}, not this base")
            state = State({n: TableState(t.info, dict(t.rows)) for n, t in base.tables.items()})
            for lineno, line in enumerate(fh, start=2):
                try:
                    name, key, row = json.loads(line)
                    if row is None:
                        state.tables[name].rows.pop(tuple(key), None)
                    else:
                        state.tables[name].add(tuple(row))
                except (ValueError, KeyError, TypeError) as exc:
                    raise DumpFormatError(f"{path}:{lineno}: bad delta line ({exc})") from None
    except (OSError, EOFError, ValueError, KeyError, TypeError) as exc:
        if isinstance(exc, DumpFormatError):
            raise
        raise DumpFormatError(f"{path}: unreadable delta ({exc})") from None
    for t in state.tables.values():
        t._hash = None
    if state.digest() != header["digest"]:
        raise DumpFormatError(f"{path}: rebuilt state does not match digest {header['digest'][:12]}")
    return state


def load(path: Path) -> State:
    """Read a dump written by ``State.save``; errors name the file and line."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return _parse(fh, str(path))
    except FileNotFoundError:
        raise DumpFormatError(f"{path}: no such dump file") from None
    except (OSError, EOFError) as exc:
        raise DumpFormatError(f"{path}: not a gzipped AgentRel dump ({exc})") from None


def _parse(lines: Iterable[str], name: str) -> State:
    it = iter(enumerate(lines, start=1))
    try:
        _, first = next(it)
    except StopIteration:
        raise DumpFormatError(f"{name}:1: empty dump") from None
    try:
        header = json.loads(first)
    except json.JSONDecodeError as exc:
        raise DumpFormatError(f"{name}:1: header is not JSON ({exc.msg})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise DumpFormatError(f"{name}:1: not an {FORMAT} dump header")
    state = State()
    for tname, meta in header["tables"].items():
        info = TableInfo(
            name=tname,
            columns=tuple(meta["columns"]),
            primary_key=tuple(meta["primary_key"]),
            volatile=frozenset(meta.get("volatile", ())),
            kinds=tuple(meta.get("kinds", ())),
        )
        state.tables[tname] = TableState(info)
    rest = [line for _, line in it]
    try:  # one JSON parse for all rows (C speed); on failure, find the bad line for the message
        parsed = json.loads("[" + ",".join(rest) + "]")
        for tname, _key, values in parsed:
            state.tables[tname].add(tuple(values))
    except (json.JSONDecodeError, ValueError, TypeError, KeyError):
        for lineno, line in enumerate(rest, start=2):
            try:
                tname, _key, values = json.loads(line)
                state.tables[tname].add(tuple(values))
            except (json.JSONDecodeError, ValueError, TypeError, KeyError) as exc:
                raise DumpFormatError(f"{name}:{lineno}: bad row line ({exc})") from None
        raise DumpFormatError(f"{name}: unreadable rows") from None
    return state


def _canonical(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def key_order(key: Key) -> tuple[tuple[int, Any], ...]:
    """A total order on keys whatever their value types (None < numbers < text), as dumps are sorted."""
    return tuple((0, "") if v is None else (1, v) if isinstance(v, int | bool) else (2, str(v)) for v in key)
