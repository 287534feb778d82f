"""
The ``pin`` command line, the only room that prints: one module per subcommand (each with ``add_parser`` and
``run(args, out) -> int``), the options every command shares defined once (:mod:`~sispin.cli.options`), and one
output layer with the levels ``--quiet``, default and ``--verbose`` (:mod:`~sispin.cli.output`).

It may import every other room; nothing imports it. :mod:`~sispin.cli.main` imports only the module of the command
it runs, so each command pays only for what it uses.
"""
