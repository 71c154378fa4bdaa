"""The run journal: a hash chain over the lines of runs.jsonl, whose head a registry anchors.

    head_0 = SHA-256("agentrel-journal/1")      head_i = SHA-256(head_{i-1} || line_i)

Each complete line (its bytes with the newline) extends the chain; a torn last line does not. Records are
only ever appended, so every head anchored earlier must be the head of the file's first `lines` lines for
as long as the directory lives: a record removed, edited or reordered after an anchor gives another head
(publication refuses it: `journal_rewritten`). Pure: bytes in, hex digests out.
"""

from __future__ import annotations

import hashlib

__all__ = ["GENESIS", "head_at", "journal_head"]

GENESIS = hashlib.sha256(b"agentrel-journal/1").hexdigest()


def _heads(data: bytes, upto: int | None) -> tuple[str, int]:
    head, count, start = GENESIS, 0, 0
    while upto is None or count < upto:
        end = data.find(b"\n", start)
        if end < 0:
            break
        head = hashlib.sha256(bytes.fromhex(head) + data[start : end + 1]).hexdigest()
        count, start = count + 1, end + 1
    return head, count


def journal_head(data: bytes) -> tuple[str, int]:
    """The chain head over every complete line of `data`, and how many lines it covers."""
    return _heads(data, None)


def head_at(data: bytes, lines: int) -> str | None:
    """The chain head over the first `lines` lines of `data`; None when it holds fewer."""
    head, count = _heads(data, lines)
    return head if count == lines else None
