//! One segment's I/O: write it in 1 MiB requests around the failed blocks,
//! check that the writes took, read it back and name every wrong block.
//! A failed request is retried block by block, so one worn block costs
//! one block, not a megabyte.

use std::io;
use std::time::Instant;

use storage_capacity::Disk;
use storage_capacity::disk::AlignedBuf;
use storage_scoring::endurance::{BLOCK_BYTES, BadKind};

use crate::latency::Latency;
use crate::pattern::{self, Found, splitmix};
use crate::state::BadMap;

/// Blocks per request: 1 MiB.
const REQUEST_BLOCKS: u64 = 256;
/// Blocks read back right after a segment is written, to see it took.
const CHECKS: usize = 4;

/// How an I/O error reads for the card as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The device is gone (pulled, powered off, its driver let go).
    Gone,
    /// The device refuses writes as a whole (write-protected, read-only).
    ReadOnly,
    /// This request failed.
    Failed,
}

pub fn error_kind(e: &io::Error) -> ErrorKind {
    match e.raw_os_error() {
        Some(libc::ENODEV | libc::ENXIO | libc::ENOMEDIUM | libc::ESHUTDOWN | libc::ENOTCONN | libc::EBADF) => {
            ErrorKind::Gone
        }
        Some(libc::EROFS | libc::EPERM | libc::EACCES) => ErrorKind::ReadOnly,
        _ => ErrorKind::Failed,
    }
}

/// What writing a segment did.
#[derive(Debug, Default)]
pub struct Written {
    pub bytes: u64,
    pub seconds: f64,
    /// Blocks whose write failed.
    pub failed: Vec<u64>,
    /// Blocks the segment tried to write.
    pub tried: u64,
    /// The whole device answered so, and the segment was left there.
    pub stopped_by: Option<ErrorKind>,
    /// Every check block read back something else right after the write.
    pub not_taken: bool,
}

/// What reading a segment back found.
#[derive(Debug, Default)]
pub struct Read {
    pub bytes: u64,
    pub seconds: f64,
    /// Wrong blocks and how.
    pub wrong: Vec<(u64, BadKind)>,
    pub tried: u64,
    pub stopped_by: Option<ErrorKind>,
}

/// Runs of consecutive good blocks in `blocks`, at most a request long.
fn requests(blocks: std::ops::Range<u64>, bad: &BadMap) -> Vec<std::ops::Range<u64>> {
    let mut out = Vec::new();
    let mut start = None;
    for block in blocks.clone() {
        match (bad.is_bad(block), start) {
            (true, Some(s)) => {
                out.push(s..block);
                start = None;
            }
            (false, None) => start = Some(block),
            (false, Some(s)) if block - s == REQUEST_BLOCKS => {
                out.push(s..block);
                start = Some(block);
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(s..blocks.end);
    }
    out
}

/// Writes `pass` of `run` to the segment `blocks`, skipping failed blocks,
/// flushes, and checks a few blocks at once.
pub fn write_segment(
    disk: &mut dyn Disk,
    blocks: std::ops::Range<u64>,
    bad: &BadMap,
    run: u64,
    pass: u32,
    latency: &mut Latency,
) -> Written {
    let mut out = Written::default();
    let mut buf = AlignedBuf::new((REQUEST_BLOCKS * BLOCK_BYTES) as usize);
    let started = Instant::now();
    for request in requests(blocks.clone(), bad) {
        let len = ((request.end - request.start) * BLOCK_BYTES) as usize;
        let data = &mut buf.as_mut_slice()[..len];
        pattern::fill(data, run, pass, request.start);
        out.tried += request.end - request.start;
        let t = Instant::now();
        match disk.write_at(request.start * BLOCK_BYTES, data) {
            Ok(()) => {
                latency.add(t.elapsed().as_secs_f64());
                out.bytes += len as u64;
            }
            Err(e) if error_kind(&e) != ErrorKind::Failed => {
                out.stopped_by = Some(error_kind(&e));
                return out;
            }
            Err(_) => {
                // Block by block, to find the ones that failed.
                for (i, block) in request.clone().enumerate() {
                    let one = &data[i * BLOCK_BYTES as usize..(i + 1) * BLOCK_BYTES as usize];
                    match disk.write_at(block * BLOCK_BYTES, one) {
                        Ok(()) => out.bytes += BLOCK_BYTES,
                        Err(e) if error_kind(&e) != ErrorKind::Failed => {
                            out.stopped_by = Some(error_kind(&e));
                            return out;
                        }
                        Err(_) => out.failed.push(block),
                    }
                }
            }
        }
    }
    if let Err(e) = disk.sync() {
        if error_kind(&e) != ErrorKind::Failed {
            out.stopped_by = Some(error_kind(&e));
            return out;
        }
    }
    out.seconds = started.elapsed().as_secs_f64();
    out.not_taken = !took(disk, blocks, bad, &out.failed, run, pass);
    out
}

/// Reads back a few blocks just written: false when none of them holds
/// what was written (the card acknowledged writes it did not make).
fn took(disk: &mut dyn Disk, blocks: std::ops::Range<u64>, bad: &BadMap, failed: &[u64], run: u64, pass: u32) -> bool {
    let mut state = run ^ blocks.start ^ u64::from(pass) << 40;
    let len = blocks.end - blocks.start;
    let mut buf = AlignedBuf::new(BLOCK_BYTES as usize);
    let mut checked = 0;
    for _ in 0..CHECKS * 4 {
        let block = blocks.start + splitmix(&mut state) % len.max(1);
        if bad.is_bad(block) || failed.contains(&block) {
            continue;
        }
        checked += 1;
        let ok = disk.read_at(block * BLOCK_BYTES, buf.as_mut_slice()).is_ok()
            && pattern::judge(buf.as_slice(), run, pass, block) == Found::Expected;
        if ok {
            return true;
        }
        if checked == CHECKS {
            break;
        }
    }
    checked == 0
}

/// Reads the segment `blocks` back and names each block that does not
/// hold what `pass` of `run` wrote.
pub fn read_segment(
    disk: &mut dyn Disk,
    blocks: std::ops::Range<u64>,
    bad: &BadMap,
    run: u64,
    pass: u32,
    latency: &mut Latency,
) -> Read {
    let mut out = Read::default();
    let mut buf = AlignedBuf::new((REQUEST_BLOCKS * BLOCK_BYTES) as usize);
    let started = Instant::now();
    for request in requests(blocks, bad) {
        let len = ((request.end - request.start) * BLOCK_BYTES) as usize;
        let data = &mut buf.as_mut_slice()[..len];
        out.tried += request.end - request.start;
        let t = Instant::now();
        let result = disk.read_at(request.start * BLOCK_BYTES, data);
        match result {
            Ok(()) => {
                latency.add(t.elapsed().as_secs_f64());
                out.bytes += len as u64;
                for (i, got) in data.chunks_exact(BLOCK_BYTES as usize).enumerate() {
                    let block = request.start + i as u64;
                    if let Some(kind) = wrong(got, run, pass, block) {
                        out.wrong.push((block, kind));
                    }
                }
            }
            Err(e) if error_kind(&e) == ErrorKind::Gone => {
                out.stopped_by = Some(ErrorKind::Gone);
                return out;
            }
            Err(_) => {
                for (i, block) in request.clone().enumerate() {
                    let one = &mut data[i * BLOCK_BYTES as usize..(i + 1) * BLOCK_BYTES as usize];
                    match disk.read_at(block * BLOCK_BYTES, one) {
                        Ok(()) => {
                            out.bytes += BLOCK_BYTES;
                            if let Some(kind) = wrong(one, run, pass, block) {
                                out.wrong.push((block, kind));
                            }
                        }
                        Err(e) if error_kind(&e) == ErrorKind::Gone => {
                            out.stopped_by = Some(ErrorKind::Gone);
                            return out;
                        }
                        Err(_) => out.wrong.push((block, BadKind::ReadError)),
                    }
                }
            }
        }
    }
    out.seconds = started.elapsed().as_secs_f64();
    out
}

fn wrong(got: &[u8], run: u64, pass: u32, block: u64) -> Option<BadKind> {
    match pattern::judge(got, run, pass, block) {
        Found::Expected => None,
        Found::OldData { .. } => Some(BadKind::OldData),
        Found::OtherBlock { .. } => Some(BadKind::OtherBlock),
        Found::Garbage => Some(BadKind::Garbage),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_go_around_failed_blocks_and_stop_at_a_megabyte() {
        let mut bad = BadMap::new(1000);
        bad.mark(5);
        bad.mark(6);
        bad.mark(600);
        let got = requests(0..700, &bad);
        assert_eq!(got, vec![0..5, 7..263, 263..519, 519..600, 601..700]);
        assert_eq!(requests(5..7, &bad), Vec::<std::ops::Range<u64>>::new());
    }
}
