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
    "held_arguments",
    "own_environment",
    "act_as_manager",
    "registered_outputs",
    "finished",
    "input_jobs",
    "find_sisyphus",
]

import os
import sys
from typing import Any, Dict, List, Optional, Tuple

from sispin.clonejob import PARAMETERS

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
    """The class that defines how Sisyphus paths hash and hold their overwrite (Path's base): patched there, so
    that every kind of path follows."""
    from sisyphus.job_path import Path

    return next(cls for cls in Path.__mro__ if "_sis_hash" in cls.__dict__ and "hash_overwrite" in cls.__dict__)


def held_arguments(clone: Any) -> Dict[str, Any]:
    """
    :param clone: a CloneGitRepositoryJob
    :return: its arguments by parameter name as its object holds them now (what it will check out): i6_core keeps
        each as an attribute of its own name, but ``checkout_folder_name`` as the name of its output path
    """
    state = vars(clone)
    held = {name: state.get(name) for name, _ in PARAMETERS}
    held["checkout_folder_name"] = os.path.basename(state["out_repository"].path)
    return held


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
    own.update(environment.set_vars_verbatim)
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
