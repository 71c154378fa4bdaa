"""The names of everything in a results directory, spelled once.

results/
  manifest.json               the resolved matrix (the preregistration)
  protocol.json               the protocol identity the directory's runs carry
  evaluator.json              the evaluator's files and libraries behind that identity's digest
  freeze.json                 the protocol freeze (`agentrel protocol freeze`)
  claims.json                 the preregistered claims the freeze binds (`freeze --claims`)
  execution_environment.json  what the runs executed on, observed from its sources
  execution_slots.jsonl       where remote executor slots ran (observed facts, not protocol)
  runs.jsonl                  one line per attempt (`record.RunRecord`)
  dumps/                      content-addressed state dumps (full, or a delta against the template)
  transcripts/                one JSON per attempt
  receipts/                   fault attempts' receipt logs, fsynced before recovery
  registry.txt                the registry the freeze was anchored in, where each audit invocation
                              anchors runs.jsonl's chain head (journal.py)
"""

from __future__ import annotations

MANIFEST = "manifest.json"
PROTOCOL = "protocol.json"
EVALUATOR = "evaluator.json"
FREEZE = "freeze.json"
CLAIMS = "claims.json"
EXECUTION_ENVIRONMENT = "execution_environment.json"
EXECUTION_SLOTS = "execution_slots.jsonl"
RUNS = "runs.jsonl"
DUMPS = "dumps"
TRANSCRIPTS = "transcripts"
RECEIPTS = "receipts"
LOCK = ".lock"
REGISTRY_POINTER = "registry.txt"

FULL_DUMP = ".jsonl.gz"  # dumps/<digest>.jsonl.gz: a task template's state in full
DELTA_DUMP = ".delta.jsonl.gz"  # dumps/<digest>.delta.jsonl.gz: a run's state as a delta against it


def transcript_name(run_id: str, attempt: int) -> str:
    """The file name of an attempt's transcript in transcripts/."""
    return f"{run_id}.json" if attempt == 1 else f"{run_id}.attempt{attempt}.json"


def receipt_log_name(run_id: str, attempt: int) -> str:
    """The file name of a fault attempt's receipt log in receipts/."""
    return f"{run_id}.{attempt}.jsonl"
