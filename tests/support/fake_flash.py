#!/usr/bin/env python3
"""A fake-capacity card, for the verify-capacity tests (docs/testing.md, docs/verify-capacity.md).

Serves one file, ``disk.img``, over FUSE with direct I/O, so that every read
and write reaches this process and the page cache hides nothing. Behind
``losetup --direct-io=on MOUNT/disk.img`` it is a block device that claims
ANNOUNCED bytes and really holds REAL:

    fake_flash.py MOUNTPOINT BACKING ANNOUNCED REAL MODE [OPTION ...]

BACKING is made here: REAL bytes of random data (the card's "user data").
Sizes are bytes, or with a K, M or G suffix (powers of 1024). MODE says what
happens past REAL, in the terms of f3 (its libdevs.c):

    genuine      REAL == ANNOUNCED, an honest card
    wrap         address modulo REAL: writes past it overwrite the start
    limbo-00     writes past REAL vanish; reads there give zeros
    limbo-ff     ... reads give 0xFF bytes
    limbo-stale  ... reads give the same old junk, whatever was written
    chain=WRAP   address modulo WRAP (REAL < WRAP < ANNOUNCED); past REAL
                 below WRAP, limbo (zeros)
    eio          reads and writes past REAL fail with EIO

OPTIONs (NAME=VALUE), also accepted later through the file ``ctl``:

    cache=BYTES         a FIFO write cache of that many bytes in front of
                        everything: a read of a sector among the last
                        BYTES written returns what was written, even where
                        the write itself vanished (a masking cache)
    pause-at=OP:N       the N-th OP (read or write) from now blocks until
                        ``resume`` is written to ctl; logged as "paused at"
    resume              lets a paused request go on

The file ``stats`` reads as JSON: requests and bytes read and written.
Everything is logged on stderr. The process runs in the foreground until
unmounted or sent SIGINT or SIGTERM.

fusepy comes from Debian's python3-fusepy (module ``fusepy``) or from pip
(module ``fuse``); both are tried.
"""

import collections
import errno
import hashlib
import json
import os
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
        sys.exit("fake_flash: fusepy is missing: apt-get install python3-fusepy "
                 "(and run this with /usr/bin/python3), or pip install fusepy")

DISK, CTL, STATS = "/disk.img", "/ctl", "/stats"
SECTOR = 512


def parse_size(text):
    text = text.strip()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    if scale != 1:
        text = text[:-1]
    return int(text) * scale


def log(message):
    sys.stderr.write("fake_flash: %s\n" % message)
    sys.stderr.flush()


class Geometry:
    """Where an address lives: ('real', physical), ('limbo', None) or ('eio', None)."""

    def __init__(self, announced, real, mode):
        self.announced, self.real = announced, real
        self.wrap = None
        self.fill = b"\0"
        self.stale = False
        name, _, value = mode.partition("=")
        self.mode = name
        if name == "genuine":
            if real != announced:
                raise ValueError("genuine wants REAL == ANNOUNCED")
        elif name == "wrap":
            self.wrap = real
        elif name == "limbo-00":
            pass
        elif name == "limbo-ff":
            self.fill = b"\xff"
        elif name == "limbo-stale":
            self.stale = True
        elif name == "chain":
            self.wrap = parse_size(value)
            if not real < self.wrap < announced:
                raise ValueError("chain=WRAP wants REAL < WRAP < ANNOUNCED")
        elif name == "eio":
            pass
        else:
            raise ValueError("unknown mode %r" % mode)

    def pieces(self, offset, length):
        """Splits [offset, offset+length) into runs that map the same way."""
        end = offset + length
        while offset < end:
            if self.wrap is not None:
                base = offset - offset % self.wrap
                inner = offset - base
                if inner < self.real:
                    stop = min(end, base + self.real)
                    yield offset, stop - offset, "real", inner
                else:
                    stop = min(end, base + self.wrap)
                    yield offset, stop - offset, "limbo", None
            elif offset < self.real:
                stop = min(end, self.real)
                yield offset, stop - offset, "real", offset
            else:
                stop = end
                yield offset, stop - offset, ("eio" if self.mode == "eio" else "limbo"), None
            offset = stop

    def limbo_bytes(self, offset, length):
        if not self.stale:
            return self.fill * length
        out = bytearray()
        first = offset - offset % SECTOR
        for sector in range(first, offset + length, SECTOR):
            junk = hashlib.blake2b(sector.to_bytes(8, "little"), digest_size=64).digest() * (SECTOR // 64)
            out += junk
        skip = offset - first
        return bytes(out[skip:skip + length])


class FakeFlash(fuse.Operations):
    use_ns = True

    def __init__(self, backing, geometry, options):
        self.geo = geometry
        self.fd = os.open(backing, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        chunk = 4 << 20
        for at in range(0, geometry.real, chunk):
            os.pwrite(self.fd, os.urandom(min(chunk, geometry.real - at)), at)
        self.lock = threading.Lock()
        self.cache = collections.OrderedDict()
        self.cache_sectors = 0
        self.stats = {"reads": 0, "writes": 0, "bytes_read": 0, "bytes_written": 0}
        self.pause = None  # (op, countdown)
        self.resumed = threading.Event()
        self.started = time.time_ns()
        for option in options:
            self.apply(option)

    def apply(self, spec):
        for item in spec.replace(",", " ").split():
            name, _, value = item.partition("=")
            if name == "cache":
                self.cache_sectors = parse_size(value) // SECTOR
                self.cache.clear()
            elif name == "pause-at":
                op, _, n = value.partition(":")
                if op not in ("read", "write") or int(n) < 1:
                    raise ValueError("pause-at wants read:N or write:N")
                self.resumed.clear()
                self.pause = (op, int(n))
            elif name == "resume":
                self.pause = None
                self.resumed.set()
            else:
                raise ValueError("unknown option %r" % item)

    # --- the namespace: / with disk.img, ctl and stats ---

    def getattr(self, path, fh=None):
        if path == "/":
            mode, size, links = stat.S_IFDIR | 0o755, 0, 2
        elif path == DISK:
            mode, size, links = stat.S_IFREG | 0o600, self.geo.announced, 1
        elif path in (CTL, STATS):
            mode, size, links = stat.S_IFREG | 0o600, 4096, 1
        else:
            raise fuse.FuseOSError(errno.ENOENT)
        now = self.started
        return {"st_mode": mode, "st_size": size, "st_nlink": links, "st_uid": 0, "st_gid": 0,
                "st_atime": now, "st_mtime": now, "st_ctime": now, "st_blksize": 4096}

    def readdir(self, path, fh):
        return [".", "..", DISK[1:], CTL[1:], STATS[1:]]

    def open(self, path, fi):
        if path not in (DISK, CTL, STATS):
            raise fuse.FuseOSError(errno.ENOENT)
        fi.direct_io = 1
        return 0

    def truncate(self, path, length, fh=None):
        if path in (CTL, STATS):
            return 0
        raise fuse.FuseOSError(errno.EPERM)

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        return 0

    def fsync(self, path, datasync, fh):
        if path == DISK:
            os.fsync(self.fd)
        return 0

    def statfs(self, path):
        return {"f_bsize": 4096, "f_frsize": 4096, "f_blocks": self.geo.real // 4096,
                "f_bfree": 0, "f_bavail": 0, "f_namemax": 255}

    # --- the data path ---

    def wait_if_paused(self, op, offset):
        with self.lock:
            if self.pause is None or self.pause[0] != op:
                return
            left = self.pause[1] - 1
            self.pause = (op, left)
            if left > 0:
                return
        log("paused at %s, offset %d" % (op, offset))
        self.resumed.wait()
        log("resumed")

    def read(self, path, size, offset, fh):
        if path == STATS:
            with self.lock:
                text = json.dumps(self.stats).encode()
            return (text + b" " * 4096)[offset:offset + size] if offset < 4096 else b""
        if path == CTL:
            return b""
        self.wait_if_paused("read", offset)
        size = max(0, min(size, self.geo.announced - offset))
        out = bytearray()
        for at, n, kind, phys in self.geo.pieces(offset, size):
            if kind == "eio":
                log("EIO on read at %d" % at)
                raise fuse.FuseOSError(errno.EIO)
            if kind == "real":
                out += os.pread(self.fd, n, phys)
            else:
                out += self.geo.limbo_bytes(at, n)
        with self.lock:
            self.stats["reads"] += 1
            self.stats["bytes_read"] += size
            if self.cache:
                first = offset // SECTOR
                for i in range(size // SECTOR):
                    hit = self.cache.get(first + i)
                    if hit is not None:
                        out[i * SECTOR:(i + 1) * SECTOR] = hit
        return bytes(out)

    def write(self, path, data, offset, fh):
        if path == CTL:
            try:
                with self.lock:
                    self.apply(data.decode())
            except ValueError as e:
                log(str(e))
                raise fuse.FuseOSError(errno.EINVAL)
            log("ctl: %s" % data.decode().strip())
            return len(data)
        if path == STATS:
            raise fuse.FuseOSError(errno.EPERM)
        self.wait_if_paused("write", offset)
        if offset + len(data) > self.geo.announced:
            raise fuse.FuseOSError(errno.ENOSPC)
        for at, n, kind, phys in self.geo.pieces(offset, len(data)):
            if kind == "eio":
                log("EIO on write at %d" % at)
                raise fuse.FuseOSError(errno.EIO)
            if kind == "real":
                os.pwrite(self.fd, data[at - offset:at - offset + n], phys)
        with self.lock:
            self.stats["writes"] += 1
            self.stats["bytes_written"] += len(data)
            if self.cache_sectors:
                first = offset // SECTOR
                for i in range(len(data) // SECTOR):
                    sector = first + i
                    self.cache.pop(sector, None)
                    self.cache[sector] = bytes(data[i * SECTOR:(i + 1) * SECTOR])
                while len(self.cache) > self.cache_sectors:
                    self.cache.popitem(last=False)
        return len(data)


def main(argv):
    if len(argv) < 6:
        sys.exit(__doc__)
    mountpoint, backing = argv[1], argv[2]
    try:
        geometry = Geometry(parse_size(argv[3]), parse_size(argv[4]), argv[5])
        disk = FakeFlash(backing, geometry, argv[6:])
    except ValueError as e:
        sys.exit("fake_flash: %s" % e)
    log("serving %s/disk.img: %d bytes announced, %d real, %s %s"
        % (mountpoint, geometry.announced, geometry.real, argv[5], " ".join(argv[6:])))
    fuse.FUSE(disk, mountpoint, raw_fi=True, foreground=True, big_writes=True,
              fsname="fake_flash", subtype="fake")


if __name__ == "__main__":
    main(sys.argv)
