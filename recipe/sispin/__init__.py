"""
sispin: version pinning for Sisyphus experiment setups.

Config code uses :func:`experiment_set` (or :func:`current_set` in shared recipe code); the ``pin`` command manages
pin.toml. Importing this package does not import Sisyphus: only the adapter methods that build jobs do.
"""

__all__ = ["__version__", "experiment_set", "current_set", "ExperimentSet", "PinError", "use_store_mirrors"]

__version__ = "0.1.0"

from sispin.errors import PinError
from sispin.sets import ExperimentSet, current_set, experiment_set
from sispin.settings_hook import use_store_mirrors
