"""The same operations as the port's tools, done through proteus (Tryton's own client library) as the
clerk, in process: the other side of the differential test (tests/tryton/test_differential.py).

`python -m agentrel.sandbox.environments.tryton.replay CONFIG DB STEPS LOGIN` reads a JSON list of
{tool, args} (the tools' own arguments) and does
each one the way a proteus user would: buttons by `click`, wizards by `Wizard`, create/write/delete by
the model's own methods. A step Tryton refuses is skipped, as the tool's error would leave the run.
Reads do nothing here (they change nothing on either side).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from decimal import Decimal
from typing import Any

BUTTONS = {
    "post_invoices": ("account.invoice", "post", "invoice_ids"),
    "validate_invoices": ("account.invoice", "validate_invoice", "invoice_ids"),
    "cancel_invoices": ("account.invoice", "cancel", "invoice_ids"),
    "draft_invoices": ("account.invoice", "draft", "invoice_ids"),
    "quote_sales": ("sale.sale", "quote", "sale_ids"),
    "confirm_sales": ("sale.sale", "confirm", "sale_ids"),
    "cancel_sales": ("sale.sale", "cancel", "sale_ids"),
    "draft_sales": ("sale.sale", "draft", "sale_ids"),
    "process_sales": ("sale.sale", "process", "sale_ids"),
    "close_periods": ("account.period", "close", "period_ids"),
}


def _shaped(fields: dict[str, Any], values: dict[str, Any], get_fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in values.items():
        kind = fields.get(name, {}).get("type")
        if kind == "numeric" and not isinstance(value, bool) and isinstance(value, int | float | str):
            out[name] = Decimal(str(value))
        elif kind == "date" and isinstance(value, str):
            out[name] = dt.date.fromisoformat(value)
        elif kind in ("one2many", "many2many") and isinstance(value, list):
            relation = fields[name]["relation"]
            out[name] = [
                ["create", [_shaped(get_fields(relation), v, get_fields) for v in a[1]]]
                if isinstance(a, list) and a and a[0] == "create"
                else a
                for a in value
            ]
        else:
            out[name] = value
    return out


def run(steps: list[dict[str, Any]]) -> None:
    from proteus import Model, Wizard
    from proteus.config import get_config

    cfg = get_config()
    cache: dict[str, dict[str, Any]] = {}

    def get_fields(model: str) -> dict[str, Any]:
        if model not in cache:
            cache[model] = Model.get(model)._proxy.fields_get([], cfg.context)
        return cache[model]

    for step in steps:
        tool, args = step["tool"], step["args"]
        try:
            if tool in BUTTONS:
                model, button, key = BUTTONS[tool]
                Klass = Model.get(model)
                Klass.click([Klass(i) for i in args[key]], button)
            elif tool == "create_records":
                proxy = Model.get(args["model"])._proxy
                fields = get_fields(args["model"])
                proxy.create([_shaped(fields, r, get_fields) for r in args["records"]], cfg.context)
            elif tool == "write_records":
                proxy = Model.get(args["model"])._proxy
                proxy.write(args["ids"], _shaped(get_fields(args["model"]), args["values"], get_fields),
                            cfg.context)  # fmt: skip
            elif tool == "delete_records":
                Model.get(args["model"])._proxy.delete(args["ids"], cfg.context)
            elif tool == "credit_invoices":
                Invoice = Model.get("account.invoice")
                credit = Wizard("account.invoice.credit", [Invoice(i) for i in args["invoice_ids"]])
                credit.form.with_refund = bool(args.get("with_refund", False))
                credit.execute("credit")
            elif tool == "pay_invoice":
                Invoice = Model.get("account.invoice")
                Method = Model.get("account.invoice.payment.method")
                pay = Wizard("account.invoice.pay", [Invoice(args["invoice_id"])])
                pay.form.amount = Decimal(str(args["amount"]))
                pay.form.date = dt.date.fromisoformat(args["date"])
                pay.form.payment_method = Method(args["payment_method_id"])
                pay.form.description = args.get("description", "")
                pay.execute("choice")
                if pay.form_state == "ask" and args.get("difference"):
                    pay.form.type = args["difference"]
                    if args["difference"] == "writeoff":
                        pay.form.writeoff = Model.get("account.move.reconcile.write_off")(
                            args["writeoff_method_id"]
                        )
                    pay.execute("pay")
            elif tool == "acknowledge_warning":
                Warning_ = Model.get("res.user.warning")
                Warning_(user=cfg.user, name=args["name"]).save()
        except Exception as exc:  # Tryton refused: the port's tool returns an error and changes nothing
            print(f"replay: {tool} refused: {type(exc).__name__}: {str(exc)[:200]}", file=sys.stderr)


def main(config_path: str, db: str, steps_path: str, login: str) -> None:
    from agentrel.sandbox.environments.tryton import launch, settings

    launch._configure(config_path)
    launch.pin_clock(settings.PINNED_DATE)
    from proteus import config as pconfig

    pconfig.set_trytond(database=db, user=login, config_file=config_path)
    with open(steps_path) as f:
        run(json.load(f))


if __name__ == "__main__":
    main(*sys.argv[1:5])
