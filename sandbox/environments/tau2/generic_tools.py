"""What every τ² port's toolkit shares: τ²'s two generic tools (`calculate`, `transfer_to_human_agents`),
which read nothing, the query helpers the ports' tools read the run database with, and the declaration of
a tool whose arguments are all required.

Deliberate difference from τ²: `calculate` evaluates + - * / and ** with an exponent of at most 64 by
walking the expression's syntax tree, where τ² calls eval (a `9**9**9` would hold the call's process for
ever); on every expression τ² accepts and finishes, the results are equal.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from agentrel.sandbox.tools.base import Handler, Reversibility, Tool, ToolContext, ToolError, first, obj, rows

Args = dict[str, Any]


def q(ctx: ToolContext, query: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    return rows(ctx.conn.cursor().execute(query, params))


def one(ctx: ToolContext, query: str, params: tuple[Any, ...] = ()) -> dict[str, Any] | None:
    return first(ctx.conn.cursor().execute(query, params))


def declare(name: str, doc: str, props: dict[str, Any], kind: str, handler: Handler) -> Tool:
    """A tool whose every argument is required (as in τ²'s toolkits)."""
    reversibility: Reversibility = kind  # type: ignore[assignment]
    return Tool(name, doc, obj(props, list(props)), reversibility, handler)


_OPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ToolError("exponent too large")
        return _OPS[type(node.op)](left, right)
    raise ToolError("invalid syntax")


def calculate(ctx: ToolContext, args: Args) -> Any:
    expression = args["expression"]
    if not all(char in "0123456789+-*/(). " for char in expression):
        raise ToolError("Invalid characters in expression")
    try:
        tree = ast.parse(expression, "<string>", mode="eval")
        return str(round(float(_evaluate(tree)), 2))
    except SyntaxError as exc:
        raise ToolError(str(exc)) from None
    except (ZeroDivisionError, OverflowError) as exc:
        raise ToolError(str(exc)) from None


def transfer_to_human_agents(ctx: ToolContext, args: Args) -> Any:
    return "Transfer successful"
