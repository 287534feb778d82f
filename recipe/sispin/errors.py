"""
The one error hierarchy of sispin.

Every error a user can cause is a :class:`PinError`; the CLI prints its message as one line and exits with its
``exit_code``, and config code (Sisyphus) sees it as an ordinary exception with the same one-line message.
"""

from typing import Dict, Optional

__all__ = [
    "EXIT_CODES",
    "PinError",
    "UsageError",
    "LockfileError",
    "UnknownNameError",
    "GitError",
    "GitCommandError",
    "RevisionError",
    "NameConflictError",
    "RefusedMoveError",
    "CheckoutStateError",
    "HashOverwriteError",
    "SisyphusError",
    "FileSystemError",
    "ConcurrentChangeError",
    "FrozenSetError",
    "UnsupportedVersionError",
    "PinnedImportError",
    "StoreError",
]


#: every exit code of ``pin``, with what it means: ``pin --help`` lists them from here, and every error class below
#: carries one of them
EXIT_CODES: Dict[int, str] = {
    0: "ok",
    1: "a check found problems; a merge left conflicts",
    2: "bad command line",
    3: "pin.toml or pin.snapshot.toml missing or invalid",
    4: "unknown set or repository, or a new name that exists already",
    5: "git failed (unreachable remote, unknown or ambiguous revision)",
    6: "a checkout differs from pin.toml",
    7: "a pinned commit hidden from a hash (hash_overwrite)",
    8: "a move that needs --allow-downgrade, --allow-unrelated, --allow-unreachable or --accept-drift",
    9: "the job graph cannot be built (no Sisyphus, a config fails)",
    10: "a file or directory cannot be read or written",
    11: "another process changed the same pins meanwhile (nothing written)",
    12: "the set is frozen (freeze = true: `pin thaw SET` first)",
    13: "the setup's Sisyphus or i6_core is older than sispin supports, or lacks what a pin needs",
    14: "pin check could not see a whole graph: a config waits for unfinished jobs (--accept-waiting)",
    70: "internal error (a bug: pin --debug shows the traceback)",
    130: "interrupted",
}


class PinError(Exception):
    """Base of every error sispin raises on purpose."""

    #: process exit code used by the ``pin`` CLI (listed in EXIT_CODES, ``pin --help`` and docs/commands.md)
    exit_code = 1
    #: more than the one line, shown by ``pin --debug`` (e.g. the traceback of a failing Sisyphus config)
    details: Optional[str] = None


class UsageError(PinError):
    """A command line that parses but does not make sense (like argparse's own errors)."""

    exit_code = 2


class LockfileError(PinError):
    """pin.toml is missing, is not valid TOML, or breaks the version 1 format."""

    exit_code = 3


class UnknownNameError(PinError):
    """An experiment set or repository name that pin.toml does not declare."""

    exit_code = 4


class GitError(PinError):
    """A git operation failed: unreachable remote, unknown commit or revision, broken repository."""

    exit_code = 5


class GitCommandError(GitError):
    """A git command failed; :attr:`reason` is git's own word for why, for a caller that says what it was doing."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        #: the first fatal or error line git wrote (without the prefix), else its last line
        self.reason = reason


class RevisionError(GitError):
    """A tag, branch or SHA that does not exist, or a short SHA that names several commits."""


class NameConflictError(PinError):
    """A name that already exists where a new one is needed (``pin new`` of an existing set)."""

    exit_code = 4


class RefusedMoveError(PinError):
    """A pin move that needs an explicit flag: a downgrade, or a jump to unrelated history."""

    exit_code = 8


class CheckoutStateError(PinError):
    """A checkout on disk is not what pin.toml says (other commit, modified or untracked files)."""

    exit_code = 6


class HashOverwriteError(PinError):
    """A pinned checkout path has ``hash_overwrite`` set, which would drop the commit from every job hash."""

    exit_code = 7


class SisyphusError(PinError):
    """The job graph cannot be built: no Sisyphus checkout, a set without configs, or a config that fails."""

    exit_code = 9


class FileSystemError(PinError):
    """
    A file or directory sispin must read or write cannot be: no permission, a read-only pin.toml, a file where a
    directory belongs, a dangling symlink, a name too long, a full disk.
    """

    exit_code = 10


class ConcurrentChangeError(PinError):
    """Another process changed what this command was about to change; nothing that depended on it was written."""

    exit_code = 11


class FrozenSetError(PinError):
    """A command would move a frozen set's pins, configs or snapshot entry."""

    exit_code = 12


class UnsupportedVersionError(PinError):
    """
    The setup's Sisyphus or i6_core is outside the range sispin supports, or lacks a feature that pin.toml asks for
    (a pin's ``patches`` with an i6_core before they existed): the message names the feature and the first version
    that has it.
    """

    exit_code = 13


class PinnedImportError(PinError):
    """Importing from a pinned checkout cannot be done without mixing two copies of a module."""


class StoreError(FileSystemError):
    """The store cannot be changed: a lockfile cannot be recorded as its user, or a checkout cannot be removed."""
