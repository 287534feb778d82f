"""
What the ``pin`` commands print, through one small layer with three levels: ``--quiet`` keeps a command's results
(the table of ``pin status``, the problems of ``pin check``, an explanation) and its errors, the default adds what
the command did and notes, ``--verbose`` adds the details (every output behind a summary). Results go to stdout,
notes and errors to stderr, each line flushed: git's progress shares the terminal. What a line holds from elsewhere
(a commit subject, a file name, git's own words) reaches the terminal as text only: :func:`sispin.text.visible`.
"""

from __future__ import annotations

__all__ = ["QUIET", "NORMAL", "VERBOSE", "Output"]

import io
import json
import os
import sys
from typing import Any

from sispin.text import visible

QUIET, NORMAL, VERBOSE = 0, 1, 2


class Output:
    """
    Results and narration go to sys.stdout, notes and errors to sys.stderr, each as it is at the time of writing (so
    that a test's capture, or a redirection made after start, gets them).

    :param level: QUIET, NORMAL or VERBOSE
    """

    def __init__(self, level: int = NORMAL):
        self.level = level
        #: the reader of stdout went away (``pin ... | head``): the command runs to its end and exits with its code
        self._closed = False

    @property
    def verbose(self) -> bool:
        """Whether details are shown (``--verbose``)."""
        return self.level >= VERBOSE

    @property
    def quiet(self) -> bool:
        """Whether only results and errors are shown (``--quiet``)."""
        return self.level <= QUIET

    def result(self, text: str = "") -> None:
        """A line of what the command found or answers: shown at every level."""
        self._print(text)

    def info(self, text: str = "") -> None:
        """A line of what the command did: not with ``--quiet``."""
        if self.level >= NORMAL:
            self._print(text)

    def detail(self, text: str) -> None:
        """A line only ``--verbose`` shows."""
        if self.level >= VERBOSE:
            self._print(text)

    def _print(self, text: str) -> None:
        if self._closed:
            return
        stream = sys.stdout
        try:
            print(visible(text), file=stream, flush=True)
        except BrokenPipeError:
            self._closed = True
            # what is still buffered would fail again when Python flushes it at exit
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, stream.fileno())
            except (OSError, ValueError, io.UnsupportedOperation):
                pass  # no file descriptor behind it: nothing is flushed at exit either
            finally:
                os.close(devnull)

    def note(self, text: str) -> None:
        """``pin: note: ...`` on stderr: something the user should know that is no error; not with ``--quiet``."""
        if self.level >= NORMAL:
            print(visible(f"pin: note: {text}"), file=sys.stderr, flush=True)

    def error(self, text: str) -> None:
        """``pin: error: ...`` on stderr, at every level."""
        print(visible(f"pin: error: {text}"), file=sys.stderr, flush=True)

    def json(self, data: Any) -> None:
        """The result as JSON, for scripts (indented: diffs of it stay readable)."""
        self.result(json.dumps(data, indent=2))
