"""
What ``pin import``'s scan reports: a CloneGitRepositoryJob call site with its arguments and risks, each
``hash_overwrite`` that reaches its output, the helper functions that make clones, and the risks' wording.
"""

from __future__ import annotations

__all__ = [
    "OVERWRITE_RISK",
    "Overwrite",
    "CallSite",
    "Helper",
    "Reached",
    "Shared",
    "add_overwrite",
    "overwrite_risk",
    "order_overwrites",
    "commit_risks",
    "argument_risks",
]

import ast
from dataclasses import dataclass, field
from typing import Any, Dict, List, NamedTuple, Optional, Set, Tuple

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
    """
    A module-level function that makes a CloneGitRepositoryJob: it passes one of its parameters on as the clone's
    commit (then each call of it with a literal commit makes a clone of its own), or it returns the clone's job or a
    path of it (then a call of it stands for that clone), or both.

    :param name: the function's name
    :param site: its clone (or the clone whose output it returns)
    :param function: its definition: the parameters a call binds, and their defaults
    :param call: the clone's call in it, whose arguments may name those parameters
    :param parameter: the parameter passed as the clone's commit, if one is (and never reassigned in the function)
    :param returns: what a call of it returns of the clone: "job", "path" (``out_repository``, a copy), or None
    :param constants: its module's string constants, which its defaults may name
    :param assigned: the names it assigns in its body (a parameter among them no longer holds what a call gave)
    """

    name: str
    site: CallSite
    function: ast.FunctionDef
    call: Optional[ast.Call] = None
    parameter: Optional[str] = None
    returns: Optional[str] = None
    constants: Dict[str, str] = field(default_factory=dict)
    assigned: Set[str] = field(default_factory=set)


class Reached(NamedTuple):
    """
    What a call of a helper comes to.

    :param site: the clone it stands for: a call site made at this call, or the helper's own clone
    :param kind: what the call returns of it ("job" or "path"), None for neither
    :param new: whether the site was made at this call (it is then one of the scanned file's sites)
    """

    site: CallSite
    kind: Optional[str]
    new: bool


class Shared(NamedTuple):
    """
    An object another module binds at its top level, named here through an import (``from a import ROOT``,
    ``a.ROOT``): which clone it holds is known once that module is scanned.

    :param name: the dotted name as written where it is used
    :param steps: what was taken of it since, in order: "out_repository" (of a job), "copy" (of a path)
    """

    name: str
    steps: Tuple[str, ...] = ()


def add_overwrite(site: CallSite, overwrite: Overwrite) -> None:
    """Record an overwrite on a site's output, once, with its risk."""
    if overwrite not in site.overwrites:
        site.overwrites.append(overwrite)
        site.risks.append(overwrite_risk(site, overwrite))


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


def argument_risks(site: CallSite) -> List[str]:
    """:return: what is wrong with a call's url and commit, as read (a url refused, not literal; the commit's risks)"""
    risks = []
    url = site.arguments.get("url")
    if isinstance(url, str) and check_url(url):
        risks.append(f"url is refused by pin.toml: {check_url(url)}")
    if "url" in site.expressions:
        risks.append(f"url is not a literal ({site.expressions['url']})")
    if "commit" in site.expressions:
        risks.append(f"commit is not a literal ({site.expressions['commit']})")
    else:
        risks += commit_risks(site.arguments)
    return risks
