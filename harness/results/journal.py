"""The run journal: a hash chain over the lines of runs.jsonl, whose head a registry anchors.

    head_0 = SHA-256("agentrel-journal/1")      head_i = SHA-256(head_{i-1} || line_i)

Each complete line (its bytes with the newline) extends the chain; a torn last line does not. Records are
only ever appended, so every head anchored earlier must be the head of the file's first `lines` lines for
as long as the directory lives: a record removed, edited or reordered after an anchor gives another head
(publication refuses it: `journal_rewritten`). Pure: bytes in, hex digests out.
"""

from __future__ import annotations

import hashlib

__all__ = ["GENESIS", "heads_at", "journal_head"]

GENESIS = hashlib.sha256(b"agentrel-journal/1").hexdigest()


def _walk(data: bytes, wanted: set[int] | None) -> tuple[str, int, dict[int, str]]:
    """One pass over the complete lines: the last head, how many lines, and the heads at `wanted`."""
    head, count, start, found = GENESIS, 0, 0, {}
    if wanted is not None and 0 in wanted:
        found[0] = head
    last = max(wanted) if wanted else None
    while last is None or count < last:
        end = data.find(b"\n", start)
        if end < 0:
            break
        head = hashlib.sha256(bytes.fromhex(head) + data[start : end + 1]).hexdigest()
        count, start = count + 1, end + 1
        if wanted is not None and count in wanted:
            found[count] = head
    return head, count, found


def journal_head(data: bytes) -> tuple[str, int]:
    """The chain head over every complete line of `data`, and how many lines it covers."""
    head, count, _ = _walk(data, None)
    return head, count


def heads_at(data: bytes, counts: set[int]) -> dict[int, str]:
    """The chain head over the first n lines of `data` for each n in `counts` it holds (one pass)."""
    return _walk(data, counts)[2] if counts else {}
