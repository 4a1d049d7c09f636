#!/usr/bin/env python3
"""A counterfeit card, for the verify-capacity tests and benchmarks
(docs/testing.md, docs/verify-capacity.md).

Serves one file, ``disk.img``, over FUSE with direct I/O, so that every read
and write reaches this process and the page cache hides nothing. Behind
``losetup --direct-io=on MOUNT/disk.img`` it is a block device that claims
ANNOUNCED bytes and holds REAL bytes of flash:

    fake_flash.py MOUNTPOINT BACKING ANNOUNCED REAL MODE [OPTION ...]

Sizes are bytes, or with a K, M or G suffix (powers of 1024); they must be
whole 512-byte sectors. BACKING is made here, sparse: only flash that was
written takes room, the rest reads as a reproducible pattern (the card's
"user data"), so a card may announce 512 GiB. MODE says what the addresses
past REAL do:

    genuine          REAL == ANNOUNCED, an honest card
    wrap             address a reaches flash byte a mod REAL
    wrap-rotate=K    address a >= REAL reaches (a + K) mod REAL (an offset wrap)
    wrap-skip=K      address a >= REAL reaches K + (a - REAL) mod (REAL - K)
    limbo-00         writes past REAL vanish; reads there give zeros
    limbo-ff         ... reads give 0xFF bytes
    limbo-stale      ... reads give the same old junk, whatever was written
    limbo-last       ... reads give the last block written anywhere past REAL
    chain=WRAP       addresses wrap every WRAP bytes (REAL < WRAP < ANNOUNCED);
                     past REAL below each wrap, limbo (zeros; chain=WRAP:ff,
                     :stale or :last for the other kinds)
    eio              reads and writes past REAL fail with EIO
    map=FILE         any map: FILE holds a JSON list of extents that cover
                     [0, ANNOUNCED) in order, each {"start", "end", and one of
                     "flash": {"base", "period", "phase"} (address a reaches
                     base + (a - start + phase) mod period, or base + a - start
                     when period is 0), "limbo": "00"|"ff"|"stale"|"last", or
                     "eio": true}; REAL is the flash size

OPTIONs (NAME=VALUE), also accepted later through the file ``ctl``:

    cache=BYTES         a FIFO write cache of that many bytes in front of
                        everything: a read of a sector among the last BYTES
                        written returns what was written there, even where
                        the write itself vanished (a masking cache)
    write-bps=N         writes take at least their size / N seconds (a slow card)
    read-bps=N          the same for reads
    read-iops=N         and at least 1/N seconds per read request
    seed=N              the pattern of the user's data
    pause-at=OP:N       the N-th OP (read or write) from now blocks until
                        ``resume`` is written to ctl; logged as "paused at"
    resume              lets a paused request go on

The file ``stats`` reads as JSON: requests and bytes read and written. The
file ``intact`` reads as JSON: whether every flash sector ever written holds
the user's data again (``changed_sectors``, ``first_changed``) and whether
the last-write limbo answers as it did at the start. Everything is logged on
stderr. The process runs in the foreground until unmounted or sent SIGINT
or SIGTERM.

fusepy comes from Debian's python3-fusepy (module ``fusepy``) or from pip
(module ``fuse``); both are tried.
"""

import bisect
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

DISK, CTL, STATS, INTACT = "/disk.img", "/ctl", "/stats", "/intact"
SECTOR = 512
PAGE = 4096


def parse_size(text):
    text = str(text).strip()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    if scale != 1:
        text = text[:-1]
    return int(text) * scale


def log(message):
    sys.stderr.write("fake_flash: %s\n" % message)
    sys.stderr.flush()


LIMBO_KINDS = {"00", "ff", "stale", "last"}


def family_map(announced, real, mode):
    """The extents of a named family (see the modes above)."""
    identity = {"flash": {"base": 0, "period": 0, "phase": 0}}

    def with_tail(tail):
        extents = [dict(start=0, end=real, **identity)]
        if announced > real:
            extents.append(dict(start=real, end=announced, **tail))
        return extents

    name, _, value = mode.partition("=")
    if name == "genuine":
        if real != announced:
            raise ValueError("genuine wants REAL == ANNOUNCED")
        return [dict(start=0, end=announced, **identity)]
    if name == "wrap":
        return with_tail({"flash": {"base": 0, "period": real, "phase": 0}})
    if name == "wrap-rotate":
        return with_tail({"flash": {"base": 0, "period": real, "phase": parse_size(value) % real}})
    if name == "wrap-skip":
        skip = parse_size(value)
        if not 0 <= skip < real:
            raise ValueError("wrap-skip=K wants K < REAL")
        return with_tail({"flash": {"base": skip, "period": real - skip, "phase": 0}})
    if name.startswith("limbo-") and name[6:] in LIMBO_KINDS:
        return with_tail({"limbo": name[6:]})
    if name == "eio":
        return with_tail({"eio": True})
    if name == "chain":
        wrap_text, _, kind = value.partition(":")
        wrap, kind = parse_size(wrap_text), kind or "00"
        if not real < wrap < announced or kind not in LIMBO_KINDS:
            raise ValueError("chain=WRAP[:KIND] wants REAL < WRAP < ANNOUNCED")
        extents, base = [], 0
        while base < announced:
            flash_end = min(base + real, announced)
            extents.append(dict(start=base, end=flash_end, **identity))
            limbo_end = min(base + wrap, announced)
            if limbo_end > flash_end:
                extents.append({"start": flash_end, "end": limbo_end, "limbo": kind})
            base += wrap
        return extents
    if name == "map":
        with open(value) as f:
            return json.load(f)
    raise ValueError("unknown mode %r" % mode)


class Geometry:
    """Where each announced address goes."""

    def __init__(self, announced, real, extents):
        if announced % SECTOR or real % SECTOR:
            raise ValueError("sizes must be whole 512-byte sectors")
        self.announced, self.real = announced, real
        at = 0
        for e in extents:
            if e["start"] != at or e["end"] <= e["start"]:
                raise ValueError("the map must cover [0, ANNOUNCED) in order")
            if "limbo" in e and e["limbo"] not in LIMBO_KINDS:
                raise ValueError("unknown limbo %r" % e["limbo"])
            at = e["end"]
        if at != announced:
            raise ValueError("the map ends at %d, not at ANNOUNCED" % at)
        self.extents = extents
        self.starts = [e["start"] for e in extents]

    def pieces(self, offset, length):
        """Splits [offset, offset+length) into runs that map contiguously:
        (address, length, kind, flash offset or limbo kind)."""
        end = offset + length
        while offset < end:
            e = self.extents[bisect.bisect_right(self.starts, offset) - 1]
            stop = min(end, e["end"])
            if "flash" in e:
                f = e["flash"]
                inner = offset - e["start"]
                if f.get("period", 0):
                    pos = (inner + f.get("phase", 0)) % f["period"]
                    stop = min(stop, offset + f["period"] - pos)
                    yield offset, stop - offset, "flash", f.get("base", 0) + pos
                else:
                    yield offset, stop - offset, "flash", f.get("base", 0) + inner
            elif "limbo" in e:
                yield offset, stop - offset, "limbo", e["limbo"]
            else:
                yield offset, stop - offset, "eio", None
            offset = stop


class Flash:
    """Sparse flash: pages written live in BACKING, the others are a pattern."""

    def __init__(self, backing, size, seed):
        self.size = size
        self.seed = seed.to_bytes(8, "little")
        self.fd = os.open(backing, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.ftruncate(self.fd, size)
        self.pages = set()

    def pattern(self, first_sector, count):
        out = bytearray()
        for s in range(first_sector, first_sector + count):
            out += hashlib.blake2b(s.to_bytes(8, "little"), key=self.seed, digest_size=64).digest() * 8
        return bytes(out)

    def read(self, at, n):
        out = bytearray(os.pread(self.fd, n, at))
        out += bytes(n - len(out))
        first, last = at // PAGE, (at + n - 1) // PAGE
        for page in range(first, last + 1):
            if page in self.pages:
                continue
            lo, hi = max(at, page * PAGE), min(at + n, (page + 1) * PAGE)
            out[lo - at:hi - at] = self.pattern(lo // SECTOR, (hi - lo) // SECTOR)
        return bytes(out)

    def write(self, at, data):
        first, last = at // PAGE, (at + len(data) - 1) // PAGE
        for page in range(first, last + 1):
            if page not in self.pages:
                lo = page * PAGE
                hi = min(lo + PAGE, self.size)
                if at > lo or at + len(data) < hi:
                    os.pwrite(self.fd, self.pattern(lo // SECTOR, (hi - lo) // SECTOR), lo)
                self.pages.add(page)
        os.pwrite(self.fd, data, at)

    def changed(self):
        """(changed sectors, the first of them) over every page written."""
        count, first = 0, None
        for page in sorted(self.pages):
            lo = page * PAGE
            hi = min(lo + PAGE, self.size)
            now = os.pread(self.fd, hi - lo, lo)
            want = self.pattern(lo // SECTOR, (hi - lo) // SECTOR)
            for i in range(0, hi - lo, SECTOR):
                if now[i:i + SECTOR] != want[i:i + SECTOR]:
                    count += 1
                    if first is None:
                        first = lo + i
        return count, first


class Pace:
    """The time a slow card takes: requests wait their turn."""

    def __init__(self):
        self.mutex = threading.Lock()
        self.bps = {"read": 0, "write": 0}
        self.iops = {"read": 0, "write": 0}
        self.free = {"read": 0.0, "write": 0.0}

    def wait(self, op, length):
        bps, iops = self.bps[op], self.iops[op]
        if not bps and not iops:
            return
        cost = (length / bps if bps else 0.0) + (1.0 / iops if iops else 0.0)
        with self.mutex:
            now = time.monotonic()
            start = max(now, self.free[op])
            self.free[op] = start + cost
            until = self.free[op]
        delay = until - time.monotonic()
        if delay > 0:
            time.sleep(delay)


class FakeFlash(fuse.Operations):
    use_ns = True

    def __init__(self, backing, geometry, options):
        self.geo = geometry
        flash_size = max([geometry.real] + [
            e["flash"].get("base", 0) + (e["flash"].get("period") or (e["end"] - e["start"]))
            for e in geometry.extents if "flash" in e])
        # The attribute is not "lock": fusepy calls a method of that name
        # for file locks, and an attribute in its way makes every one fail.
        self.mutex = threading.Lock()
        self.options = {"seed": 0}
        for option in options:
            if option.startswith("seed="):
                self.options["seed"] = int(option[5:])
        self.flash = Flash(backing, flash_size, self.options["seed"])
        self.last_block = bytearray(self.flash.pattern(1 << 40, PAGE // SECTOR))
        self.last_block_at_start = bytes(self.last_block)
        self.cache = collections.OrderedDict()
        self.cache_sectors = 0
        self.pace = Pace()
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
            elif name in ("write-bps", "read-bps"):
                self.pace.bps[name[:-4]] = parse_size(value)
            elif name == "read-iops":
                self.pace.iops["read"] = int(value)
            elif name == "seed":
                pass
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

    # --- the namespace: / with disk.img, ctl, stats and intact ---

    def getattr(self, path, fh=None):
        if path == "/":
            mode, size, links = stat.S_IFDIR | 0o755, 0, 2
        elif path == DISK:
            mode, size, links = stat.S_IFREG | 0o600, self.geo.announced, 1
        elif path in (CTL, STATS, INTACT):
            mode, size, links = stat.S_IFREG | 0o600, 4096, 1
        else:
            raise fuse.FuseOSError(errno.ENOENT)
        now = self.started
        return {"st_mode": mode, "st_size": size, "st_nlink": links, "st_uid": 0, "st_gid": 0,
                "st_atime": now, "st_mtime": now, "st_ctime": now, "st_blksize": 4096}

    def readdir(self, path, fh):
        return [".", "..", DISK[1:], CTL[1:], STATS[1:], INTACT[1:]]

    def open(self, path, fi):
        if path not in (DISK, CTL, STATS, INTACT):
            raise fuse.FuseOSError(errno.ENOENT)
        fi.direct_io = 1
        return 0

    def truncate(self, path, length, fh=None):
        if path in (CTL, STATS, INTACT):
            return 0
        raise fuse.FuseOSError(errno.EPERM)

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        return 0

    def fsync(self, path, datasync, fh):
        if path == DISK:
            os.fsync(self.flash.fd)
        return 0

    def statfs(self, path):
        return {"f_bsize": 4096, "f_frsize": 4096, "f_blocks": self.geo.real // 4096,
                "f_bfree": 0, "f_bavail": 0, "f_namemax": 255}

    # --- the data path ---

    def wait_if_paused(self, op, offset):
        with self.mutex:
            if self.pause is None or self.pause[0] != op:
                return
            left = self.pause[1] - 1
            self.pause = (op, left)
            if left > 0:
                return
        log("paused at %s, offset %d" % (op, offset))
        self.resumed.wait()
        log("resumed")

    def info(self, path, offset):
        if path == STATS:
            with self.mutex:
                text = json.dumps(self.stats).encode()
        else:
            with self.mutex:
                changed, first = self.flash.changed()
                last = bytes(self.last_block) == self.last_block_at_start
            text = json.dumps({"changed_sectors": changed, "first_changed": first,
                               "pages_written": len(self.flash.pages), "last_write_limbo_intact": last}).encode()
        return text

    def read(self, path, size, offset, fh):
        if path in (STATS, INTACT):
            text = self.info(path, offset)
            return (text + b" " * 4096)[offset:offset + size] if offset < 4096 else b""
        if path == CTL:
            return b""
        self.wait_if_paused("read", offset)
        size = max(0, min(size, self.geo.announced - offset))
        self.pace.wait("read", size)
        out = bytearray()
        with self.mutex:
            for at, n, kind, where in self.geo.pieces(offset, size):
                if kind == "eio":
                    log("EIO on read at %d" % at)
                    raise fuse.FuseOSError(errno.EIO)
                if kind == "flash":
                    out += self.flash.read(where, n)
                else:
                    out += self.limbo_bytes(where, at, n)
            self.stats["reads"] += 1
            self.stats["bytes_read"] += size
            if self.cache:
                first = offset // SECTOR
                for i in range(size // SECTOR):
                    hit = self.cache.get(first + i)
                    if hit is not None:
                        out[i * SECTOR:(i + 1) * SECTOR] = hit
        return bytes(out)

    def limbo_bytes(self, kind, at, n):
        if kind == "00":
            return bytes(n)
        if kind == "ff":
            return b"\xff" * n
        if kind == "last":
            turn = at % PAGE
            one = bytes(self.last_block[turn:]) + bytes(self.last_block[:turn])
            return (one * (n // PAGE + 1))[:n]
        out = bytearray()
        first = at - at % SECTOR
        for sector in range(first, at + n, SECTOR):
            out += hashlib.blake2b(sector.to_bytes(8, "little"), digest_size=64).digest() * (SECTOR // 64)
        skip = at - first
        return bytes(out[skip:skip + n])

    def write(self, path, data, offset, fh):
        if path == CTL:
            try:
                with self.mutex:
                    self.apply(data.decode())
            except ValueError as e:
                log(str(e))
                raise fuse.FuseOSError(errno.EINVAL)
            log("ctl: %s" % data.decode().strip())
            return len(data)
        if path in (STATS, INTACT):
            raise fuse.FuseOSError(errno.EPERM)
        self.wait_if_paused("write", offset)
        if offset + len(data) > self.geo.announced:
            raise fuse.FuseOSError(errno.ENOSPC)
        self.pace.wait("write", len(data))
        with self.mutex:
            for at, n, kind, where in self.geo.pieces(offset, len(data)):
                if kind == "eio":
                    log("EIO on write at %d" % at)
                    raise fuse.FuseOSError(errno.EIO)
                chunk = data[at - offset:at - offset + n]
                if kind == "flash":
                    self.flash.write(where, chunk)
                elif where == "last":
                    for i in range(0, n, SECTOR):
                        pos = (at + i) % PAGE
                        self.last_block[pos:pos + SECTOR] = chunk[i:i + SECTOR]
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
        announced, real = parse_size(argv[3]), parse_size(argv[4])
        geometry = Geometry(announced, real, family_map(announced, real, argv[5]))
        disk = FakeFlash(backing, geometry, argv[6:])
    except (ValueError, OSError) as e:
        sys.exit("fake_flash: %s" % e)
    log("serving %s/disk.img: %d bytes announced, %d real, %s %s"
        % (mountpoint, geometry.announced, geometry.real, argv[5], " ".join(argv[6:])))
    fuse.FUSE(disk, mountpoint, raw_fi=True, foreground=True, big_writes=True,
              fsname="fake_flash", subtype="fake")


if __name__ == "__main__":
    main(sys.argv)
