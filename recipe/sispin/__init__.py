"""
sispin: version pinning for Sisyphus experiment setups.

Config code uses :func:`experiment_set`; the ``pin`` command manages pin.toml. Importing this package does not
import Sisyphus: only the adapter methods that build jobs do.
"""

__all__ = ["__version__", "experiment_set", "ExperimentSet", "PinError", "use_store_mirrors"]

__version__ = "0.1.0"

from sispin.errors import PinError
from sispin.sets import ExperimentSet, experiment_set
from sispin.settings_hook import use_store_mirrors
