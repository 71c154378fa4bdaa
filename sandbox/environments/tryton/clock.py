"""Tryton's clock, pinned: every clock read of Tryton's code that can reach a stored value or a tool's
answer answers the environment's instant (the pinned date's midnight, UTC), whatever day the audit runs.

Tryton reads the clock two ways. Its business date goes through `ir.date.Date.today` (pinned by
replacing it). Some code reads the process clock directly (`datetime.date.today()`,
`datetime.datetime.now()`, `time.time()`): a report revision's date, a currency's current rate, a stock
quantity's end date, the record-validation and trigger environments' `current_date`, a timestamp
sequence, a VIES check's stamp. Each module holding such a call gets its own view of the clock: its
`datetime`/`dt`/`time` global is rebound to a pinned copy whose `now`/`today`/`time` answer the instant
(every other name, and `isinstance` against the real classes, behave as before). PYSON's `Date()` and
`DateTime()` without a start get the instant as their start.

Left on the real clock, with the reason (tests/tryton/test_clock.py fails on any direct call in an
installed module that is in neither list): sessions, login attempts, caches, the task queue, crons,
the connection pool and timings. They are liveness, compared with the database server's own clock
(`CURRENT_TIMESTAMP`), and what they write is outside the diff (tables.NOISE_TABLES) or volatile.
The database server's clock writes only the bookkeeping stamps (`create_date`, `write_date`), volatile.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import sys
import time as _time
import types
from typing import Any

#: module -> the globals of it rebound to the pinned clock (each holds a direct clock read that can
#: reach a stored value or a tool's answer).
PINNED_GLOBALS: dict[str, tuple[str, ...]] = {
    "trytond.ir.date": ("datetime",),  # Date.today's own body (pinned outright too)
    "trytond.model.modelstorage": ("datetime", "time"),  # default create_date; validation's current_date
    "trytond.ir.trigger": ("datetime", "time"),  # a trigger condition's current_date
    "trytond.ir.sequence": ("time",),  # a timestamp sequence's next number
    "trytond.modules.currency.currency": ("datetime",),  # a currency's current rate (a read answer)
    "trytond.modules.stock.product": ("datetime",),  # the stock quantity a cost price is computed at
    "trytond.modules.account_invoice.invoice": ("dt",),  # an invoice report revision's date
    "trytond.modules.party.party": ("dt",),  # a VIES check's validation stamp
}
#: module -> PYSON classes whose `eval` gets the instant as the start it was not given (a domain, a
#: default or a record rule saying "today").
PINNED_EVALS: dict[str, tuple[str, ...]] = {"trytond.pyson": ("Date", "DateTime")}
#: module -> why its direct clock reads stay on the real clock.
EXEMPT: dict[str, str] = {
    "trytond.res.user": "password reset expiry, session counts and login throttling: liveness compared "
    "with the database's clock; the reset token and its expiry are volatile (tables.VOLATILE_IN)",
    "trytond.security": "session expiry (ir_session, noise)",
    "trytond.ir.session": "session expiry (ir_session, noise)",
    "trytond.cache": "cache expiry (ir_cache, noise)",
    "trytond.ir.queue_": "the task queue's stamps (ir_queue, noise)",
    "trytond.ir.cron": "crons: no server of the environment runs them",
    "trytond.cron": "the cron runner: never started",
    "trytond.worker": "the queue worker: never started",
    "trytond.ir.error": "error-report cleaning, run by a cron",
    "trytond.ir.filestore": "attachment retention, run by a cron",
    "trytond.ir.lang": "checks a date format string renders; no value depends on the day",
    "trytond.bus": "the notification bus's in-memory timeouts",
    "trytond.backend.postgresql.database": "the connection pool's idle timeouts",
    "trytond.backend.sqlite.database": "another backend, never used",
    "trytond.cli.stat": "the stat command, never run",
    "trytond.modules.currency.ecb": "the ECB rate fetch, run by a cron (and off the loopback)",
}


class _AlsoReal(type):
    """A pinned class answers isinstance/issubclass as the real class does: values made by the real
    class (by psycopg, by unpinned modules) are still dates to a pinned module."""

    _real: type

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, cls._real)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, cls._real)


def pinned_datetime_module(instant: _dt.datetime) -> types.ModuleType:
    """A copy of the `datetime` module whose `date.today()`, `datetime.now()`/`today()`/`utcnow()` answer
    `instant` (aware, UTC); every value it makes is of the real classes (JSON and psycopg key on them)."""
    naive = instant.astimezone(_dt.UTC).replace(tzinfo=None)

    class date(_dt.date, metaclass=_AlsoReal):  # stands in for datetime.date
        _real = _dt.date

        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            return _dt.date(*args, **kwargs)

        # The pinned classes answer values of the real classes (their __new__ too), hence the overrides'
        # return types.
        @classmethod
        def today(cls) -> _dt.date:  # type: ignore[override]
            return naive.date()

    class datetime(_dt.datetime, metaclass=_AlsoReal):  # stands in for datetime.datetime
        _real = _dt.datetime

        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            return _dt.datetime(*args, **kwargs)

        @classmethod
        def now(cls, tz: _dt.tzinfo | None = None) -> _dt.datetime:  # type: ignore[override]
            return naive if tz is None else instant.astimezone(tz)

        @classmethod
        def today(cls) -> _dt.datetime:  # type: ignore[override]
            return naive

        @classmethod
        def utcnow(cls) -> _dt.datetime:  # type: ignore[override]
            return naive

    module = types.ModuleType("datetime", "the datetime module, its clock pinned (agentrel tryton clock)")
    module.__dict__.update({k: v for k, v in vars(_dt).items() if not k.startswith("__")})
    module.date, module.datetime = date, datetime  # type: ignore[attr-defined]
    return module


def pinned_time_module(instant: _dt.datetime) -> types.ModuleType:
    """A copy of the `time` module whose wall clock reads answer `instant` (monotonic clocks are real)."""
    epoch = instant.timestamp()

    def stamp(t: float | None = None) -> float:
        return epoch if t is None else t

    module = types.ModuleType("time", "the time module, its wall clock pinned (agentrel tryton clock)")
    module.__dict__.update({k: v for k, v in vars(_time).items() if not k.startswith("__")})
    module.__dict__.update(
        time=lambda: epoch,
        time_ns=lambda: int(epoch * 1_000_000_000),
        gmtime=lambda t=None: _time.gmtime(stamp(t)),
        localtime=lambda t=None: _time.localtime(stamp(t)),
        ctime=lambda t=None: _time.ctime(stamp(t)),
        strftime=lambda f, t=None: _time.strftime(f, t if t is not None else _time.localtime(epoch)),
    )
    return module


def pin(day: _dt.date) -> None:
    """Pin every clock read of Tryton's that can reach a stored value or an answer to `day`'s midnight,
    UTC. Call it before Tryton's pool registers its modules; the modules are imported here."""
    instant = _dt.datetime.combine(day, _dt.time(), tzinfo=_dt.UTC)
    from trytond.ir import date as ir_date

    ir_date.Date.today = staticmethod(lambda timezone=None: day)  # type: ignore[method-assign]
    shims = {"datetime": pinned_datetime_module(instant), "time": pinned_time_module(instant)}
    for name, attrs in PINNED_GLOBALS.items():
        module = sys.modules.get(name) or importlib.import_module(name)
        for attr in attrs:
            real = getattr(module, attr)
            kind = "time" if real is _time else "datetime"
            if real not in (_dt, _time):
                raise RuntimeError(f"tryton clock: {name}.{attr} is not the {kind} module: re-read clock.py")
            setattr(module, attr, shims[kind])
    for name, classes in PINNED_EVALS.items():
        module = importlib.import_module(name)
        for cls_name in classes:
            _start_at(getattr(module, cls_name), instant)


def _start_at(cls: Any, instant: _dt.datetime) -> None:
    """PYSON `Date()`/`DateTime()` without a start read the clock: give them the instant as their start."""
    real_eval = cls.eval
    start = instant.replace(tzinfo=None)

    def eval_(dct: dict[str, Any], context: Any) -> Any:
        if not isinstance(dct.get("start"), _dt.date):
            dct = {**dct, "start": start}
        return real_eval(dct, context)

    cls.eval = staticmethod(eval_)
