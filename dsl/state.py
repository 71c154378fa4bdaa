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
from itertools import groupby
from operator import itemgetter
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
    try:
        with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=3) as gz:
            gz.write("".join(line + "\n" for line in lines).encode())
        tmp.replace(path)
    except BaseException:  # a full disk mid-write: no half-written file is left beside the dumps
        tmp.unlink(missing_ok=True)
        raise


def load_delta(path: Path, base: State) -> State:
    """Rebuild the full state a delta file describes; errors name the file and line."""
    lines = _read_lines(path)
    header = _header(lines, str(path), DELTA_FORMAT)
    for field_name in ("base", "digest"):
        if not isinstance(header.get(field_name), str):
            raise DumpFormatError(f"{path}:1: the delta header has no {field_name!r} digest")
    if header["base"] != base.digest():
        raise DumpFormatError(f"{path}:1: delta is against {header['base'][:12]}, not this base")
    infos = base.schema()
    # Copy on write: a table the delta never touches is the base's own object, rows and cached content
    # hash included, so rebuilding (and digesting) costs only the changed tables. Loaded states are read,
    # never changed in place.
    state = State(dict(base.tables))
    copied: set[str] = set()
    seen: dict[tuple[str, Key], int] = {}
    for lineno, line in enumerate(lines[1:], start=2):
        try:
            name, key, row = _row(line, infos, deletion_ok=True)
            _first_time(seen, name, key, lineno)
            if name not in copied:
                old = base.tables[name]
                state.tables[name] = TableState(old.info, dict(old.rows))
                copied.add(name)
            rows = state.tables[name].rows
            if row is not None:
                rows[key] = row
            elif rows.pop(key, None) is None:
                raise _BadLine(
                    f"table {name}: deletes key {_canonical(list(key))}, which the base does not hold"
                )
        except _BadLine as exc:
            raise DumpFormatError(f"{path}:{lineno}: {exc}") from None
    if state.digest() != header["digest"]:
        raise DumpFormatError(f"{path}:1: the rebuilt state does not match digest {header['digest'][:12]}")
    return state


def load(path: Path) -> State:
    """Read a dump written by ``State.save``; errors name the file and line."""
    return _parse(_read_lines(path), str(path))


def _read_lines(path: Path) -> list[str]:
    lines: list[str] = []
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            lines.extend(fh)  # keeps the lines read before an error, which locates it
    except FileNotFoundError:
        raise DumpFormatError(f"{path}: no such dump file") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        if not lines:
            raise DumpFormatError(f"{path}:1: not a gzipped AgentRel dump ({exc})") from None
        raise DumpFormatError(f"{path}:{len(lines) + 1}: the file is cut short or corrupt ({exc})") from None
    return lines


def _header(lines: list[str], name: str, fmt: str) -> dict[str, Any]:
    if not lines:
        raise DumpFormatError(f"{name}:1: empty dump")
    try:
        header = json.loads(lines[0])
    except json.JSONDecodeError as exc:
        raise DumpFormatError(f"{name}:1: header is not JSON ({exc.msg})") from None
    if not isinstance(header, dict) or header.get("format") != fmt:
        raise DumpFormatError(f"{name}:1: not an {fmt} header")
    return header


def _parse(lines: list[str], name: str) -> State:
    header = _header(lines, name, FORMAT)
    tables = header.get("tables")
    if not isinstance(tables, dict):
        raise DumpFormatError(f"{name}:1: the header has no 'tables' mapping (table name to its columns)")
    try:
        state = State.empty(_table_info(t, meta) for t, meta in tables.items())
    except _BadLine as exc:
        raise DumpFormatError(f"{name}:1: {exc}") from None
    rest = lines[1:]
    try:  # one JSON parse per chunk of rows (C speed); on any doubt, check line by line for the message
        if all(_fill(state, rest[i : i + _CHUNK]) for i in range(0, len(rest), _CHUNK)):
            return state
    except (ValueError, TypeError, KeyError):
        pass
    raise _locate(state.schema(), rest, name)


# Rows are parsed this many lines at a time: a whole dump parsed at once is ~10^6 lists alive together,
# which the cyclic GC walks over and over while they are built; a chunk's lists die young instead.
_CHUNK = 2000


def _table_info(name: str, meta: Any) -> TableInfo:
    """A header's table entry, checked: ``_BadLine`` says what is wrong with it."""
    if not isinstance(meta, dict):
        raise _BadLine(f"table {name}: expected a mapping with 'columns' and 'primary_key'")

    def names(field_name: str, required: bool) -> tuple[str, ...]:
        value = meta.get(field_name)
        if value is None and not required:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            what = "is missing" if value is None else "is not a list of strings"
            raise _BadLine(f"table {name}: {field_name!r} {what}")
        return tuple(value)

    columns, key = names("columns", True), names("primary_key", True)
    volatile, kinds = names("volatile", False), names("kinds", False)
    for field_name, values in (("columns", columns), ("primary_key", key)):
        twice = sorted({c for c in values if values.count(c) > 1})
        if twice:
            raise _BadLine(f"table {name}: {field_name!r} names {', '.join(twice)} more than once")
    if not key:
        raise _BadLine(f"table {name}: the primary key is empty (rows are keyed by it)")
    for what, values in (("primary key", key), ("volatile", volatile)):
        unknown = [c for c in values if c not in columns]
        if unknown:
            raise _BadLine(f"table {name}: {what} column(s) {', '.join(unknown)} not among its columns")
    if kinds and len(kinds) != len(columns):
        raise _BadLine(f"table {name}: {len(kinds)} kinds for {len(columns)} columns")
    return TableInfo(name, columns, key, frozenset(volatile), kinds)


def _fill(state: State, lines: list[str]) -> bool:
    """Add these row lines to ``state`` in bulk C-level passes; False when a line is malformed,
    disagrees with its key or repeats one (the caller then finds which line, for the message)."""
    parsed = json.loads("[" + ",".join(lines) + "]")
    if len(parsed) != len(lines):  # a line holding two rows, or none
        return False
    if parsed and set(map(len, parsed)) != {3}:  # other shapes fail the type checks below
        return False
    for name, group in groupby(parsed, itemgetter(0)):  # dumps are sorted: one group per table
        table = state.tables[name]
        info, entries = table.info, list(group)
        values = list(map(itemgetter(2), entries))
        if set(map(type, values)) != {list} or set(map(len, values)) != {len(info.columns)}:
            return False
        rows = list(map(tuple, values))
        keys = list(zip(*[map(itemgetter(i), rows) for i in info.key_positions], strict=True))
        stored = list(map(itemgetter(1), entries))
        if set(map(type, stored)) != {list} or list(map(tuple, stored)) != keys:
            return False
        before = len(table.rows)
        table.rows.update(zip(keys, rows, strict=True))
        if len(table.rows) != before + len(rows):  # a key seen twice
            return False
    return True


def _locate(infos: dict[str, TableInfo], lines: list[str], name: str) -> DumpFormatError:
    """The error for the first bad row line, found one line at a time."""
    seen: dict[tuple[str, Key], int] = {}
    for lineno, line in enumerate(lines, start=2):
        try:
            table, key, _ = _row(line, infos, deletion_ok=False)
            _first_time(seen, table, key, lineno)
        except _BadLine as exc:
            return DumpFormatError(f"{name}:{lineno}: {exc}")
    return DumpFormatError(f"{name}: unreadable rows")  # pragma: no cover (_fill and _row agree)


class _BadLine(Exception):
    """What is wrong with one line, in plain words; the caller adds the file and line."""


def _row(line: str, infos: dict[str, TableInfo], deletion_ok: bool) -> tuple[str, Key, Row | None]:
    """One row line, checked: (table, key, values); values are None for a delta's deletion."""
    try:
        entry = json.loads(line)
    except json.JSONDecodeError as exc:
        raise _BadLine(f"row line is not JSON ({exc.msg})") from None
    shape = "[table, [key...], [values...]]" + (" or [table, [key...], null]" if deletion_ok else "")
    if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)):
        raise _BadLine(f"expected a row line {shape}")
    name, stored, values = entry
    info = infos.get(name)
    if info is None:
        raise _BadLine(f"table {name!r} is not one of the dump's tables")
    if not isinstance(stored, list) or len(stored) != len(info.primary_key):
        raise _BadLine(
            f"table {name}: the key must be a list of {len(info.primary_key)} value(s)"
            f" ({', '.join(info.primary_key)})"
        )
    key = tuple(stored)
    if any(isinstance(v, list | dict) for v in key):
        raise _BadLine(f"table {name}: key {_canonical(stored)} holds a list or object, not plain values")
    if values is None and deletion_ok:
        return name, key, None
    if not isinstance(values, list):
        raise _BadLine(f"expected a row line {shape}")
    if len(values) != len(info.columns):
        raise _BadLine(f"table {name}: row has {len(values)} values, expected {len(info.columns)}")
    row = tuple(values)
    own = tuple(row[i] for i in info.key_positions)
    if own != key:
        raise _BadLine(
            f"table {name}: stored key {_canonical(stored)} disagrees with the row's primary-key"
            f" values {_canonical(list(own))} ({', '.join(info.primary_key)})"
        )
    return name, own, row


def _first_time(seen: dict[tuple[str, Key], int], table: str, key: Key, lineno: int) -> None:
    first = seen.setdefault((table, key), lineno)
    if first != lineno:
        raise _BadLine(f"table {table}: key {_canonical(list(key))} appears again (first on line {first})")


def _canonical(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def key_order(key: Key) -> tuple[tuple[int, Any], ...]:
    """A total order on keys whatever their value types (None < numbers < text), as dumps are sorted."""
    return tuple((0, "") if v is None else (1, v) if isinstance(v, int | bool) else (2, str(v)) for v in key)
