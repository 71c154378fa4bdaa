"""Text to lark tree, with syntax errors turned into one clear ``file:line:col:`` message.

The parser is built once (LALR, positions propagated) and cached. A syntax error is classified by
the examples in ``EXAMPLES``: first with lark's ``match_examples`` (exact parser state and token), then,
because an LALR state also counts the stack depth (``a = 1`` and ``(a = 1)`` differ), by the state
number and token type alone, which finds the same mistake at any nesting depth.
"""

from __future__ import annotations

from functools import lru_cache

from lark import Lark, Token, Tree, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from agentrel.dsl.errors import SpecError

_H = 'spec "s" version 1\n'

# label -> malformed examples; the label is the "what" of the error message. Order matters: the
# first label whose example fails the same way wins.
EXAMPLES: dict[str, list[str]] = {
    'a spec starts with its header, e.g. spec "name" version 1': [
        'allow "a": insert t',
        'damage "a" high substrate: insert t',
        "param p: int = 1",
        'require "r": exists t',
        "",
    ],
    "the spec name must be a double-quoted string": ["spec s version 1"],
    'the header needs a version number, e.g. spec "name" version 1': [
        'spec "s"',
        'spec "s" allow',
        'spec "s" version x',
        'spec "s" version',
    ],
    "a label must be a double-quoted string": [
        _H + "allow a: insert t",
        _H + "damage a high substrate: insert t",
        _H + "require r: exists t",
        _H + "fallback f medium reversible",
    ],
    "missing ':' after the label": [_H + 'allow "a" insert t', _H + 'require "r" exists t'],
    "allow rules carry no price; use a damage rule": [_H + 'allow "a" price 5: insert t'],
    "expected an operation: insert, delete, update or any": [
        _H + 'allow "a": t',
        _H + 'allow "a": inserts t',
        _H + 'damage "a" high substrate: t',
        _H + 'allow "a": where',
        _H + 'allow "a":',
    ],
    "expected a table name (or * for any table) after the operation": [
        _H + 'allow "a": insert',
        _H + 'require "r": exists',
        _H + 'require "r": exists insert',
    ],
    "expected `where` before the condition (is the table name missing?)": [
        _H + 'allow "a": insert where after.a == 1',
        _H + 'allow "a": insert t after.a == 1',
    ],
    "a damage rule needs a severity (low, medium, high, critical), then an irreversibility"
    " (substrate, governance, reversible), then an optional price, then ':'": [
        _H + 'damage "a": insert t',
        _H + 'damage "a" high: insert t',
        _H + 'damage "a" high price 5: insert t',
        _H + 'damage "a" price 5 high substrate: insert t',
        _H + 'fallback "f"',
        _H + 'fallback "f" high',
    ],
    "only damage rules aggregate (group by ... having ...); an allow rule explains single changes": [
        _H + 'allow "a": insert t having count > 1',
        _H + 'allow "a": insert t where after.a == 1 having count > 1',
        _H + 'allow "a": insert t group by after.a having count > 1',
        _H + 'allow "a": insert t where after.a == 1 group by after.a having count > 1',
    ],
    "count takes no argument: it is the number of changes in the group (count > 1)": [
        _H + 'damage "a" high substrate: insert t having count(after.a) > 1',
        _H + 'damage "a" high substrate: insert t having count() > 1',
    ],
    "group by needs the values to group by, e.g. group by after.case_id": [
        _H + 'damage "a" high substrate: insert t group by having count > 1',
        _H + 'damage "a" high substrate: insert t group having count > 1',
    ],
    "an aggregate rule needs a having clause after group by, e.g. having count > 1": [
        _H + 'damage "a" high substrate: insert t group by after.a',
        _H + 'damage "a" high substrate: insert t group by after.a, after.b',
        _H + 'damage "a" high substrate: insert t group by after.a allow "b": insert t',
    ],
    "use == to compare (a single = is not an operator)": [
        _H + 'allow "a": insert t where after.a = 1',
        _H + 'allow "a": insert t where key = 1',
        _H + 'allow "a": insert t where p = 1',
        _H + 'allow "a": insert t where key.a = 1',
        _H + 'allow "a": insert t where lower(after.a) = "x"',
        _H + 'allow "a": insert t where 1 = 1',
        _H + 'allow "a": insert t where "x" = 1',
    ],
    "comparisons do not chain; join them with `and`": [
        _H + 'allow "a": insert t where 1 < after.a < 3',
        _H + 'allow "a": insert t where after.a == 1 == 2',
    ],
    "missing ')'": [
        _H + 'allow "a": insert t where (after.a == 1',
        _H + 'allow "a": insert t where lower(after.a',
    ],
    "after `before`, `after` or `key.` comes a column name, e.g. after.status": [
        _H + 'allow "a": insert t where after == 1',
        _H + 'allow "a": insert t where before.1 == 1',
        _H + 'allow "a": insert t where key.1 == 1',
    ],
    "changed() and only_changed() take column names, e.g. changed(status, assigned_to)": [
        _H + 'allow "a": update t where changed(after.status)',
        _H + 'allow "a": update t where only_changed(after.status)',
        _H + 'allow "a": update t where changed()',
        _H + 'allow "a": update t where changed(1)',
        _H + 'allow "a": update t where changed("status")',
    ],
    "the expression is incomplete": [
        _H + 'allow "a": insert t where',
        _H + 'allow "a": insert t where after.a ==',
        _H + 'allow "a": insert t where after.a == 1 and',
        _H + 'allow "a": insert t where not',
        _H + 'damage "a" high substrate price: insert t',
        _H + 'allow "a": insert t where after.a + == 1',
    ],
    "a param needs a type, e.g. param change_id: int = 7": [_H + "param p = 1", _H + "param p"],
    "a requirement needs a quantifier: exists, no, exactly N, at least N or at most N, then a table": [
        _H + 'require "r": t',
        _H + 'require "r": exactly t',
        _H + 'require "r": at 1 t',
        _H + 'require "r": at least t',
    ],
    "volatile needs a table and its columns, e.g. volatile tickets(updated_at)": [
        _H + "volatile t",
        _H + "volatile t updated_at",
        _H + "volatile t()",
    ],
}

# How terminals read in "expected ..." lists.
_TERMINAL_TEXT = {
    "NAME": "a name",
    "NUMBER": "a number",
    "STRING": 'a "string"',
    "COMPARE": "a comparison (== != < <= > >=)",
    "$END": "end of file",
    "STAR": "*",
    "PLUS": "+",
    "MINUS": "-",
    "SLASH": "/",
    "COLON": ":",
    "COMMA": ",",
    "DOT": ".",
    "LPAR": "(",
    "RPAR": ")",
    "LSQB": "[",
    "RSQB": "]",
    "EQUAL": "=",
}

_CHAR_HINTS = {
    "'": "strings use double quotes",
    "&": "use `and`",
    "|": "use `or`",
    "!": "use `not` (or != to compare)",
    "$": "write money as a plain number, e.g. 250.00",
    ";": "rules need no separator",
}


@lru_cache(maxsize=1)
def get_parser() -> Lark:
    return Lark.open("agentrel.lark", rel_to=__file__, parser="lalr", propagate_positions=True)


def parse_tree(text: str, path: str) -> Tree[Token]:
    """Parse ``text`` or raise ``SpecError`` with ``path:line:col:``, the source line and a caret."""
    parser = get_parser()
    try:
        return parser.parse(text)
    except UnexpectedInput as err:
        raise SpecError(_message(err, text, path)) from None


def _message(err: UnexpectedInput, text: str, path: str) -> str:
    what = _classify(err)
    context = "\n".join("  " + line for line in err.get_context(text, span=50).rstrip("\n").split("\n"))
    if isinstance(err, UnexpectedToken):
        found = "end of file" if err.token.type == "$END" else f"'{err.token}'"
        expected = ", ".join(sorted({_terminal_text(t) for t in err.expected}))
        what = what or f"unexpected {found}"
        detail = f"  found {found}; expected {expected}"
    elif isinstance(err, UnexpectedCharacters):
        what = what or _CHAR_HINTS.get(err.char) or f"unexpected character {err.char!r}"
        expected = ", ".join(sorted({_terminal_text(t) for t in err.allowed or ()}))
        detail = f"  found {err.char!r}" + (f"; expected {expected}" if expected else "")
    else:  # pragma: no cover - LALR raises only the two kinds above
        what = what or "syntax error"
        detail = ""
    return f"{path}:{err.line}:{err.column}: {what}\n{context}\n{detail}".rstrip()


def _terminal_text(name: str) -> str:
    if name in _TERMINAL_TEXT:
        return _TERMINAL_TEXT[name]
    return name.lstrip("_").lower()


def _classify(err: UnexpectedInput) -> str | None:
    if isinstance(err, UnexpectedCharacters):
        return _CHAR_HINTS.get(err.char)
    label = err.match_examples(get_parser().parse, EXAMPLES, token_type_match_fallback=True)
    if label is not None:
        return label
    if isinstance(err, UnexpectedToken):
        position = err.state.position if err.state is not None else None
        return _signatures().get((position, err.token.type)) or _signatures().get((position, None))
    return None


@lru_cache(maxsize=1)
def _signatures() -> dict[tuple[int | None, str | None], str]:
    """(LALR state, token type) -> label, and (state, None) -> label, from the examples."""
    out: dict[tuple[int | None, str | None], str] = {}
    for label, snippets in EXAMPLES.items():
        for snippet in snippets:
            try:
                get_parser().parse(snippet)
            except UnexpectedToken as err:
                position = err.state.position if err.state is not None else None
                out.setdefault((position, err.token.type), label)
                out.setdefault((position, None), label)
            except UnexpectedInput:
                continue
            else:  # pragma: no cover - guarded by tests: every example must fail
                raise AssertionError(f"parser example parses: {snippet!r}")
    return out
