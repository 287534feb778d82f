"""
Sisyphus settings of this setup: everything runs on the local machine.

Read by Sisyphus from the setup root (the directory `sis` runs in), inside its global_settings module. The wait
periods are shortened because the demo's jobs are tiny and run on one machine; on a cluster with a shared file
system keep Sisyphus's defaults.
"""

import sispin


def engine():
    """Run every task on this machine, at most two CPUs at a time."""
    from sisyphus.localengine import LocalEngine

    return LocalEngine(cpus=2, mem=4)


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
