"""The sandbox's defaults that the CLI shows before anything is started (no imports: `agentrel --help`
reads them without loading the database layer)."""

DEFAULT_SEED = "agentrel"
