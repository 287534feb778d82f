"""
Find hand-written ``CloneGitRepositoryJob(...)`` calls in Python source, statically (ast; nothing is executed).

Recognised: the class imported under any alias or reached through an imported module (``from i6_core.tools.git
import CloneGitRepositoryJob as Clone``, ``import i6_core.tools.git as g; g.CloneGitRepositoryJob``, the legacy
``recipe.i6_core`` prefix), positional and keyword arguments, and module-level string constants as values.
Each call site reports its arguments and its risks: no commit (follows a branch), a short SHA, ``hash_overwrite``
assigned on its output, arguments that are not literals.
"""

from __future__ import annotations

__all__ = [
    "CallSite",
    "Overwrite",
    "Helper",
    "scan_source",
    "scan_file",
    "module_constants",
    "commit_risks",
    "overwrite_risk",
    "order_overwrites",
]

import ast
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

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
from sispin.lock.lockfile import is_full_sha
from sispin.lock.urls import check_url

#: how every risk about a ``hash_overwrite`` on a call's output starts
OVERWRITE_RISK = "hash_overwrite assigned on its output"


@dataclass(frozen=True)
class Overwrite:
    """
    A ``hash_overwrite`` assigned on a clone's output (or on a copy of it): the jobs that use that path hash the
    overwrite instead of the clone's commit.

    :param file: the file of the assignment, as given or found
    :param line: its 1-based line
    :param value: the value assigned when it is a literal (a string, or Sisyphus's (creator, path) tuple), else None
    """

    file: str
    line: int
    value: Any = None


@dataclass
class CallSite:
    """
    One ``CloneGitRepositoryJob(...)`` call.

    :param file: the file, as given or found
    :param line: 1-based line of the call
    :param arguments: parameter name -> literal value, for the arguments given (not the defaults), verbatim (a
        credential in a URL stays: output masks it, and pin.toml refuses such a URL)
    :param expressions: parameter name -> source text, for arguments that are not literals, with secret-looking
        parts of its strings masked (it is only ever shown)
    :param risks: what makes the call unsafe for reproducibility, one phrase each
    :param positional: how many arguments were given positionally (to rebuild the call exactly)
    :param imported: whether the called name comes from an import of i6_core's class (not a bare name the file
        never imports, which may be a class of its own)
    :param helper: for a call of a helper function that passes its commit on to a CloneGitRepositoryJob:
        ``name(parameter=...)`` and where its clone is; the site is the helper's call, the arguments its clone's
    :param followed: whether it is the clone of a helper that takes its commit as a parameter
    :param overwrites: the ``hash_overwrite`` assignments that reach its output, in whichever file they are (each
        is also a risk)
    """

    file: str
    line: int
    arguments: Dict[str, Any] = field(default_factory=dict)
    expressions: Dict[str, str] = field(default_factory=dict)
    risks: List[str] = field(default_factory=list)
    positional: int = 0
    imported: bool = True
    helper: Optional[str] = None
    followed: bool = False
    overwrites: List[Overwrite] = field(default_factory=list)

    @property
    def url(self) -> Optional[str]:
        """The literal url, or None."""
        return self.arguments.get("url")

    @property
    def commit(self) -> Optional[str]:
        """The literal commit, or None."""
        return self.arguments.get("commit")

    @property
    def literal(self) -> bool:
        """Whether every argument is a literal (so the call can be reproduced and moved into pin.toml)."""
        return not self.expressions

    @property
    def where(self) -> str:
        """``file:line``"""
        return f"{self.file}:{self.line}"


@dataclass
class Helper:
    """A module-level function whose parameter is passed as the commit of a CloneGitRepositoryJob it calls."""

    name: str
    parameter: str
    index: Optional[int]
    site: CallSite


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
    tree = ast.parse(source, filename=filename)
    star = any(without_recipe(f"{module}.{CLASS_NAME}") in QUALIFIED_NAMES for module in star_modules(tree))
    scanner = _Scanner(filename, module_constants(tree), import_aliases(tree), star)
    return sorted(scanner.scan(tree), key=lambda site: site.line), scanner.helpers


#: Sisyphus path methods that return a copy of the path (the copy keeps the creator: the clone job)
_PATH_COPIES = ("copy", "copy_append", "join_right")


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
        self.sites: List[CallSite] = []
        # per scope: local name -> (call site, "job" or "path": whether the name holds the job or a path of it)
        self.scopes: List[Dict[str, Tuple[CallSite, str]]] = [{}]
        # per function scope: the names it binds itself, which hide the module constants of those names
        self.shadowed: List[Set[str]] = []
        # attribute and subscript targets (as source text), for the whole file: methods share ``self.*``
        self.members: Dict[str, Tuple[CallSite, str]] = {}
        # hash_overwrite assignments on a member not bound yet where they stand (another method may bind it)
        self.pending: List[Tuple[str, Overwrite]] = []
        self.site_of_call: Dict[int, CallSite] = {}
        # the module-level function being visited (helpers are followed from there only), and those found
        self.function: Optional[ast.FunctionDef] = None
        self.in_class = 0
        self.helpers: List[Helper] = []

    def scan(self, tree: ast.Module) -> List[CallSite]:
        """:return: the call sites of the tree, each with its risks"""
        self.visit(tree)
        for member, overwrite in self.pending:
            owner = self.members.get(member)
            if owner and owner[1] == "path":
                self.overwritten(owner[0], overwrite)
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
        outer = self.function
        if len(self.scopes) == 1 and not self.in_class and isinstance(node, ast.FunctionDef):
            self.function = node
        self.scopes.append({})
        self.shadowed.append(local_names(node))
        self.generic_visit(node)
        self.shadowed.pop()
        self.scopes.pop()
        self.function = outer

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]
    visit_Lambda = visit_FunctionDef  # type: ignore[assignment]

    def visit_Call(self, node: ast.Call) -> None:
        if self.is_clone_class(node.func):
            site = self.call_site(node)
            site.imported = self.resolved(node.func)
            self.site_of_call[id(node)] = site
            self.note_helper(node, site)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)  # the value first: its calls become sites
        for target in node.targets:
            self.assign(target, node.value, node.lineno)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.generic_visit(node)
        if node.value is not None:
            self.assign(node.target, node.value, node.lineno)

    def note_helper(self, node: ast.Call, site: CallSite) -> None:
        """Record the enclosing module-level function when one of its parameters is passed as the commit."""
        if self.function is None or len(self.scopes) != 2:
            return  # not directly in a module-level function (a nested one's parameters come from elsewhere)
        names = [name for name, _ in PARAMETERS]
        commit = next((k.value for k in node.keywords if k.arg == "commit"), None)
        index = names.index("commit")
        if commit is None and len(node.args) > index and not any(isinstance(a, ast.Starred) for a in node.args):
            commit = node.args[index]
        arguments = self.function.args
        positional = [a.arg for a in arguments.posonlyargs + arguments.args]
        keyword_only = [a.arg for a in arguments.kwonlyargs]
        if isinstance(commit, ast.Name) and commit.id in positional + keyword_only:
            where = positional.index(commit.id) if commit.id in positional else None
            self.helpers.append(Helper(self.function.name, commit.id, where, site))

    def assign(self, target: ast.expr, value: ast.expr, line: int) -> None:
        if isinstance(target, ast.Attribute) and target.attr == "hash_overwrite":
            assigned = self.literal(value)
            if assigned is None:
                return  # None is no overwrite: the path hashes its creator again
            overwrite = Overwrite(self.filename, line, None if assigned is UNREADABLE else assigned)
            owner = self.holder(target.value)
            if owner and owner[1] == "path":
                self.overwritten(owner[0], overwrite)
            elif owner is None and isinstance(target.value, (ast.Attribute, ast.Subscript)):
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

    def overwritten(self, site: CallSite, overwrite: Overwrite) -> None:
        if overwrite not in site.overwrites:
            site.overwrites.append(overwrite)
            site.risks.append(overwrite_risk(site, overwrite))

    def holder(self, node: ast.expr) -> Optional[Tuple[CallSite, str]]:
        """Which call site an expression stands for: the job itself, or a path of it (out_repository, a copy)."""
        if isinstance(node, ast.Call):
            if id(node) in self.site_of_call:
                return self.site_of_call[id(node)], "job"
            if isinstance(node.func, ast.Attribute) and node.func.attr in _PATH_COPIES:
                inner = self.holder(node.func.value)
                return inner if inner and inner[1] == "path" else None
            return None
        if isinstance(node, ast.Name):
            for scope in reversed(self.scopes):
                if node.id in scope:
                    return scope[node.id]
            return None
        if isinstance(node, ast.Attribute) and node.attr == "out_repository":
            inner = self.holder(node.value)
            if inner and inner[1] == "job":
                return inner[0], "path"
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            return self.members.get(ast.unparse(node))
        return None

    def call_site(self, node: ast.Call) -> CallSite:
        site = CallSite(file=self.filename, line=node.lineno, positional=len(node.args))
        names = [name for name, _ in PARAMETERS]
        given: List[Tuple[str, ast.expr]] = []
        for index, argument in enumerate(node.args):
            if isinstance(argument, ast.Starred) or index >= len(names):
                site.risks.append("uses *args: not all arguments can be read")
                break
            given.append((names[index], argument))
        for keyword in node.keywords:
            if keyword.arg is None:
                site.risks.append("uses **kwargs: not all arguments can be read")
            else:
                given.append((keyword.arg, keyword.value))
        for name, expression in given:
            value = self.literal(expression)
            if value is UNREADABLE:
                site.expressions[name] = masked_source(expression)
            else:
                site.arguments[name] = value
        url = site.arguments.get("url")
        if isinstance(url, str) and check_url(url):
            site.risks.append(f"url is refused by pin.toml: {check_url(url)}")
        if "url" in site.expressions:
            site.risks.append(f"url is not a literal ({site.expressions['url']})")
        if "commit" in site.expressions:
            site.risks.append(f"commit is not a literal ({site.expressions['commit']})")
        else:
            site.risks += commit_risks(site.arguments)
        self.sites.append(site)
        return site

    def literal(self, node: ast.expr) -> Any:
        """:return: the value of an expression where it stands, or UNREADABLE"""
        return literal(node, self.constants, set().union(*self.shadowed))


def overwrite_risk(site: CallSite, overwrite: Overwrite) -> str:
    """:return: the risk an overwrite is to a call site: its line, or its file and line when in another file"""
    where = f"line {overwrite.line}" if overwrite.file == site.file else f"{overwrite.file}:{overwrite.line}"
    return f"{OVERWRITE_RISK} ({where})"


def order_overwrites(site: CallSite, order: Dict[str, int]) -> None:
    """
    Put a site's overwrites, and their risks after the others, in a stable order: its own file's first, then by
    file and line.

    :param order: file -> its place in the scan (files not in it come after, by name)
    """
    site.overwrites.sort(key=lambda o: (o.file != site.file, order.get(o.file, len(order)), o.file, o.line))
    kept = [risk for risk in site.risks if not risk.startswith(OVERWRITE_RISK)]
    site.risks = kept + [overwrite_risk(site, overwrite) for overwrite in site.overwrites]


def commit_risks(arguments: Dict[str, Any]) -> List[str]:
    """:return: what is wrong with a literal commit argument (none given: the call follows a branch)"""
    commit = arguments.get("commit")
    if commit is None:
        branch = arguments.get("branch")
        return [f"no commit: follows {'branch ' + repr(branch) if branch else 'the default branch'} (unpinned)"]
    if is_full_sha(commit):
        return []
    if isinstance(commit, str) and is_full_sha(commit.lower()):
        return [f"commit {commit!r} is a full SHA in uppercase (git and pin.toml need it lowercase)"]
    return [f"commit {commit!r} is not a full 40-hex SHA"]
