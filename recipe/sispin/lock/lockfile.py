"""
pin.toml's immutable value objects (a lockfile, its repositories, sets, pins and setup checkouts) and the rules of
its names, SHAs and branches. :mod:`sispin.lock.loading` finds, reads and parses a lockfile into them, through
:mod:`sispin.lock.validate`. This is the config path (every Sisyphus config that calls ``experiment_set()`` loads
it): it imports neither tomlkit nor filelock.
Rewriting pin.toml, which must keep comments, lives in :mod:`sispin.lock.editing`; URL policy in
:mod:`sispin.lock.urls`; what CloneGitRepositoryJob takes in :mod:`sispin.clonejob`.
"""

# No `from __future__ import annotations` here: typing.NamedTuple compiles every string annotation (~0.3 ms a field),
# and every Sisyphus manager imports this module. The annotations below are all valid at run time on Python 3.9.

__all__ = [
    "SUPPORTED_VERSION",
    "RepoSpec",
    "Pin",
    "SetSpec",
    "SetupCheckout",
    "Lockfile",
    "is_full_sha",
    "is_sha_prefix",
    "known_names",
    "unknown_name",
    "valid_name",
    "valid_branch",
    "inside_setup",
]

import os
import re
from pathlib import Path
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from sispin.clonejob import job_kwargs
from sispin.errors import FrozenSetError, UnknownNameError
from sispin.text import did_you_mean, display_path, shown_key

SUPPORTED_VERSION = 1

# matched with fullmatch: "$" would also match before a trailing newline
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
#: a key TOML reads bare
_FULL_SHA_RE = re.compile(r"[0-9a-f]{40}")
_SHA_PREFIX_RE = re.compile(r"[0-9a-f]{4,40}")
# git's rules for a branch name (git check-ref-format --branch): no control characters, space or ~^:?*[\, no "..",
# "@{", "//", no component that starts with "." or ends with ".lock", not "@", no leading "-", no trailing "/" or "."
_BRANCH_FORBIDDEN_RE = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|(^|/)\.|\.lock(/|$)|^-|^@$|[/.]$")


# The value objects are NamedTuples, not dataclasses: every Sisyphus manager imports this module, and creating frozen
# dataclasses at import is many times dearer than NamedTuples (bench/startup.py measures a manager's start).


class RepoSpec(NamedTuple):
    """
    One ``[repos.NAME]`` table.

    :param name: the repository's name in pin.toml
    :param url: clone URL, hashed verbatim into every CloneGitRepositoryJob
    :param branch: the branch ``pin upgrade`` follows (None: the remote's default branch); never a job argument
    :param checkout: CloneGitRepositoryJob ``checkout_folder_name`` (None: i6_core's default)
    :param releases: a glob over tag names that selects its release tags (``v*``; None: every tag); never a job
        argument
    """

    name: str
    url: str
    branch: Optional[str] = None
    checkout: Optional[str] = None
    releases: Optional[str] = None


class Pin(NamedTuple):
    """
    One repository pinned by one experiment set.

    :param repo: name of the pinned repository (a key of ``[repos]``)
    :param commit: full 40-hex commit SHA
    :param job_kwargs: extra CloneGitRepositoryJob keyword arguments, kept for hash compatibility
    :param hash_overwrite: a legacy ``hash_overwrite`` of the clone's output that the lock binds to exactly this
        commit (an alias: jobs keep the ids they were given with it; it dies when the pin moves)
    """

    repo: str
    commit: str
    job_kwargs: Mapping[str, Any]
    hash_overwrite: Optional[str] = None

    @property
    def value(self) -> Any:
        """The pin as pin.toml writes it: the SHA, or a table of the commit, the extra arguments and the alias."""
        if not self.job_kwargs and self.hash_overwrite is None:
            return self.commit
        alias = {} if self.hash_overwrite is None else {"hash_overwrite": self.hash_overwrite}
        return {"commit": self.commit, **self.job_kwargs, **alias}


class SetSpec(NamedTuple):
    """
    One ``[sets.NAME]`` table: an experiment set.

    :param name: set name
    :param configs: Sisyphus config files (relative to the setup root) that make up the set
    :param pins: repository name -> its pin, in file order
    :param allow_unpinned: URLs of clones outside the lock the set accepts without a full commit (deliberately)
    :param allow_hash_overwrite: URLs of clones outside the lock whose output may carry a hash_overwrite
    :param freeze: the set's results are published: nothing moves its pins, configs or snapshot entry (``pin thaw``
        first); ``pin check`` still checks it
    """

    name: str
    configs: Tuple[str, ...]
    pins: Mapping[str, Pin]
    allow_unpinned: Tuple[str, ...] = ()
    allow_hash_overwrite: Tuple[str, ...] = ()
    freeze: bool = False

    def check_not_frozen(self, change: str) -> None:
        """
        :param change: what would change the set, for the message (``pin upgrade``, ...)
        :raises FrozenSetError: when the set is frozen
        """
        if self.freeze:
            raise FrozenSetError(
                f"sets.{shown_key(self.name)} is frozen (freeze = true in pin.toml): {change} would change it; run "
                f"`pin thaw {self.name}` first"
            )

    def pin(self, repo: str) -> Pin:
        """
        :param repo: repository name
        :return: this set's pin of it
        :raises UnknownNameError: when the set does not pin that repository
        """
        try:
            return self.pins[repo]
        except KeyError:
            raise unknown_name(f"experiment set {self.name!r} pins no repository", repo, "it pins", self.pins) from None


class SetupCheckout(NamedTuple):
    """
    One ``[setup.NAME]`` table: a checkout the setup itself needs (Sisyphus, i6_core), made by ``pin sync``.

    :param name: entry name
    :param url: clone URL
    :param commit: full 40-hex commit SHA
    :param path: checkout directory, relative to the setup root
    """

    name: str
    url: str
    commit: str
    path: str


class Lockfile(NamedTuple):
    """
    A validated pin.toml.

    :param path: absolute path of the file; its directory is the setup root
    :param repos: repository name -> spec, in file order
    :param sets: set name -> spec, in file order
    :param setup: setup checkout name -> spec, in file order
    """

    path: Path
    repos: Mapping[str, RepoSpec]
    sets: Mapping[str, SetSpec]
    setup: Mapping[str, SetupCheckout]

    @property
    def root(self) -> Path:
        """The setup root: the directory that holds pin.toml."""
        return self.path.parent

    def get_set(self, name: str) -> SetSpec:
        """
        :param name: experiment set name
        :raises UnknownNameError: listing the known sets
        """
        return self._lookup(self.sets, name, "experiment set", "sets")

    def select_sets(self, names: Sequence[str]) -> List[SetSpec]:
        """
        :param names: set names as a user gave them (repeats allowed); empty for every set
        :return: the sets, each once, in the given order (file order when none were given)
        :raises UnknownNameError: for the first unknown name, listing the known sets
        """
        return [self.get_set(name) for name in dict.fromkeys(names)] if names else list(self.sets.values())

    def get_repo(self, name: str) -> RepoSpec:
        """
        :param name: repository name
        :raises UnknownNameError: listing the known repositories
        """
        return self._lookup(self.repos, name, "repository", "repositories")

    def clone_kwargs(self, set_name: str, repo: str) -> Dict[str, Any]:
        """
        :param set_name: a set
        :param repo: a repository it pins
        :return: the keyword arguments of the set's CloneGitRepositoryJob for it, exactly as a person would write them
        :raises UnknownNameError: when the set or the repository is unknown, or the set does not pin it
        """
        spec, pin = self.get_repo(repo), self.get_set(set_name).pin(repo)
        return job_kwargs(spec.url, pin.commit, spec.checkout, pin.job_kwargs)

    def _lookup(self, table: Mapping[str, Any], name: str, kind: str, kinds: str) -> Any:
        try:
            return table[name]
        except KeyError:
            raise unknown_name(f"{display_path(self.path)}: no {kind}", name, f"known {kinds}", table) from None


def unknown_name(problem: str, name: str, listed_as: str, known: Mapping[str, Any]) -> UnknownNameError:
    """
    :param problem: what is wrong, up to the name (``pin.toml: no experiment set``)
    :param name: the name as given
    :param listed_as: what the known names are (``known sets``)
    :param known: the names that exist
    :return: the error that says so, with the known name the given one probably meant
    """
    return UnknownNameError(f"{problem} {name!r}{did_you_mean(name, known)} ({listed_as}: {known_names(known)})")


def known_names(names: Mapping[str, Any]) -> str:
    """:return: the names, sorted and comma-separated, for a message (``none`` when there are none)"""
    return ", ".join(sorted(names)) or "none"


def is_full_sha(value: object) -> bool:
    """:return: whether value is a full, lowercase 40-hex commit SHA"""
    return isinstance(value, str) and bool(_FULL_SHA_RE.fullmatch(value))


def is_sha_prefix(value: str) -> bool:
    """:return: whether value is 4 to 40 lowercase hex digits: the start of a commit SHA, as git abbreviates one"""
    return bool(_SHA_PREFIX_RE.fullmatch(value))


def valid_name(name: str) -> bool:
    """:return: whether name may name a repository, set or setup entry"""
    return bool(_NAME_RE.fullmatch(name))


def valid_branch(name: str) -> bool:
    """:return: whether name is a branch name git accepts (so ``main~2`` or ``a..b`` never pass for a branch)"""
    return bool(name) and not _BRANCH_FORBIDDEN_RE.search(name)


def inside_setup(root: Path, relative: str) -> bool:
    """
    :param root: the setup root
    :param relative: a validated setup-relative path from pin.toml
    :return: whether the path, with every symlink on the way resolved, stays inside the setup (a symlink must not
        lead a clone or a config out of it)
    """
    real_root = Path(os.path.realpath(root))
    return Path(os.path.realpath(root / relative)).is_relative_to(real_root)
