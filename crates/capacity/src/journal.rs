//! The crash-safe undo journal of a non-destructive probe.
//!
//! Rules that make `kill -9` (or a power cut) at any moment lose nothing:
//! - Before a block of the device is written for the first time, its
//!   current content is appended here, and the journal is `fdatasync`ed
//!   ([`Journal::commit`]) before the write is issued. The file itself and
//!   its directory entry are synced when it is created.
//! - Undo writes the saved contents back in *reverse* order of saving. On a
//!   fake that aliases addresses, a later backup may hold one of our own
//!   blocks (read through an alias); undoing newest-first ends every
//!   location with the oldest, original content.
//! - Undo is idempotent: a crash during it is repaired by running it again.
//! - A record that was only partly written (a crash mid-append) fails its
//!   checksum and ends the journal; its block was never overwritten, because
//!   writes wait for the commit.
//! - The journal is removed only after the undo and a device cache flush.
//!
//! A journal found at the next start is replayed by [`crate::replay`],
//! which restores only sectors that still hold the crashed run's stamp for
//! that very sector. It lives in a checked [`JournalDir`]; its header and
//! every record carry an HMAC under that directory's key, and every record
//! must lie where the probe writes (sector-aligned, at or above
//! [`probe::FLOOR`], inside the device, at most [`MAX_RECORD`] long), or
//! the journal is not replayed at all.
//!
//! Layout: magic `SSCAPJ03`, a length-prefixed JSON [`Header`] with its
//! HMAC-SHA256, then records `REC2 | len u32 | offset u64 | data | mac`.
//! A record's MAC is the HMAC-SHA256 of the MAC stored before it (the
//! header's, for the first) and of its own tag, length, offset and data:
//! a record cannot be changed, moved or dropped from the middle without
//! the key. A record that fails its MAC ends the journal when nothing
//! after it passes (a torn append: its block was never written); when a
//! later record does pass, the journal was changed and is not used.
//!
//! A journal of format 2 (`SSCAPJ02`, whose records were not keyed) is
//! never replayed: it is named, with the version that can restore it.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::disk::{AlignedBuf, Disk};
use crate::journal_dir::JournalDir;
use crate::probe;

const MAGIC: &[u8; 8] = b"SSCAPJ03";
/// The format before records were keyed.
const MAGIC_V2: &[u8; 8] = b"SSCAPJ02";
const RECORD: &[u8; 4] = b"REC2";
const MAC_LEN: usize = 32;
/// The most the probe backs up at once (its flush chunk); a longer record
/// is damage or forgery, not data.
pub const MAX_RECORD: u32 = 1 << 20;
/// The smallest logical sector a block device has: every record the probe
/// makes starts and ends on one.
const MIN_SECTOR: u64 = 512;
/// A header longer than this is not one of ours.
const MAX_HEADER: usize = 64 << 10;

/// What the journal says about the device it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Header {
    /// The device node, as given (`/dev/sdb`).
    pub device: String,
    /// Its size in bytes.
    pub size: u64,
    /// What identifies the card beyond its node name (serials, CID, loop
    /// backing file), so that a journal is never replayed onto another card.
    pub fingerprint: String,
    pub nonce: u64,
    /// Seconds since the epoch, for the messages.
    pub created_unix: u64,
}

/// Checks that `dir` has room for a journal holding about `flush` bytes of
/// backups (plus the probe blocks of every round).
pub fn check_room(dir: &JournalDir, flush: u64) -> io::Result<()> {
    let st = nix::sys::statvfs::fstatvfs(dir.dir().as_fd()).map_err(io::Error::from)?;
    // The casts widen: statvfs's fields are u32 on 32-bit ARM.
    #[allow(clippy::unnecessary_cast)]
    let free = st.blocks_available() as u64 * st.fragment_size() as u64;
    let need = flush + flush / 8 + (32 << 20);
    if free < need {
        return Err(io::Error::other(format!("{free} bytes free, and the journal needs about {need}")));
    }
    Ok(())
}

/// An open journal being written by a probe.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    name: OsString,
    size: u64,
    writer: BufWriter<File>,
    bytes: u64,
    key: [u8; MAC_LEN],
    /// The MAC of the last thing written (header or record): the next
    /// record's is chained on it.
    chain: [u8; MAC_LEN],
}

impl Journal {
    /// Creates a new journal in `dir`, durable before it returns.
    pub fn create(dir: &JournalDir, header: &Header) -> io::Result<Journal> {
        let node = Path::new(&header.device).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let name = OsString::from(format!("{node}-{:016x}.journal", header.nonce));
        let file = dir.dir().create_new(&name, 0o600)?;
        let mut writer = BufWriter::with_capacity(1 << 20, file);
        let json = serde_json::to_vec(header).map_err(io::Error::other)?;
        writer.write_all(MAGIC)?;
        writer.write_all(&(json.len() as u32).to_le_bytes())?;
        writer.write_all(&json)?;
        let chain = mac(dir.key(), &[&json]);
        writer.write_all(&chain)?;
        writer.flush()?;
        writer.get_ref().sync_all()?;
        dir.dir().sync()?;
        let bytes = (MAGIC.len() + 4 + json.len() + MAC_LEN) as u64;
        Ok(Journal { path: dir.path().join(&name), name, size: header.size, writer, bytes, key: *dir.key(), chain })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes in the journal so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Adds the current content of `data.len()` bytes at `offset`. Not yet
    /// durable: call [`Journal::commit`] before overwriting them.
    pub fn append(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        if let Some(why) = out_of_bounds(offset, len, self.size) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a backup of {len} bytes at {offset}: {why}"),
            ));
        }
        let head = record_head(len, offset);
        self.chain = mac(&self.key, &[&self.chain, &head, data]);
        self.writer.write_all(&head)?;
        self.writer.write_all(data)?;
        self.writer.write_all(&self.chain)?;
        self.bytes += head.len() as u64 + data.len() as u64 + MAC_LEN as u64;
        Ok(())
    }

    /// Makes everything appended so far durable.
    pub fn commit(&mut self) -> io::Result<()> {
        self.writer.flush()?;
        self.writer.get_ref().sync_data()
    }

    /// Undoes every saved write (newest first) and flushes the device. The
    /// journal stays until [`Journal::remove`]. This is the probe's own
    /// undo, on the card it still holds open; a journal found after a crash
    /// goes through [`crate::replay`] instead.
    pub fn undo(&mut self, disk: &mut dyn Disk) -> Result<Undone, UndoError> {
        let path = self.path.clone();
        let journal_error = |e| UndoError::Journal(path.clone(), e);
        self.commit().map_err(journal_error)?;
        let file = self.writer.get_ref();
        let list = entries(file, self.size, &self.key).map_err(journal_error)?;
        let mut done = Undone::default();
        let mut first_error = None;
        for entry in list.iter().rev() {
            let mut buf = AlignedBuf::new(entry.len as usize);
            file.read_exact_at(buf.as_mut_slice(), entry.at).map_err(journal_error)?;
            // Keep going past a failed block: every other one still goes back.
            match disk.write_at(entry.offset, buf.as_slice()) {
                Ok(()) => {
                    done.records += 1;
                    done.bytes += u64::from(entry.len);
                }
                Err(source) => {
                    if first_error.is_none() {
                        first_error =
                            Some(UndoError::Device { offset: entry.offset, bytes: entry.len as usize, source });
                    }
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        disk.sync().map_err(UndoError::Sync)?;
        Ok(done)
    }

    /// Deletes the journal once the device is whole again.
    pub fn remove(self, dir: &JournalDir) -> io::Result<()> {
        let Journal { name, writer, .. } = self;
        drop(writer);
        dir.dir().remove(&name)?;
        dir.dir().sync()
    }
}

/// Why a record cannot be one the probe wrote, or `None` when it can.
fn out_of_bounds(offset: u64, len: u32, size: u64) -> Option<&'static str> {
    if len == 0 || len > MAX_RECORD {
        Some("no backup of the probe has that length")
    } else if offset % MIN_SECTOR != 0 || u64::from(len) % MIN_SECTOR != 0 {
        // The probe writes 4 KiB blocks, and single sectors where it finds
        // the real end to the sector: whole 512-byte sectors, always.
        Some("it is not aligned to the device's sectors")
    } else if offset < probe::FLOOR {
        Some("the probe never writes below its first MiB")
    } else if offset.checked_add(u64::from(len)).is_none_or(|end| end > size) {
        Some("it lies past the end of the device")
    } else {
        None
    }
}

/// What an undo did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Undone {
    pub records: u64,
    pub bytes: u64,
}

/// Why an undo could not finish. The journal is kept, so that the next
/// start can try again.
#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    #[error("cannot read the journal {0}: {1}")]
    Journal(PathBuf, #[source] io::Error),
    #[error("restoring {bytes} bytes at byte {offset} failed: {source}")]
    Device { offset: u64, bytes: usize, source: io::Error },
    #[error("flushing the device after the restore failed: {0}")]
    Sync(#[source] io::Error),
}

/// A journal left by a run that did not finish, its header checked.
#[derive(Debug)]
pub struct Pending {
    pub path: PathBuf,
    pub(crate) name: OsString,
    pub(crate) file: File,
    pub header: Header,
    /// The directory's key, which every record must carry.
    pub(crate) key: [u8; MAC_LEN],
}

/// What the journal directory holds besides finished business.
#[derive(Debug)]
pub enum Found {
    /// A journal whose header this directory's key vouches for.
    Pending(Pending),
    /// A file named like a journal that is not one this installation
    /// wrote (a bad HMAC, not a regular file, someone else's): never
    /// replayed, never deleted.
    Untrusted { path: PathBuf, why: String },
}

/// The unfinished journals in `dir`. A journal whose header never became
/// durable had no records (they follow the header's sync), so nothing was
/// overwritten under it: such files are deleted here.
pub fn pending(dir: &JournalDir) -> io::Result<Vec<Found>> {
    let mut found = Vec::new();
    for name in dir.dir().names()? {
        if Path::new(&name).extension().is_none_or(|ext| ext != "journal") {
            continue;
        }
        let path = dir.path().join(&name);
        let untrusted = |why: String| Found::Untrusted { path: path.clone(), why };
        // O_NOFOLLOW | O_NONBLOCK, then fstat: a link or a FIFO named
        // `*.journal` is refused at once, not followed or waited on.
        let (file, stat) = match dir.dir().open_regular(&name) {
            Ok(opened) => opened,
            Err(e) => {
                found.push(untrusted(e.to_string()));
                continue;
            }
        };
        if (stat.st_uid != 0 && stat.st_uid != nix::unistd::geteuid().as_raw()) || stat.st_mode & 0o022 != 0 {
            found.push(untrusted(format!(
                "it belongs to uid {} with mode {:04o}; journals are root's and private",
                stat.st_uid,
                stat.st_mode & 0o7777
            )));
            continue;
        }
        match read_header(&mut BufReader::new(&file), dir.key()) {
            Ok((header, _)) => match entries(&file, header.size, dir.key()) {
                // Every record is checked before the journal is offered for replay.
                Ok(_) => found.push(Found::Pending(Pending { path, name, file, header, key: *dir.key() })),
                Err(e) => found.push(untrusted(e.to_string())),
            },
            Err(HeaderError::Torn) => {
                let _ = dir.dir().remove(&name);
            }
            Err(HeaderError::Bad(why)) => found.push(untrusted(why)),
        }
    }
    Ok(found)
}

/// Why a header was not read.
enum HeaderError {
    /// The file ends inside a header that starts like ours: the crash came
    /// before the header was durable, so nothing was written under it.
    Torn,
    /// Anything else: not ours, or changed since.
    Bad(String),
}

/// The header and the number of bytes it took.
fn read_header(reader: &mut impl Read, key: &[u8; MAC_LEN]) -> Result<(Header, u64), HeaderError> {
    let short = |e: io::Error| {
        if e.kind() == io::ErrorKind::UnexpectedEof { HeaderError::Torn } else { HeaderError::Bad(e.to_string()) }
    };
    let mut magic = Vec::with_capacity(MAGIC.len());
    reader.take(MAGIC.len() as u64).read_to_end(&mut magic).map_err(short)?;
    if magic == MAGIC_V2 {
        return Err(HeaderError::Bad(
            "it was written by an older storage-score (journal format 2, whose records carry no key), and this version does not replay it; restore the card with the version that made it (run its same command), or remove the journal if the card's data since is what counts"
                .to_owned(),
        ));
    }
    if !MAGIC.starts_with(&magic) {
        return Err(HeaderError::Bad("it is not a storage-score journal of this version".to_owned()));
    }
    if magic.len() < MAGIC.len() {
        return Err(HeaderError::Torn);
    }
    let len = read_u32(reader).map_err(short)? as usize;
    if len > MAX_HEADER {
        return Err(HeaderError::Bad("its header is too long to be ours".to_owned()));
    }
    let mut json = vec![0u8; len];
    reader.read_exact(&mut json).map_err(short)?;
    let mut sum = [0u8; MAC_LEN];
    reader.read_exact(&mut sum).map_err(short)?;
    if !same(&sum, &mac(key, &[&json])) {
        return Err(HeaderError::Bad(
            "its header does not carry this directory's key: it was not written here by storage-score, or was changed"
                .to_owned(),
        ));
    }
    let header = serde_json::from_slice(&json).map_err(|e| HeaderError::Bad(format!("its header is damaged: {e}")))?;
    Ok((header, (MAGIC.len() + 4 + len + MAC_LEN) as u64))
}

/// Where one record's data lies in the journal file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub offset: u64,
    pub len: u32,
    pub at: u64,
}

/// Lists the intact records, each checked against the key, stopping at a
/// torn tail. A record that fails its MAC while a later one passes means
/// the journal was changed (an error), and so does a record that lies
/// where the probe never writes (on a device of `size` bytes).
pub(crate) fn entries(file: &File, size: u64, key: &[u8; MAC_LEN]) -> io::Result<Vec<Entry>> {
    let mut reader = BufReader::with_capacity(1 << 20, file);
    reader.seek(SeekFrom::Start(0))?;
    let mut magic = [0u8; 8];
    reader.read_exact(&mut magic)?;
    let header_len = read_u32(&mut reader)?;
    let mut at = (MAGIC.len() + 4) as u64 + u64::from(header_len);
    reader.seek(SeekFrom::Start(at))?;
    let mut chain = [0u8; MAC_LEN];
    reader.read_exact(&mut chain)?;
    at += MAC_LEN as u64;
    let mut list = Vec::new();
    let mut data = Vec::new();
    // The first record that failed its MAC, and where: the end of the
    // journal, unless a later record passes.
    let mut failed: Option<u64> = None;
    while let Some(record) = next_record(&mut reader, &mut data) {
        let (head, stored) = record;
        let (len, offset) = (u32::from_le_bytes(head[4..8].try_into().unwrap_or_default()), u64_at(&head, 8));
        let passes = same(&stored, &mac(key, &[&chain, &head, &data]));
        chain = stored;
        let record_at = at;
        at += head.len() as u64 + u64::from(len) + MAC_LEN as u64;
        match (passes, failed) {
            (true, Some(bad)) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "its record at byte {bad} does not carry this directory's key while later ones do: the journal was changed since it was written"
                    ),
                ));
            }
            (false, _) => {
                failed.get_or_insert(record_at);
                continue;
            }
            (true, None) => {}
        }
        if let Some(why) = out_of_bounds(offset, len, size) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("its record at byte {record_at} restores {len} bytes at byte {offset}, where {why}"),
            ));
        }
        list.push(Entry { offset, len, at: record_at + RECORD_HEAD as u64 });
    }
    Ok(list)
}

/// Bytes before a record's data: tag, length, offset.
const RECORD_HEAD: usize = 16;

fn record_head(len: u32, offset: u64) -> [u8; RECORD_HEAD] {
    let mut head = [0u8; RECORD_HEAD];
    head[..4].copy_from_slice(RECORD);
    head[4..8].copy_from_slice(&len.to_le_bytes());
    head[8..].copy_from_slice(&offset.to_le_bytes());
    head
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default())
}

/// The next whole record (its head, with its data in `data`, and its stored
/// MAC), or `None` at the end of the file or of what was written whole.
fn next_record(reader: &mut impl Read, data: &mut Vec<u8>) -> Option<([u8; RECORD_HEAD], [u8; MAC_LEN])> {
    let mut head = [0u8; RECORD_HEAD];
    reader.read_exact(&mut head).ok()?;
    if &head[..4] != RECORD {
        return None;
    }
    let len = u32::from_le_bytes(head[4..8].try_into().ok()?);
    if len > MAX_RECORD {
        return None;
    }
    data.resize(len as usize, 0);
    reader.read_exact(data).ok()?;
    let mut stored = [0u8; MAC_LEN];
    reader.read_exact(&mut stored).ok()?;
    Some((head, stored))
}

fn read_u32(reader: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    reader.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

/// HMAC-SHA256 (RFC 2104) under `key` of the concatenation of `parts`.
pub(crate) fn mac(key: &[u8; MAC_LEN], parts: &[&[u8]]) -> [u8; MAC_LEN] {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes a key of any length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// Compares without stopping at the first difference.
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
}

impl Pending {
    /// The journal's file name in its directory.
    pub fn name(&self) -> &OsStr {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::{self, Replayed};
    use crate::sim::{Mode, SimDisk};
    use crate::stamp::Stamp;
    use std::fs::{self, OpenOptions};

    const MIB: u64 = 1 << 20;

    fn header(nonce: u64, size: u64) -> Header {
        Header { device: "/dev/simdisk".into(), size, fingerprint: "sim".into(), nonce, created_unix: 0 }
    }

    fn only_pending(dir: &JournalDir) -> Pending {
        let mut found = pending(dir).expect("pending");
        assert_eq!(found.len(), 1, "{found:?}");
        match found.remove(0) {
            Found::Pending(p) => p,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn undo_restores_in_reverse_even_through_aliases() {
        let tmp = tempfile::tempdir().expect("dir");
        let dir = JournalDir::for_tests(tmp.path());
        // 2 MiB of storage behind 4 MiB of addresses: 3 MiB aliases 1 MiB.
        let mut disk = SimDisk::new(4 * MIB, 2 * MIB, Mode::Wrap);
        disk.fill_pattern(3);
        let before = disk.snapshot();
        let mut journal = Journal::create(&dir, &header(1, 4 * MIB)).expect("create");
        let mut buf = vec![0u8; 4096];
        // Back up and overwrite 4 KiB at 1 MiB, then the alias at 3 MiB
        // (whose backup now holds our own block), then 1 MiB again.
        for offset in [MIB, 3 * MIB] {
            disk.read_at(offset, &mut buf).expect("read");
            journal.append(offset, &buf).expect("append");
            journal.commit().expect("commit");
            disk.write_at(offset, &[offset as u8 + 1; 4096]).expect("write");
        }
        disk.write_at(MIB, &[9; 4096]).expect("write");
        assert_ne!(disk.snapshot(), before);
        journal.undo(&mut disk).expect("undo");
        assert_eq!(disk.snapshot(), before);
        journal.remove(&dir).expect("remove");
        assert!(pending(&dir).expect("pending").is_empty());
    }

    #[test]
    fn a_torn_tail_is_ignored_and_replay_finishes_the_job() {
        let tmp = tempfile::tempdir().expect("dir");
        let dir = JournalDir::for_tests(tmp.path());
        let mut disk = SimDisk::new(4 * MIB, 4 * MIB, Mode::Genuine);
        disk.fill_pattern(5);
        let before = disk.snapshot();
        let mut journal = Journal::create(&dir, &header(2, 4 * MIB)).expect("create");
        let mut buf = vec![0u8; 8192];
        disk.read_at(MIB, &mut buf).expect("read");
        journal.append(MIB, &buf).expect("append");
        journal.commit().expect("commit");
        let mut stamped = vec![0u8; 8192];
        Stamp::new(2).fill_run(MIB, 4096, &mut stamped);
        disk.write_at(MIB, &stamped).expect("write");
        let path = journal.path().to_path_buf();
        drop(journal);
        // A crash halfway through the next record.
        let mut file = OpenOptions::new().append(true).open(&path).expect("open");
        file.write_all(b"REC2\x00\x10\x00\x00").expect("torn");
        drop(file);

        let found = only_pending(&dir);
        assert_eq!(found.header, header(2, 4 * MIB));
        let done = replay::replay(&found, &mut disk, false).expect("replay");
        assert_eq!(done, Replayed::Done(Undone { records: 1, bytes: 8192 }));
        assert_eq!(disk.snapshot(), before);
    }

    #[test]
    fn a_journal_without_a_durable_header_is_dropped() {
        let tmp = tempfile::tempdir().expect("dir");
        let dir = JournalDir::for_tests(tmp.path());
        fs::write(tmp.path().join("sdx-1.journal"), b"SSCAPJ03\x05").expect("write");
        assert!(pending(&dir).expect("pending").is_empty());
        assert!(!tmp.path().join("sdx-1.journal").exists());
    }

    #[test]
    fn a_journal_this_directory_did_not_key_is_never_used_nor_deleted() {
        let tmp = tempfile::tempdir().expect("dir");
        let dir = JournalDir::for_tests(tmp.path());
        let elsewhere = tempfile::tempdir().expect("dir");
        let other = JournalDir::for_tests(elsewhere.path());
        let mut journal = Journal::create(&other, &header(3, 4 * MIB)).expect("create");
        journal.append(MIB, &[0u8; 4096]).expect("append");
        journal.commit().expect("commit");
        let name = journal.path().file_name().expect("name").to_owned();
        fs::copy(journal.path(), tmp.path().join(&name)).expect("copy");
        // An older format, and a FIFO that a plain open would wait on forever.
        fs::write(tmp.path().join("old.journal"), b"SSCAPJ01\x05\x00\x00\x00{}").expect("write");
        nix::unistd::mkfifo(&tmp.path().join("fifo.journal"), nix::sys::stat::Mode::from_bits_truncate(0o600))
            .expect("mkfifo");
        let found = pending(&dir).expect("pending");
        let whys: Vec<String> = found
            .iter()
            .map(|f| match f {
                Found::Untrusted { why, .. } => why.clone(),
                Found::Pending(p) => panic!("trusted: {p:?}"),
            })
            .collect();
        assert_eq!(whys.len(), 3, "{whys:?}");
        assert!(whys.iter().any(|w| w.contains("FIFO")), "{whys:?}");
        assert!(whys.iter().any(|w| w.contains("key")), "{whys:?}");
        assert!(whys.iter().any(|w| w.contains("not a storage-score journal")), "{whys:?}");
        assert!(tmp.path().join(&name).exists() && tmp.path().join("old.journal").exists());
    }

    #[test]
    fn records_where_the_probe_never_writes_are_refused() {
        let tmp = tempfile::tempdir().expect("dir");
        let dir = JournalDir::for_tests(tmp.path());
        let mut journal = Journal::create(&dir, &header(4, 4 * MIB)).expect("create");
        for (offset, len) in [(0, 4096), (MIB + 1, 4096), (4 * MIB, 4096), (MIB, 4097)] {
            assert!(journal.append(offset, &vec![0u8; len]).is_err(), "{offset} {len}");
        }
        journal.commit().expect("commit");
        let path = journal.path().to_path_buf();
        drop(journal);
        // Written past the checks, by someone with the key: a record for sector 0.
        let data = [0xEEu8; 4096];
        let chain = last_mac(&path);
        let mut file = OpenOptions::new().append(true).open(&path).expect("open");
        let head = record_head(4096, 0);
        file.write_all(&head).expect("forge");
        file.write_all(&data).expect("forge");
        file.write_all(&mac(dir.key(), &[&chain, &head, &data])).expect("forge");
        drop(file);
        let found = pending(&dir).expect("pending");
        match found.as_slice() {
            [Found::Untrusted { why, .. }] => assert!(why.contains("below its first MiB"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    /// The MAC stored last in the journal at `path`: the next record's chain.
    fn last_mac(path: &Path) -> [u8; MAC_LEN] {
        let bytes = fs::read(path).expect("read");
        bytes[bytes.len() - MAC_LEN..].try_into().expect("mac")
    }

    /// A journal of three 4 KiB records at 1, 2 and 3 MiB, durable.
    fn three_records(dir: &JournalDir, nonce: u64) -> PathBuf {
        let mut journal = Journal::create(dir, &header(nonce, 4 * MIB)).expect("create");
        for (i, offset) in [MIB, 2 * MIB, 3 * MIB].into_iter().enumerate() {
            journal.append(offset, &[i as u8 + 1; 4096]).expect("append");
        }
        journal.commit().expect("commit");
        journal.path().to_path_buf()
    }

    /// Where the data of the `i`-th 4 KiB record of [`three_records`] starts.
    fn data_at(path: &Path, i: u64) -> u64 {
        let len = fs::metadata(path).expect("stat").len();
        len - (3 - i) * (RECORD_HEAD as u64 + 4096 + MAC_LEN as u64) + RECORD_HEAD as u64
    }

    #[test]
    fn a_changed_byte_in_a_record_makes_the_journal_untrusted() {
        for what in ["data", "offset"] {
            let tmp = tempfile::tempdir().expect("dir");
            let dir = JournalDir::for_tests(tmp.path());
            let path = three_records(&dir, 5);
            let file = OpenOptions::new().read(true).write(true).open(&path).expect("open");
            // One byte of the first record's data, or the second's offset.
            let at = if what == "data" { data_at(&path, 0) + 100 } else { data_at(&path, 1) - 8 };
            let mut byte = [0u8];
            file.read_exact_at(&mut byte, at).expect("read");
            file.write_all_at(&[byte[0] ^ 0x10], at).expect("flip");
            let found = pending(&dir).expect("pending");
            match found.as_slice() {
                [Found::Untrusted { why, .. }] => assert!(why.contains("was changed"), "{what}: {why}"),
                other => panic!("{what}: {other:?}"),
            }
        }
    }

    #[test]
    fn records_are_chained_so_none_can_be_dropped_or_reordered() {
        let tmp = tempfile::tempdir().expect("dir");
        let dir = JournalDir::for_tests(tmp.path());
        let path = three_records(&dir, 6);
        let bytes = fs::read(&path).expect("read");
        let record = RECORD_HEAD + 4096 + MAC_LEN;
        let first = (data_at(&path, 0) as usize) - RECORD_HEAD;
        // The middle record cut out: the third no longer follows its chain.
        let mut dropped = bytes[..first + record].to_vec();
        dropped.extend(&bytes[first + 2 * record..]);
        fs::write(&path, &dropped).expect("write");
        let found = pending(&dir).expect("pending");
        // Its MAC fails with nothing after it that passes: read as a torn
        // tail, so only the first record remains, never the third.
        let Found::Pending(p) = &found[0] else { panic!("{found:?}") };
        let list = entries(&p.file, p.header.size, dir.key()).expect("entries");
        assert_eq!(list.iter().map(|e| e.offset).collect::<Vec<_>>(), [MIB]);
    }

    #[test]
    fn a_record_forged_without_the_key_is_a_torn_tail_and_restores_nothing() {
        let tmp = tempfile::tempdir().expect("dir");
        let dir = JournalDir::for_tests(tmp.path());
        let path = three_records(&dir, 7);
        let mut file = OpenOptions::new().append(true).open(&path).expect("open");
        file.write_all(&record_head(4096, 0)).expect("forge");
        file.write_all(&[0xEE; 4096]).expect("forge");
        file.write_all(&[0u8; MAC_LEN]).expect("forge");
        drop(file);
        let found = only_pending(&dir);
        let list = entries(&found.file, found.header.size, dir.key()).expect("entries");
        assert_eq!(list.len(), 3, "the forged record is not one of them");
    }

    #[test]
    fn a_journal_of_the_unkeyed_format_is_named_and_left_alone() {
        let tmp = tempfile::tempdir().expect("dir");
        let dir = JournalDir::for_tests(tmp.path());
        fs::write(tmp.path().join("sdb-1.journal"), b"SSCAPJ02\x05\x00\x00\x00{}").expect("write");
        let found = pending(&dir).expect("pending");
        match found.as_slice() {
            [Found::Untrusted { why, .. }] => assert!(why.contains("older storage-score"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(tmp.path().join("sdb-1.journal").exists(), "never deleted");
    }
}
