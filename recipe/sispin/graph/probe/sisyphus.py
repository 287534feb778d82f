"""
What the probe knows of Sisyphus and i6_core beyond their public API, in one place: where their code lies, how a
path and a job are told apart from other objects, the class a path's hash and overwrite live in, what a
CloneGitRepositoryJob's object holds of its arguments, and how a missing Sisyphus is reported.

Only the probe's own process imports this module (it imports Sisyphus, lazily).
"""

from __future__ import annotations

__all__ = ["SISPIN_DIR", "sisyphus_dir", "is_path", "is_job", "path_class", "held_arguments", "find_sisyphus"]

import os
import sys
from typing import Any, Dict

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
