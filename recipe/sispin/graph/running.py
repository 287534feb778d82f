"""
Running one probe process (see :mod:`sispin.graph.build`): in the setup root and the terminal's process group, killed
with every build it forked when it takes too long, and shown on a terminal, each second, while it runs.
"""

from __future__ import annotations

__all__ = ["run_probe_process"]

import contextlib
import subprocess
import threading
import time
from pathlib import Path
from typing import Dict, Iterator, List

from sispin.errors import SisyphusError
from sispin.git.process import progress_listener, stop_process_tree


def run_probe_process(
    command: List[str], root: Path, env: Dict[str, str], timeout: float, what: str
) -> subprocess.CompletedProcess:
    """
    Run a probe process in the setup root (in the terminal's process group, so that Ctrl-C reaches it and the builds
    it forks); when it takes too long, or this thread stops waiting, it is killed with what it forked. On a terminal,
    one live line says what it does.

    :param command: the probe's command line
    :param root: the setup root, where it runs
    :param env: its environment
    :param timeout: seconds it may take
    :param what: what it does, for the live line and messages
    :raises SisyphusError: when it takes longer than timeout seconds
    """
    with _progress(what):
        process = subprocess.Popen(
            command, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except BaseException as exc:
            stop_process_tree(process)
            if isinstance(exc, subprocess.TimeoutExpired):
                raise SisyphusError(f"{what} took over {round(timeout)} s") from None
            raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


@contextlib.contextmanager
def _progress(what: str) -> Iterator[None]:
    """While the block runs, tell the progress listener (a terminal) each second what is done, and for how long."""
    listener = progress_listener()
    if listener is None:
        yield
        return
    started, done = time.monotonic(), threading.Event()

    def draw() -> None:
        while True:
            listener("pin", f"{what} ({int(time.monotonic() - started)} s)")
            if done.wait(1):
                return

    drawing = threading.Thread(target=draw, daemon=True)
    drawing.start()
    try:
        yield
    finally:
        done.set()
        drawing.join()
        listener("pin", "")
