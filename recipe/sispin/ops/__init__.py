"""
The use cases, one module per ``pin`` command: each is a function that takes what the command line asked for,
does the work through the rooms below, prints nothing and returns a result object — what happened, with what
``--json`` needs. :mod:`sispin.cli` parses the arguments, calls the operation and renders its result (text or JSON);
tests call operations directly and look at their results.

Progress that must be seen while an operation runs (a build of n, a fetch) reaches the CLI through the callbacks
an operation takes, never through printing.

Modules, each the use case of the command of its name: :mod:`~sispin.ops.check`, :mod:`~sispin.ops.configs`,
:mod:`~sispin.ops.commit` (``--commit`` of the commands that write pin.toml),
:mod:`~sispin.ops.explain`, :mod:`~sispin.ops.freeze` (``pin freeze`` and ``pin thaw``, and the edit of the freeze
flags), :mod:`~sispin.ops.gc`, :mod:`~sispin.ops.import_pins` (with :mod:`~sispin.ops.import_setup`, its
``--config`` part), :mod:`~sispin.ops.merge_driver`, :mod:`~sispin.ops.new`, :mod:`~sispin.ops.run`,
:mod:`~sispin.ops.snapshot`, :mod:`~sispin.ops.status`, :mod:`~sispin.ops.sync`, :mod:`~sispin.ops.upgrade` (the
sets chosen, the moves planned) with :mod:`~sispin.ops.upgrade_judge` (what a set's moves change, and the moves
refused on it) and :mod:`~sispin.ops.upgrade_write` (the one rewrite of pin.toml and the snapshot),
:mod:`~sispin.ops.verify`, :mod:`~sispin.ops.why`; and :mod:`~sispin.ops.move_builds`, the builds of a set at its
pins and with moves made that ``pin upgrade`` and ``pin status --changes`` judge a move on.

It may import the rooms below it (adopt, graph, git, lock, the config path, text, errors); only the CLI imports it.
"""
