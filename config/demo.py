"""
The demo experiment set: a RETURNN config whose prolog imports returnn_common from the set's pinned commit.

Run from the setup root: ``python tools/sisyphus/sis manager -r config/demo.py``. The checkout comes from
pin.toml ([sets.demo]); its commit is part of the hash of the clone job and so of every job that uses it.
"""

from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from sisyphus import tk
from sisyphus.delayed_ops import DelayedFormat

from sispin import experiment_set


def py():
    """Sisyphus entry point: build the graph of the demo set and register its outputs."""
    exp = experiment_set("demo")
    returnn_common_root = exp.repo("returnn_common")

    config = ReturnnConfig(
        config={"task": "train", "batch_size": 1000, "learning_rate": 1e-3},
        # returnn_common's checkout folder holds the package directory itself, so its parent goes on sys.path
        python_prolog=[
            "import os, sys",
            DelayedFormat("sys.path.insert(0, os.path.dirname({!r}))", returnn_common_root),
        ],
        black_formatting=False,
    )
    write_config = WriteReturnnConfigJob(config)

    tk.register_output("demo/returnn_common", returnn_common_root)
    tk.register_output("demo/returnn.config", write_config.out_returnn_config_file)
