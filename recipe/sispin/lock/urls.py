"""
URL policy: which repository URLs sispin hands to git, how they are shown, when two spellings name one
repository, and the readable name a URL suggests.

The URL in pin.toml is hashed verbatim into every CloneGitRepositoryJob, so nothing here ever rewrites a URL that is
used; these functions only decide, display, compare and name.
"""

from __future__ import annotations

__all__ = ["ALLOWED_SCHEMES", "check_url", "credential_spans", "redact_text", "same_repository", "name_from_url"]

import functools
import os
import re
from typing import List, Optional, Tuple
from urllib.parse import unquote, urlsplit

ALLOWED_SCHEMES = ("https", "ssh", "git", "file")
# git's scp-like syntax: [user@]host:path, where no slash comes before the first colon
_SCP_LIKE_RE = re.compile(r"(?:(?P<user>[^@/:]+)@)?(?P<host>[^@/:]+):(?P<path>.+)")
_SCP_CREDENTIALS_RE = re.compile(r"[^/@]*:[^/@]*@")
# access tokens of the common forges and clouds, by their documented prefixes: secret wherever they appear
_TOKEN_RE = re.compile(
    r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|gl(?:pat|dt|rt|ptt|ft|imt|agent|cbt|oas|soat)-[A-Za-z0-9_-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}|hf_[A-Za-z0-9]{30,}|sk-[A-Za-z0-9_-]{20,})"
)
# the userinfo of a URL anywhere in a text (scheme://USERINFO@), and of git's scp-like form (USER:PASSWORD@host:)
_USERINFO_RE = re.compile(r"(?<![A-Za-z0-9+.-])(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<userinfo>[^\s/@'\"]*)@")
_SCP_USERINFO_RE = re.compile(r"(?<![^\s'\"(=,])(?P<userinfo>[^\s/@:'\"]+:[^\s/@'\"]*)@(?=[^\s/@:'\"]+:)")
# characters a name taken from a URL may keep: those of a pin.toml name
_NAME_UNSAFE_RE = re.compile(r"[^A-Za-z0-9_.-]+")


def _has_credentials(url: str) -> bool:
    scheme, sep, rest = url.partition("://")
    if sep:
        userinfo, at, _ = rest.split("/", 1)[0].rpartition("@")
        if at and (":" in userinfo or scheme.lower() != "ssh"):
            return True
    elif _SCP_CREDENTIALS_RE.match(url):
        return True
    return bool(_TOKEN_RE.search(url))


def credential_spans(text: str) -> List[Tuple[int, int]]:
    """
    Where a text holds something secret-looking: the user:password (or token) part of a URL, in ``scheme://`` or
    scp-like form (an ssh user without password is not secret), and access tokens of the common forges and clouds
    (``ghp_...``, ``glpat-...``, ...) wherever they appear.

    :param text: any text that may reach output
    :return: (start, end) of each secret part, sorted, overlaps merged
    """
    spans = [match.span() for match in _TOKEN_RE.finditer(text)]
    for match in _USERINFO_RE.finditer(text):
        if ":" in match.group("userinfo") or match.group("scheme").lower() != "ssh":
            spans.append(match.span("userinfo"))
    spans += [match.span("userinfo") for match in _SCP_USERINFO_RE.finditer(text)]
    merged: List[Tuple[int, int]] = []
    for start, end in sorted(span for span in spans if span[0] < span[1]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def redact_text(text: str) -> str:
    """:return: text with every part :func:`credential_spans` finds replaced by ``***``, safe to print"""
    for start, end in reversed(credential_spans(text)):
        text = text[:start] + "***" + text[end:]
    return text


def check_url(url: str) -> Optional[str]:
    """
    Decide whether a repository URL is safe to hand to git.

    Allowed are the https, ssh, git and file transports and git's scp-like ``user@host:path``; refused are git's
    ``transport::address`` helpers (``ext::`` runs commands), anything git could read as an option, and
    credentials embedded in the URL, a user:password or an access token anywhere in it (they would be hashed into
    job ids and printed in logs). A URL with credentials is refused before anything else, and no message repeats
    it.

    :param url: the URL as written in pin.toml
    :return: None when acceptable, else the problem (one phrase)
    """
    if _has_credentials(url):
        return (
            "the URL embeds credentials (user:password@, or an access token); use a git credential helper or ssh "
            "keys instead"
        )
    if url.startswith("-"):
        return f"{url!r} starts with '-' (git would read it as an option)"
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        return f"{url!r} contains whitespace or control characters"
    if "::" in url.split("/", 1)[0]:
        return f"{url!r} uses a git remote helper ('transport::'), which is not allowed"
    if "://" in url:
        try:
            parts = urlsplit(url)
            hostname = parts.hostname
        except ValueError:
            return f"{url!r} is not a valid URL"
        if parts.scheme not in ALLOWED_SCHEMES:
            return f"{url!r}: transport {parts.scheme!r} is not allowed (use {', '.join(ALLOWED_SCHEMES)})"
        if parts.scheme == "file":
            if parts.netloc or not parts.path.startswith("/"):
                return f"{url!r}: a file URL must be absolute (file:///path/to/repo)"
        elif not hostname:
            return f"{url!r} has no host"
        return None
    if _SCP_LIKE_RE.fullmatch(url):
        return None
    return f"{url!r} is not a URL (use https://, ssh://, git://, file:///abs/path or user@host:path)"


def same_repository(url_a: str, url_b: str) -> bool:
    """
    Whether two URLs name one repository, whatever spelling git and the forges accept for it. This is the one
    identity every comparison of repositories uses (lockfile validation, the graph guard, ``pin import``, ``pin
    why``); the URL that is hashed is never rewritten by it.

    Equal up to: the transport and user (``https://``, ``ssh://git@``, ``git://``, scp-like ``git@host:path``,
    ``https://user@host``), the port, host case, percent-escapes, repeated and trailing slashes, dot segments
    (``/./``, ``/../``), any number of trailing ``.git``, for a local repository the symlinks on its path; on
    github.com and gitlab.com (``www.`` dropped) also the case of the path, which those forges ignore. Elsewhere
    paths keep their case: a server may tell ``Repo`` from ``repo``.

    :param url_a: a repository URL
    :param url_b: another
    :return: whether both name the same repository
    """
    return url_a == url_b or _identity(url_a) == _identity(url_b)


#: forges whose owner and repository names are case-insensitive (and reachable with ``www.`` in front)
_CASE_INSENSITIVE_FORGES = ("github.com", "gitlab.com")


@functools.lru_cache(maxsize=4096)  # a graph compares its clones' few URLs thousands of times
def _identity(url: str) -> Tuple[str, str]:
    """:return: (host, path) of a URL as :func:`same_repository` compares them"""
    text = url.strip()
    scheme, sep, rest = text.partition("://")
    scp = None if sep else _SCP_LIKE_RE.fullmatch(text)
    if sep:
        authority, _, path = rest.partition("/")
        host = "" if scheme.lower() == "file" else authority
    elif scp is not None:
        host, path = scp.group("host"), scp.group("path")
    else:  # a local path: git's own spelling of file:///path
        host, path = "", text
    host = unquote(host.rpartition("@")[2])
    # the port is not identity: a forge serves one repository over ssh on one port and https on another
    host = host[: host.index("]") + 1] if host.startswith("[") and "]" in host else host.split(":", 1)[0]
    host = host.lower()
    if host.startswith("www.") and host[4:] in _CASE_INSENSITIVE_FORGES:
        host = host[4:]
    parts: List[str] = []
    for part in unquote(path).split("/"):
        if part == "..":
            parts = parts[:-1]  # as git and a server read a path: dot segments resolved
        elif part not in ("", "."):
            parts.append(part)
    path = "/".join(parts)
    if not host and os.path.exists("/" + path):
        path = os.path.realpath("/" + path).lstrip("/")  # a local repository: through its symlinks, the one it is
    while path.endswith(".git"):
        path = path[:-4].rstrip("/")
    return host, path.lower() if host in _CASE_INSENSITIVE_FORGES else path


def name_from_url(url: str) -> str:
    """
    :param url: a repository URL
    :return: the name its last path segment suggests (``.git`` dropped), reduced to the characters a pin.toml name
        may use, e.g. ``returnn_common`` for ``https://github.com/rwth-i6/returnn_common.git``; ``repo`` when nothing
        is left
    """
    tail = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    tail = tail[:-4] if tail.endswith(".git") else tail
    return _NAME_UNSAFE_RE.sub("_", tail).strip("_.-") or "repo"
