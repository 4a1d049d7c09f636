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
//! Layout: magic `SSCAPJ01`, a length-prefixed JSON [`Header`] with its
//! hash, then records `REC1 | len u32 | offset u64 | data | hash u64`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::disk::{AlignedBuf, Disk};

const MAGIC: &[u8; 8] = b"SSCAPJ01";
const RECORD: &[u8; 4] = b"REC1";
/// A record larger than this is damage, not data.
const MAX_RECORD: u32 = 64 << 20;

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

/// Makes `dir` and checks that it has room for a journal holding about
/// `flush` bytes of backups (plus the probe blocks of every round).
pub fn check_room(dir: &Path, flush: u64) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let st = nix::sys::statvfs::statvfs(dir).map_err(io::Error::from)?;
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
    dir: PathBuf,
    writer: BufWriter<File>,
    bytes: u64,
}

impl Journal {
    /// Creates a new journal in `dir` (made if missing), durable before it returns.
    pub fn create(dir: &Path, header: &Header) -> io::Result<Journal> {
        fs::create_dir_all(dir)?;
        let name = Path::new(&header.device).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let path = dir.join(format!("{name}-{:016x}.journal", header.nonce));
        let file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
        let mut writer = BufWriter::with_capacity(1 << 20, file);
        let json = serde_json::to_vec(header).map_err(io::Error::other)?;
        writer.write_all(MAGIC)?;
        writer.write_all(&(json.len() as u32).to_le_bytes())?;
        writer.write_all(&json)?;
        writer.write_all(&hash(0, &[&json]).to_le_bytes())?;
        writer.flush()?;
        writer.get_ref().sync_all()?;
        sync_dir(dir)?;
        let bytes = (MAGIC.len() + 4 + json.len() + 8) as u64;
        Ok(Journal { path, dir: dir.to_path_buf(), writer, bytes })
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
        let len = data.len() as u32;
        self.writer.write_all(RECORD)?;
        self.writer.write_all(&len.to_le_bytes())?;
        self.writer.write_all(&offset.to_le_bytes())?;
        self.writer.write_all(data)?;
        self.writer.write_all(&hash(offset ^ u64::from(len), &[data]).to_le_bytes())?;
        self.bytes += 4 + 4 + 8 + data.len() as u64 + 8;
        Ok(())
    }

    /// Makes everything appended so far durable.
    pub fn commit(&mut self) -> io::Result<()> {
        self.writer.flush()?;
        self.writer.get_ref().sync_data()
    }

    /// Undoes every saved write (newest first) and flushes the device. The
    /// journal stays until [`Journal::remove`].
    pub fn undo(&mut self, disk: &mut dyn Disk) -> Result<Undone, UndoError> {
        self.commit().map_err(|e| UndoError::Journal(self.path.clone(), e))?;
        undo_file(&self.path, disk)
    }

    /// Deletes the journal once the device is whole again.
    pub fn remove(self) -> io::Result<()> {
        let Journal { path, dir, writer, .. } = self;
        drop(writer);
        fs::remove_file(&path)?;
        sync_dir(&dir)
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

/// A journal left by a run that did not finish.
#[derive(Debug, Clone)]
pub struct Pending {
    pub path: PathBuf,
    pub header: Header,
}

impl Pending {
    /// Restores the device from this journal and deletes the journal.
    pub fn replay(self, disk: &mut dyn Disk) -> Result<Undone, UndoError> {
        let done = undo_file(&self.path, disk)?;
        fs::remove_file(&self.path).map_err(|e| UndoError::Journal(self.path.clone(), e))?;
        if let Some(dir) = self.path.parent() {
            let _ = sync_dir(dir);
        }
        Ok(done)
    }
}

/// The unfinished journals in `dir`. A journal whose header never became
/// durable had no records (they follow the header's sync), so nothing was
/// overwritten under it: such files are deleted here.
pub fn pending(dir: &Path) -> io::Result<Vec<Pending>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|ext| ext != "journal") {
            continue;
        }
        match read_header(&mut BufReader::new(File::open(&path)?)) {
            Ok((header, _)) => found.push(Pending { path, header }),
            Err(_) => {
                let _ = fs::remove_file(&path);
            }
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// The header and the number of bytes it took.
fn read_header(reader: &mut impl Read) -> io::Result<(Header, u64)> {
    let mut magic = [0u8; 8];
    reader.read_exact(&mut magic)?;
    if &magic != MAGIC {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not a storage-score journal"));
    }
    let len = read_u32(reader)? as usize;
    if len > 1 << 20 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "journal header too long"));
    }
    let mut json = vec![0u8; len];
    reader.read_exact(&mut json)?;
    if read_u64(reader)? != hash(0, &[&json]) {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "journal header damaged"));
    }
    let header = serde_json::from_slice(&json).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    Ok((header, (MAGIC.len() + 4 + len + 8) as u64))
}

/// Where one record's data lies in the journal file.
#[derive(Debug, Clone, Copy)]
struct Entry {
    offset: u64,
    len: u32,
    at: u64,
}

/// Lists the intact records, stopping at the first torn or damaged one.
fn entries(path: &Path) -> io::Result<Vec<Entry>> {
    let mut reader = BufReader::with_capacity(1 << 20, File::open(path)?);
    let (_, mut at) = read_header(&mut reader)?;
    let mut list = Vec::new();
    let mut data = Vec::new();
    loop {
        let mut tag = [0u8; 4];
        if reader.read_exact(&mut tag).is_err() || &tag != RECORD {
            break;
        }
        let (Ok(len), Ok(offset)) = (read_u32(&mut reader), read_u64(&mut reader)) else { break };
        if len > MAX_RECORD {
            break;
        }
        data.resize(len as usize, 0);
        if reader.read_exact(&mut data).is_err() {
            break;
        }
        match read_u64(&mut reader) {
            Ok(sum) if sum == hash(offset ^ u64::from(len), &[&data]) => {}
            _ => break,
        }
        list.push(Entry { offset, len, at: at + 16 });
        at += 16 + u64::from(len) + 8;
    }
    Ok(list)
}

fn undo_file(path: &Path, disk: &mut dyn Disk) -> Result<Undone, UndoError> {
    let journal_error = |e| UndoError::Journal(path.to_path_buf(), e);
    let list = entries(path).map_err(journal_error)?;
    let file = File::open(path).map_err(journal_error)?;
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
                    first_error = Some(UndoError::Device { offset: entry.offset, bytes: entry.len as usize, source });
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

fn read_u32(reader: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    reader.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn read_u64(reader: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    reader.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// fsync on the directory, so that a new or removed name is durable.
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// A 64-bit hash over byte slices, eight bytes at a time.
fn hash(seed: u64, parts: &[&[u8]]) -> u64 {
    let mut h = seed ^ 0xCBF2_9CE4_8422_2325;
    for part in parts {
        let mut words = part.chunks_exact(8);
        for w in &mut words {
            h = (h ^ u64::from_le_bytes(w.try_into().unwrap_or([0; 8]))).wrapping_mul(0x100_0000_01B3).rotate_left(31);
        }
        for &b in words.remainder() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3);
        }
        h ^= part.len() as u64;
    }
    crate::stamp::hash64(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{Mode, SimDisk};

    fn header(nonce: u64) -> Header {
        Header { device: "/dev/simdisk".into(), size: 1 << 20, fingerprint: "sim".into(), nonce, created_unix: 0 }
    }

    #[test]
    fn undo_restores_in_reverse_even_through_aliases() {
        let dir = tempfile::tempdir().expect("dir");
        // 64 KiB of storage behind 128 KiB of addresses: 64 KiB aliases 0.
        let mut disk = SimDisk::new(128 << 10, 64 << 10, Mode::Wrap);
        disk.fill_pattern(3);
        let before = disk.snapshot();
        let mut journal = Journal::create(dir.path(), &header(1)).expect("create");
        let mut buf = vec![0u8; 4096];
        // Back up and overwrite 4 KiB at 0, then the alias at 64 KiB (whose
        // backup now holds our own block), then 0 again (no new backup).
        for offset in [0u64, 64 << 10] {
            disk.read_at(offset, &mut buf).expect("read");
            journal.append(offset, &buf).expect("append");
            journal.commit().expect("commit");
            disk.write_at(offset, &[offset as u8 + 1; 4096]).expect("write");
        }
        disk.write_at(0, &[9; 4096]).expect("write");
        assert_ne!(disk.snapshot(), before);
        journal.undo(&mut disk).expect("undo");
        assert_eq!(disk.snapshot(), before);
        journal.remove().expect("remove");
        assert!(pending(dir.path()).expect("pending").is_empty());
    }

    #[test]
    fn a_torn_tail_is_ignored_and_replay_finishes_the_job() {
        let dir = tempfile::tempdir().expect("dir");
        let mut disk = SimDisk::new(1 << 20, 1 << 20, Mode::Genuine);
        disk.fill_pattern(5);
        let before = disk.snapshot();
        let mut journal = Journal::create(dir.path(), &header(2)).expect("create");
        let mut buf = vec![0u8; 8192];
        disk.read_at(8192, &mut buf).expect("read");
        journal.append(8192, &buf).expect("append");
        journal.commit().expect("commit");
        disk.write_at(8192, &[0xAB; 8192]).expect("write");
        let path = journal.path().to_path_buf();
        drop(journal);
        // A crash halfway through the next record.
        let mut file = OpenOptions::new().append(true).open(&path).expect("open");
        file.write_all(b"REC1\x00\x10\x00\x00").expect("torn");
        drop(file);

        let mut found = pending(dir.path()).expect("pending");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].header, header(2));
        let done = found.remove(0).replay(&mut disk).expect("replay");
        assert_eq!(done, Undone { records: 1, bytes: 8192 });
        assert_eq!(disk.snapshot(), before);
        assert!(pending(dir.path()).expect("pending").is_empty());
    }

    #[test]
    fn a_journal_without_a_durable_header_is_dropped() {
        let dir = tempfile::tempdir().expect("dir");
        fs::write(dir.path().join("sdx-1.journal"), b"SSCAPJ01\x05").expect("write");
        assert!(pending(dir.path()).expect("pending").is_empty());
        assert!(!dir.path().join("sdx-1.journal").exists());
    }
}
