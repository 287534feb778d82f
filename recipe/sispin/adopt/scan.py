"""
Find hand-written ``CloneGitRepositoryJob(...)`` calls in Python source, statically (ast; nothing is executed).

Recognised: the class imported under any alias or reached through an imported module (``from i6_core.tools.git
import CloneGitRepositoryJob as Clone``, ``import i6_core.tools.git as g; g.CloneGitRepositoryJob``, the legacy
``recipe.i6_core`` prefix), positional and keyword arguments, and module-level string constants as values.
Each call site reports its arguments and its risks: no commit (follows a branch), a short SHA, ``hash_overwrite``
assigned on its output (through names, attributes, dict items and copies), arguments that are not literals.
A file's module-level functions that make a clone are its helpers; a :class:`Resolver` tells the scan what calls
of helpers (of this file or of others) reach, so that overwrites on what they return count as well.
"""

from __future__ import annotations

# CallSite, Overwrite, Helper, commit_risks (sispin.adopt.sites) and module_constants (sispin.adopt.source) are
# named here too: what a scan gives is read from this module
__all__ = [
    "CallSite",
    "Overwrite",
    "Helper",
    "Resolver",
    "FileScan",
    "scan_source",
    "scan_file",
    "scan_tree",
    "clone_arguments",
    "module_constants",
    "commit_risks",
]

import ast
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, Union

from sispin.adopt.sites import (
    CallSite,
    Helper,
    Overwrite,
    Reached,
    Shared,
    add_overwrite,
    argument_risks,
    commit_risks,
)
from sispin.adopt.source import (
    UNREADABLE,
    dotted,
    import_aliases,
    literal,
    local_names,
    masked_source,
    module_constants,
    star_modules,
    without_recipe,
)
from sispin.clonejob import CLASS_NAME, PARAMETERS, QUALIFIED_NAMES


class Resolver:
    """What the scan of one file asks about other functions; this one knows none (the file is scanned alone)."""

    def call(self, node: ast.Call, literal: Callable[[ast.expr], Any]) -> Optional[Reached]:
        """
        :param node: a call that is not of CloneGitRepositoryJob
        :param literal: the value of an expression where the call stands (UNREADABLE when it is no literal)
        :return: the clone it reaches when it calls a helper, else None
        """
        return None


@dataclass
class FileScan:
    """
    What the scan of one file found.

    :param sites: its call sites in line order: CloneGitRepositoryJob calls, and calls of helpers that make a clone
        of their own
    :param helpers: its helper functions by name
    :param clones: id of each CloneGitRepositoryJob call node -> its site (a second scan of the same tree reuses them)
    :param exports: what the file's top-level names hold at its end: a clone's job or a path of it
    :param shared: overwrites set on objects of other modules (``from a import ROOT; ROOT.hash_overwrite = ...``),
        for whoever knows those modules
    """

    sites: List[CallSite]
    helpers: Dict[str, Helper]
    clones: Dict[int, CallSite]
    exports: Dict[str, Tuple[CallSite, str]] = field(default_factory=dict)
    shared: List[Tuple[Shared, Overwrite]] = field(default_factory=list)


def scan_source(source: str, filename: str) -> List[CallSite]:
    """
    :param source: Python source text
    :param filename: its name, for the call sites
    :return: the CloneGitRepositoryJob call sites in it, in line order
    :raises SyntaxError: when the source does not parse
    """
    return scan_file(source, filename)[0]


def scan_file(source: str, filename: str) -> Tuple[List[CallSite], List[Helper]]:
    """
    :param source: Python source text
    :param filename: its name, for the call sites
    :return: the call sites in line order, and the helper functions of the file
    :raises SyntaxError: when the source does not parse
    """
    found = scan_tree(ast.parse(source, filename=filename), filename)
    return found.sites, list(found.helpers.values())


def scan_tree(
    tree: ast.Module, filename: str, resolver: Optional[Resolver] = None, known: Optional[Dict[int, CallSite]] = None
) -> FileScan:
    """
    :param tree: a parsed file
    :param filename: its name, for the call sites
    :param resolver: what calls of functions reach (helpers of this file and of others); none by default
    :param known: the sites of a former scan of this same tree, reused (with what was found on them) for its calls
    :return: what the file holds
    """
    star = any(without_recipe(f"{module}.{CLASS_NAME}") in QUALIFIED_NAMES for module in star_modules(tree))
    scanner = _Scanner(filename, module_constants(tree), import_aliases(tree), star)
    scanner.resolver = resolver or Resolver()
    scanner.known = known or {}
    sites = sorted(scanner.scan(tree), key=lambda site: site.line)
    exports = {name: (held, kind) for name, (held, kind) in scanner.scopes[0].items() if isinstance(held, CallSite)}
    return FileScan(sites, scanner.helpers, scanner.clone_calls, exports, scanner.shared)


def clone_arguments(node: ast.Call) -> Dict[str, ast.expr]:
    """:return: parameter name -> expression, for the arguments a CloneGitRepositoryJob call gives by name or place"""
    names = [name for name, _ in PARAMETERS]
    given: Dict[str, ast.expr] = {}
    for index, argument in enumerate(node.args):
        if isinstance(argument, ast.Starred) or index >= len(names):
            break
        given[names[index]] = argument
    given.update({keyword.arg: keyword.value for keyword in node.keywords if keyword.arg is not None})
    return given


#: Sisyphus path methods that return a copy of the path (the copy keeps the creator: the clone job)
_PATH_COPIES = ("copy", "copy_append", "join_right")

#: what a name, member or call holds: a call site, and whether it is its "job" or a "path" of it; or an object of
#: another module ("shared"), known later
Holder = Tuple[Union[CallSite, Shared], str]


class _Scanner(ast.NodeVisitor):
    """
    Finds the calls, and ``hash_overwrite`` assignments on their outputs and on copies of them: through local names
    (scope by scope), and through attributes and subscripts (``self.root``, ``paths["rc"]``) anywhere in the file.
    """

    def __init__(self, filename: str, constants: Dict[str, str], aliases: Dict[str, str], star_import: bool):
        self.filename = filename
        self.star_import = star_import
        self.constants = constants
        self.aliases = aliases
        self.resolver = Resolver()
        self.known: Dict[int, CallSite] = {}
        self.sites: List[CallSite] = []
        # per scope: local name -> what it holds
        self.scopes: List[Dict[str, Holder]] = [{}]
        # the functions around the node visited: the names they bind hide the module constants of those names
        self.enclosing: List[ast.AST] = []
        self.bound: Dict[int, Set[str]] = {}
        # attribute and subscript targets (as source text), for the whole file: methods share ``self.*``
        self.members: Dict[str, Holder] = {}
        # hash_overwrite assignments on a member not bound yet where they stand (another method may bind it)
        self.pending: List[Tuple[str, Overwrite]] = []
        self.shared: List[Tuple[Shared, Overwrite]] = []
        # id of a call node -> what it returns: the job of a CloneGitRepositoryJob, whatever a helper returns
        self.site_of_call: Dict[int, Holder] = {}
        self.clone_calls: Dict[int, CallSite] = {}
        # the module-level function being visited (helpers are found there only), its clones and what it returns
        self.function: Optional[ast.FunctionDef] = None
        self.clones: List[Tuple[CallSite, ast.Call]] = []
        self.returned: List[Holder] = []
        self.in_class = 0
        self.helpers: Dict[str, Helper] = {}

    def scan(self, tree: ast.Module) -> List[CallSite]:
        """:return: the call sites of the tree, each with its risks"""
        self.visit(tree)
        for member, overwrite in self.pending:
            owner = self.members.get(member)
            if owner:
                self.overwritten(owner, overwrite)
        return self.sites

    def is_clone_class(self, func: ast.expr) -> bool:
        return self.resolved(func) or dotted(func) == CLASS_NAME

    def resolved(self, func: ast.expr) -> bool:
        """Whether the called name is i6_core's class through the file's imports."""
        name = dotted(func)
        if name is None:
            return False
        head, _, rest = name.partition(".")
        qualified = without_recipe(self.aliases.get(head, head) + (f".{rest}" if rest else ""))
        return qualified in QUALIFIED_NAMES or (name == CLASS_NAME and head not in self.aliases and self.star_import)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.in_class += 1  # a method's first parameter is its object: its calls are not followed
        self.generic_visit(node)
        self.in_class -= 1

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        helper = len(self.scopes) == 1 and not self.in_class and isinstance(node, ast.FunctionDef)
        if helper:
            self.function, self.clones, self.returned = node, [], []
        self.scopes.append({})
        self.enclosing.append(node)
        self.generic_visit(node)
        self.enclosing.pop()
        self.scopes.pop()
        if helper:
            self.note_helper(node)
            self.function = None

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]
    visit_Lambda = visit_FunctionDef  # type: ignore[assignment]

    def visit_Call(self, node: ast.Call) -> None:
        if self.is_clone_class(node.func):
            site = self.known.get(id(node)) or self.call_site(node)
            if id(node) in self.known:
                self.sites.append(site)
            site.imported = self.resolved(node.func)
            self.site_of_call[id(node)] = site, "job"
            self.clone_calls[id(node)] = site
            if self.function is not None and len(self.scopes) == 2:
                self.clones.append((site, node))
        else:
            reached = self.resolver.call(node, self.literal)
            if reached is not None and reached.new:
                self.sites.append(reached.site)
            if reached is not None and reached.kind is not None:
                self.site_of_call[id(node)] = reached.site, reached.kind
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        self.generic_visit(node)
        if self.function is not None and len(self.scopes) == 2 and node.value is not None:
            holder = self.holder(node.value)
            if holder is not None and isinstance(holder[0], CallSite):
                self.returned.append(holder)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)  # the value first: its calls become sites
        for target in node.targets:
            self.assign(target, node.value, node.lineno)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.generic_visit(node)
        if node.value is not None:
            self.assign(node.target, node.value, node.lineno)

    def note_helper(self, node: ast.FunctionDef) -> None:
        """
        Record a module-level function as a helper when it returns one clone's job or path (each ``return`` that
        returns one the same), or passes a parameter on as the commit of one clone (of several: the one returned).
        """
        if not self.clones and not self.returned:
            return
        returned = {(id(site), kind): (site, kind) for site, kind in self.returned}
        back = next(iter(returned.values())) if len(returned) == 1 else None
        arguments = node.args
        parameters = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
        reassigned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        passing = []
        for site, call in self.clones:
            commit = clone_arguments(call).get("commit")
            if isinstance(commit, ast.Name) and commit.id in parameters - reassigned:
                passing.append((site, call, commit.id))
        chosen = passing[0] if len(passing) == 1 else next((p for p in passing if back and p[0] is back[0]), None)
        if chosen is not None:
            site, call, parameter = chosen
            site.followed = True
            returns = back[1] if back and back[0] is site else None
            self.helpers[node.name] = Helper(
                node.name, site, node, call, parameter, returns, self.constants, reassigned
            )
        elif back is not None:
            self.helpers[node.name] = Helper(node.name, back[0], node, None, None, back[1], self.constants, reassigned)

    def assign(self, target: ast.expr, value: ast.expr, line: int) -> None:
        if isinstance(target, ast.Attribute) and target.attr == "hash_overwrite":
            assigned = self.literal(value)
            if assigned is None:
                return  # None is no overwrite: the path hashes its creator again
            overwrite = Overwrite(self.filename, line, None if assigned is UNREADABLE else assigned)
            owner = self.holder(target.value)
            if owner:
                self.overwritten(owner, overwrite)
            elif isinstance(target.value, (ast.Attribute, ast.Subscript)):
                self.pending.append((ast.unparse(target.value), overwrite))
            return
        holder = self.holder(value)
        if isinstance(target, ast.Name):
            if holder:
                self.scopes[-1][target.id] = holder
            else:
                self.scopes[-1].pop(target.id, None)
            if isinstance(value, ast.Dict):  # {"rc": job.out_repository}: its items, as name["rc"]
                for key, item in zip(value.keys, value.values):
                    item_holder = self.holder(item) if item is not None else None
                    if isinstance(key, ast.Constant) and item_holder:
                        self.members[f"{target.id}[{key.value!r}]"] = item_holder
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            if holder:
                self.members[ast.unparse(target)] = holder
            else:
                self.members.pop(ast.unparse(target), None)

    def overwritten(self, owner: Holder, overwrite: Overwrite) -> None:
        """An overwrite on what owner holds: a clone's path here, or an object of another module (known later)."""
        if owner[1] == "path" and isinstance(owner[0], CallSite):
            add_overwrite(owner[0], overwrite)
        elif owner[1] == "shared" and isinstance(owner[0], Shared):
            self.shared.append((owner[0], overwrite))

    def holder(self, node: ast.expr) -> Optional[Holder]:
        """Which call site an expression stands for: the job itself, or a path of it (out_repository, a copy)."""
        if isinstance(node, ast.Call):
            if id(node) in self.site_of_call:
                return self.site_of_call[id(node)]
            if isinstance(node.func, ast.Attribute) and node.func.attr in _PATH_COPIES:
                return self.taken(self.holder(node.func.value), "copy")
            return None
        if isinstance(node, ast.Name):
            for scope in reversed(self.scopes):
                if node.id in scope:
                    return scope[node.id]
            return self.imported_object(node.id)
        if isinstance(node, ast.Attribute) and node.attr == "out_repository":
            inner = self.taken(self.holder(node.value), "out_repository")
            if inner is not None:
                return inner
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            member = self.members.get(ast.unparse(node))
            return member or (self.imported_object(dotted(node)) if isinstance(node, ast.Attribute) else None)
        return None

    @staticmethod
    def taken(inner: Optional[Holder], step: str) -> Optional[Holder]:
        """What ``.out_repository`` (of a job) or a copy (of a path) of a holder holds."""
        if inner is None:
            return None
        if isinstance(inner[0], Shared):
            return inner[0]._replace(steps=inner[0].steps + (step,)), "shared"
        wanted, result = ("job", "path") if step == "out_repository" else ("path", "path")
        return (inner[0], result) if inner[1] == wanted else None

    def imported_object(self, name: Optional[str]) -> Optional[Holder]:
        """An object another module binds, when name (``ROOT``, ``tools.ROOT``) comes from an import of this file."""
        head = (name or "").split(".")[0]
        if not name or head not in self.aliases or any(head in scope for scope in self.scopes):
            return None
        if self.enclosing and head in self.local_names():
            return None  # a parameter or local of the same name
        return Shared(name), "shared"

    def call_site(self, node: ast.Call) -> CallSite:
        site = CallSite(file=self.filename, line=node.lineno, positional=len(node.args))
        names = [name for name, _ in PARAMETERS]
        if any(isinstance(a, ast.Starred) for a in node.args) or len(node.args) > len(names):
            site.risks.append("uses *args: not all arguments can be read")
        if any(keyword.arg is None for keyword in node.keywords):
            site.risks.append("uses **kwargs: not all arguments can be read")
        for name, expression in clone_arguments(node).items():
            value = self.literal(expression)
            if value is UNREADABLE:
                site.expressions[name] = masked_source(expression)
            else:
                site.arguments[name] = value
        site.risks += argument_risks(site)
        self.sites.append(site)
        return site

    def literal(self, node: ast.expr) -> Any:
        """:return: the value of an expression where it stands, or UNREADABLE"""
        if not self.enclosing or not any(isinstance(n, ast.Name) for n in ast.walk(node)):
            return literal(node, self.constants)
        return literal(node, self.constants, self.local_names())

    def local_names(self) -> Set[str]:
        """The names the functions around the visited node bind (worked out where first needed: most never are)."""
        for function in self.enclosing:
            if id(function) not in self.bound:
                self.bound[id(function)] = local_names(function)
        return set().union(*(self.bound[id(f)] for f in self.enclosing))
