"""
What one Python module says statically, for the scan (nothing is executed): its string constants, what its imports
bind, the value of a literal expression (its constants read as their values), and source text fit to show.
"""

from __future__ import annotations

__all__ = [
    "UNREADABLE",
    "RECIPE_FOLDER",
    "statements",
    "module_constants",
    "import_aliases",
    "star_modules",
    "local_names",
    "literal",
    "dotted",
    "without_recipe",
    "masked_source",
]

import ast
import copy
from typing import Any, Collection, Dict, Iterator, List, Optional, Set

from sispin.lock.urls import credential_spans

#: what :func:`literal` gives for an expression that is no literal
UNREADABLE = object()

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def module_constants(tree: ast.Module) -> Dict[str, str]:
    """
    :param tree: a parsed module
    :return: its string constants: ``NAME = "string"`` at the top level, where the module binds NAME nowhere else
        (not twice, not by ``+=``, an import, a loop, a ``def``, inside an ``if`` at module level, nor through a
        ``global`` statement in a function): a name bound twice holds what the last binding run gave, unknown here
    """
    bindings: Dict[str, int] = {}
    for name in _module_bindings(tree.body):
        bindings[name] = bindings.get(name, 0) + 1
    for node in statements(tree):
        if isinstance(node, ast.Global):
            for name in node.names:
                bindings[name] = bindings.get(name, 0) + 2
    constants: Dict[str, str] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(node, ast.AnnAssign):
            target = node.target
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and isinstance(value.value, str):
            if bindings.get(target.id) == 1:
                constants[target.id] = value.value
    return constants


def _module_bindings(statements: List[ast.stmt]) -> Iterator[str]:
    """Every name a module-level statement binds, once per binding (inside compound statements too)."""
    pending: List[ast.AST] = list(statements)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
            pending += node.decorator_list  # evaluated at module level; the body is not
            continue
        if isinstance(node, (ast.Lambda, *_COMPREHENSIONS)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node.id
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from (alias.asname or alias.name.split(".")[0] for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            yield node.name
        pending += ast.iter_child_nodes(node)


def import_aliases(tree: ast.Module) -> Dict[str, str]:
    """
    :param tree: a parsed module
    :return: local name -> the dotted name it was imported as, from every import in the file (those in functions
        too); a relative import keeps its leading dots (``from .tools import get`` gives ``get`` -> ``.tools.get``)
    """
    aliases: Dict[str, str] = {}
    for node in statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    first = alias.name.split(".")[0]
                    aliases[first] = first
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (f"{node.module}." if node.module else "")
            for alias in node.names:
                if alias.name != "*":
                    aliases[alias.asname or alias.name] = base + alias.name
    return aliases


def statements(tree: ast.AST) -> Iterator[ast.stmt]:
    """
    :return: every statement of a tree, those in function, class and compound statement bodies too, in source
        order (expressions are not entered: no statement is in one, and they are most of a tree's nodes)
    """
    pending: List[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.stmt):
            yield node
        children: List[ast.AST] = []
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):  # handlers and match cases hold bodies
            value = getattr(node, name, None)
            if isinstance(value, list):
                children += value
        pending += reversed(children)


def star_modules(tree: ast.Module) -> List[str]:
    """:return: the modules the file star-imports (``from x.y import *``), relative ones with their dots, in order"""
    found = []
    for node in statements(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            found.append("." * node.level + (node.module or ""))
    return found


def local_names(function: ast.AST) -> Set[str]:
    """
    :param function: a function or lambda
    :return: the names it binds itself: its parameters and every name assigned anywhere in it (a superset: a module
        constant of one of these names is never taken for its value in there)
    """
    arguments = function.args  # type: ignore[attr-defined]
    names = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
    names |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
    return names


def literal(node: ast.expr, constants: Dict[str, str], shadowed: Collection[str] = ()) -> Any:
    """
    :param node: an expression
    :param constants: the module's string constants (:func:`module_constants`)
    :param shadowed: names bound locally where the expression stands: those are not the module's constants
    :return: its value when it is a literal, module constants in it (also inside lists, tuples and dicts, such as
        ``patches=[PATCH]``) read as their values; else :data:`UNREADABLE`
    """
    names = [n for n in ast.walk(node) if isinstance(n, ast.Name)]
    if any(n.id not in constants or n.id in shadowed for n in names):
        return UNREADABLE
    if names:
        node = _Substituted(constants).visit(copy.deepcopy(node))
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNREADABLE


class _Substituted(ast.NodeTransformer):
    """Each name of a module constant replaced by the constant's value."""

    def __init__(self, constants: Dict[str, str]):
        self.constants = constants

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Constant(self.constants[node.id]), node)


def dotted(node: ast.expr) -> Optional[str]:
    """:return: ``a.b.c`` for a name or a chain of attributes on one, else None"""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


#: the folder of a setup that Sisyphus puts on the import path (its default RECIPE_PATH)
RECIPE_FOLDER = "recipe"


def without_recipe(name: str) -> str:
    """The legacy ``recipe.i6_core`` spelling of a module, as ``i6_core``."""
    return name[len(RECIPE_FOLDER) + 1 :] if name.startswith(f"{RECIPE_FOLDER}.") else name


def masked_source(expression: ast.expr) -> str:
    """
    The source of an expression for display, its string constants masked where they hold something secret-looking.

    A credential may be spread over several constants (``'https://user:' + token + '@host'``): the constants are
    looked at together, in source order, and each part of one that falls into a secret span becomes ``***``.
    """
    joined, offsets = "", []
    for node in _string_constants(expression):
        offsets.append(len(joined))
        joined += node.value
    spans = credential_spans(joined)
    if not spans:
        return ast.unparse(expression)
    masked = copy.deepcopy(expression)
    for node, offset in zip(_string_constants(masked), offsets):
        value, end = node.value, offset + len(node.value)
        for start, stop in reversed(spans):
            if start < end and stop > offset:
                value = value[: max(start, offset) - offset] + "***" + value[min(stop, end) - offset :]
        node.value = value
    return ast.unparse(masked)


def _string_constants(expression: ast.expr) -> List[ast.Constant]:
    """The string constants of an expression, in source order."""
    found = [node for node in ast.walk(expression) if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    return sorted(found, key=lambda node: (node.lineno, node.col_offset))
