"""
What the probe knows of Sisyphus and i6_core beyond their public API, gathered here as the adapter of every version
a setup may pin (the patches of moving and aliases and the hash helpers records uses are still to move in): where
their code lies, how a path and a job are told apart from other objects, the class a path's hash and overwrite live
in, what a CloneGitRepositoryJob's object holds of its arguments, a job's own environment, the outputs, inputs and
state of jobs in the graph, and how a missing Sisyphus is reported.

Only the probe's own process imports this module (it imports Sisyphus, lazily).
"""

from __future__ import annotations

__all__ = [
    "SISPIN_DIR",
    "sisyphus_dir",
    "is_path",
    "is_job",
    "path_class",
    "overwrite_of",
    "overwrites_watched",
    "given_arguments",
    "held_arguments",
    "own_environment",
    "act_as_manager",
    "registered_outputs",
    "graph_jobs",
    "finished",
    "input_jobs",
    "find_sisyphus",
]

import contextlib
import inspect
import os
import sys
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from sispin.clonejob import DEFAULTS, class_parameters

#: sispin's own code (the package directory, with a separator): what it does is no config code's
SISPIN_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def sisyphus_dir() -> str:
    """:return: the directory of the imported Sisyphus package, with a separator"""
    import sisyphus

    return os.path.dirname(os.path.abspath(sisyphus.__file__)) + os.sep


def is_path(value: Any) -> bool:
    """:return: whether value is a Sisyphus path object (``tk.Path`` or a subclass; not the class itself)"""
    return getattr(value, "_sis_path", False) is True and not isinstance(value, type)


def is_job(value: Any) -> bool:
    """:return: whether value is a Sisyphus job object with an id (not a job class)"""
    return hasattr(value, "_sis_id_cache") and not isinstance(value, type)


def path_class() -> Any:
    """The class that defines how Sisyphus paths hash (Path's base): patched there, so that every kind of path
    follows."""
    from sisyphus.job_path import Path

    return next(cls for cls in Path.__mro__ if "_sis_hash" in cls.__dict__)


def overwrite_of(path: Any) -> Optional[Tuple[Any, str]]:
    """
    :return: the path's ``hash_overwrite`` as (creator, path) (a string s as (None, s), which it hashes as), or None:
        Sisyphus since a5b9c46 (2022-07) stores it so, before it as it was given
    """
    state = vars(path)
    value = state["_hash_overwrite"] if "_hash_overwrite" in state else state.get("hash_overwrite")
    return (None, value) if isinstance(value, str) else value


@contextlib.contextmanager
def overwrites_watched(assigned: Callable[[Any, Any, Any], None]) -> Iterator[None]:
    """
    Call ``assigned(path, value, frame)`` after each assignment of a path's ``hash_overwrite`` (frame: the
    assigning code's), while the context lasts. Sisyphus since a5b9c46 (2022-07) sets it through a property;
    before it, it is a plain attribute, which a property on the class takes over for the while.
    """
    owner = path_class()
    existing = owner.__dict__.get("hash_overwrite")
    if isinstance(existing, property):
        store, read = existing.fset, existing.fget
    else:

        def store(path: Any, value: Any) -> None:
            vars(path)["hash_overwrite"] = value

        def read(path: Any) -> Any:
            return vars(path).get("hash_overwrite")

    def setter(path: Any, value: Any) -> None:
        store(path, value)
        assigned(path, value, sys._getframe(1))

    owner.hash_overwrite = property(read, setter)
    try:
        yield
    finally:
        if existing is None:
            del owner.hash_overwrite
        else:
            owner.hash_overwrite = existing


def given_arguments(clone: Any) -> Dict[str, Any]:
    """
    :param clone: a CloneGitRepositoryJob
    :return: the arguments its id was made of, by parameter name (sispin.clonejob.PARAMETERS), each parameter it was
        not given at its default, and those this i6_core's class does not have at theirs in today's i6_core
    """
    given = {name: clone._sis_kwargs.get(name, default) for name, default in class_parameters()}
    return {name: given.get(name, default) for name, default in DEFAULTS.items()}


def held_arguments(clone: Any) -> Dict[str, Any]:
    """
    :param clone: a CloneGitRepositoryJob
    :return: its arguments by parameter name (as :func:`given_arguments`) as its object holds them now (what it will
        check out): i6_core keeps each as an attribute of its own name, but ``checkout_folder_name`` as the name of
        its output path; a parameter the class does not have is at today's default
    """
    state = vars(clone)
    held = {name: state.get(name) for name, _ in class_parameters()}
    held["checkout_folder_name"] = os.path.basename(state["out_repository"].path)
    return {name: held.get(name, default) for name, default in DEFAULTS.items()}


def own_environment(job: Any) -> Optional[Dict[str, Any]]:
    """
    :return: the environment the job was given with ``set_env`` beyond Sisyphus's defaults (what settings.py sets
        for every job, the store's redirects among them, is the setup's, not the job's): {"set": variables set,
        "keep": variables kept}; None when it was given none
    """
    from sisyphus import global_settings as gs

    environment = vars(job).get("_sis_environment")  # an EnvironmentModifier
    if environment is None:
        return None
    defaults = gs.DEFAULT_ENVIRONMENT_SET
    own = {key: value for key, value in environment.set_vars.items() if key not in defaults or defaults[key] != value}
    # verbatim variables (set_env(..., verbatim=True)) came with Sisyphus af0edef, 2024-02
    own.update(getattr(environment, "set_vars_verbatim", {}))
    return {"set": own, "keep": sorted(set(environment.keep_vars) - set(gs.DEFAULT_ENVIRONMENT_KEEP))}


def act_as_manager() -> None:
    """Load configs as ``sis manager`` loads them: some build only there."""
    from sisyphus import toolkit as tk

    tk._sis_running_in_manager = True


def registered_outputs() -> List[Tuple[str, Any]]:
    """:return: (name, path object) of every output the configs registered (``tk.register_output``)"""
    from sisyphus import graph
    from sisyphus import toolkit as tk

    return [(target.name, target._sis_path) for target in tk.sis_graph.targets if isinstance(target, graph.OutputPath)]


def graph_jobs() -> List[Any]:
    """
    :return: every job the registered outputs need, as built: without the runnable checks Sisyphus's own walk makes
        (they look into work/ and may run a job's ``update()``), as ``SISGraph.jobs(update_graph=False)`` walks it
        (an option of Sisyphus 297701e, 2026-02; before it, the same walk is made here)
    """
    from sisyphus import toolkit as tk

    graph = tk.sis_graph
    if "update_graph" in inspect.signature(graph.jobs).parameters:
        return graph.jobs(update_graph=False)
    found: Dict[int, Any] = {}
    stack = [path.creator for target in graph.targets for path in target.required_full_list if path.creator]
    stack.reverse()
    while stack:
        job = stack.pop()
        if id(job) not in found:
            found[id(job)] = job
            stack.extend(path.creator for path in reversed(list(job._sis_inputs)) if path.creator is not None)
    return list(found.values())


def finished(job: Any) -> bool:
    """:return: whether Sisyphus finished the job in work/ (only read)"""
    from sisyphus.job import job_finished

    return job_finished(job._sis_path())


def input_jobs(job: Any) -> List[Any]:
    """:return: the jobs whose outputs the job uses"""
    return [path.creator for path in job._sis_inputs if path.creator is not None]


def find_sisyphus() -> None:
    """
    :raises SystemExit: with the one line :func:`sispin.graph.build.run_probe` reports (the process's last line of
        error output) when no rwth-i6 Sisyphus can be imported (PyPI's 'sisyphus' is another)
    """
    try:
        import sisyphus.toolkit  # noqa: F401
    except ImportError as exc:
        found = sys.modules.get("sisyphus")
        where = f" ({found.__file__} is another package of that name)" if found is not None else ""
        raise SystemExit(
            f"no Sisyphus to import{where}: {exc}; add it to pin.toml's [setup.*] and run `pin sync`, "
            "pip install a Sisyphus checkout, or put one on PYTHONPATH"
        ) from None
