"""
pin.toml: find, parse and validate the lockfile into immutable value objects.

Reading uses the standard ``tomllib`` (``tomli`` before Python 3.11) because it is fast and strict; every error names
the file and the key path, e.g. ``pin.toml: sets.demo.returnn_common: "d1fc1c7" is not a full 40-hex commit``.
This is the config path (every Sisyphus config that calls ``experiment_set()`` loads it): it imports neither tomlkit
nor filelock. Rewriting pin.toml, which must keep comments, lives in :mod:`sispin.editing`; URL policy in
:mod:`sispin.urls`; what CloneGitRepositoryJob takes in :mod:`sispin.clonejob`.
"""

# No `from __future__ import annotations` here: typing.NamedTuple compiles every string annotation (~0.3 ms a field),
# and every Sisyphus manager imports this module. The annotations below are all valid at run time on Python 3.9.

__all__ = [
    "LOCKFILE_NAME",
    "LOCK_ENV",
    "SUPPORTED_VERSION",
    "RepoSpec",
    "Pin",
    "SetSpec",
    "SetupCheckout",
    "Lockfile",
    "find_lockfile",
    "load_lockfile",
    "read_lockfile_text",
    "parse_lockfile",
    "display_path",
    "is_full_sha",
    "valid_name",
    "valid_branch",
    "inside_setup",
]

import json
import os
import re
import reprlib
import sys
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from sispin.clonejob import PIN_KWARGS
from sispin.errors import LockfileError, UnknownNameError

LOCKFILE_NAME = "pin.toml"
#: environment variable naming the lockfile explicitly (otherwise pin.toml is searched upwards from the cwd)
LOCK_ENV = "PIN_LOCK"
SUPPORTED_VERSION = 1

# matched with fullmatch: "$" would also match before a trailing newline
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_FULL_SHA_RE = re.compile(r"[0-9a-f]{40}")
#: keys of a [sets.*] table that are not repository pins: the set's configs, and the clones outside the lock it
#: accepts by URL although they pin no commit, or hide theirs behind a hash_overwrite
_SET_RESERVED_KEYS = ("configs", "allow_unpinned", "allow_hash_overwrite")
# git's rules for a branch name (git check-ref-format --branch): no control characters, space or ~^:?*[\, no "..",
# "@{", "//", no component that starts with "." or ends with ".lock", not "@", no leading "-", no trailing "/" or "."
_BRANCH_FORBIDDEN_RE = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|(^|/)\.|\.lock(/|$)|^-|^@$|[/.]$")


# The value objects are NamedTuples, not dataclasses: every Sisyphus manager imports this module, and creating five
# frozen dataclasses costs it ~7 ms (most of what sispin may add to a manager's start), NamedTuples well under one.


class RepoSpec(NamedTuple):
    """
    One ``[repos.NAME]`` table.

    :param name: the repository's name in pin.toml
    :param url: clone URL, hashed verbatim into every CloneGitRepositoryJob
    :param branch: the branch ``pin upgrade`` follows (None: the remote's default branch); never a job argument
    :param checkout: CloneGitRepositoryJob ``checkout_folder_name`` (None: i6_core's default)
    """

    name: str
    url: str
    branch: Optional[str] = None
    checkout: Optional[str] = None


class Pin(NamedTuple):
    """
    One repository pinned by one experiment set.

    :param repo: name of the pinned repository (a key of ``[repos]``)
    :param commit: full 40-hex commit SHA
    :param job_kwargs: extra CloneGitRepositoryJob keyword arguments, kept for hash compatibility
    """

    repo: str
    commit: str
    job_kwargs: Mapping[str, Any]

    @property
    def value(self) -> Any:
        """The pin as pin.toml writes it: the SHA, or a table of the commit and the extra arguments."""
        return {"commit": self.commit, **self.job_kwargs} if self.job_kwargs else self.commit


class SetSpec(NamedTuple):
    """
    One ``[sets.NAME]`` table: an experiment set.

    :param name: set name
    :param configs: Sisyphus config files (relative to the setup root) that make up the set
    :param pins: repository name -> its pin, in file order
    :param allow_unpinned: URLs of clones outside the lock the set accepts without a full commit (deliberately)
    :param allow_hash_overwrite: URLs of clones outside the lock whose output may carry a hash_overwrite
    """

    name: str
    configs: Tuple[str, ...]
    pins: Mapping[str, Pin]
    allow_unpinned: Tuple[str, ...] = ()
    allow_hash_overwrite: Tuple[str, ...] = ()

    def pin(self, repo: str) -> Pin:
        """
        :param repo: repository name
        :return: this set's pin of it
        :raises UnknownNameError: when the set does not pin that repository
        """
        try:
            return self.pins[repo]
        except KeyError:
            raise UnknownNameError(
                f"experiment set {self.name!r} pins no repository {repo!r} (it pins: {_known(self.pins)})"
            ) from None


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

    def _lookup(self, table: Mapping[str, Any], name: str, kind: str, kinds: str) -> Any:
        try:
            return table[name]
        except KeyError:
            raise UnknownNameError(
                f"{display_path(self.path)}: no {kind} {name!r} (known {kinds}: {_known(table)})"
            ) from None


def _known(names: Mapping[str, Any]) -> str:
    return ", ".join(sorted(names)) or "none"


#: the longest file name (one path component) file systems take, in bytes
_NAME_MAX = 255
#: how much of a bad value an error message repeats
_SHOWN_LIMIT = 80
_TOML_QUOTE = '"'


def _key(name: str) -> str:
    """A TOML key as a key path in a message: bare when it is a plain name, else quoted like :func:`_shown`."""
    return name if valid_name(name) else _shown(name)


def _shown(value: Any, quote: str = "'") -> str:
    """
    A value as an error message repeats it: one line (escapes for control characters), cut when long.

    :param quote: how a string is quoted: ``'`` (Python's repr) or ``"`` (TOML's basic string)
    """
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False) if quote == '"' else repr(value)
    else:
        text = reprlib.repr(value)
    return text if len(text) <= _SHOWN_LIMIT else f"{text[: _SHOWN_LIMIT - 4]}...{text[-1]}"


def display_path(path: Path) -> str:
    """
    :param path: a file path
    :return: the path relative to the working directory when it lies below it, else absolute (for messages)
    """
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def is_full_sha(value: object) -> bool:
    """:return: whether value is a full, lowercase 40-hex commit SHA"""
    return isinstance(value, str) and bool(_FULL_SHA_RE.fullmatch(value))


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


def find_lockfile(start: Optional[Path] = None) -> Path:
    """
    Locate the lockfile: ``$PIN_LOCK`` when set, else the first pin.toml in ``start`` (default: the working
    directory) or one of its parents, as git finds its repository.

    :param start: directory to search from
    :return: absolute path of the lockfile
    :raises LockfileError: when there is none
    """
    explicit = os.environ.get(LOCK_ENV)
    if explicit:
        path = Path(explicit).absolute()
        if not path.is_file():
            raise LockfileError(f"{LOCK_ENV}={explicit}: no such file")
        return path
    here = (start or Path.cwd()).absolute()
    for directory in (here, *here.parents):
        candidate = directory / LOCKFILE_NAME
        if candidate.is_file():
            return candidate
    raise LockfileError(f"no {LOCKFILE_NAME} in {here} or any parent directory (set {LOCK_ENV} to name one)")


def load_lockfile(path: Path) -> Lockfile:
    """
    Read and validate a lockfile.

    :param path: the pin.toml to read
    :raises LockfileError: naming the file and the offending key
    """
    path = Path(path).absolute()
    return parse_lockfile(read_lockfile_text(path), path)


def read_lockfile_text(path: Path) -> str:
    """
    :param path: a lockfile (or its snapshot)
    :return: its text exactly as stored: line endings are not translated, so a rewrite can keep them
    :raises LockfileError: when it does not exist or cannot be read as UTF-8
    """
    try:
        return Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise LockfileError(f"{display_path(path)}: no such file") from None
    except OSError as exc:
        raise LockfileError(f"{display_path(path)}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise LockfileError(
            f"{display_path(path)}: cannot read: not UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None


def parse_lockfile(text: str, path: Path) -> Lockfile:
    """
    Validate lockfile content.

    :param text: the TOML text
    :param path: where it comes from (for messages and the setup root)
    :raises LockfileError: naming the file and the offending key
    """
    # imported here: a manager whose lockfile comes from sispin.lockcache never parses TOML
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised by the Python 3.9 CI run
        import tomli as tomllib

    where = display_path(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LockfileError(f"{where}: invalid TOML: {exc}") from None
    except RecursionError:
        raise LockfileError(f"{where}: invalid TOML: arrays or tables nested too deeply") from None
    return _Validator(where).lockfile(data, Path(path).absolute())


class _Validator:
    """Turns parsed TOML into value objects; each check raises a LockfileError naming file and key path."""

    def __init__(self, where: str):
        self.where = where

    def fail(self, key: str, problem: str) -> LockfileError:
        return LockfileError(f"{self.where}: {key}: {problem}")

    def lockfile(self, data: Dict[str, Any], path: Path) -> Lockfile:
        self.only_keys("", data, ("version", "repos", "sets", "setup"))
        if "version" not in data:
            raise self.fail("version", f"missing (this sispin reads version = {SUPPORTED_VERSION})")
        version = data["version"]
        if type(version) is not int or version != SUPPORTED_VERSION:
            raise self.fail(
                "version", f"unsupported version {reprlib.repr(version)} (this sispin reads {SUPPORTED_VERSION})"
            )
        repos = self.named_tables("repos", data.get("repos", {}), self.repo)
        sets = self.named_tables(
            "sets", data.get("sets", {}), lambda key, name, table: self.set(key, name, table, repos)
        )
        setup = self.named_tables("setup", data.get("setup", {}), self.setup_checkout)
        self.apart(setup)
        return Lockfile(path=path, repos=repos, sets=sets, setup=setup)

    def apart(self, setup: Mapping[str, SetupCheckout]) -> None:
        """Setup checkouts may not share or nest their paths: one would clone into the other."""
        seen: Dict[Tuple[str, ...], str] = {}
        for name, entry in setup.items():
            parts = PurePosixPath(entry.path).parts
            for other_parts, other in seen.items():
                shorter = min(len(parts), len(other_parts))
                if parts[:shorter] == other_parts[:shorter]:
                    relation = "is the path of" if len(parts) == len(other_parts) else "nests with the path of"
                    raise self.fail(
                        f"setup.{name}.path",
                        f"{_shown(entry.path)} {relation} setup.{other} ({_shown(setup[other].path)})",
                    )
            seen[parts] = name

    def named_tables(self, key: str, value: Any, build: Callable[[str, str, Dict[str, Any]], Any]) -> Dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(key, "must be a table")
        result = {}
        for name, table in value.items():
            entry_key = f"{key}.{_key(name)}"
            if not valid_name(name):
                raise self.fail(entry_key, "names may use only letters, digits, '_', '.', '-'")
            if not isinstance(table, dict):
                raise self.fail(entry_key, "must be a table")
            result[name] = build(entry_key, name, table)
        return result

    def only_keys(self, key: str, table: Dict[str, Any], allowed: Tuple[str, ...]) -> None:
        for name in table:
            if name not in allowed:
                full = f"{key}.{_key(name)}" if key else _key(name)
                raise self.fail(full, f"unknown key (allowed: {', '.join(allowed)})")

    def string(self, key: str, table: Dict[str, Any], name: str, required: bool) -> Optional[str]:
        if name not in table:
            if required:
                raise self.fail(f"{key}.{name}", "missing")
            return None
        value = table[name]
        if not isinstance(value, str) or not value:
            raise self.fail(f"{key}.{name}", "must be a non-empty string")
        return self.printable(f"{key}.{name}", value)

    def printable(self, key: str, value: str) -> str:
        # a NUL or newline in a path or branch reaches git and the file system, where it means something else
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
            raise self.fail(key, f"{_shown(value)} contains a control character (newline, NUL, ...)")
        return value

    def commit(self, key: str, value: Any) -> str:
        if not is_full_sha(value):
            hint = " (use lowercase)" if isinstance(value, str) and is_full_sha(value.lower()) else ""
            raise self.fail(key, f"{_shown(value, quote=_TOML_QUOTE)} is not a full 40-hex commit{hint}")
        return value

    def relative_path(self, key: str, value: str, what: str) -> str:
        self.printable(key, value)
        if value.startswith(("/", "\\", "~")) or re.match(r"[A-Za-z]:", value):
            raise self.fail(key, f"{what} {_shown(value)} must be relative")
        # "./" and "a/.." name the setup root itself, like "."
        if ".." in PurePosixPath(value).parts or "\\" in value or not PurePosixPath(value).parts:
            raise self.fail(key, f"{what} {_shown(value)} must stay inside the setup (no '..', '.' or backslash)")
        if any(len(part.encode("utf-8")) > _NAME_MAX for part in PurePosixPath(value).parts):
            raise self.fail(
                key, f"{what} {_shown(value)} has a name longer than {_NAME_MAX} bytes (no file system takes it)"
            )
        return value

    def branch(self, key: str, value: Optional[str]) -> Optional[str]:
        if value is not None and not valid_branch(value):
            raise self.fail(key, f"{_shown(value)} is not a branch name (git would read it as another revision)")
        return value

    def url(self, key: str, value: str) -> str:
        from sispin.urls import check_url  # only validation needs it, not a lockfile taken from sispin.lockcache

        problem = check_url(value)
        if problem:
            raise self.fail(key, problem)
        return value

    def repo(self, key: str, name: str, table: Dict[str, Any]) -> RepoSpec:
        if name in _SET_RESERVED_KEYS:
            raise self.fail(key, f"{name!r} is reserved (it is a key of every [sets.*] table)")
        self.only_keys(key, table, ("url", "branch", "checkout"))
        url = self.url(f"{key}.url", self.string(key, table, "url", required=True))
        branch = self.branch(f"{key}.branch", self.string(key, table, "branch", required=False))
        checkout = self.string(key, table, "checkout", required=False)
        if checkout is not None:
            self.relative_path(f"{key}.checkout", checkout, "checkout folder")
        return RepoSpec(name=name, url=url, branch=branch, checkout=checkout)

    def set(self, key: str, name: str, table: Dict[str, Any], repos: Mapping[str, RepoSpec]) -> SetSpec:
        configs: List[str] = []
        pins: Dict[str, Pin] = {}
        allowed: Dict[str, Tuple[str, ...]] = {}
        for repo, value in table.items():
            if repo == "configs":
                if not isinstance(value, list) or not all(isinstance(c, str) and c for c in value):
                    raise self.fail(f"{key}.configs", "must be an array of config file paths")
                configs = [self.relative_path(f"{key}.configs", c, "config path") for c in value]
            elif repo in _SET_RESERVED_KEYS:
                if not isinstance(value, list) or not all(isinstance(u, str) and u for u in value):
                    raise self.fail(f"{key}.{repo}", "must be an array of repository URLs")
                allowed[repo] = tuple(self.url(f"{key}.{repo}", url) for url in value)
                locked = [url for url in value if any(spec.url == url for spec in repos.values())]
                if locked:
                    raise self.fail(
                        f"{key}.{repo}", f"{locked[0]!r} is a locked repository: its clones must be the set's pin"
                    )
            elif repo not in repos:
                raise self.fail(
                    f"{key}.{_key(repo)}",
                    f"repository {_shown(repo)} is not declared under [repos] (declared: {_known(repos)})",
                )
            else:
                pins[repo] = self.pin(f"{key}.{repo}", repo, value)
        return SetSpec(name=name, configs=tuple(configs), pins=pins, **allowed)

    def pin(self, key: str, repo: str, value: Any) -> Pin:
        if isinstance(value, str):
            return Pin(repo=repo, commit=self.commit(key, value), job_kwargs={})
        if not isinstance(value, dict):
            raise self.fail(key, "must be a commit SHA string or a table with a 'commit' key")
        if "commit" not in value:
            raise self.fail(f"{key}.commit", "missing")
        commit = self.commit(f"{key}.commit", value["commit"])
        job_kwargs = {}
        for kwarg, kwarg_value in value.items():
            if kwarg == "commit":
                continue
            if kwarg not in PIN_KWARGS:
                raise self.fail(
                    f"{key}.{_key(kwarg)}",
                    f"CloneGitRepositoryJob takes no argument {_shown(kwarg)} here "
                    f"(allowed: commit, {', '.join(PIN_KWARGS)})",
                )
            job_kwargs[kwarg] = self.kwarg(f"{key}.{kwarg}", kwarg, kwarg_value)
        return Pin(repo=repo, commit=commit, job_kwargs=job_kwargs)

    def kwarg(self, key: str, kwarg: str, value: Any) -> Any:
        expected = PIN_KWARGS[kwarg]
        ok = {
            "string": isinstance(value, str) and bool(value),
            "boolean": isinstance(value, bool),
            "array of strings": isinstance(value, list) and all(isinstance(v, str) for v in value),
        }[expected]
        if not ok:
            raise self.fail(key, f"must be a {expected}")
        for text in [value] if isinstance(value, str) else value if isinstance(value, list) else []:
            self.printable(key, text)
        return self.branch(key, value) if kwarg == "branch" else value

    def setup_checkout(self, key: str, name: str, table: Dict[str, Any]) -> SetupCheckout:
        self.only_keys(key, table, ("url", "commit", "path"))
        url = self.url(f"{key}.url", self.string(key, table, "url", required=True))
        if "commit" not in table:
            raise self.fail(f"{key}.commit", "missing")
        commit = self.commit(f"{key}.commit", table["commit"])
        path = self.relative_path(f"{key}.path", self.string(key, table, "path", required=True), "path")
        return SetupCheckout(name=name, url=url, commit=commit, path=path)
