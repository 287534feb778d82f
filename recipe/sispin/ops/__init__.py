"""
The use cases, one module per ``pin`` command: each is a function that takes what the command line asked for,
does the work through the rooms below, prints nothing and returns a result object — what happened, with what
``--json`` needs. :mod:`sispin.cli` parses the arguments, calls the operation and renders its result (text or JSON);
tests call operations directly and look at their results.

Progress that must be seen while an operation runs (a build of n, a fetch) reaches the CLI through the callbacks
an operation takes, never through printing.

Modules: :mod:`~sispin.ops.verify` (``pin verify``); :mod:`~sispin.ops.upgrade` (``pin upgrade``: the sets chosen, the
moves planned), :mod:`~sispin.ops.upgrade_judge` (what a set's moves change, and the moves refused on it),
:mod:`~sispin.ops.upgrade_write` (the rewrite of pin.toml and the snapshot); :mod:`~sispin.ops.new` (``pin new``);
:mod:`~sispin.ops.configs` (``pin configs``); :mod:`~sispin.ops.freeze` (``pin freeze`` and ``pin thaw``, and the
edit of the freeze flags).

It may import the rooms below it (adopt, graph, git, lock, the config path, text, errors); only the CLI imports it.
"""
