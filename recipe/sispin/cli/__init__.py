"""
The ``pin`` command line, the only room that prints: it parses arguments, calls the operation of :mod:`sispin.ops`
and renders its result (text, or ``--json``), nothing else.

- :mod:`~sispin.cli.main`: the entry point: parsing, the one-line errors, the exit codes;
- :mod:`~sispin.cli.commands`: every command as it is typed, with its module and its line in ``pin --help``;
- :mod:`~sispin.cli.options`: the options every command shares, defined once;
- :mod:`~sispin.cli.parser`: the parser: one-line errors, examples at the end of a command's help;
- :mod:`~sispin.cli.output`: one output layer with the levels ``--quiet``, default and ``--verbose``;
- :mod:`~sispin.cli.progress`: git's progress on a terminal;
- one module per subcommand, each with ``add_parser``, ``run(args, out) -> int`` and its renderer:
  :mod:`~sispin.cli.check`, :mod:`~sispin.cli.configs`, :mod:`~sispin.cli.explain`, :mod:`~sispin.cli.freeze`,
  :mod:`~sispin.cli.gc`, :mod:`~sispin.cli.help`, :mod:`~sispin.cli.import_pins` (with
  :mod:`~sispin.cli.import_setup`, the report of ``--config``), :mod:`~sispin.cli.merge_driver`,
  :mod:`~sispin.cli.new`, :mod:`~sispin.cli.run`, :mod:`~sispin.cli.snapshot`, :mod:`~sispin.cli.status`,
  :mod:`~sispin.cli.sync`, :mod:`~sispin.cli.thaw`, :mod:`~sispin.cli.upgrade` (with
  :mod:`~sispin.cli.upgrade_report`, what it says of each set's moves, and
  :mod:`~sispin.cli.upgrade_json`, the same as one JSON document),
  :mod:`~sispin.cli.verify`, :mod:`~sispin.cli.why`.

It may import every other room; nothing imports it. :mod:`~sispin.cli.main` imports only the module of the command
it runs, so each command pays only for what it uses.
"""
