"""What a file is besides its bytes: owner, group, mode and extended attributes (ACLs too).

A rewrite gives the path a new inode (written beside it, renamed over it), so all of this is
copied from the old inode onto the new one before the rename (issues 21.2 and 22.9): a session
of ``nobody:nogroup 0640`` rewritten by root stays ``nobody:nogroup 0640``; POSIX ACLs are the
``system.posix_acl_access`` attribute and come along with the others. The order matters: the
owner first (a change of owner clears set-id bits), then the attributes, then the mode (which
sets an ACL's mask to the group bits, as the old file had them).

When a strict copy cannot keep something (the owner, for a user who may not give files away),
the rewrite is refused rather than done with the file changed; ``security.*`` attributes are
the exception: the system labels every new file itself, and a process may not always set them.
"""

from __future__ import annotations

import errno
import os
import pwd
import stat
from dataclasses import dataclass

from ..errors import OutputError

_NOT_SUPPORTED = (errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENODATA)


@dataclass(frozen=True)
class Metadata:
    uid: int
    gid: int
    mode: int  # the permission bits, set-id and sticky bits included
    xattrs: tuple[tuple[str, bytes], ...] = ()

    @classmethod
    def of(cls, file: int | str) -> Metadata:
        """The metadata of an open file (a descriptor) or of the file at a path."""
        status = os.stat(file)
        return cls(status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode), _xattrs(file))

    def apply(self, fd: int, label: str, strict: bool = True) -> None:
        """Give the open file ``fd`` this metadata; with ``strict``, an OutputError naming
        ``label`` if any of it cannot be kept (nothing is renamed then)."""
        status = os.fstat(fd)
        if (status.st_uid, status.st_gid) != (self.uid, self.gid):
            try:
                os.fchown(fd, self.uid, self.gid)
            except OSError as error:
                if strict:
                    raise OutputError(
                        f"{label}: cannot keep its owner ({_owner(self.uid, self.gid)}): "
                        f"{error.strerror}; left as is (run as its owner or as root)"
                    ) from None
        for name, value in self.xattrs:
            try:
                os.setxattr(fd, name, value)
            except OSError as error:
                if strict and not name.startswith("security."):
                    raise OutputError(
                        f"{label}: cannot keep its extended attribute {name}: "
                        f"{error.strerror}; left as is"
                    ) from None
        os.fchmod(fd, self.mode)


def _xattrs(file: int | str) -> tuple[tuple[str, bytes], ...]:
    try:
        names = os.listxattr(file)
    except OSError as error:
        if error.errno in _NOT_SUPPORTED:
            return ()
        raise
    found = []
    for name in sorted(names):
        try:
            found.append((name, os.getxattr(file, name)))
        except OSError as error:  # removed meanwhile, or not ours to read (trusted.*)
            if error.errno not in (*_NOT_SUPPORTED, errno.EPERM, errno.EACCES):
                raise
    return tuple(found)


def _owner(uid: int, gid: int) -> str:
    import grp

    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    try:
        group = grp.getgrgid(gid).gr_name
    except KeyError:
        group = str(gid)
    return f"{user}:{group}"
