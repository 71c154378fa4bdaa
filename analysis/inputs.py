"""Load any input into the normalized form (analysis.normalized): a results directory, a runs.jsonl
file, or an outcomes CSV. This module only dispatches; the shared types live in analysis.normalized
so that neither loader imports it back.
"""

from __future__ import annotations

from pathlib import Path

from agentrel.analysis.load_csv import load_outcomes_csv
from agentrel.analysis.load_results import load_results
from agentrel.analysis.normalized import InputError, LoadedInput


def load_input(path: Path, *, allow_mixed_protocols: bool = False) -> LoadedInput:
    """Load a results directory, a runs.jsonl file, or an outcomes CSV."""
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.is_dir() or path.name.endswith(".jsonl"):
        return load_results(path, allow_mixed_protocols=allow_mixed_protocols)
    if path.suffix.lower() == ".csv":
        return load_outcomes_csv(path)
    raise InputError(f"{path}: expected a results directory (runs.jsonl + manifest.json) or an outcomes .csv")
