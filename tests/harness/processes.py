"""What is still running, seen from the host's /proc: for the tests of what outlives an agent's run."""

from __future__ import annotations

from pathlib import Path


def alive_with(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line carries `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            carries = marker.encode() in (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # gone meanwhile
        if carries and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found
