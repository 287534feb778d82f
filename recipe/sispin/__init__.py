"""
sispin: version pinning for Sisyphus experiment setups.

Config code uses :func:`experiment_set` (or :func:`current_set` in shared recipe code); the ``pin`` command manages
pin.toml. Importing this package does not import Sisyphus (only the adapter methods that build jobs do), nor
tomlkit or filelock: every Sisyphus manager and worker imports it through settings.py, so it loads only what the
config path needs.
"""

from __future__ import annotations

__all__ = ["__version__", "experiment_set", "current_set", "ExperimentSet", "PinError", "use_store_mirrors"]

__version__ = "0.1.0"

from sispin.errors import PinError
from sispin.sets import ExperimentSet, current_set, experiment_set


def __getattr__(name: str) -> object:
    # the settings hook talks to git: load it when settings.py asks for it, not with every `import sispin`
    if name == "use_store_mirrors":
        from sispin.settings_hook import use_store_mirrors

        return use_store_mirrors
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
