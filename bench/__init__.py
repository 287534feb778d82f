"""
sispin's benchmarks, each side by side with the plain way: ``python bench/run.py`` runs them all and prints the
report; each module here is one benchmark (``common`` holds what they share).
"""
