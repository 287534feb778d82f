"""
Progress on a terminal: one line, shared by every repository git is talking to and every graph build, redrawn in
place with the latest progress any of them reported (``returnn_common: Receiving objects:  45% (1234/2742), 1.20 MiB
| 300.00 KiB/s``, ``pin: loading the configs of set 'nn_demo' (4 s)``) and cleared when one is done, so that the
command's own result line takes its place.
"""

from __future__ import annotations

__all__ = ["TerminalProgress"]

import shutil
import threading
from typing import TextIO

from sispin.text import visible


class TerminalProgress:
    """
    A :data:`sispin.git.process.ProgressListener` that draws on a terminal.

    :param stream: the terminal (stderr, where git itself shows progress)
    """

    def __init__(self, stream: TextIO):
        self.stream = stream
        self._shown = 0
        # fetches run side by side: one redraw at a time
        self._drawing = threading.Lock()

    def __call__(self, who: str, line: str) -> None:
        """
        :param who: who is at work (the repository git talks to, ``pin`` for a graph build)
        :param line: its latest progress line; "" when it is done
        """
        # never wider than the terminal: a wrapped line could not be redrawn in place
        width = shutil.get_terminal_size().columns - 1
        # a remote's own words ("remote: ...") are text from outside: an escape sequence in them must not act, and a
        # tab would move the cursor past what the width counts
        text = visible(f"{who}: {line}").replace("\t", " ")[:width] if line else ""
        with self._drawing:
            if not text and not self._shown:
                return  # nothing on the line to clear
            self.stream.write("\r" + text.ljust(self._shown) + ("" if text else "\r"))
            self.stream.flush()
            self._shown = len(text)
