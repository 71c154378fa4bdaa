"""Run by the τ² venv (make test-tau2): τ²'s own toolkit of one domain (airline or retail), imported from
the pinned wheel's files, applied to call sequences. Reads {"domain": ..., "sequences": [[[tool, args],
...], ...]} on stdin (domain airline when absent); writes, per sequence, τ²'s response text for each call
and its final database document, as JSON on stdout."""

import json
import sys

from tau2.environment.environment import Environment


def toolkit(domain):
    """The domain's database class, its toolkit class and its db.json path."""
    if domain == "airline":
        from tau2.domains.airline.data_model import FlightDB
        from tau2.domains.airline.tools import AirlineTools
        from tau2.domains.airline.utils import AIRLINE_DB_PATH

        return FlightDB, AirlineTools, AIRLINE_DB_PATH
    if domain == "retail":
        from tau2.domains.retail.data_model import RetailDB
        from tau2.domains.retail.tools import RetailTools
        from tau2.domains.retail.utils import RETAIL_DB_PATH

        return RetailDB, RetailTools, RETAIL_DB_PATH
    raise SystemExit(f"unknown domain {domain!r}")


def main() -> None:
    request = json.load(sys.stdin)
    db_class, tools_class, path = toolkit(request.get("domain", "airline"))
    initial = db_class.load(path)
    out = []
    for sequence in request["sequences"]:
        db = initial.model_copy(deep=True)
        tools = tools_class(db)
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
