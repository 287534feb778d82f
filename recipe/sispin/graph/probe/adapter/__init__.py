"""
What the probe knows of Sisyphus and i6_core beyond their public API, gathered here as the adapter of every version
a setup may pin (docs/setup.md lists where the versions differ): where their code lies, how a path and a job are
told apart from other objects, what a job holds (its id, the arguments its id was made of, its inputs), a path's
``hash_overwrite``, what a CloneGitRepositoryJob's object holds of its arguments, a job's own environment, the
outputs, inputs and state of jobs in the graph, and Sisyphus's hash walk; :mod:`~sispin.graph.probe.adapter.watches`
holds the places the probe watches while configs load (job creation and construction, the hash walk, a path's hash
and ``hash_overwrite`` assignments, ``tk.async_run``). A variant a version needs is chosen by what that version has,
never by its version.

Only the probe's own process imports this package. Its modules may import :mod:`sispin.clonejob`, and Sisyphus and
i6_core (lazily: only once the probe needs them).
"""

from __future__ import annotations

__all__ = [
    "SISPIN_DIR",
    "sisyphus_dir",
    "is_path",
    "is_job",
    "JOB_INTERNALS",
    "is_internal",
    "internal_names",
    "job_id",
    "set_job_id",
    "job_arguments",
    "input_paths",
    "hashes_as_job",
    "hashes_itself",
    "object_state",
    "hash_bytes",
    "current_config",
    "waiting_configs",
    "path_class",
    "overwrite_of",
    "suffix_follows_overwrite",
    "given_arguments",
    "held_arguments",
    "own_environment",
    "act_as_manager",
    "registered_outputs",
    "graph_jobs",
    "finished",
    "finished_at",
    "SISYPHUS_ENVIRONMENT",
    "task_requests",
    "input_jobs",
    "find_sisyphus",
]

import functools
import inspect
import os
import re
import sys
from typing import Any, Dict, FrozenSet, List, Optional, Set, Tuple

from sispin.clonejob import DEFAULTS, class_parameters

#: sispin's own code (the package directory, with a separator): what it does is no config code's
SISPIN_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))) + os.sep


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


#: the environment variables Sisyphus reads beside its ``SIS_*`` settings, when it is imported (before anything is
#: recorded): global_settings' TMP_PREFIX comes from TMPDIR
SISYPHUS_ENVIRONMENT = ("TMPDIR",)

#: the attributes Sisyphus keeps on a job object for itself (reading one is reading the job's id or arguments)
JOB_INTERNALS = frozenset({"_sis_kwargs", "_sis_path", "_sis_id", "_sis_id_cache"})


def is_internal(name: Any) -> bool:
    """
    :return: whether an attribute (or a state dict's key) is one Sisyphus keeps for itself: a ``_sis_`` name its
        source uses (a job's own attribute of such a name is the job's state: Sisyphus pickles it into job.save)
    """
    return isinstance(name, str) and name.startswith("_sis_") and name in internal_names()


@functools.cache
def internal_names() -> FrozenSet[str]:
    """
    :return: every ``_sis_`` name in the source of the Sisyphus this process imported (each version names its own):
        the names :func:`is_internal` tells, for a walk that looks up thousands of them
    """
    import sisyphus

    # bytes and os.walk: a third of the time of text and Path.rglob, paid by every build
    pattern = re.compile(rb"\b_sis_\w+")
    names: Set[bytes] = set()
    for folder, _, files in os.walk(os.path.dirname(sisyphus.__file__)):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name), "rb") as source:
                    names.update(pattern.findall(source.read()))
    return frozenset(name.decode("ascii") for name in names)


def job_id(job: Any) -> str:
    """:return: the id Sisyphus gave the job (as it keeps it: nothing computed, no attribute hook of the job's run)"""
    return object.__getattribute__(job, "__dict__")["_sis_id_cache"]


def set_job_id(job: Any, value: str) -> None:
    """Make Sisyphus take value as the job's id (while ids that depend on it are computed again)."""
    object.__getattribute__(job, "__dict__")["_sis_id_cache"] = value


def job_arguments(job: Any) -> Dict[str, Any]:
    """:return: the arguments the job's id was made of (Sisyphus's own dict: read, never change), {} for none"""
    return object.__getattribute__(job, "__dict__").get("_sis_kwargs") or {}


def input_paths(job: Any) -> List[Any]:
    """:return: the paths Sisyphus found among the job's arguments (its inputs)"""
    return list(job._sis_inputs)


def hashes_as_job(value: Any) -> bool:
    """:return: whether value has a job's id (a job, or a job class: a class Sisyphus hashes by its name)"""
    return hasattr(value, "_sis_id")


def hashes_itself(value: Any) -> bool:
    """:return: whether value brings its own hash (a path, a job, an object such as i6_core's ReturnnConfig)"""
    return hasattr(value, "_sis_hash")


def object_state(value: Any) -> Any:
    """:return: what Sisyphus hashes of an object that has no hash of its own (its ``__sis_state__``, or its state)"""
    from sisyphus.hash import get_object_state

    return get_object_state(value)


def hash_bytes(value: Any) -> bytes:
    """:return: the bytes Sisyphus's hash of value is made of"""
    from sisyphus.hash import sis_hash_helper

    return sis_hash_helper(value)


def current_config() -> str:
    """:return: the config file whose code runs now"""
    from sisyphus.loader import config_manager

    return str(config_manager.current_config)


def waiting_configs() -> List[str]:
    """:return: the configs whose ``py()`` still waits for unfinished jobs (their graph is not complete yet)"""
    from sisyphus.loader import config_manager

    return sorted(
        str(config) for config, task in config_manager._config_readers if task is not None and not task.done()
    )


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


@functools.cache
def suffix_follows_overwrite() -> bool:
    """
    :return: whether a path derived with ``join_right`` carries its suffix in its ``hash_overwrite`` too (Sisyphus
        since a5b9c46, 2022-07); before it, the derived path kept the overwrite as it was. Asked of Sisyphus itself,
        on a path of its own, once configs are loaded (no watch sees it)
    """
    from sisyphus.job_path import Path

    if not hasattr(Path, "join_right"):  # before 90b6b85 (2022-01) no path is derived from another
        return False
    derived = Path("sispin-asks", hash_overwrite="SISPIN_ASKS").join_right("suffix")
    return overwrite_of(derived) != (None, "SISPIN_ASKS")


def given_arguments(clone: Any) -> Dict[str, Any]:
    """
    :param clone: a CloneGitRepositoryJob
    :return: the arguments its id was made of, by parameter name (sispin.clonejob.PARAMETERS), each parameter it was
        not given at its default, and those this i6_core's class does not have at theirs in today's i6_core
    """
    given = {name: job_arguments(clone).get(name, default) for name, default in class_parameters()}
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
    given = environment.set_vars
    # most jobs hold the defaults as they are (a copy): told at once
    own = {} if given == defaults else {k: v for k, v in given.items() if k not in defaults or defaults[k] != v}
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
            stack.extend(path.creator for path in reversed(input_paths(job)) if path.creator is not None)
    return list(found.values())


def finished(job: Any) -> bool:
    """:return: whether Sisyphus finished the job in work/ (only read)"""
    from sisyphus.job import job_finished

    return job_finished(job._sis_path())


def finished_at(job_id: str) -> Optional[bool]:
    """
    :return: whether Sisyphus finished the job of that id in work/, as :func:`finished` reads it (a job of another
        graph: no object of it here); None when Sisyphus puts a job's tags in its directory, which the id does not hold
    """
    from sisyphus import global_settings
    from sisyphus.job import job_finished

    if global_settings.JOB_USE_TAGS_IN_PATH:
        return None
    return job_finished(os.path.join(global_settings.WORK_DIR, job_id))


def task_requests(job: Any) -> List[Tuple[Any, int]]:
    """
    :return: each task of the job with its requirements as ``sis manager`` submits them but for the engine's
        defaults (the overwrites config code set, ``job.update_rqmt``, applied), and how many task ids it has: what
        ``Job._sis_tasks`` makes, without its demand that the inputs exist (an unfinished job's often do not yet)
    :raises Exception: whatever the job's own ``tasks()`` raises
    """
    overwritten = getattr(job, "_sis_task_rqmt_overwrite", {})
    tasks = []
    for task in job.tasks():  # new Task objects each time: setting their requirements changes no job
        given, replaces = overwritten.get(task._start, ({}, False))
        task._rqmt = dict(given) if replaces else {**(task._rqmt() if callable(task._rqmt) else task._rqmt), **given}
        tasks.append((task, len(task.task_ids())))
    return tasks


def input_jobs(job: Any) -> List[Any]:
    """:return: the jobs whose outputs the job uses"""
    return [path.creator for path in input_paths(job) if path.creator is not None]


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
