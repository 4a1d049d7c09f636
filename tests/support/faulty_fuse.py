#!/usr/bin/env python3
"""A disk that misbehaves on purpose, for the fault tests (docs/testing.md).

Serves one file, ``disk.img``, over FUSE with direct I/O, so every read and
write of it reaches this process and the page cache hides nothing. Put it
behind ``losetup --direct-io=on MOUNT/disk.img`` and the loop device is a
real block device with the faults chosen here:

    faulty_fuse.py MOUNTPOINT BACKING SIZE [FAULT ...]

BACKING is a sparse file of SIZE bytes made here, which holds the data.
Each FAULT is ``NAME=VALUE``; sizes are bytes, or with a K, M or G suffix
(powers of 1024):

    eio-after=BYTES            reads and writes that touch a byte at or past
                               BYTES fail with EIO
    eio-after-written=BYTES    once BYTES have been written (counted from when
                               this fault is set), every write fails with EIO
    stall-after=BYTES:SECONDS  the first I/O that touches a byte at or past
                               BYTES hangs the disk for SECONDS: it and every
                               I/O that comes during the hang wait it out
                               (as a card busy collecting garbage would); the
                               disk then works again, until the fault is set
                               again
    lie-size=BYTES             disk.img claims BYTES, more than the SIZE bytes
                               of real data: reads past the data come back
                               short, writes past it fail with EIO
    slc=BYTES:FAST:SLOW        a card with a write cache (an "SLC" model):
                               the first BYTES written (counted from when
                               this fault is set) go at FAST bytes per
                               second, every byte after at SLOW; FAST and
                               SLOW are plain numbers (40000000 = 40 MB/s)
    gc-pause=BYTES:SECONDS     with slc: the write that takes the card past
                               BYTES written (counted as slc counts them)
                               waits SECONDS more, as a card collecting
                               garbage (or a journal commit) makes one chunk
                               slow; give it once per pause (gc-pause=244M:0.3
                               gc-pause=400M:1), ``clear`` removes them

    wear=MEAN:MODE:SEED        a card that wears out: each 4 KiB block takes a
                               number of writes drawn from SEED, evenly in
                               [MEAN/2, 3*MEAN/2) (one in a hundred, a weak
                               block, MEAN/4), then it is worn, and MODE says
                               what a worn block does: ``fail`` (its writes
                               fail with EIO; the rest of the request is
                               written), ``keep-old`` (its writes are
                               dropped), ``other-block`` (it reads back the
                               block 7 places on), ``garbage`` (it reads back
                               with a bit flipped); each block that wears is
                               logged, ``wear: block B worn at W`` (W: bytes
                               written to the card before that write), and
                               each fsync logs ``wear: written W``
    die=BYTES:KIND             with wear: once BYTES have been written (from
                               when this fault is set), the
                               card as a whole dies: ``read-only`` (writes
                               fail with EIO, reads work), ``ignores-writes``
                               (writes acknowledged and dropped), ``vanishes``
                               (every request fails with EIO)

With slc, every 16 MiB written is logged with the time the card finished
it (``slc: 32 MiB written by 1234.567``, time.monotonic() seconds): the
card's own clock, from which a test knows the rate it really delivered,
even when a loaded machine made this server fall behind its model.

Faults can also be given in the environment variable FAULTY_FUSE (separated
by spaces or commas), and changed while the disk runs by writing them to the
file ``ctl`` beside disk.img (``clear`` removes them all). This is how a test
makes a filesystem on a healthy disk first and then lets the disk go bad.

Every fault served is logged on stderr, one line each. The process runs in
the foreground until it is unmounted or sent SIGINT or SIGTERM.

fusepy comes from Debian's python3-fusepy (module ``fusepy``, on the system
python3) or from pip (module ``fuse``); both are tried.
"""

import errno
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
        sys.exit("faulty_fuse: fusepy is missing: apt-get install python3-fusepy "
                 "(and run this with /usr/bin/python3), or pip install fusepy")

DISK = "/disk.img"
CTL = "/ctl"


def parse_size(text):
    text = text.strip()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    if scale != 1:
        text = text[:-1]
    return int(text) * scale


class Faults:
    """The faults in force, changed atomically under a lock."""

    def __init__(self):
        self.eio_after = None
        self.eio_after_written = None
        self.written = 0
        self.stall_after = None
        self.stall_seconds = 0.0
        self.stall_until = None
        self.lie_size = None
        self.slc = None
        self.slc_written = 0
        self.slc_clock = None
        self.gc_pauses = []
        self.wear = None
        self.die = None

    def apply(self, spec):
        for item in spec.replace(",", " ").split():
            name, _, value = item.partition("=")
            if name == "clear":
                self.__init__()
            elif name == "eio-after":
                self.eio_after = parse_size(value)
            elif name == "eio-after-written":
                self.eio_after_written = parse_size(value)
                self.written = 0
            elif name == "stall-after":
                at, _, seconds = value.partition(":")
                self.stall_after = parse_size(at)
                self.stall_seconds = float(seconds or "1")
                self.stall_until = None
            elif name == "lie-size":
                self.lie_size = parse_size(value)
            elif name == "gc-pause":
                at, _, seconds = value.partition(":")
                self.gc_pauses.append((parse_size(at), float(seconds)))
                self.gc_pauses.sort()
            elif name == "wear":
                mean, mode, seed = value.split(":")
                if mode not in ("fail", "keep-old", "other-block", "garbage"):
                    raise ValueError("unknown wear mode %r" % mode)
                self.wear = Wear(int(mean), mode, int(seed))
            elif name == "die":
                at, kind = value.split(":")
                if kind not in ("read-only", "ignores-writes", "vanishes"):
                    raise ValueError("unknown death %r" % kind)
                # Counted from when it is set.
                self.die = (parse_size(at) + (self.wear.written if self.wear else 0), kind)
            elif name == "slc":
                cache, fast, slow = value.split(":")
                self.slc = (parse_size(cache), float(fast), float(slow))
                self.slc_written = 0
                self.slc_clock = None
            else:
                raise ValueError("unknown fault %r" % item)


class Wear:
    """Per-block endurance, write counts, and what the card has written."""

    def __init__(self, mean, mode, seed):
        import random
        self.mean, self.mode, self.rng = mean, mode, random.Random(seed)
        self.endurance = []
        self.writes = []
        self.written = 0

    def grow(self, blocks):
        while len(self.endurance) < blocks:
            if self.rng.randrange(100) == 0:
                self.endurance.append(max(1, self.mean // 4))
            else:
                self.endurance.append(self.mean // 2 + self.rng.randrange(max(1, self.mean)))
            self.writes.append(0)

    def worn(self, block):
        return self.writes[block] > self.endurance[block]


def log(message):
    sys.stderr.write("faulty_fuse: %s\n" % message)
    sys.stderr.flush()


class FaultyDisk(fuse.Operations):
    use_ns = True

    def __init__(self, backing, size, faults):
        self.fd = os.open(backing, os.O_RDWR | os.O_CREAT, 0o600)
        os.ftruncate(self.fd, size)
        self.size = size
        self.faults = faults
        self.mutex = threading.Lock()
        self.started = time.time_ns()

    # --- the namespace: / with disk.img and ctl ---

    def getattr(self, path, fh=None):
        now = self.started
        if path == "/":
            mode, size, links = stat.S_IFDIR | 0o755, 0, 2
        elif path == DISK:
            with self.mutex:
                size = self.faults.lie_size or self.size
            mode, links = stat.S_IFREG | 0o600, 1
        elif path == CTL:
            mode, size, links = stat.S_IFREG | 0o600, 0, 1
        else:
            raise fuse.FuseOSError(errno.ENOENT)
        return {"st_mode": mode, "st_size": size, "st_nlink": links, "st_uid": 0, "st_gid": 0,
                "st_atime": now, "st_mtime": now, "st_ctime": now, "st_blksize": 4096}

    def readdir(self, path, fh):
        return [".", "..", DISK[1:], CTL[1:]]

    def open(self, path, fi):
        if path not in (DISK, CTL):
            raise fuse.FuseOSError(errno.ENOENT)
        # FOPEN_DIRECT_IO: the kernel sends every read and write here, past
        # the page cache, so no fault is hidden by a cached copy.
        fi.direct_io = 1
        return 0

    def truncate(self, path, length, fh=None):
        # Opening ctl with O_TRUNC truncates it; the disk keeps its size.
        if path == CTL:
            return 0
        raise fuse.FuseOSError(errno.EPERM)

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        return 0

    def fsync(self, path, datasync, fh):
        if path == DISK:
            os.fsync(self.fd)
            with self.mutex:
                w = self.faults.wear
                if w is not None:
                    log("wear: written %d" % w.written)
        return 0

    # --- the data path, where the faults live ---

    def read(self, path, size, offset, fh):
        if path == CTL:
            return b""
        self.before_io("read", offset, size)
        with self.mutex:
            lie = self.faults.lie_size
        if lie is not None and offset + size > self.size:
            # The claimed size is a lie: there is no data past the real end.
            size = max(0, self.size - offset)
            log("short read at %d: %d bytes, past the real %d" % (offset, size, self.size))
        data = os.pread(self.fd, size, offset)
        with self.mutex:
            if self.faults.wear is not None:
                return self.worn_read(data, offset)
        return data

    def write(self, path, data, offset, fh):
        if path == CTL:
            with self.mutex:
                try:
                    self.faults.apply(data.decode())
                except ValueError as e:
                    log(str(e))
                    raise fuse.FuseOSError(errno.EINVAL)
            log("faults now: %s" % data.decode().strip())
            return len(data)
        self.before_io("write", offset, len(data))
        with self.mutex:
            f = self.faults
            if f.eio_after_written is not None:
                if f.written >= f.eio_after_written:
                    log("EIO on write at %d: %d bytes written already" % (offset, f.written))
                    raise fuse.FuseOSError(errno.EIO)
                f.written += len(data)
        if offset + len(data) > self.size:
            log("EIO on write at %d, past the real %d" % (offset, self.size))
            raise fuse.FuseOSError(errno.EIO)
        with self.mutex:
            if self.faults.wear is not None:
                return self.worn_write(data, offset)
        written = os.pwrite(self.fd, data, offset)
        self.pace(len(data))
        return written

    def worn_write(self, data, offset):
        """A write to a card that wears (the mutex is held)."""
        f = self.faults
        w = f.wear
        w.grow(self.size // 4096)
        if f.die is not None and w.written >= f.die[0]:
            if f.die[1] == "ignores-writes":
                return len(data)
            raise fuse.FuseOSError(errno.EIO)
        first, last = offset // 4096, (offset + len(data) - 1) // 4096
        blocks = range(first, last + 1)
        failing = [b for b in blocks if w.mode == "fail" and w.writes[b] >= w.endurance[b]]
        for b in failing:
            if w.writes[b] == w.endurance[b]:
                w.writes[b] += 1
                log("wear: block %d worn at %d" % (b, w.written))
        # The rest of the request is written, then it fails: the kernel's
        # loop-over-FUSE path (seen here) may report a large write whole
        # when a later piece of it fails, and the worn block must then
        # read back wrong, not be written after all.
        blocks = [b for b in blocks if b not in failing]
        for b in blocks:
            w.writes[b] += 1
            if w.writes[b] == w.endurance[b] + 1:
                log("wear: block %d worn at %d" % (b, w.written))
            if w.mode == "keep-old" and w.worn(b):
                continue
            lo, hi = max(offset, b * 4096), min(offset + len(data), (b + 1) * 4096)
            os.pwrite(self.fd, data[lo - offset:hi - offset], lo)
        w.written += len(blocks) * 4096 if failing else len(data)
        if failing:
            raise fuse.FuseOSError(errno.EIO)
        return len(data)

    def worn_read(self, data, offset):
        """What a card that wears reads back (the mutex is held)."""
        f = self.faults
        w = f.wear
        w.grow(self.size // 4096)
        if f.die is not None and w.written >= f.die[0] and f.die[1] == "vanishes":
            raise fuse.FuseOSError(errno.EIO)
        if w.mode not in ("other-block", "garbage"):
            return data
        out = bytearray(data)
        for b in range(offset // 4096, (offset + len(data) - 1) // 4096 + 1):
            if not w.worn(b):
                continue
            lo, hi = max(offset, b * 4096), min(offset + len(data), (b + 1) * 4096)
            if w.mode == "garbage":
                out[lo - offset] ^= 0x10
            else:
                other = ((b + 7) % (self.size // 4096)) * 4096 + (lo - b * 4096)
                out[lo - offset:hi - offset] = os.pread(self.fd, hi - lo, other)
        return bytes(out)

    # How long the disk may sit idle and still count as busy: a write that
    # arrives within this of the previous one's end starts at that end, so
    # the kernel's and this server's own time per request does not slow
    # the modelled rate.
    SLACK = 0.005

    def pace(self, size):
        """Holds a write until the modelled card would have finished it.

        Writes take turns on one virtual clock, each for its bytes' time at
        the cache's rate while the cache lasts and at the slow rate after,
        so the rate the writer sees is the model's whatever the request
        sizes or how many are in flight.
        """
        with self.mutex:
            f = self.faults
            if f.slc is None:
                return
            cache, fast, slow = f.slc
            inside = max(0, min(size, cache - f.slc_written))
            cost = inside / fast + (size - inside) / slow
            if f.slc_written < cache <= f.slc_written + size:
                log("slc: cache of %d bytes full" % cache)
            for at, seconds in f.gc_pauses:
                if f.slc_written < at <= f.slc_written + size:
                    cost += seconds
                    log("gc pause of %.2f s at %d bytes written" % (seconds, at))
            marks = range((f.slc_written >> 24) + 1, ((f.slc_written + size) >> 24) + 1)
            f.slc_written += size
            now = time.monotonic()
            start = f.slc_clock if f.slc_clock is not None and now - f.slc_clock < self.SLACK else now
            start = max(start, now - self.SLACK)
            f.slc_clock = start + cost
            wait = f.slc_clock - now
            for mark in marks:
                log("slc: %d MiB written by %.3f" % (mark * 16, f.slc_clock))
        if wait > 0:
            time.sleep(wait)

    def before_io(self, op, offset, size):
        end = offset + size
        with self.mutex:
            f = self.faults
            if f.stall_after is not None and end > f.stall_after and f.stall_until is None:
                f.stall_until = time.monotonic() + f.stall_seconds
                log("stall %.1f s from %s at %d" % (f.stall_seconds, op, offset))
            wait = f.stall_until - time.monotonic() if f.stall_until is not None else 0
            eio = f.eio_after
        if wait > 0:
            time.sleep(wait)
        if eio is not None and end > eio:
            log("EIO on %s at %d" % (op, offset))
            raise fuse.FuseOSError(errno.EIO)

    def statfs(self, path):
        return {"f_bsize": 4096, "f_frsize": 4096, "f_blocks": self.size // 4096,
                "f_bfree": 0, "f_bavail": 0, "f_namemax": 255}


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    mountpoint, backing, size = argv[1], argv[2], parse_size(argv[3])
    faults = Faults()
    try:
        faults.apply(os.environ.get("FAULTY_FUSE", ""))
        for spec in argv[4:]:
            faults.apply(spec)
    except ValueError as e:
        sys.exit("faulty_fuse: %s" % e)
    log("serving %s/disk.img: %d bytes, faults %s" % (mountpoint, size, " ".join(argv[4:]) or "none"))
    fuse.FUSE(FaultyDisk(backing, size, faults), mountpoint, raw_fi=True, foreground=True,
              big_writes=True, fsname="faulty_fuse", subtype="faulty")


if __name__ == "__main__":
    main(sys.argv)
