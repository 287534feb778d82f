"""
What each recorded job's id is made of, for ``pin explain`` and ``pin check``: kept beside pin.toml in
``.sispin-cache/records/SET.json``, outside git, so that the committed snapshot stays what a reviewer reads (each
output's job id). Written whenever a set's ids are recorded (``pin snapshot``, ``pin upgrade``, ``pin new``, an
adoption); a clone of the setup has none, and ``pin explain --against REV`` builds them again from the setup's git
history. Only a cache: what cannot be read or written is as if it were not there.
"""

from __future__ import annotations

__all__ = ["write_records", "read_records"]

import hashlib
import json
from pathlib import Path
from typing import Dict, Mapping, Optional

from sispin.graph.probe.codec import read_json, report_form
from sispin.graph.probe.schema import JobRecord, RecordedOutput, SetGraph
from sispin.lock.cache import set_cache_file, write_set_cache

#: the format of a records file; another one is not read (2: each record as the probe's schema writes it; 3: an
#: argument's leaf as an array)
_VERSION = 3


def write_records(lockfile_path: Path, graph: SetGraph) -> None:
    """
    Keep the records of a set's graph as the ones its snapshot entry stands for (replacing the set's earlier ones).

    :param lockfile_path: the pin.toml
    :param graph: the set's graph, as recorded in the snapshot
    """
    data = {
        "version": _VERSION,
        "outputs": _fingerprint(graph.outputs),
        "jobs": dict(sorted(graph.records.items())),
    }
    # a setup that cannot hold the cache explains through `pin explain --against REV`
    write_set_cache(lockfile_path, "records", graph.set_name, data, default=report_form)


def read_records(
    lockfile_path: Path, set_name: str, recorded: Mapping[str, RecordedOutput]
) -> Optional[Dict[str, JobRecord]]:
    """
    :param lockfile_path: the pin.toml
    :param set_name: a set
    :param recorded: the set's outputs in the snapshot
    :return: job id -> what its id was made of, for every job of the set as the snapshot records it; None when
        nothing is kept for those outputs (another clone of the setup, a snapshot written elsewhere, a deleted or
        damaged cache)
    """
    try:
        data = read_json(set_cache_file(Path(lockfile_path).parent, "records", set_name).read_bytes())
        if data.get("version") != _VERSION or data.get("outputs") != _fingerprint(recorded):
            return None
        return {job: JobRecord.from_json(record) for job, record in data["jobs"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _fingerprint(outputs: Mapping[str, RecordedOutput]) -> str:
    """What identifies a set's snapshot entry: its outputs and their jobs and files."""
    listed = sorted((name, output.job, output.path) for name, output in outputs.items())
    return hashlib.sha256(json.dumps(listed).encode()).hexdigest()
