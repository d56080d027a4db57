"""The one way driftscan asks git about a repository it audits (docs/git-access.md).

An audited repository is data, never instructions: its ``.git/config`` may name commands
(``core.fsmonitor``, ``diff.external``, textconv, clean/smudge/process filters, pagers, hooks,
credential and ssh helpers), include other files, or point git at files outside the tree, and
any of its files may be a FIFO. So git never reads the repository's own configuration:

- every call runs with a private ``GIT_DIR`` in a temporary directory outside the audited tree.
  Its ``config`` is written here: only inert keys (``WHITELIST``) taken from the real config,
  which is read with ``fileio.read_regular`` and parsed here (``parse_config``; includes are
  never followed). Its ``HEAD`` and refs are resolved here in Python and written as plain
  data; its ``objects`` holds symlinks to the real object
  directories (so the real ``objects/info/alternates`` is never read: a repository that borrows
  objects from elsewhere is refused); ``GIT_INDEX_FILE`` is the real index, ``GIT_WORK_TREE``
  the real work tree; ``info/exclude`` and ``info/attributes`` are copied;
- the environment is built from nothing (no inherited ``GIT_*``): no system or global config,
  an empty ``HOME``, no pager, no prompts, no lazy fetch, no replace objects, no protocols;
- ``-c`` switches off fsmonitor, hooks and the global attributes and excludes files;
- stdin is /dev/null, and every call has a timeout: the process group is killed and the caller
  reports "git did not answer within N s" for that tree (a FIFO ``.gitignore`` is read by git).

Before anything runs, ``open_repository`` refuses (``GitRefused`` → "unverifiable") a ``.git``
that is a file or a symlink (its repository lives elsewhere), a repository or work tree owned by
a uid other than the allowed ones (git's ``safe.directory`` rule, which an explicit ``GIT_DIR``
would bypass), a bare repository, and repository formats this package does not understand.

One module a job (each imports only those above it in this list; this file only re-exports):

- ``errors``: ``GitRefused`` / ``NotARepository`` (not read), ``GitFailed`` / ``GitTimeout`` (git failed or hung);
- ``files``: reading the real ``.git``'s files as data, refusing one that is not a regular file;
- ``config``: the real ``config`` parsed and checked, cut down to ``WHITELIST``;
- ``excludes``: the ignore files other than ``.gitignore`` (the repository's ``core.excludesFile``,
  the user's global one), handed to git as data;
- ``refs``: HEAD, refs, ``packed-refs`` and the reflog, read here; ``valid_ref``;
- ``process``: running git (``-c`` switches, the environment, the timeout, killing the group);
- ``privatedir``: the private ``GIT_DIR`` made, filled and removed;
- ``repository``: ``open_repository`` (every refusal) and ``Repository``; ``find_repository``, ``uids_of``.
"""

from __future__ import annotations

from .config import parse_config
from .errors import GitFailed, GitRefused, GitTimeout, GitWouldBlock, NotARepository
from .process import TIMEOUT, git_executable, timeout
from .refs import RefLogEntry, valid_ref
from .repository import Repository, find_repository, open_repository, uids_of

__all__ = ["TIMEOUT", "GitFailed", "GitRefused", "GitTimeout", "GitWouldBlock", "NotARepository", "RefLogEntry", "Repository",
           "find_repository", "git_executable", "open_repository", "parse_config", "timeout", "uids_of", "valid_ref"]
