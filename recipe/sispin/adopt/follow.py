"""
Scanning a setup's files for ``pin import``: every ``*.py`` below the given paths, each scanned by
:mod:`sispin.adopt.scan`, and the calls of helper functions that make a CloneGitRepositoryJob, followed (one level)
to the helper each call names through its own file's imports (:mod:`sispin.adopt.modules`): a call that gives the
helper a literal commit (or leaves it to a literal default) is the clone it makes, and a call of a helper that
returns the clone's job or output stands for that clone wherever a ``hash_overwrite`` is set on what it returns.
"""

from __future__ import annotations

__all__ = ["scan_paths"]

import ast
import os
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from sispin.adopt.modules import Module, Modules, NotRegular, may_import, read_regular
from sispin.adopt.scan import Resolver, clone_arguments, scan_tree
from sispin.adopt.sites import CallSite, Helper, Reached, add_overwrite, argument_risks, order_overwrites
from sispin.adopt.source import UNREADABLE, dotted, literal, masked_source
from sispin.clonejob import CLASS_NAME

#: what every overwrite the scan can see is set through
_OVERWRITE = b"hash_overwrite"
_CLASS = CLASS_NAME.encode()


def scan_paths(paths: Sequence[Path]) -> Tuple[List[CallSite], List[str]]:
    """
    :param paths: Python files and directories (searched recursively for ``*.py``)
    :return: the call sites in file order (calls of helper functions that make a clone of their own among them),
        and one warning per file that could not be read or parsed
    """
    modules, files, warnings = Modules(), [], []
    for path in _python_files(paths):
        try:
            module = modules.add(path, read_regular(path))
        except NotRegular as exc:
            warnings.append(f"{path}: not a regular file ({exc}), skipped")
            continue
        except OSError as exc:
            warnings.append(f"{path}: cannot read: {exc.strerror}")
            continue
        if module is not None:
            files.append(module)
    for module in files:
        # most files never mention the class: skip them before paying for a parse
        clones = _CLASS in module.data
        if clones:
            modules.first_pass(module)
            if module.error is not None:
                warnings.append(f"{module.path}:{module.error.lineno}: not valid Python, skipped: {module.error.msg}")
        # helpers of modules outside the paths, imported where a clone or an overwrite may be: their names too
        if clones or _OVERWRITE in module.data:
            modules.imported_helpers(module)
    _second_passes(modules, files)
    _shared_overwrites(modules, files)
    order = {module.path: index for index, module in enumerate(files)}
    sites = [site for module in files if module.scan is not None for site in module.scan.sites]
    for site in sites:
        order_overwrites(site, order)
    return sorted(sites, key=lambda site: (order[site.file], site.line)), warnings


def _second_passes(modules: Modules, files: List[Module]) -> None:
    """
    Scan again, now following helper calls, every file that may call a helper: those that mention a helper's name
    (a call names it, whether it is imported, aliased or star-imported). Helpers found in files imported from
    outside the given paths add names: a further round looks for them in the files left.
    """
    names: Set[bytes] = set()
    new = modules.helper_names()
    while new:
        for module in files:
            if module.second is None and any(_calls(module.data, name) for name in new):
                _second_pass(modules, module)
        names |= new
        new = modules.helper_names() - names


def _calls(data: bytes, name: bytes) -> bool:
    """Whether a file may call name, read as text: it names it other than where it defines it (``def name``)."""
    return name in data and data.count(name) > data.count(b"def " + name)


def _second_pass(modules: Modules, module: Module) -> None:
    tree = module.parsed()
    if tree is not None:
        known = module.first.clones if module.first is not None else {}
        module.second = scan_tree(tree, module.path, _Calls(modules, module), known)


def _shared_overwrites(modules: Modules, files: List[Module]) -> None:
    """
    Overwrites set on objects that other modules bind (``from a import ROOT; ROOT.hash_overwrite = ...``), found
    on those modules' clones. Only a file that mentions ``hash_overwrite`` and imports a name some scanned file binds
    to a clone can set one: those not scanned yet are scanned now.
    """
    exported: Dict[bytes, Set[bytes]] = {}
    for module in files:
        for name in module.scan.exports if module.scan else ():
            exported.setdefault(name.encode(), set()).add(module.name.encode())
    for module in files:
        if module.scan is None and _OVERWRITE in module.data and may_import(module, exported):
            _second_pass(modules, module)
    for module in files:
        for shared, overwrite in module.scan.shared if module.scan else ():
            held = modules.shared(module, shared.name)
            for step in shared.steps:
                held = _taken(held, step)
            if held is not None and held[1] == "path":
                add_overwrite(held[0], overwrite)


def _taken(held: Optional[Tuple[CallSite, str]], step: str) -> Optional[Tuple[CallSite, str]]:
    """What ``.out_repository`` (of a job) or a copy (of a path) of a clone's job or path is."""
    wanted = "job" if step == "out_repository" else "path"
    return (held[0], "path") if held is not None and held[1] == wanted else None


class _Calls(Resolver):
    """Calls of one file, each resolved through that file's imports to the helper it names."""

    def __init__(self, modules: Modules, module: Module):
        self.modules = modules
        self.module = module

    def call(self, node: ast.Call, literal_here: Callable[[ast.expr], Any]) -> Optional[Reached]:
        name = dotted(node.func)
        helper = self.modules.callee(self.module, name) if name else None
        if helper is None:
            return None
        site = _made_by(helper, node, self.module.path, literal_here) if helper.parameter else None
        if site is not None:
            return Reached(site, helper.returns, True)
        return Reached(helper.site, helper.returns, False) if helper.returns else None


def _made_by(helper: Helper, call: ast.Call, path: str, literal_here: Callable[[ast.expr], Any]) -> Optional[CallSite]:
    """
    :return: the clone a call of a helper makes, as a site at the call, when its commit is a literal there (given,
        a module constant, or the helper's literal default); None when it is not (no pin is made at this call)
    """
    values = _bound(helper, call, literal_here)
    if values[helper.parameter or ""][0] is UNREADABLE:
        return None
    clone = helper.site
    arguments, expressions = dict(clone.arguments), dict(clone.expressions)
    for name, expression in clone_arguments(helper.call).items() if helper.call else ():
        if isinstance(expression, ast.Name) and expression.id in values:
            value, text = values[expression.id]
            arguments.pop(name, None)
            expressions.pop(name, None)
            if value is UNREADABLE:
                expressions[name] = text
            else:
                arguments[name] = value
    site = CallSite(
        file=path,
        line=call.lineno,
        arguments=arguments,
        expressions=expressions,
        positional=clone.positional,
        imported=clone.imported,
        helper=f"{helper.name}({helper.parameter}=...), whose clone is at {clone.where}",
    )
    site.risks = [risk for risk in clone.risks if risk.startswith("uses ")] + argument_risks(site)
    function = helper.function
    for overwrite in clone.overwrites:  # set in the helper itself: on every clone it makes
        if overwrite.file == clone.file and function.lineno <= overwrite.line <= (function.end_lineno or 0):
            add_overwrite(site, overwrite)
    return site


def _bound(helper: Helper, call: ast.Call, literal_here: Callable[[ast.expr], Any]) -> Dict[str, Tuple[Any, str]]:
    """
    :return: each parameter of the helper -> (its value in this call, or UNREADABLE; the source text to show): the
        argument given (read where the call stands), else the helper's default (read in its module); a parameter
        the function assigns to itself, or that ``*args``/``**kwargs`` may give, is unreadable
    """
    arguments = helper.function.args
    positional = [a.arg for a in arguments.posonlyargs + arguments.args]
    defaults = dict(zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults))
    defaults.update({a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None})
    given: Dict[str, ast.expr] = {}
    spread: Optional[str] = None
    for index, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            spread = masked_source(argument)
            break
        if index < len(positional):
            given[positional[index]] = argument
    for keyword in call.keywords:
        if keyword.arg is None:
            spread = spread or f"**{masked_source(keyword.value)}"
        else:
            given[keyword.arg] = keyword.value
    values: Dict[str, Tuple[Any, str]] = {}
    for name in positional + [a.arg for a in arguments.kwonlyargs]:
        if name in helper.assigned:
            values[name] = UNREADABLE, name
        elif name in given:
            values[name] = literal_here(given[name]), masked_source(given[name])
        elif spread is not None:
            values[name] = UNREADABLE, spread
        elif name in defaults:
            values[name] = literal(defaults[name], helper.constants), masked_source(defaults[name])
        else:
            values[name] = UNREADABLE, f"{name} not given"
    return values


def _python_files(paths: Sequence[Path]) -> Iterator[str]:
    for path in paths:
        if os.path.isdir(path):
            for directory, subdirectories, files in os.walk(path):
                subdirectories[:] = sorted(d for d in subdirectories if not d.startswith(".") and d != "__pycache__")
                for name in sorted(files):
                    if name.endswith(".py"):
                        yield os.path.join(directory, name)
        else:
            yield str(path)
