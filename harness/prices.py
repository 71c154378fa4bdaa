"""Token prices (USD per million tokens) from a YAML table; unknown models cost nothing known (None)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from agentrel.harness.errors import UserError
from agentrel.harness.yamlfile import field_problem, read_yaml

if TYPE_CHECKING:
    from agentrel.sandbox.environments.contract import Environment

DEFAULT_TABLE = Path(__file__).with_name("prices.yaml")


class Price(BaseModel):
    input_per_mtok: float
    output_per_mtok: float


def load_prices(path: Path | None = None, env: Environment | None = None) -> dict[str, Price]:
    """The table at `path`, else `env`'s (`Environment.prices_path()`; None: the built-in's DEFAULT_TABLE)."""
    if path is None:
        path = env.prices_path() if env is not None else DEFAULT_TABLE
    raw = read_yaml(path) or {}
    if not isinstance(raw, dict):
        raise UserError(f"{path}: expected a mapping of model name to its prices")
    out = {}
    for name, entry in raw.items():
        try:
            out[str(name)] = Price.model_validate(entry)
        except ValidationError as exc:
            raise UserError(f"{path}: {field_problem(exc, within=str(name))}") from None
    return out


def cost(prices: dict[str, Price], model: str, input_tokens: int, output_tokens: int) -> float | None:
    """Price by the full agent name (`openai/gpt-4o`), else by the bare model name."""
    price = prices.get(model) or prices.get(model.split("/", 1)[-1])
    if price is None:
        return None
    return round((input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1e6, 6)
