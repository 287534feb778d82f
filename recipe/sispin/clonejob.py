"""
Everything sispin knows about i6_core's ``CloneGitRepositoryJob``: where it lives, the arguments it takes in order,
their defaults, which of them a pin may carry, and how a pin becomes the job's keyword arguments.

Every other module asks here (the lockfile validator, the static scanner, ``pin import``, the Sisyphus probe, the
config API, ``pin sync``/``pin verify``), so an i6_core change that adds, renames or reorders an argument is one
edit in one place; ``tests/config/test_clonejob.py`` compares this module with the real class's signature.
"""

from __future__ import annotations

__all__ = [
    "CLASS_NAME",
    "QUALIFIED_NAMES",
    "REQUIRED",
    "PARAMETERS",
    "DEFAULTS",
    "ADDED_IN",
    "PIN_KWARGS",
    "checkout_folder",
    "job_kwargs",
    "clone_identity",
    "identity_commit",
    "stands_for",
    "shown_clone",
    "pin_kwargs_of",
    "checkout_of",
    "job_class",
    "class_parameters",
    "is_clone",
]

import functools
import importlib
import inspect
import json
from typing import Any, Dict, Mapping, Optional, Tuple

CLASS_NAME = "CloneGitRepositoryJob"
#: where i6_core defines the class, and where it re-exports it
QUALIFIED_NAMES = ("i6_core.tools.git." + CLASS_NAME, "i6_core.tools." + CLASS_NAME)

#: the default of a parameter that has none
REQUIRED = "(required)"
#: the job's parameters in their order, each with its default
PARAMETERS: Tuple[Tuple[str, Any], ...] = (
    ("url", REQUIRED),
    ("branch", None),
    ("commit", None),
    ("checkout_folder_name", "repository"),
    ("clone_submodules", False),
    ("files_to_checkout", None),
    ("patches", None),
)
DEFAULTS: Dict[str, Any] = dict(PARAMETERS)

#: parameter -> (the i6_core commit that added it, its date): an older i6_core's job cannot take it
ADDED_IN: Dict[str, Tuple[str, str]] = {
    "clone_submodules": ("33f2b70", "2023-09-27"),
    "files_to_checkout": ("dbb2e35", "2023-10-19"),
    "patches": ("236d72f", "2024-01-24"),
}

#: the arguments a pin table may carry (kept for hash compatibility), with the TOML type each must have; the rest
#: come from elsewhere: ``url`` and ``checkout_folder_name`` from ``[repos.*]``, ``commit`` is the pin itself
PIN_KWARGS: Dict[str, str] = {
    "branch": "string",
    "clone_submodules": "boolean",
    "files_to_checkout": "array of strings",
    "patches": "array of strings",
}


def checkout_folder(checkout: Optional[str]) -> str:
    """
    :param checkout: a repository's ``checkout`` in pin.toml (None when not given)
    :return: the directory name the job's output gets (its ``checkout_folder_name``)
    """
    return DEFAULTS["checkout_folder_name"] if checkout is None else checkout


def job_kwargs(url: str, commit: str, checkout: Optional[str], pin_kwargs: Mapping[str, Any]) -> Dict[str, Any]:
    """
    The keyword arguments of the job for a pin, exactly as a person would write the call: ``checkout_folder_name``
    only when the repository names one, so that the job id equals the hand-written call's.

    :param url: the repository's URL, verbatim
    :param commit: the pinned commit
    :param checkout: the repository's ``checkout`` (None: the job's default)
    :param pin_kwargs: the pin table's extra arguments
    """
    kwargs: Dict[str, Any] = {"url": url, "commit": commit}
    if checkout is not None:
        kwargs["checkout_folder_name"] = checkout
    kwargs.update(pin_kwargs)
    return kwargs


def clone_identity(arguments: Mapping[str, Any]) -> str:
    """
    What a legacy ``hash_overwrite`` alias stands for: the clone as its arguments make it, but for the URL (the same
    repository in any spelling is the same clone) and the branch (the commit decides what is checked out). Two clones
    whose jobs check out the same files get the same text.

    :param arguments: the job's arguments by parameter name (given ones, or all: an argument at its default counts as
        not given)
    :return: JSON of the commit and every other argument that is not at its default, keys sorted
    """
    given = {
        name: list(value) if isinstance(value, tuple) else value
        for name, value in arguments.items()
        if name not in ("url", "branch") and DEFAULTS.get(name, REQUIRED) != value
    }
    return json.dumps(given, sort_keys=True)


def identity_commit(identity: str) -> str:
    """:return: the commit of a :func:`clone_identity`, or identity itself when it is a bare commit (written before)"""
    return json.loads(identity)["commit"] if identity.startswith("{") else identity


def stands_for(recorded: str, clone: str) -> bool:
    """
    :param recorded: a clone of a value's ``[bound]`` history, or a bare commit (recorded before the history held
        whole clones: it stands for that commit, whatever the other arguments)
    :param clone: a :func:`~sispin.clonejob.clone_identity`
    """
    return recorded == clone or (not recorded.startswith("{") and identity_commit(clone) == recorded)


def shown_clone(clone: str) -> str:
    """:return: a clone of the ``[bound]`` history as messages show it: ``abc1234`` or ``abc1234 (patches=[...])``"""
    if not clone.startswith("{"):
        return clone[:7]
    arguments = json.loads(clone)
    rest = ", ".join(f"{name}={value!r}" for name, value in arguments.items() if name != "commit")
    return arguments["commit"][:7] + (f" ({rest})" if rest else "")


def pin_kwargs_of(arguments: Mapping[str, Any]) -> Dict[str, Any]:
    """
    :param arguments: a call's arguments by parameter name
    :return: those a pin table must carry so that ``exp.repo()`` builds the same job: pin arguments that differ
        from their defaults
    """
    return {k: arguments[k] for k in PIN_KWARGS if k in arguments and arguments[k] != DEFAULTS[k]}


def checkout_of(arguments: Mapping[str, Any]) -> Optional[str]:
    """
    :param arguments: a call's arguments by parameter name
    :return: the repository ``checkout`` that reproduces its ``checkout_folder_name`` (None for the default)
    """
    folder = arguments.get("checkout_folder_name", DEFAULTS["checkout_folder_name"])
    return None if folder == DEFAULTS["checkout_folder_name"] else folder


@functools.lru_cache(maxsize=None)  # noqa: UP033 - functools.cache is Python 3.9+, lru_cache reads on all
def job_class() -> Any:
    """
    :return: i6_core's CloneGitRepositoryJob class, imported (with Sisyphus) on the first call only: a Sisyphus
        manager asks once per clone job, and an import statement costs more than a cached call each time
    """
    module, _, name = QUALIFIED_NAMES[0].rpartition(".")
    return getattr(importlib.import_module(module), name)


@functools.cache
def class_parameters() -> Tuple[Tuple[str, Any], ...]:
    """
    :return: the parameters of the imported i6_core's CloneGitRepositoryJob in their order, each with its default
        (REQUIRED for none), read from the class: an older i6_core has fewer than PARAMETERS (see ADDED_IN)
    """
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    parameters = list(inspect.signature(job_class().__init__).parameters.values())[1:]
    return tuple(
        (parameter.name, REQUIRED if parameter.default is parameter.empty else parameter.default)
        for parameter in parameters
        if parameter.kind in named
    )


def is_clone(job: Any) -> bool:
    """
    :param job: any object (a job, a path's creator, None)
    :return: whether it is i6_core's CloneGitRepositoryJob or a subclass of it (a subclass clones as its base does)
    """
    return isinstance(job, job_class())
