"""
The setup's own history: the setup directory as it was at a revision of the git repository that holds it, written
out from git's objects through a temporary index (never the user's), each file the working tree holds byte for byte
as committed a hard link to it, so that an old graph can be built again without touching the user's index or
worktree list, nor any file of the working tree (a build reads its configs and recipes; it writes none of them).
"""

from __future__ import annotations

__all__ = ["setup_revision", "export_setup", "check_committable", "commit_files"]

import os
from pathlib import Path, PurePosixPath
from typing import List, Optional, Sequence, Tuple

from sispin.errors import GitCommandError, GitError, RevisionError
from sispin.git.process import RawAnswer, read_git, read_git_raw, write_git


def setup_revision(root: Path, revision: str) -> Tuple[Path, str]:
    """
    :param root: the setup directory (where pin.toml is), inside a git repository
    :param revision: any revision git names a commit by (``HEAD~1``, ``main``, a tag, a SHA)
    :return: the top of the repository, and the commit the revision names
    :raises RevisionError: when the setup is in no git repository, or the revision names no commit
    """
    try:
        top = Path(read_git(root, "rev-parse", "--show-toplevel"))
    except GitCommandError:
        raise RevisionError(f"{root} is in no git repository: --against needs the setup's history") from None
    try:
        commit = read_git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}")
    except GitCommandError:
        raise RevisionError(f"no commit {revision!r} in the setup's repository ({top})") from None
    return top, commit


def export_setup(root: Path, revision: str, target: Path) -> Path:
    """
    :param root: the setup directory (where pin.toml is), inside a git repository
    :param revision: any revision git names a commit by (``HEAD~1``, ``main``, a tag, a SHA)
    :param target: an empty directory to work in
    :return: the setup directory as it was at the revision, under target
    :raises RevisionError: when the setup is in no git repository, or the revision names no commit
    """
    top, commit = setup_revision(root, revision)
    prefix = root.resolve().relative_to(top.resolve()).as_posix()
    tree = commit if prefix == "." else f"{commit}:{prefix}"
    # a temporary index of the commit's tree, checked out into target: every file as committed (git archive would
    # leave out what .gitattributes marks export-ignore, and the setup's current file would stand in for it), those
    # the working tree holds as committed as links to them
    index = target / ".sispin-index"
    files = target / "setup"
    try:
        # the index named by GIT_INDEX_FILE, not --index-output: that one is written as the repository's index.lock and
        # moved, which fails where the temporary directory is on another filesystem (a cluster's local TMPDIR) and
        # takes the user's index lock
        write_git(root, "read-tree", "--end-of-options", tree, env={"GIT_INDEX_FILE": str(index)})
        rest = _link_unchanged(root, top, (commit, tree), files)
        if rest is None:
            write_git(top, "checkout-index", "--all", f"--prefix={files}{os.sep}", env={"GIT_INDEX_FILE": str(index)})
        elif rest:
            paths = "".join(f"{path}\0" for path in rest)
            prefixed = f"--prefix={files}{os.sep}"
            write_git(top, "checkout-index", "--stdin", "-z", prefixed, stdin=paths, env={"GIT_INDEX_FILE": str(index)})
    except GitCommandError as exc:
        raise RevisionError(f"{revision}: the setup directory {prefix} is not in that commit ({exc.reason})") from None
    finally:
        index.unlink(missing_ok=True)
    return files


#: the modes of files a checkout writes as their blob's bytes (not a symlink, 120000, nor a submodule, 160000)
_REGULAR = (b"100644", b"100755")
#: the attributes by which a checkout writes other bytes than the blob's
_CONVERTING = ("text", "eol", "filter", "ident", "working-tree-encoding")


def _link_unchanged(root: Path, top: Path, revision: Tuple[str, str], files: Path) -> Optional[List[str]]:
    """
    Hard-link into the revision's copy every file the working tree holds exactly as git would check it out of the
    revision (writing i6_experiments' 8,575 files took seconds, linking them a fraction): a regular file whose blob
    and mode the revision and the working tree share (``git diff REV`` names it not), that the index neither assumes
    unchanged nor skips, and that no attribute or setting converts on checkout (the bytes are the blob's). A link is
    the file itself in the copy: a path resolved from it (``realpath(__file__)``) stays in the copy, as a checkout's.
    Its one trace is the linked files' ctime: git's index no longer vouches for them by their stat data, so the next
    ``git diff`` or ``git status`` reads their content once.

    :param top: the top of the repository, where the checkout runs (and looks its files' attributes up)
    :param revision: the revision's commit, and its tree of the setup directory
    :return: the revision's files still to be written (relative to the setup root), or None for all of them (nothing
        linked: a conversion may apply to every file, a name is not UTF-8, or the copy is on another filesystem)
    """
    commit, tree = revision
    try:
        entries = [
            line.split(b"\t", 1) for line in _lines(read_git_raw(root, "ls-tree", "-r", "-z", "--full-tree", tree))
        ]
        if not _converts_nothing(root, commit):
            return None
        # by content where the index's stat data cannot vouch for a file (as after an earlier export linked it: a link
        # changes the file's ctime), the index left as it is
        changed = set(_lines(read_git_raw(root, "diff", "--name-only", "-z", "--no-renames", "--relative", commit)))
        # assumed unchanged (a lowercase tag) or skipped (S): the file is not what git has
        index = _lines(read_git_raw(root, "ls-files", "-s", "-v", "-z"))
        flagged = {line.split(b"\t", 1)[1] for line in index if line[:2] != b"H "}
        names = [name.decode("utf-8") for _, name in entries]
        candidates = [
            name.decode("utf-8")
            for info, name in entries
            if info.split(b" ", 1)[0] in _REGULAR and name not in changed and name not in flagged
        ]
        chosen = set(_plain(top, candidates))
    except (UnicodeDecodeError, GitCommandError):
        return None
    rest = [name for name in names if name not in chosen]
    made = set()
    for number, name in enumerate(sorted(chosen)):
        folder = os.path.dirname(name)
        if folder not in made:
            os.makedirs(os.path.join(files, folder), exist_ok=True)
            made.update(str(parent) for parent in PurePosixPath(name).parents)
        try:
            os.link(os.path.join(root, name), os.path.join(files, name))
        except OSError:
            if number == 0:
                return None  # on another filesystem (or links refused): every file is written
            rest.append(name)
    return rest


def _lines(answer: RawAnswer) -> List[bytes]:
    """:return: the NUL-separated lines of what git printed"""
    if answer.code != 0:
        raise GitCommandError(answer.reason, answer.reason)
    return [line for line in answer.stdout.split(b"\0") if line]


def _converts_nothing(root: Path, commit: str) -> bool:
    """
    :return: whether no setting converts what a checkout writes (line endings, file modes not followed), and the
        revision holds no attributes file (a checkout reads the index's first: the revision's, which ``check-attr``
        does not see)
    """
    # autocrlf: true converts on checkout; input, on commit only, makes a CRLF file of the working tree diff as its LF
    # blob (then the file is not what a checkout writes)
    autocrlf = read_git_raw(root, "config", "--get", "core.autocrlf")
    if autocrlf.code == 0 and autocrlf.stdout.strip().lower() not in (b"false", b"no", b"off", b"0", b""):
        return False
    if read_git_raw(root, "config", "--bool", "--get", "core.filemode").stdout.strip() == b"false":
        return False
    listed = _lines(read_git_raw(root, "ls-tree", "-r", "-z", "--name-only", "--full-tree", commit))
    return not any(name.rsplit(b"/", 1)[-1] == b".gitattributes" for name in listed)


def _plain(top: Path, names: Sequence[str]) -> List[str]:
    """
    :param names: files of the setup directory, as the temporary index names them (relative to the setup directory)
    :return: those no attribute converts on checkout (the working tree's, the repository's, the user's), looked up
        where the checkout looks them up (in the top folder, by those names)
    """
    if not names:
        return []
    asked = read_git_raw(
        top, "check-attr", "-z", "--stdin", *_CONVERTING, stdin="".join(f"{n}\0" for n in names).encode()
    )
    fields = _lines(asked)
    converted = {fields[i].decode("utf-8") for i in range(0, len(fields) - 2, 3) if fields[i + 2] != b"unspecified"}
    return [name for name in names if name not in converted]


def _top(root: Path) -> Path:
    try:
        return Path(read_git(root, "rev-parse", "--show-toplevel"))
    except GitError:
        raise GitError(f"--commit: {root} is in no git repository") from None


def _names(top: Path, files: Sequence[Path]) -> List[str]:
    """:return: the files (through symlinks) relative to the repository's top"""
    names = []
    for file in files:
        real = os.path.realpath(file)
        if not real.startswith(os.path.join(os.path.realpath(top), "")):
            raise GitError(f"--commit: {file} is outside the repository {top}")
        names.append(os.path.relpath(real, os.path.realpath(top)))
    return names


def check_committable(root: Path, files: Sequence[Path]) -> None:
    """
    Before a command writes with ``--commit``: the setup is in a repository, and its files hold no changes that are
    not committed (they would go into the commit under the command's message).

    :raises GitError: saying which
    """
    top = _top(root)
    names = _names(top, [file for file in files if os.path.lexists(file)])
    changed = [
        line[3:] for line in read_git(top, "status", "--porcelain", "--", *names).splitlines() if line[:2] != "??"
    ]
    if names and changed:
        raise GitError(
            f"--commit: {', '.join(changed)} has changes not committed: commit them first, or leave out --commit"
        )
    # an ignored file that git does not track would never be committed: say so, not "nothing to commit"
    tracked = set(read_git(top, "ls-files", "--", *names).splitlines()) if names else set()
    untracked = [name for name in names if name not in tracked]
    ignored = _ignored_by_git(top, untracked)
    if ignored:
        raise GitError(
            f"--commit: {', '.join(ignored)} is ignored by git (`git check-ignore -v {ignored[0]}` says why): add it "
            "once with `git add -f`, or leave out --commit"
        )


def _ignored_by_git(top: Path, names: Sequence[str]) -> List[str]:
    """:return: those of the files (relative to the repository's top) that git ignores"""
    if not names:
        return []
    answer = read_git_raw(top, "check-ignore", "--stdin", "-z", stdin="\0".join(names).encode())
    # 1: none is ignored; 0: some are (listed)
    if answer.code not in (0, 1):
        raise GitError(f"git check-ignore in {top} failed: {answer.reason}")
    return [name for name in answer.stdout.decode().split("\0") if name]


def commit_files(root: Path, files: Sequence[Path], summary: str, body: Sequence[str] = ()) -> Optional[str]:
    """
    Commit exactly these files of the setup as they are on disk (``git commit --only``): whatever else is staged
    stays staged and out of the commit, and a refused commit leaves the index as it was. The repository's hooks run
    as for any commit.

    :param root: the setup directory, inside a git repository
    :param files: files below it that exist (new ones are added; symlinks are followed)
    :param summary: the message's first line
    :param body: the lines after it
    :return: the new commit's SHA, or None when the files are as committed already
    :raises GitError: when the setup is in no git repository, or git refuses the commit (its reason)
    """
    top = _top(root)
    names = _names(top, files)
    if not read_git(top, "status", "--porcelain", "--", *names):
        return None
    new = [name for name in names if not read_git(top, "ls-files", "--", name)]
    text = "\n".join([summary, "", *body]) if body else summary
    try:
        if new:
            write_git(top, "add", "--intent-to-add", "--", *new)
        write_git(top, "commit", "--only", "--quiet", "-m", text, "--", *names)
    except GitError as exc:
        if new:
            write_git(top, "reset", "--quiet", "--", *new)
        raise GitError(f"--commit: {exc} (the files are written; nothing was committed)") from None
    return read_git(top, "rev-parse", "HEAD")
