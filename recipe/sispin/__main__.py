"""``python -m sispin`` is the ``pin`` command."""

from sispin.cli.main import main

raise SystemExit(main())
