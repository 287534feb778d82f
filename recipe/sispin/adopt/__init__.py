"""
The adoption room (``pin import``): what a setup's hand-written CloneGitRepositoryJob calls are, found statically
(nothing is executed), and what adopting them into pin.toml means.

Modules: :mod:`~sispin.adopt.source` (what one Python module says statically: its string constants, what its
imports bind, literal values, source text fit to show), :mod:`~sispin.adopt.sites` (what the scan reports: a call
site with its arguments and risks, the overwrites reaching its output, the helpers that make clones),
:mod:`~sispin.adopt.scan` (the calls of one file), :mod:`~sispin.adopt.modules` (the modules a scan reads and the
helper each call names, through the calling file's imports), :mod:`~sispin.adopt.follow` (the scan of files and
directories, with helper calls followed to their clones), :mod:`~sispin.adopt.propose` (which calls become
``exp.repo(NAME)`` with the same job id, and the pin.toml entries that implies), :mod:`~sispin.adopt.setup`
(``--config``: the whole graph the configs build adopted, confirmed by a second build).

It may import :mod:`sispin.lock` and :mod:`sispin.graph` (job ids confirmed by the probe); only :mod:`sispin.ops`
and the CLI import it.
"""
