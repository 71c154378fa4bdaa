"""Run by the τ² venv (make test-tau2): τ²'s own airline toolkit, imported from the pinned wheel's files,
applied to call sequences. Reads {"sequences": [[[tool, args], ...], ...]} on stdin; writes, per
sequence, τ²'s response text for each call and its final database document, as JSON on stdout."""

import json
import sys

from tau2.domains.airline.data_model import FlightDB
from tau2.domains.airline.tools import AirlineTools
from tau2.domains.airline.utils import AIRLINE_DB_PATH
from tau2.environment.environment import Environment


def main() -> None:
    request = json.load(sys.stdin)
    initial = FlightDB.load(AIRLINE_DB_PATH)
    out = []
    for sequence in request["sequences"]:
        db = initial.model_copy(deep=True)
        tools = AirlineTools(db)
        responses = []
        for name, args in sequence:
            try:
                resp = Environment.to_json_str(tools.use_tool(name, **args))
            except Exception as exc:  # τ²'s environment turns every tool exception into this text
                resp = f"Error: {exc}"
            responses.append(resp)
        out.append({"responses": responses, "db": db.model_dump(mode="json")})
    json.dump(out, sys.stdout)


main()
