"""
The adoption room (``pin import``): hand-written CloneGitRepositoryJob calls found statically
(:mod:`~sispin.adopt.scan`), and what adopting them into pin.toml means (:mod:`~sispin.adopt.propose`).

It may import :mod:`sispin.lock` and :mod:`sispin.graph` (job ids confirmed by the probe); nothing imports it but
the CLI.
"""
