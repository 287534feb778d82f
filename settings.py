"""
Sisyphus settings of this setup: every task runs on this machine, or, with ``SISPIN_ENGINE=slurm`` in the
environment of ``sis manager``, on SLURM (see "Running on a cluster" in README.md).

Read by Sisyphus from the setup root (the directory `sis` runs in), inside its global_settings module. The wait
periods are shortened because the demo's jobs are tiny and run on one machine; on a cluster with a shared file
system keep Sisyphus's defaults.
"""

import os

import sispin

# Which engine runs the tasks (see engine()), checked when Sisyphus loads this file: a wrong value stops `sis` with
# this one line (an error inside engine() would be swallowed by the manager, which then exits 0)
SISPIN_ENGINE = os.environ.get("SISPIN_ENGINE") or "local"
if SISPIN_ENGINE not in ("local", "slurm"):
    raise SystemExit(f"settings.py: SISPIN_ENGINE={SISPIN_ENGINE!r} is not one of 'local', 'slurm'")


def engine():
    """
    The engine chosen by ``$SISPIN_ENGINE``: ``local`` (the default) runs every task on this machine; ``slurm``
    submits them to SLURM, except mini tasks (such as clone jobs), which run on this machine as in real setups. A
    worker loads this file again: sbatch passes the manager's environment on, and with it the choice.
    """
    from sisyphus.localengine import LocalEngine

    if SISPIN_ENGINE == "local":
        return LocalEngine(cpus=2, mem=4)
    from sisyphus.engine import EngineSelector
    from sisyphus.simple_linux_utility_for_resource_management_engine import (
        SimpleLinuxUtilityForResourceManagementEngine,
    )

    return EngineSelector(
        engines={
            "short": LocalEngine(cpus=2, mem=4),
            "long": SimpleLinuxUtilityForResourceManagementEngine(default_rqmt={"cpu": 1, "mem": 1, "time": 1}),
        },
        default_engine="long",
    )


WAIT_PERIOD_JOB_FS_SYNC = 1
WAIT_PERIOD_BETWEEN_CHECKS = 1
WAIT_PERIOD_CACHE = 1
WAIT_PERIOD_JOB_CLEANUP = 1
WAIT_PERIOD_MTIME_OF_INPUTS = 1
JOB_AUTO_CLEANUP = False

# Clone pinned repositories from sispin's store (one local bare mirror per URL; `pin status --fetch` fills it) with
# hardlinked objects instead of from the remote. git rewrites the URL only when it connects, so every job id stays
# the same; a missing or stale mirror falls back to the remote.
DEFAULT_ENVIRONMENT_SET.update(sispin.use_store_mirrors())
