"""The sandbox's defaults, readable without loading the database layer (`agentrel --help` shows them).

- `DEFAULT_SEED`: the seed `--seed` defaults to.
- `PACKAGED_SUITE`: the built-in environment's task suite (`tasks/`, `damage_specs/`): in a checkout
  the repository's folders, linked from `agentrel/_suite/`; in a wheel, their copy.
"""

from importlib import resources
from pathlib import Path

DEFAULT_SEED = "agentrel"
PACKAGED_SUITE = Path(str(resources.files("agentrel"))) / "_suite"
