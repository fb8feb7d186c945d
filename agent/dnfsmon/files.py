"""Files the agent writes or trusts: durable writes and safe opens.

Safety rules (docs/reliability.md, "What a run refuses"):

- The agent's directories (state_dir, store.dir) must be owned by the user
  running dnfsmon and not writable by group or others. A root run in a
  directory owned by the service user is refused: every file root creates
  there would be root-owned and break that user's later runs, and that user
  could plant symlinks for root to follow.
- Every file in them is opened with O_NOFOLLOW (a symlink is refused, never
  followed) and checked with fstat to be a regular file owned by the running
  user; O_NONBLOCK keeps a planted FIFO from hanging the open.
- Secret files: a regular file, not a symlink, with one name (no other hard
  link), owned by the running user or root, mode 0600 or 0400 (no group or
  other bits), at most 64 KiB.
"""

from __future__ import annotations

import errno
import fcntl
import os
import pwd
import stat
import time
from typing import BinaryIO

from .errors import EnvironmentProblem

TEMP_PREFIX = ".tmp-"
SECRET_MAX_BYTES = 64 * 1024
# Flags for every open of a file inside the agent's directories.
SAFE_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def user_name(uid: int) -> str:
    """The user's name, or "uid N" when it has none."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _fix_for_owner(path: str, owner: int) -> str:
    """What to do about a path another user owns. As root it is the agent's own state: run as its
    owner, never take it over (a chown to root would lock the agent's cron runs out)."""
    owner_name = user_name(owner)
    if os.geteuid() == 0:
        return f"run dnfsmon as {owner_name}, its owner: runuser -u {owner_name} -- dnfsmon ..."
    me = user_name(os.geteuid())
    if owner == 0:
        return f"left by a run as root? As root: chown -R {me} {path}"
    return f"run dnfsmon as {owner_name}, or, if {me} runs the agent, as root: chown -R {me} {path}"


def check_directory(path: str, create: bool = True) -> None:
    """Make sure `path` is a directory the running user owns and only it can write.

    Created (mode 0750) when missing and `create`; EnvironmentProblem otherwise,
    naming the path and the fix.
    """
    if create:
        try:
            os.makedirs(path, mode=0o750, exist_ok=True)
        except OSError as error:
            raise EnvironmentProblem(
                f"cannot create directory {path}: {error.strerror}; create it owned by the agent's user "
                f"(install -d -m 750 -o <user> {path})"
            ) from None
    try:
        info = os.lstat(path)
    except OSError as error:
        raise EnvironmentProblem(f"directory {path}: {error.strerror}") from None
    _check_parent(path, info)
    if stat.S_ISLNK(info.st_mode):
        # A symlinked directory chosen by the admin is fine if its target passes the checks
        # (and no other user can replace the link: _check_parent).
        try:
            info = os.stat(path)
        except OSError as error:
            raise EnvironmentProblem(f"directory {path}: {error.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise EnvironmentProblem(f"{path} is not a directory; remove it or point the config elsewhere")
    if info.st_uid != os.geteuid():
        raise EnvironmentProblem(
            f"directory {path} is owned by {user_name(info.st_uid)}, not by this user ({user_name(os.geteuid())}): "
            f"{_fix_for_owner(path, info.st_uid)}"
        )
    if info.st_mode & 0o022:
        raise EnvironmentProblem(
            f"directory {path} has mode {info.st_mode & 0o777:04o}: group or others could plant files there; "
            f"chmod 750 {path}"
        )


def _check_parent(path: str, info: os.stat_result) -> None:
    """Refuse a directory (or a link to one) that another user could replace.

    Whoever can write the directory that holds `path` can rename it and put a
    symlink in its place, pointing at any directory: a run would then check
    and write there (a root run into a root-owned directory of the attacker's
    choosing). So that parent must be owned by this user or root and not
    writable by group or others - or sticky (like /tmp), where only the
    owner of an entry may rename it, and the entry is this user's or root's.
    """
    parent = os.path.dirname(os.path.abspath(path))
    try:
        above = os.stat(parent)
    except OSError as error:
        raise EnvironmentProblem(f"directory {parent}: {error.strerror}") from None
    trusted = (os.geteuid(), 0)
    what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "a directory"
    if above.st_uid not in trusted:
        changer = f"uid {above.st_uid} (its owner)"
    elif above.st_mode & 0o022 and not (above.st_mode & stat.S_ISVTX and info.st_uid in trusted):
        changer = f"its group or others (mode {above.st_mode & 0o777:04o})"
    else:
        return
    raise EnvironmentProblem(
        f"{path} is {what} in {parent}, which {changer} can change: they could replace it with a link to any "
        f"directory for this run to write in; use a directory whose parent only this user or root can write "
        f"(install -d -m 750 -o {os.geteuid()} <dir> under a root-owned directory) and set it in the config"
    )


def open_in_directory(path: str, flags: int, mode: int = 0o640, any_owner: bool = False) -> int:
    """os.open of a file inside a checked directory: no symlink, regular, ours.

    Raises FileNotFoundError when it does not exist (and O_CREAT is not given);
    EnvironmentProblem for anything planted or foreign. `any_owner`: a reader
    that writes nothing (`dnfsmon show`, run by a member of the agent's group)
    takes a file of another owner, still never a link, FIFO or device.
    """
    try:
        fd = os.open(path, flags | SAFE_FLAGS, mode)
    except FileNotFoundError:
        raise
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise EnvironmentProblem(f"{path} is a symbolic link; dnfsmon never follows one there: remove it") from None
        if error.errno == errno.EISDIR:
            raise EnvironmentProblem(f"{path}: Is a directory, not a regular file; remove it") from None
        if error.errno in (errno.EACCES, errno.EPERM):
            raise EnvironmentProblem(
                f"{path}: {error.strerror}: chown it to the user that runs dnfsmon (left by a run as root?), "
                "or set [agent] state_dir / [store] dir to a directory that user owns"
            ) from None
        if error.errno == errno.EROFS:
            raise EnvironmentProblem(
                f"{path}: {error.strerror}: remount it read-write, or set [agent] state_dir / [store] dir elsewhere"
            ) from None
        raise EnvironmentProblem(f"{path}: {error.strerror}; check its owner and mode") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise EnvironmentProblem(f"{path} is not a regular file; remove it (dnfsmon recreates it)")
        if info.st_uid != os.geteuid() and not any_owner:
            raise EnvironmentProblem(
                f"{path} is owned by {user_name(info.st_uid)}, not by this user: {_fix_for_owner(path, info.st_uid)}"
            )
        # O_NONBLOCK only guarded the open; regular files ignore it, but clear it anyway.
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_in_directory(path: str, limit: int, any_owner: bool = False) -> bytes:
    """The bytes of a file inside a checked directory, opened as open_in_directory does.

    FileNotFoundError when absent; EnvironmentProblem when planted, foreign or
    larger than `limit` bytes (what the agent writes there never is: a bigger
    file was not written by it, and reading it whole could exhaust memory).
    """
    with open_for_reading(path, any_owner) as f:
        # The size first; a file that grows while read is cut at limit + 1 bytes anyway.
        too_big = os.fstat(f.fileno()).st_size > limit
        data = b"" if too_big else f.read(limit + 1)
    if too_big or len(data) > limit:
        raise EnvironmentProblem(f"{path} is over {limit} bytes, more than dnfsmon ever writes there: remove it")
    return data


def open_for_reading(path: str, any_owner: bool = False) -> BinaryIO:
    """A buffered binary reader of a file inside a checked directory (a segment read line by line)."""
    return os.fdopen(open_in_directory(path, os.O_RDONLY, any_owner=any_owner), "rb")


def read_secret_file(path: str, what: str) -> str:
    """The text of a secret file, checked (see the module doc); EnvironmentProblem otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | SAFE_FLAGS)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise EnvironmentProblem(
                f"{what} file {path} is a symbolic link; point the config at the file itself"
            ) from None
        raise EnvironmentProblem(f"{what} file {path}: {error.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise EnvironmentProblem(f"{what} file {path} is not a regular file (a FIFO, device or directory)")
        if info.st_uid not in (os.geteuid(), 0):
            raise EnvironmentProblem(
                f"{what} file {path} is owned by uid {info.st_uid}; it must be owned by this user "
                f"(uid {os.geteuid()}) or root"
            )
        if info.st_mode & 0o077:
            raise EnvironmentProblem(
                f"{what} file {path} has mode {info.st_mode & 0o777:04o}; "
                "it must be readable by its owner only (chmod 600)"
            )
        if info.st_nlink > 1:
            # Another name for the same file may be a link planted to a secret root keeps elsewhere
            # (possible where fs.protected_hardlinks is 0): the owner and mode checks pass for it.
            raise EnvironmentProblem(
                f"{what} file {path} has {info.st_nlink} hard links; a secret file must have one name: "
                f"replace it with a copy (cp --preserve=mode)"
            )
        if info.st_size > SECRET_MAX_BYTES:
            raise EnvironmentProblem(f"{what} file {path} is {info.st_size} bytes; a secret is at most 64 KiB")
        data = os.read(fd, SECRET_MAX_BYTES + 1)
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise EnvironmentProblem(f"{what} file {path} is not UTF-8 text") from None


def move_aside(path: str, problem: str) -> str:
    """Rename an unusable file to <path>.bad-<unix time>, keeping it for a post-mortem; the new name.

    os.replace renames a planted link, FIFO or directory itself, never its target.
    EnvironmentProblem (naming `problem`) when it cannot be moved."""
    aside = f"{path}.bad-{int(time.time())}"
    try:
        os.replace(path, aside)
    except OSError as error:
        raise EnvironmentProblem(f"{problem}, and it cannot be moved aside ({error.strerror}): remove it") from None
    return aside


def flock_within(fd: int, seconds: float) -> bool:
    """Take an exclusive flock, waiting at most `seconds`; False when still held by another process."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as error:
            if error.errno not in (errno.EWOULDBLOCK, errno.EACCES):
                raise
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def fsync_dir(path: str) -> None:
    """Make a directory's entries (new, renamed, deleted files) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_stale_temps(directory: str) -> None:
    """Delete temp files a killed writer left behind; call only while holding the run lock."""
    for name in os.listdir(directory):
        if name.startswith(TEMP_PREFIX):
            try:
                os.unlink(os.path.join(directory, name))
            except FileNotFoundError:
                pass


def create_temp(directory: str, prefix: str) -> tuple[int, str]:
    """A new file in `directory` named `prefix` and 16 random hex digits, mode 0600: its descriptor and path.

    What tempfile.mkstemp does (O_EXCL and O_NOFOLLOW, another name on a clash), without importing
    tempfile, which brings shutil, random, bz2 and lzma into every run for this one call."""
    for _ in range(100):
        temp = os.path.join(directory, prefix + os.urandom(8).hex())
        try:
            fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue  # 2**64 names: only a file planted under this very name
        return fd, temp
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", os.path.join(directory, prefix))


def write_atomically(
    path: str, data: bytes, mode: int = 0o640, prefix: str = TEMP_PREFIX, durable: bool = True
) -> None:
    """Replace `path` with `data` so readers see the old or the new file, never a mix.

    Temp file in the same directory (rename is atomic only within one file
    system), fsync the file, rename over the target, fsync the directory.
    Not `durable`: no fsync (two disk flushes saved); the new file survives
    the process being killed, not a power loss.
    The temp file is created with O_EXCL (never through a symlink) and rename replaces a
    planted symlink itself, never its target.
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, temp = create_temp(directory, prefix)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    if durable:
        fsync_dir(directory)


def write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is written: a short write (nearly full disk) is continued, an error raised."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:  # not expected from a regular file; never loop forever
            raise OSError(errno.EIO, "write wrote nothing")
        view = view[written:]
