"""
What finished work cost, from what Sisyphus recorded in work/: each task's ``usage.<task>.<n>`` file in its job's
directory (inside ``finished.tar.gz`` once the job was cleaned up), a Python dict with ``used_time`` in hours, the
peak of what the task used (``max``: ``rss`` in GB) and the ``requested_resources`` it ran with (``cpu``,
``gpu``). A task's CPU-hours are its processors requested times its time used; its GPU-hours likewise. ``pin
upgrade`` prices a move with it: what the finished jobs it stops using cost to make, and what the jobs it would run
ask for (their tasks' requests as first submitted: time limit times processors).

work/ is read as Sisyphus leaves it, without Sisyphus: a job's directory is ``work/<job id>``.
"""

from __future__ import annotations

__all__ = ["Cost", "Price", "price_of", "requested_price"]

import ast
import collections
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, DefaultDict, Dict, Iterable, List, Mapping, Optional, Tuple

from sispin.text import count

#: the usage files' name, as Sisyphus's PLOGGING_FILE (``usage``) starts them
_USAGE_PREFIX = "usage."


@dataclass(frozen=True)
class Cost:
    """
    What a group of finished jobs cost.

    :param jobs: the jobs whose usage (or request) was known
    :param cpu_hours: their processors requested times time used (time asked for), summed over their tasks
    :param gpu_hours: their GPUs requested times time used (time asked for)
    :param peak_memory: the most memory one of their tasks used (asked for), in GB
    :param unknown: the jobs whose usage is missing or unreadable (whose request names no time), counted in nothing
        else
    """

    jobs: int = 0
    cpu_hours: float = 0.0
    gpu_hours: float = 0.0
    peak_memory: float = 0.0
    unknown: int = 0

    @classmethod
    def of(cls, usages: Iterable[Optional[Tuple[float, float, float]]]) -> Cost:
        """:param usages: each job's (CPU-hours, GPU-hours, peak memory), None when unknown; summed in their order"""
        jobs = unknown = 0
        cpu_hours = gpu_hours = peak_memory = 0.0
        for usage in usages:  # a frozen Cost added per job and group (10,000 in a dry run of 5,000 jobs): 4x as long
            if usage is None:
                unknown += 1
                continue
            cpu, gpu, memory = usage
            jobs += 1
            cpu_hours += cpu
            gpu_hours += gpu
            peak_memory = max(peak_memory, memory)
        return cls(jobs, cpu_hours, gpu_hours, peak_memory, unknown)

    def as_used(self, jobs: bool = True) -> str:
        """
        :param jobs: start with how many jobs
        :return: ``4 jobs, 212.0 GPU-h, 850.3 CPU-h, peak 31.2 GB`` (GPU-hours when there are any), then the jobs whose
            usage is unknown; ``0 h`` for none
        """
        unknown = f"usage unknown for {count(self.unknown, 'job')}" if self.unknown else ""
        return self._shown(jobs, f"peak {self.peak_memory:.1f} GB", unknown)

    def as_requested(self, jobs: bool = True) -> str:
        """
        :param jobs: start with how many jobs
        :return: ``2 jobs, 8.0 GPU-h, 32.0 CPU-h, 16.0 GB in one task`` of what jobs ask for, then the jobs whose
            request is unknown; ``0 h`` for none
        """
        unknown = f"request unknown for {count(self.unknown, 'job')}" if self.unknown else ""
        return self._shown(jobs, f"{self.peak_memory:.1f} GB in one task", unknown)

    def _shown(self, jobs: bool, memory: str, unknown: str) -> str:
        parts = [count(self.jobs, "job")] if self.jobs and jobs else []
        if self.jobs:
            parts += [_hours(self.gpu_hours, "GPU")] if self.gpu_hours else []
            parts += [_hours(self.cpu_hours, "CPU"), memory]
        return (", ".join(parts) + ("; " if parts and unknown else "") + unknown) or "0 h"


def _hours(hours: float, unit: str) -> str:
    """``212.0 GPU-h``; under three minutes in seconds (``4 CPU-s``), which a tenth of an hour would show as 0"""
    return f"{hours:.1f} {unit}-h" if hours >= 0.05 else f"{hours * 3600:.0f} {unit}-s"


@dataclass(frozen=True)
class Price:
    """
    :param total: what all the jobs cost
    :param by_class: job class (``ReturnnTrainingJob``) -> what its jobs among them cost
    """

    total: Cost = Cost()
    by_class: Dict[str, Cost] = field(default_factory=dict)


def price_of(work: Path, jobs: Iterable[str]) -> Price:
    """
    :param work: the setup's work/
    :param jobs: ids of finished jobs
    :return: what they cost, as their usage files say
    """
    return _summed(jobs, lambda job: job_usage(work / job))


def requested_price(requests: Mapping[str, Optional[Tuple[float, float, float]]], jobs: Iterable[str]) -> Price:
    """
    :param requests: unfinished job id -> what its tasks request (a graph's ``requests``)
    :param jobs: ids of unfinished jobs (one missing from requests is not known)
    :return: what they ask for, as their tasks request it
    """
    return _summed(jobs, requests.get)


def _summed(jobs: Iterable[str], cost_of: Callable[[str], Optional[Tuple[float, float, float]]]) -> Price:
    """:return: what the jobs cost in all and per class, each job's cost as given (None: not known)"""
    usages: List[Optional[Tuple[float, float, float]]] = []
    by_class: DefaultDict[str, List[Optional[Tuple[float, float, float]]]] = collections.defaultdict(list)
    for job in sorted(jobs):
        usage = cost_of(job)
        usages.append(usage)
        by_class[job.rsplit("/", 1)[-1].split(".", 1)[0]].append(usage)
    return Price(Cost.of(usages), {name: Cost.of(of_class) for name, of_class in by_class.items()})


def job_usage(directory: Path) -> Optional[Tuple[float, float, float]]:
    """:return: a finished job's (CPU-hours, GPU-hours, peak memory in GB) over its tasks; None when unknown"""
    texts = _usage_texts(directory)
    if not texts:
        return None
    cpu = gpu = memory = 0.0
    for text in texts:
        try:
            usage = ast.literal_eval(text)
            hours = float(usage["used_time"])
            requested = usage.get("requested_resources") or {}
            cpu += hours * float(requested.get("cpu", 1))
            gpu += hours * float(requested.get("gpu", 0) or 0)
            memory = max(memory, float((usage.get("max") or {}).get("rss", 0)))
        except (ValueError, TypeError, SyntaxError, KeyError, AttributeError, MemoryError, RecursionError):
            return None  # a damaged file: the job's usage is not known, rather than less than it was
    return cpu, gpu, memory


def _usage_texts(directory: Path) -> List[str]:
    """:return: the text of each usage file of the job, from its directory or from the archive a cleanup made"""
    try:
        texts = [path.read_text(errors="replace") for path in sorted(directory.iterdir()) if _is_usage(path.name)]
        archive = directory / "finished.tar.gz"
        if texts or not archive.is_file():
            return texts
        with tarfile.open(archive) as packed:
            members = [member for member in packed.getmembers() if member.isfile() and _is_usage(member.name)]
            return [packed.extractfile(member).read().decode(errors="replace") for member in members]  # type: ignore
    except (OSError, tarfile.TarError, EOFError):
        return []


def _is_usage(name: str) -> bool:
    return name.rsplit("/", 1)[-1].startswith(_USAGE_PREFIX)
