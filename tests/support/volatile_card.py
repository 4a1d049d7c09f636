#!/usr/bin/env python3
"""A card with a volatile write cache whose power can be cut, for the
power-loss tests (docs/testing.md#fuse-fakes, docs/power-loss.md).

    volatile_card.py on STATE     power on: start the server, attach a loop device
    volatile_card.py off STATE    power off: the cut, then stop it all
    volatile_card.py serve STATE  the FUSE server itself (run by ``on``)

STATE is a directory holding ``config.json`` (written by the test):

    size         bytes of the card
    flush        "honour": a flush writes the cache to the card's flash;
                 "ignore": a flush returns at once and writes nothing;
                 "half": a flush writes the older half of the cache
    cache_blocks how many 4 KiB blocks the cache holds; a write beyond
                 that sends the oldest cached block to flash
    cut          what the cut does besides dropping the cache, any of
                 "tear" (the oldest cached block, the one the card
                 was writing to flash, reaches it half: its first
                 2 KiB), "misplace" (the last write the card was
                 given lands, whole, on a block kept from before this
                 power-on),
                 "damage" (a byte range of a block kept from before this
                 power-on is flipped)
    returns      how many power-ons after a cut bring the card back
                 (missing: every one)
    seed         for the random choices

The server serves ``disk.img`` (direct I/O, so every request reaches this
process) and ``ctl`` from ``STATE/mnt``; ``on`` puts a loop device with
direct I/O over it (its name in ``STATE/loop``). Writing ``cut`` to
``ctl`` is the power cut: under the one lock every request takes, the
cache is dropped, the configured faults are done to the flash
(``STATE/flash.img``), every later request fails, and the server exits.
Its log, ``STATE/card.log``, is the card's own account, one line per
block: ``drop BLOCK acked=0|1``, ``tear BLOCK acked=0|1``, ``misplace
BLOCK at BLOCK``, ``damage BLOCK`` (blocks of 4 KiB); ``acked=1`` when a
flush had returned while the block sat in the cache.

fusepy comes from Debian's python3-fusepy (module ``fusepy``) or pip
(``fuse``).
"""

import errno
import json
import os
import random
import stat
import subprocess
import sys
import threading
import time
from collections import OrderedDict

BLOCK = 4096
DISK = "/disk.img"
CTL = "/ctl"


def path(state, name):
    return os.path.join(state, name)


def config(state):
    with open(path(state, "config.json")) as f:
        return json.load(f)


def log_to(state, message):
    with open(path(state, "card.log"), "a") as f:
        f.write("%s\n" % message)


def read_int(state, name, default=0):
    try:
        with open(path(state, name)) as f:
            return int(f.read().strip() or default)
    except (OSError, ValueError):
        return default


def serve(state):
    try:
        import fusepy as fuse
    except ImportError:
        import fuse

    cfg = config(state)
    size = int(cfg["size"])
    flush_mode = cfg.get("flush", "honour")
    cache_blocks = int(cfg.get("cache_blocks", 256))
    cut_faults = set(cfg.get("cut", []))
    rng = random.Random(int(cfg.get("seed", 1)) * 1000 + read_int(state, "cuts"))
    kept_file = path(state, "kept.json")
    try:
        with open(kept_file) as f:
            kept_before = set(json.load(f))
    except (OSError, ValueError):
        kept_before = set()

    fd = os.open(path(state, "flash.img"), os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(fd, size)

    def log(message):
        log_to(state, message)

    class Card(fuse.Operations):
        use_ns = True

        def __init__(self):
            self.mutex = threading.Lock()
            # block -> [bytes, acked]
            self.cache = OrderedDict()
            self.dead = False
            self.written_back = set()
            self.touched = set()
            self.last_write = None
            self.started = time.time_ns()

        def getattr(self, p, fh=None):
            if p == "/":
                mode, sz, links = stat.S_IFDIR | 0o755, 0, 2
            elif p == DISK:
                mode, sz, links = stat.S_IFREG | 0o600, size, 1
            elif p == CTL:
                mode, sz, links = stat.S_IFREG | 0o600, 0, 1
            else:
                raise fuse.FuseOSError(errno.ENOENT)
            t = self.started
            return {"st_mode": mode, "st_size": sz, "st_nlink": links, "st_uid": 0, "st_gid": 0,
                    "st_atime": t, "st_mtime": t, "st_ctime": t, "st_blksize": BLOCK}

        def readdir(self, p, fh):
            return [".", "..", DISK[1:], CTL[1:]]

        def open(self, p, fi):
            if p not in (DISK, CTL):
                raise fuse.FuseOSError(errno.ENOENT)
            fi.direct_io = 1
            return 0

        def truncate(self, p, length, fh=None):
            if p == CTL:
                return 0
            raise fuse.FuseOSError(errno.EPERM)

        def flush(self, p, fh):
            return 0

        def release(self, p, fh):
            return 0

        def block(self, b):
            """A block as the card answers for it: the cache, else flash."""
            if b in self.cache:
                return self.cache[b][0]
            data = os.pread(fd, BLOCK, b * BLOCK)
            return data + bytes(BLOCK - len(data))

        def write_back(self, b):
            data, _ = self.cache.pop(b)
            os.pwrite(fd, data, b * BLOCK)
            self.written_back.add(b)

        def read(self, p, length, offset, fh):
            if p == CTL:
                return b""
            with self.mutex:
                if self.dead:
                    raise fuse.FuseOSError(errno.EIO)
                end = min(offset + length, size)
                out = bytearray()
                pos = offset
                while pos < end:
                    b, inner = divmod(pos, BLOCK)
                    take = min(BLOCK - inner, end - pos)
                    out += self.block(b)[inner:inner + take]
                    pos += take
                return bytes(out)

        def write(self, p, data, offset, fh):
            if p == CTL:
                if data.decode().strip() == "cut":
                    self.cut()
                return len(data)
            with self.mutex:
                if self.dead or offset + len(data) > size:
                    raise fuse.FuseOSError(errno.EIO)
                pos, i = offset, 0
                while i < len(data):
                    b, inner = divmod(pos, BLOCK)
                    take = min(BLOCK - inner, len(data) - i)
                    old = self.block(b)
                    new = old[:inner] + data[i:i + take] + old[inner + take:]
                    self.cache.pop(b, None)
                    self.cache[b] = [new, False]
                    self.last_write = (b, new)
                    self.touched.add(b)
                    pos += take
                    i += take
                while len(self.cache) > cache_blocks:
                    self.write_back(next(iter(self.cache)))
                return len(data)

        def fsync(self, p, datasync, fh):
            if p != DISK:
                return 0
            with self.mutex:
                if self.dead:
                    raise fuse.FuseOSError(errno.EIO)
                if flush_mode == "honour":
                    n = len(self.cache)
                elif flush_mode == "half":
                    n = len(self.cache) // 2
                else:
                    n = 0
                for b in list(self.cache)[:n]:
                    self.write_back(b)
                os.fsync(fd)
                for entry in self.cache.values():
                    entry[1] = True
            return 0

        def cut(self):
            with self.mutex:
                if self.dead:
                    return
                self.dead = True
                entries = list(self.cache.items())
                # What the card was last given, cached or not.
                newest = self.last_write
                spoiled = set()
                if "tear" in cut_faults and entries:
                    b, (data, acked) = entries[0]
                    os.pwrite(fd, data[:BLOCK // 2], b * BLOCK)
                    log("tear %d acked=%d" % (b, acked))
                    spoiled.add(b)
                    entries = entries[1:]
                for b, (_, acked) in entries:
                    log("drop %d acked=%d" % (b, acked))
                # Blocks the card kept before this power-on and that nobody
                # wrote since: data the tester has verified.
                candidates = sorted(kept_before - self.touched)
                if "misplace" in cut_faults:
                    if newest is not None and candidates:
                        target = rng.choice(candidates)
                        candidates.remove(target)
                        os.pwrite(fd, newest[1], target * BLOCK)
                        log("misplace %d at %d" % (newest[0], target))
                        spoiled.add(target)
                    else:
                        log("misplace: nothing to misplace or nowhere kept from before")
                if "damage" in cut_faults:
                    if candidates:
                        target = rng.choice(candidates)
                        at = target * BLOCK + 1000
                        old = os.pread(fd, 16, at)
                        os.pwrite(fd, bytes(x ^ 0x5A for x in old), at)
                        log("damage %d" % target)
                        spoiled.add(target)
                    else:
                        log("damage: nothing kept from before this power-on")
                os.fsync(fd)
                acked = sum(1 for _, (_, a) in list(self.cache.items()) if a)
                log("cut: %d blocks in the cache dropped, %d of them acknowledged" % (len(self.cache), acked))
                self.cache.clear()
                kept = (kept_before | self.written_back) - spoiled
                with open(kept_file + ".new", "w") as f:
                    json.dump(sorted(kept), f)
                os.replace(kept_file + ".new", kept_file)
            # Power is gone: the process ends once this request is answered.
            threading.Timer(0.05, os._exit, [0]).start()

    log("power on: %d bytes, flush %s, cache %d blocks, cut %s"
        % (size, flush_mode, cache_blocks, " ".join(sorted(cut_faults)) or "drops the cache"))
    fuse.FUSE(Card(), path(state, "mnt"), raw_fi=True, foreground=True, big_writes=True,
              fsname="volatile_card", subtype="volatile")


def power_on(state):
    cfg = config(state)
    cuts = read_int(state, "cuts")
    if "returns" in cfg and cuts > int(cfg["returns"]):
        log_to(state, "power on after cut %d: the card stays dead" % cuts)
        return
    os.makedirs(path(state, "mnt"), exist_ok=True)
    logf = open(path(state, "card.log"), "a")
    server = subprocess.Popen([sys.executable, os.path.abspath(__file__), "serve", state],
                              stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, start_new_session=True)
    with open(path(state, "pid"), "w") as f:
        f.write(str(server.pid))
    disk = path(state, "mnt") + DISK
    deadline = time.time() + 30
    while not os.path.exists(disk):
        if server.poll() is not None or time.time() > deadline:
            sys.exit("volatile_card: the server did not start; see %s" % path(state, "card.log"))
        time.sleep(0.02)
    loop = subprocess.check_output(["losetup", "-f", "--show", "--direct-io=on", disk]).decode().strip()
    with open(path(state, "loop"), "w") as f:
        f.write(loop)


def power_off(state):
    ctl = path(state, "mnt") + CTL
    try:
        with open(ctl, "w") as f:
            f.write("cut")
    except OSError:
        pass
    pid = read_int(state, "pid", 0)
    deadline = time.time() + 5
    while pid and os.path.exists("/proc/%d" % pid) and time.time() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().split(") ")[-1].startswith("Z"):
                    break
        except OSError:
            break
        time.sleep(0.01)
    if pid and os.path.exists("/proc/%d" % pid):
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    cuts = read_int(state, "cuts") + 1
    with open(path(state, "cuts"), "w") as f:
        f.write(str(cuts))
    loop = ""
    try:
        with open(path(state, "loop")) as f:
            loop = f.read().strip()
    except OSError:
        pass
    if loop:
        subprocess.call(["losetup", "-d", loop], stderr=subprocess.DEVNULL)
    subprocess.call(["umount", "-l", path(state, "mnt")], stderr=subprocess.DEVNULL)


def main(argv):
    if len(argv) != 3 or argv[1] not in ("on", "off", "serve"):
        sys.exit(__doc__)
    state = os.path.abspath(argv[2])
    {"on": power_on, "off": power_off, "serve": serve}[argv[1]](state)


if __name__ == "__main__":
    main(sys.argv)
