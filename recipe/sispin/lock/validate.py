"""
Validation of pin.toml: parsed TOML in, value objects of :mod:`sispin.lock.lockfile` out, or one
:class:`~sispin.errors.LockfileError` naming the file and the key path, e.g. ``pin.toml: sets.demo.returnn_common:
"d1fc1c7" is not a full 40-hex commit``.

One table per kind of TOML table says which keys it may hold, which field of the value object each fills, whether
it is required and how its value is checked: the keys of pin.toml and the fields of the value objects are tied here
and nowhere else. Only a lockfile that is not in :mod:`sispin.lock.cache` is validated, so a Sisyphus manager whose
lockfile is unchanged never imports this module.
"""

from __future__ import annotations

__all__ = ["ALIAS_KEY", "SET_KEYS", "validate"]

import re
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Tuple

from sispin.clonejob import PIN_KWARGS
from sispin.errors import LockfileError
from sispin.lock.lockfile import (
    SUPPORTED_VERSION,
    Lockfile,
    Pin,
    RepoSpec,
    SetSpec,
    SetupCheckout,
    is_full_sha,
    known_names,
    valid_branch,
    valid_name,
)
from sispin.lock.urls import check_url, same_repository
from sispin.text import closest, did_you_mean, shown_key, shown_value, unsupported_version

#: the longest file name (one path component) file systems take, in bytes
_NAME_MAX = 255
_TOML_QUOTE = '"'
#: the control characters a ``patches`` string may hold: a patch is lines of text
_PATCH_CONTROLS = "\n\t\r"


class _Key(NamedTuple):
    """
    One key a TOML table may hold.

    :param field: the value object's field it fills
    :param check: ``check(validator, key path, value)`` -> the value for the field, or a LockfileError
    :param required: a table without it is refused
    """

    field: str
    check: Callable[[_Validator, str, Any], Any]
    required: bool = False


def _string(check: Callable[[_Validator, str, str], Any]) -> Callable[[_Validator, str, Any], Any]:
    """A check of a non-empty string value, then ``check``."""

    def checked(validator: _Validator, key: str, value: Any) -> Any:
        if not isinstance(value, str) or not value:
            raise validator.fail(key, "must be a non-empty string")
        return check(validator, key, validator.printable(key, value))

    return checked


def _string_list(what: str, check: Callable[[_Validator, str, str], Any]) -> Callable[[_Validator, str, Any], Any]:
    """A check of an array of non-empty strings, each then checked by ``check``; gives a tuple."""

    def checked(validator: _Validator, key: str, value: Any) -> Any:
        if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
            raise validator.fail(key, f"must be an array of {what}")
        return tuple(check(validator, key, item) for item in value)

    return checked


#: ``[repos.NAME]``
_REPO_KEYS: Dict[str, _Key] = {
    "url": _Key("url", _string(lambda v, key, value: v.url(key, value)), required=True),
    "branch": _Key("branch", _string(lambda v, key, value: v.branch(key, value))),
    "checkout": _Key("checkout", _string(lambda v, key, value: v.relative_path(key, value, "checkout folder"))),
    "releases": _Key("releases", _string(lambda v, key, value: v.release_pattern(key, value))),
}
#: ``[setup.NAME]``
_SETUP_KEYS: Dict[str, _Key] = {
    "url": _Key("url", _string(lambda v, key, value: v.url(key, value)), required=True),
    "commit": _Key("commit", lambda v, key, value: v.commit(key, value), required=True),
    "path": _Key("path", _string(lambda v, key, value: v.relative_path(key, value, "path")), required=True),
}


def _boolean(validator: _Validator, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise validator.fail(key, "must be true or false")
    return value


#: the keys of a ``[sets.NAME]`` table that are not repository pins: the set's configs, the clones outside the lock
#: it accepts by URL although they pin no commit, or hide theirs behind a hash_overwrite, and whether it is frozen
SET_KEYS: Dict[str, _Key] = {
    "freeze": _Key("freeze", _boolean),
    "configs": _Key(
        "configs", _string_list("config file paths", lambda v, key, value: v.relative_path(key, value, "config path"))
    ),
    "allow_unpinned": _Key("allow_unpinned", _string_list("repository URLs", lambda v, key, value: v.url(key, value))),
    "allow_hash_overwrite": _Key(
        "allow_hash_overwrite", _string_list("repository URLs", lambda v, key, value: v.url(key, value))
    ),
}
#: the key of a pin table that binds a legacy hash_overwrite of the clone's output to the pinned commit
ALIAS_KEY = "hash_overwrite"
#: the TOML type each extra CloneGitRepositoryJob argument of a pin table must have
_KWARG_TYPES: Dict[str, Callable[[Any], bool]] = {
    "string": lambda value: isinstance(value, str) and bool(value),
    "boolean": lambda value: isinstance(value, bool),
    "array of strings": lambda value: isinstance(value, list) and all(isinstance(item, str) for item in value),
}


def validate(data: Dict[str, Any], path: Path, where: str) -> Lockfile:
    """
    :param data: pin.toml as tomllib parsed it
    :param path: the absolute path of the file (its directory is the setup root)
    :param where: how messages name the file
    :raises LockfileError: naming the file and the offending key
    """
    return _Validator(where).lockfile(data, path)


class _Validator:
    """Turns parsed TOML into value objects; each check raises a LockfileError naming file and key path."""

    def __init__(self, where: str):
        self.where = where

    def fail(self, key: str, problem: str) -> LockfileError:
        return LockfileError(f"{self.where}: {key}: {problem}")

    def lockfile(self, data: Dict[str, Any], path: Path) -> Lockfile:
        self.only_keys("", data, ("version", "repos", "sets", "setup"))
        version = data.get("version")
        if type(version) is not int or version != SUPPORTED_VERSION:
            raise self.fail("version", unsupported_version(version, SUPPORTED_VERSION, "version" not in data))
        repos = self.named_tables("repos", data.get("repos", {}), self.repo)
        sets = self.named_tables(
            "sets", data.get("sets", {}), lambda key, name, table: self.set(key, name, table, repos)
        )
        setup = self.named_tables(
            "setup", data.get("setup", {}), lambda key, name, table: SetupCheckout(name, **self.fields(key, table))
        )
        self.apart(setup)
        self.aliases_apart(repos, sets)
        return Lockfile(path=path, repos=repos, sets=sets, setup=setup)

    def aliases_apart(self, repos: Mapping[str, RepoSpec], sets: Mapping[str, SetSpec]) -> None:
        """
        One hash_overwrite value stands for the same clones in every set: sets share work/, and a job of one set
        would pass for the other's. A value may stand for several clones (a fork at three commits under one name)
        only where one set binds all of them: that set's builds refuse any two jobs the value would merge. A clone
        is its repository (any spelling), commit, folder and every argument the pin gives the job.
        """
        by_value: Dict[str, List[Tuple[str, str, Tuple[Any, ...]]]] = {}
        for name, spec in sets.items():
            for repo, pin in spec.pins.items():
                if pin.hash_overwrite is not None:
                    clone = (repos[repo].url, pin.commit, repos[repo].checkout, sorted(pin.job_kwargs.items()))
                    key = f"sets.{shown_key(name)}.{shown_key(repo)}"
                    by_value.setdefault(pin.hash_overwrite, []).append((name, key, clone))
        for value, bindings in by_value.items():
            every = _distinct([clone for _, _, clone in bindings])
            owners = {name for name, _, _ in bindings}
            if any(len(_distinct([c for n, _, c in bindings if n == owner])) == len(every) for owner in owners):
                continue  # one set binds every clone the value stands for: its builds keep their jobs apart
            _, first_key, first = bindings[0]
            key = next(k for _, k, c in bindings if not _same_clone(c, first))
            raise self.fail(
                f"{key}.{ALIAS_KEY}",
                f"{shown_value(value)} is bound to {first[1][:7]} of {first[0]} by {first_key} already, and no set "
                "binds it to both: jobs of the two sets would share ids across the two clones (one value stands for "
                "the same clones everywhere)",
            )

    def fields(self, key: str, table: Dict[str, Any], keys: Optional[Mapping[str, _Key]] = None) -> Dict[str, Any]:
        """:return: the value object's fields from a table whose keys are all in ``keys`` (the setup's by default)"""
        keys = _SETUP_KEYS if keys is None else keys
        self.only_keys(key, table, tuple(keys))
        fields = {}
        for name, spec in keys.items():
            if name in table:
                fields[spec.field] = spec.check(self, f"{key}.{name}", table[name])
            elif spec.required:
                raise self.fail(f"{key}.{name}", "missing")
        return fields

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
                        f"{shown_value(entry.path)} {relation} setup.{other} ({shown_value(setup[other].path)})",
                    )
            seen[parts] = name

    def named_tables(self, key: str, value: Any, build: Callable[[str, str, Dict[str, Any]], Any]) -> Dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(key, "must be a table")
        result = {}
        for name, table in value.items():
            entry_key = f"{key}.{shown_key(name)}"
            if not valid_name(name):
                raise self.fail(entry_key, "names may use only letters, digits, '_', '.', '-'")
            if not isinstance(table, dict):
                raise self.fail(entry_key, "must be a table")
            result[name] = build(entry_key, name, table)
        return result

    def only_keys(self, key: str, table: Dict[str, Any], allowed: Tuple[str, ...]) -> None:
        for name in table:
            if name not in allowed:
                full = f"{key}.{shown_key(name)}" if key else shown_key(name)
                raise self.fail(full, f"unknown key{did_you_mean(name, allowed)} (allowed: {', '.join(allowed)})")

    def printable(self, key: str, value: str, allowed: str = "") -> str:
        """
        :param allowed: control characters this value may hold (the line breaks and tabs of a patch)
        :raises LockfileError: for any other control character
        """
        # a NUL or newline in a path or branch reaches git and the file system, where it means something else
        if any((ord(ch) < 32 or ord(ch) == 127) and ch not in allowed for ch in value):
            raise self.fail(key, f"{shown_value(value)} contains a control character (newline, NUL, ...)")
        return value

    def commit(self, key: str, value: Any) -> str:
        if not is_full_sha(value):
            hint = " (use lowercase)" if isinstance(value, str) and is_full_sha(value.lower()) else ""
            raise self.fail(key, f"{shown_value(value, quote=_TOML_QUOTE)} is not a full 40-hex commit{hint}")
        return value

    def relative_path(self, key: str, value: str, what: str) -> str:
        self.printable(key, value)
        if value.startswith(("/", "\\", "~")) or re.match(r"[A-Za-z]:", value):
            raise self.fail(key, f"{what} {shown_value(value)} must be relative")
        # "./" and "a/.." name the setup root itself, like "."
        if ".." in PurePosixPath(value).parts or "\\" in value or not PurePosixPath(value).parts:
            raise self.fail(key, f"{what} {shown_value(value)} must stay inside the setup (no '..', '.' or backslash)")
        if any(len(part.encode("utf-8")) > _NAME_MAX for part in PurePosixPath(value).parts):
            raise self.fail(
                key, f"{what} {shown_value(value)} has a name longer than {_NAME_MAX} bytes (no file system takes it)"
            )
        return value

    def branch(self, key: str, value: str) -> str:
        if not valid_branch(value):
            raise self.fail(key, f"{shown_value(value)} is not a branch name (git would read it as another revision)")
        return value

    def release_pattern(self, key: str, value: str) -> str:
        # a tag name with * and ? for any characters: nothing git would read as another revision or an option
        if not valid_branch(value.replace("*", "x").replace("?", "x")):
            raise self.fail(key, f"{shown_value(value)} is not a tag name pattern (a tag name with * and ?)")
        return value

    def url(self, key: str, value: str) -> str:
        problem = check_url(value)
        if problem:
            raise self.fail(key, problem)
        return value

    def repo(self, key: str, name: str, table: Dict[str, Any]) -> RepoSpec:
        if name in SET_KEYS:
            raise self.fail(key, f"{name!r} is reserved (it is a key of every [sets.*] table)")
        return RepoSpec(name=name, **self.fields(key, table, _REPO_KEYS))

    def set(self, key: str, name: str, table: Dict[str, Any], repos: Mapping[str, RepoSpec]) -> SetSpec:
        lists = self.fields(key, {k: v for k, v in table.items() if k in SET_KEYS}, SET_KEYS)
        for accepting in ("allow_unpinned", "allow_hash_overwrite"):
            # any spelling of a locked repository: the guard knows its clones by same_repository, and accepting one
            # of them by a case variant would let a clone follow a branch past the lock
            for url in lists.get(accepting, ()):
                locked = next((name for name, spec in repos.items() if same_repository(spec.url, url)), None)
                if locked is not None:
                    raise self.fail(
                        f"{key}.{accepting}",
                        f"{url!r} is the locked repository {locked} ({repos[locked].url}): its clones must be the "
                        "set's pin",
                    )
        pins: Dict[str, Pin] = {}
        for repo, value in table.items():
            if repo in SET_KEYS:
                continue
            if repo not in repos and _is_misspelt_set_key(repo, value, repos):
                raise self.fail(
                    f"{key}.{shown_key(repo)}",
                    f"unknown key{did_you_mean(repo, SET_KEYS)} (the keys of a set: {', '.join(SET_KEYS)}, and "
                    f"its pins: {known_names(repos)})",
                )
            if repo not in repos:
                raise self.fail(
                    f"{key}.{shown_key(repo)}",
                    f"repository {shown_value(repo)} is not declared under [repos]{did_you_mean(repo, repos)} "
                    f"(declared: {known_names(repos)})",
                )
            pins[repo] = self.pin(f"{key}.{repo}", repo, value)
        lists.setdefault("configs", ())
        return SetSpec(name=name, pins=pins, **lists)

    def pin(self, key: str, repo: str, value: Any) -> Pin:
        if isinstance(value, str):
            return Pin(repo=repo, commit=self.commit(key, value), job_kwargs={})
        if not isinstance(value, dict):
            raise self.fail(key, "must be a commit SHA string or a table with a 'commit' key")
        if "commit" not in value:
            raise self.fail(f"{key}.commit", "missing")
        commit = self.commit(f"{key}.commit", value["commit"])
        job_kwargs = {}
        alias = None
        for kwarg, kwarg_value in value.items():
            if kwarg == "commit":
                continue
            if kwarg == ALIAS_KEY:
                alias = _string(lambda v, k, text: text)(self, f"{key}.{kwarg}", kwarg_value)
                continue
            if kwarg not in PIN_KWARGS:
                raise self.fail(
                    f"{key}.{shown_key(kwarg)}",
                    f"CloneGitRepositoryJob takes no argument {shown_value(kwarg)} here "
                    f"(allowed: commit, {', '.join(PIN_KWARGS)}, {ALIAS_KEY})",
                )
            job_kwargs[kwarg] = self.kwarg(f"{key}.{kwarg}", kwarg, kwarg_value)
        return Pin(repo=repo, commit=commit, job_kwargs=job_kwargs, hash_overwrite=alias)

    def kwarg(self, key: str, kwarg: str, value: Any) -> Any:
        expected = PIN_KWARGS[kwarg]
        if not _KWARG_TYPES[expected](value):
            raise self.fail(key, f"must be {'an' if expected[0] in 'aeiou' else 'a'} {expected}")
        texts: List[str] = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        if kwarg == "files_to_checkout" and "" in texts:
            raise self.fail(key, "an empty string is no file to check out (git refuses it as a pathspec)")
        for text in texts:
            # a patch is text with lines (and tabs, and a CRLF file's CRs); nothing else of a pin may hold them
            self.printable(key, text, _PATCH_CONTROLS if kwarg == "patches" else "")
        return self.branch(key, value) if kwarg == "branch" else value


def _same_clone(a: Tuple[Any, ...], b: Tuple[Any, ...]) -> bool:
    """Whether two pins bound to one value clone the same: repository (any spelling), commit, folder, arguments."""
    return same_repository(a[0], b[0]) and a[1:] == b[1:]


def _distinct(clones: List[Tuple[Any, ...]]) -> List[Tuple[Any, ...]]:
    """:return: the clones, each once (up to the spelling of its URL)"""
    found: List[Tuple[Any, ...]] = []
    for clone in clones:
        if not any(_same_clone(clone, other) for other in found):
            found.append(clone)
    return found


def _is_misspelt_set_key(name: str, value: Any, repos: Mapping[str, Any]) -> bool:
    """
    :return: whether ``name = value`` in a set's table is a set key typed wrong (``config = [...]``), not the pin of
        an undeclared repository: a list is never a pin, and otherwise the name is closer to a set key than to any
        declared repository
    """
    if isinstance(value, list):
        return True
    return did_you_mean(name, SET_KEYS) != "" and closest(name, SET_KEYS)[1] > closest(name, repos)[1]
