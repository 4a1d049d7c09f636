#!/usr/bin/env python3
"""A filesystem that keeps its files in memory but claims a block device,
for the tests of the device-counter proof (issue 8, item 8).

    memory_fuse.py MOUNTPOINT DEVICE

mounts a FUSE filesystem whose mount source (``fsname``) is DEVICE, say
``/dev/loop5``, as a filesystem stored on that device would be. Every file
lives in this process's memory: nothing written to the filesystem ever
reaches DEVICE, just as a cache in front of a disk (ZFS's ARC, a page
cache, a filesystem that ignores O_DIRECT) can keep I/O from it. A
benchmark that trusts the filesystem would time memory and call it the
disk; the device's own I/O counters tell the truth.

A file unlinked while open (a scratch file) is renamed by libfuse to a
hidden name and removed when it is closed, as FUSE filesystems do. The process runs in the
foreground until unmounted or sent SIGINT/SIGTERM.
"""

import errno
import stat
import sys
import threading
import time

try:
    import fusepy as fuse
except ImportError:
    try:
        import fuse
    except ImportError:
        sys.exit("memory_fuse: fusepy is missing: apt-get install python3-fusepy")


class Node:
    def __init__(self, mode):
        self.mode = mode
        self.data = bytearray()
        self.links = 1


class MemoryFs(fuse.Operations):
    def __init__(self):
        self.mutex = threading.Lock()
        self.paths = {"/": Node(stat.S_IFDIR | 0o755)}
        self.handles = {}
        self.next_fh = 1
        self.now = time.time()

    def _node(self, path, fh=None):
        if fh is not None and fh in self.handles:
            return self.handles[fh]
        try:
            return self.paths[path]
        except KeyError:
            raise fuse.FuseOSError(errno.ENOENT)

    def getattr(self, path, fh=None):
        with self.mutex:
            node = self._node(path, fh)
            return {"st_mode": node.mode, "st_size": len(node.data), "st_nlink": node.links,
                    "st_uid": 0, "st_gid": 0, "st_atime": self.now, "st_mtime": self.now,
                    "st_ctime": self.now, "st_blksize": 4096}

    def readdir(self, path, fh):
        with self.mutex:
            names = [p[1:] for p in self.paths if p != "/" and p.count("/") == 1]
        return [".", ".."] + names

    def _open_node(self, node):
        fh = self.next_fh
        self.next_fh += 1
        self.handles[fh] = node
        return fh

    def create(self, path, mode, fi=None):
        with self.mutex:
            node = Node(stat.S_IFREG | (mode & 0o7777))
            self.paths[path] = node
            return self._open_node(node)

    def open(self, path, flags):
        with self.mutex:
            return self._open_node(self._node(path))

    def release(self, path, fh):
        with self.mutex:
            self.handles.pop(fh, None)
        return 0

    def rename(self, old, new):
        # libfuse renames a file unlinked while open to .fuse_hiddenNNN and
        # removes it when it is closed.
        with self.mutex:
            self.paths[new] = self.paths.pop(old)

    def unlink(self, path):
        with self.mutex:
            self._node(path).links = 0
            del self.paths[path]

    def read(self, path, size, offset, fh):
        with self.mutex:
            data = self._node(path, fh).data
            return bytes(data[offset:offset + size])

    def write(self, path, data, offset, fh):
        with self.mutex:
            buf = self._node(path, fh).data
            if offset > len(buf):
                buf.extend(b"\0" * (offset - len(buf)))
            buf[offset:offset + len(data)] = data
            return len(data)

    def truncate(self, path, length, fh=None):
        with self.mutex:
            buf = self._node(path, fh).data
            if length < len(buf):
                del buf[length:]
            else:
                buf.extend(b"\0" * (length - len(buf)))

    def flush(self, path, fh):
        return 0

    def fsync(self, path, datasync, fh):
        # "Durable" at once: nothing is ever written to the device.
        return 0

    def statfs(self, path):
        blocks = (8 << 30) // 4096
        return {"f_bsize": 4096, "f_frsize": 4096, "f_blocks": blocks, "f_bfree": blocks,
                "f_bavail": blocks, "f_namemax": 255}


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    mountpoint, device = argv[1], argv[2]
    sys.stderr.write("memory_fuse: serving %s as if stored on %s\n" % (mountpoint, device))
    sys.stderr.flush()
    fuse.FUSE(MemoryFs(), mountpoint, foreground=True, big_writes=True, fsname=device, subtype="memory")


if __name__ == "__main__":
    main(sys.argv)
