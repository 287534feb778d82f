"""
What an unfinished job would ask the engine for (a graph's ``requests``, which price what an upgrade would run): each
task's requirements as ``sis manager`` first submits them, over the defaults of the engine the setup's settings
choose for that task and within the settings' ``check_engine_limits``. A task may end before its time limit, or run
out of it and be submitted again with more (``update_engine_rqmt``): what the job asks for at first, not a bound.

Only the probe's own process imports this module (it imports Sisyphus, lazily).
"""

from __future__ import annotations

__all__ = ["unfinished_requests", "requested"]

import functools
from typing import Any, Dict, List, Mapping, Optional, Tuple

from sispin.graph.probe.adapter import task_requests


def unfinished_requests(
    jobs: List[Any], finished: Mapping[str, bool]
) -> Dict[str, Optional[Tuple[float, float, float]]]:
    """
    :param jobs: the jobs of a graph
    :param finished: job id -> whether it is finished in work/
    :return: of each unfinished one, what it would ask for (see :func:`requested`)
    """
    return {job.job_id(): requested(job) for job in jobs if not finished[job.job_id()]}


def requested(job: Any) -> Optional[Tuple[float, float, float]]:
    """
    :return: (CPU-hours, GPU-hours, the most memory one task asks for in GB): each task's time limit times its
        processors (GPUs) over all its task ids and the nodes it spans; None when the job cannot list its tasks or
        has none, the settings' engine cannot be made, or a task still names no time limit
    """
    from sisyphus import global_settings, tools

    cpu = gpu = memory = 0.0
    try:
        engine, tasks = _engine(), task_requests(job)
        if not tasks:
            return None  # Sisyphus refuses to run a job without tasks
        for task, ids in tasks:
            # the engine's defaults under the task's own, within the limits the settings set (Engine.get_rqmt)
            rqmt = global_settings.check_engine_limits({**engine.get_default_rqmt(task), **task.rqmt()}, task)
            if "time" not in rqmt:
                return None
            # a task over several nodes (multi_node_slots: SLURM's --nodes and --ntasks) asks for its processors on each
            hours = tools.str_to_hours(rqmt["time"]) * ids * max(1, int(rqmt.get("multi_node_slots") or 1))
            cpu += hours * float(rqmt.get("cpu", 1))
            gpu += hours * float(rqmt.get("gpu", 0) or 0)
            memory = max(memory, tools.str_to_GB(rqmt.get("mem", 0)))
    except Exception:  # noqa: BLE001 - recipe and settings code: whatever it raises, the request is not known
        return None
    return cpu, gpu, memory


@functools.lru_cache(maxsize=None)  # noqa: UP033 - functools.cache is Python 3.9+
def _engine() -> Any:
    """:return: the engine the setup's settings make (``engine()`` of settings.py), made once, as the manager does"""
    from sisyphus import global_settings

    return global_settings.engine()
