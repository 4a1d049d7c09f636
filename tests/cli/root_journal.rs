//! verify-capacity's undo journal, tried as an attacker (and bad luck)
//! would (docs/verify-capacity.md#after-a-crash,
//! docs/verify-capacity.md#the-journal-directory): a journal left by `kill -9` meets a
//! reformatted card, another card in the same slot, or its own card after
//! a reboot; a journal directory that others can write to, made under
//! `umask 000`, holding a FIFO, or on tmpfs.
//!
//! Cards are loop devices (direct I/O) over files of random data, so that
//! "another card in the same slot" is exactly that: the same node, the same
//! backing path, the same size, other data. A blkio throttle slows the
//! probe's writes so that `kill -9` lands in the middle of them. Every test
//! names the old behaviour it guards against; with `STORAGE_SCORE_BIN` and
//! `STORAGE_SCORE_EXPECT_VULNERABLE=1` (support/attack.rs) it shows that
//! behaviour in that binary instead.
//!
//! These need root.

use storage_score_test_support as support;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::attack::{OwnedDir, TestUser, command, expect_foiled, expect_vulnerable};
use support::*;

const MIB: u64 = 1 << 20;
const CARD: u64 = 256 * MIB;

/// A card: a file of random data (the user's) behind a loop device.
struct Card {
    dir: tempfile::TempDir,
    dev: Option<LoopDev>,
}

impl Card {
    fn new(seed: u64) -> Card {
        let dir = tempfile::Builder::new().prefix("ss-card-").tempdir_in("/var/tmp").expect("tmp");
        write_random(&dir.path().join("card.img"), seed);
        let dev = LoopDev::attach(&dir.path().join("card.img"));
        Card { dir, dev: Some(dev) }
    }

    fn image(&self) -> PathBuf {
        self.dir.path().join("card.img")
    }

    fn dev(&self) -> &LoopDev {
        self.dev.as_ref().expect("in a slot")
    }

    fn node(&self) -> PathBuf {
        self.dev().node.clone()
    }

    fn path(&self) -> String {
        self.dev().path().to_owned()
    }

    fn hash(&self) -> String {
        device_hash(&self.node())
    }

    /// Takes the card out of its slot (detaches the loop device).
    fn eject(&mut self) -> PathBuf {
        let node = self.node();
        self.dev = None;
        node
    }

    /// Puts the card (its file) in the slot `node`.
    fn insert_at(&mut self, node: &Path) {
        self.dev = Some(LoopDev::attach_to(node, &self.image()));
    }
}

/// `CARD` bytes of reproducible random data (xorshift64*), made fast.
fn write_random(path: &Path, seed: u64) {
    let mut file = std::io::BufWriter::with_capacity(4 * MIB as usize, std::fs::File::create(path).expect("card"));
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut chunk = vec![0u8; MIB as usize];
    for _ in 0..CARD / MIB {
        for word in chunk.chunks_exact_mut(8) {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            word.copy_from_slice(&state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
        }
        file.write_all(&chunk).expect("write");
    }
    file.flush().expect("flush");
}

fn verify(card: &str, journal: &Path) -> Output {
    let out = command(&["verify-capacity", card, "--json", "--journal-dir", journal.to_str().expect("utf8")])
        .output()
        .expect("run");
    eprintln!(
        "verify-capacity {card}: exit {:?}\n--- stderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn journals(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "journal")).collect())
        .unwrap_or_default();
    found.sort();
    found
}

/// Starts verify-capacity on `card` with writes throttled, and kills it
/// with SIGKILL once the card itself has taken 2 MiB of its writes (the
/// device's own counter, `/sys/block/NAME/stat`): the journal holds their
/// backups, and the card holds the run's stamps. Any probe writes that
/// much, whatever its plan, and at 16 MiB/s it is still writing then.
fn crash_mid_write(card: &Card, journal: &Path) {
    let _throttle = BlkioThrottle::new(card.dev(), Throttle { write_bps: Some(16 * MIB), ..Throttle::default() });
    let stat = PathBuf::from("/sys/block").join(card.node().file_name().expect("name")).join("stat");
    let written = || -> u64 {
        let text = std::fs::read_to_string(&stat).expect("device stat");
        text.split_whitespace().nth(6).and_then(|s| s.parse::<u64>().ok()).expect("sectors written") * 512
    };
    let before = written();
    let mut child =
        command(&["verify-capacity", &card.path(), "--json", "--journal-dir", journal.to_str().expect("utf8")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(120);
    let size = loop {
        assert!(Instant::now() < deadline, "the probe never wrote 2 MiB to the card");
        if let Some(status) = child.try_wait().expect("wait") {
            panic!("verify-capacity ended ({status}) before it could be killed");
        }
        if written() - before >= 2 * MIB {
            break journals(journal).first().and_then(|j| std::fs::metadata(j).ok()).map_or(0, |m| m.len());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGKILL)
        .expect("kill -9");
    let _ = child.wait();
    eprintln!("killed mid-write with a journal of {size} bytes");
}

#[test]
#[ignore = "needs root: loop, throttle, ext4"]
fn a_reformatted_card_was_corrupted_by_the_replay_of_an_old_journal() {
    let _lock = device_lock();
    let journal = journal_dir();
    let card = Card::new(1);
    let original = card.hash();
    crash_mid_write(&card, journal.path());
    assert_eq!(journals(journal.path()).len(), 1);
    // The user gives up on the card and makes a new filesystem on it.
    let mkfs = Command::new("mkfs.ext4").args(["-q", "-F", &card.path()]).output().expect("mkfs");
    assert!(mkfs.status.success(), "{}", String::from_utf8_lossy(&mkfs.stderr));
    let formatted = card.hash();
    let out = verify(&card.path(), journal.path());
    let after = card.hash();
    let fsck = Command::new("e2fsck").args(["-f", "-n", &card.path()]).output().expect("e2fsck");
    let fsck_said = String::from_utf8_lossy(&fsck.stdout).into_owned() + &String::from_utf8_lossy(&fsck.stderr);
    eprintln!(
        "device hashes: original {original}, reformatted {formatted}, after the rerun {after}; e2fsck exit {:?}:\n{fsck_said}",
        fsck.status.code()
    );
    expect_foiled(after != formatted || !fsck.status.success(), "the replay wrote onto the new filesystem");
    if !expect_vulnerable() {
        let line = assert_one_line_error(&out, 3);
        assert!(line.contains("ago") && line.contains(&card.path()), "the age and the device: {line}");
        assert!(line.contains("nothing was restored"), "{line}");
        assert_eq!(journals(journal.path()).len(), 1, "the journal is kept");
    }
}

#[test]
#[ignore = "needs root: loop, throttle"]
fn another_card_in_the_same_slot_received_the_first_cards_blocks() {
    let _lock = device_lock();
    let journal = journal_dir();
    // `reader` is the slot: one node, one backing path (so one fingerprint,
    // as a USB reader gives), whatever card is in it.
    let mut reader = Card::new(2);
    let first_original = reader.hash();
    crash_mid_write(&reader, journal.path());
    let slot = reader.eject();
    let first_card = reader.image().with_extension("first");
    std::fs::rename(reader.image(), &first_card).expect("take the first card out");
    write_random(&reader.image(), 3);
    reader.insert_at(&slot);
    let other_before = reader.hash();
    let out = verify(&reader.path(), journal.path());
    let other_after = reader.hash();
    eprintln!("device hashes of the other card: before {other_before}, after the rerun {other_after}");
    expect_foiled(other_after != other_before, "the first card's blocks were written onto another card");
    if expect_vulnerable() {
        return;
    }
    let line = assert_one_line_error(&out, 3);
    assert!(line.contains("ago") && line.contains(&reader.path()), "{line}");
    assert_eq!(journals(journal.path()).len(), 1, "the journal is kept for its own card");

    // The first card comes back into the slot: now it is restored, whole.
    reader.eject();
    std::fs::rename(&first_card, reader.image()).expect("the first card back in");
    reader.insert_at(&slot);
    let crashed = reader.hash();
    let out = verify(&reader.path(), journal.path());
    let restored = reader.hash();
    eprintln!(
        "device hashes of the first card: original {first_original}, after the crash {crashed}, after the rerun {restored}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("restored"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(restored, first_original, "the first card was not restored whole");
    assert!(journals(journal.path()).is_empty());
}

#[test]
#[ignore = "needs root: loop, throttle"]
fn the_same_card_after_a_reboot_is_restored_in_any_slot() {
    let _lock = device_lock();
    for other_slot in [false, true] {
        let journal = journal_dir();
        let mut card = Card::new(4);
        let original = card.hash();
        crash_mid_write(&card, journal.path());
        let crashed = card.hash();
        // A reboot: the card comes back, maybe as another device node.
        let slot = card.eject();
        // Another node: a placeholder takes the old one first.
        let _placeholder = other_slot.then(|| {
            let file = card.image().with_extension("placeholder");
            std::fs::File::create(&file).and_then(|f| f.set_len(CARD)).expect("placeholder");
            LoopDev::attach_to(&slot, &file)
        });
        if other_slot {
            card.dev = Some(LoopDev::attach(&card.image()));
            assert_ne!(card.node(), slot);
        } else {
            card.insert_at(&slot);
        }
        let out = verify(&card.path(), journal.path());
        let after = card.hash();
        eprintln!(
            "{}: device hashes: original {original}, after the crash {crashed}, after the rerun {after}",
            if other_slot { "another node" } else { "the same node" }
        );
        assert_ne!(crashed, original, "the crash left nothing to restore");
        let stderr = String::from_utf8_lossy(&out.stderr);
        if other_slot && expect_vulnerable() {
            // The old binary asked for the same node name when the card
            // names no one, and started a new probe over the stamps.
            expect_foiled(after != original, "its own card was not restored under a new node name");
            continue;
        }
        assert!(stderr.contains("did not finish") && stderr.contains("restored"), "{stderr}");
        assert_eq!(after, original, "the card was not restored whole");
        assert!(journals(journal.path()).is_empty());
    }
}

// --- the journal directory ---

/// A journal in the old format (as 50db2e1 wrote it), forged: one record
/// that "restores" sector 0 with the attacker's bytes.
fn forged_old_journal(dir: &Path, card: &Card) {
    let size =
        std::fs::read_to_string(format!("/sys/block/{}/size", card.node().file_name().expect("n").to_string_lossy()))
            .expect("size")
            .trim()
            .to_owned();
    let backing = std::fs::read_to_string(format!(
        "/sys/block/{}/loop/backing_file",
        card.node().file_name().expect("n").to_string_lossy()
    ))
    .expect("backing")
    .trim()
    .to_owned();
    let header = serde_json::json!({
        "device": card.path(), "size": CARD, "fingerprint": format!("size={size};loop/backing_file={backing}"),
        "nonce": 1, "created_unix": 0
    });
    let json = serde_json::to_vec(&header).expect("json");
    let data = vec![b'X'; 4096];
    let mut bytes = b"SSCAPJ01".to_vec();
    bytes.extend((json.len() as u32).to_le_bytes());
    bytes.extend(&json);
    bytes.extend(old_hash(0, &json).to_le_bytes());
    bytes.extend(b"REC1");
    bytes.extend(4096u32.to_le_bytes());
    bytes.extend(0u64.to_le_bytes());
    bytes.extend(&data);
    bytes.extend(old_hash(4096, &data).to_le_bytes());
    std::fs::write(dir.join("loop-forged.journal"), bytes).expect("forge");
}

/// The unkeyed header and record hash of the old journal format.
fn old_hash(seed: u64, part: &[u8]) -> u64 {
    let mut h = seed ^ 0xCBF2_9CE4_8422_2325;
    let mut words = part.chunks_exact(8);
    for w in &mut words {
        h = (h ^ u64::from_le_bytes(w.try_into().expect("8"))).wrapping_mul(0x100_0000_01B3).rotate_left(31);
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3);
    }
    h ^= part.len() as u64;
    let mut z = h;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn first_sector(card: &Card) -> Vec<u8> {
    let mut buf = vec![0u8; 512];
    let file = std::fs::File::open(card.node()).expect("open");
    std::os::unix::fs::FileExt::read_exact_at(&file, &mut buf, 0).expect("read");
    buf
}

#[test]
#[ignore = "needs root: loop, users"]
fn a_forged_journal_in_a_directory_others_can_write_rewrote_the_first_sector() {
    let _lock = device_lock();
    let card = Card::new(5);
    let sector = first_sector(&card);
    // A journal directory that another user owns (a shared stick, say).
    let attacker = TestUser::new("attacker");
    let shared = OwnedDir::new(&attacker, 0o755);
    forged_old_journal(&shared.path, &card);
    let out = verify(&card.path(), &shared.path);
    expect_foiled(first_sector(&card) != sector, "a forged journal rewrote the card's first sector");
    if !expect_vulnerable() {
        let line = assert_one_line_error(&out, 3);
        assert!(line.contains(&format!("belongs to uid {}", attacker.uid)), "{line}");
    }

    // Root's own directory, a journal nobody keyed: ignored, not deleted.
    let journal = journal_dir();
    forged_old_journal(journal.path(), &card);
    let out = verify(&card.path(), journal.path());
    expect_foiled(first_sector(&card) != sector, "an unkeyed journal rewrote the card's first sector");
    if !expect_vulnerable() {
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("was ignored"));
        assert!(journal.path().join("loop-forged.journal").exists());
    }
}

#[test]
#[ignore = "needs root: loop"]
fn under_umask_000_the_journal_directories_were_made_world_writable() {
    let _lock = device_lock();
    let card = Card::new(6);
    let base = journal_dir();
    let dir = base.path().join("a/b/journal");
    let script =
        format!("umask 000; exec \"$0\" verify-capacity {} --json --journal-dir {}", card.path(), dir.display());
    let out =
        Command::new("sh").args(["-c", &script, &support::attack::bin()]).stdin(Stdio::null()).output().expect("sh");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    let modes: Vec<u32> = ["a", "a/b", "a/b/journal"]
        .iter()
        .map(|d| std::fs::metadata(base.path().join(d)).map(|m| m.permissions().mode() & 0o777).unwrap_or(0))
        .collect();
    eprintln!("modes: {:?}", modes.iter().map(|m| format!("{m:o}")).collect::<Vec<_>>());
    expect_foiled(modes.iter().any(|m| m & 0o022 != 0), "the journal's directories were made writable by others");
    if !expect_vulnerable() {
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(modes, [0o700; 3]);
    }
}

#[test]
#[ignore = "needs root: loop"]
fn a_fifo_named_like_a_journal_hung_the_run_until_kill_9() {
    let _lock = device_lock();
    let card = Card::new(7);
    let journal = journal_dir();
    nix::unistd::mkfifo(&journal.path().join("trap.journal"), nix::sys::stat::Mode::from_bits_truncate(0o600))
        .expect("mkfifo");
    let mut child =
        command(&["verify-capacity", &card.path(), "--json", "--journal-dir", journal.path().to_str().expect("utf8")])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
    let finished = |child: &mut std::process::Child, secs| {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < deadline {
            if child.try_wait().expect("wait").is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    };
    let mut hung = !finished(&mut child, 60);
    if hung {
        // SIGTERM first, as a user would: does it end?
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        hung = !finished(&mut child, 5);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    }
    let out = child.wait_with_output().expect("wait");
    expect_foiled(hung, "a FIFO named *.journal hung verify-capacity past SIGTERM");
    if !expect_vulnerable() {
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("FIFO"));
    }
}

#[test]
#[ignore = "needs root: loop, throttle"]
fn a_journal_on_tmpfs_lost_the_cards_data_in_a_crash_and_a_reboot() {
    let _lock = device_lock();
    let card = Card::new(8);
    let original = card.hash();
    let tmpfs = Mounted::new("tmpfs", "tmpfs", Some("mode=0700,size=512m"));
    let journal = PathBuf::from(tmpfs.path()).join("journal");
    let out = verify(&card.path(), &journal);
    if !expect_vulnerable() {
        let line = assert_one_line_error(&out, 3);
        assert!(line.contains("tmpfs") && line.contains("reboot"), "{line}");
        expect_foiled(card.hash() != original, "verify-capacity wrote the card with its journal on tmpfs");
        return;
    }
    // The old binary: a crash mid-write, then a reboot (tmpfs empties), then the rerun.
    crash_mid_write(&card, &journal);
    drop(tmpfs);
    let tmpfs = Mounted::new("tmpfs", "tmpfs", Some("mode=0700,size=512m"));
    let journal = PathBuf::from(tmpfs.path()).join("journal");
    let out = verify(&card.path(), &journal);
    let after = card.hash();
    eprintln!(
        "device hashes: original {original}, after the crash, reboot and rerun {after}, exit {:?}",
        out.status.code()
    );
    expect_foiled(after != original, "the card's data was lost for good and the rerun said all was fine");
}

// --- the journal's records ---

/// One whole record of a journal file: where its data lies, how long it
/// is, and the device offset it restores.
struct Record {
    data_at: u64,
    len: u64,
    offset: u64,
}

/// The whole records of `journal`, read by layout only (no key), in the
/// format of this build (`REC2`, a 32-byte MAC) or the one before (`REC1`,
/// an 8-byte hash), so that the test runs against either.
fn records(journal: &Path) -> Vec<Record> {
    let bytes = std::fs::read(journal).expect("read the journal");
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4")) as u64;
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
    let mut at = 8 + 4 + u32_at(8) as usize + 32;
    let mut list = Vec::new();
    while at + 16 <= bytes.len() {
        let trailer = match &bytes[at..at + 4] {
            b"REC2" => 32,
            b"REC1" => 8,
            _ => break,
        };
        let (len, offset) = (u32_at(at + 4), u64_at(at + 8));
        if at + 16 + len as usize + trailer > bytes.len() {
            break;
        }
        list.push(Record { data_at: (at + 16) as u64, len, offset });
        at += 16 + len as usize + trailer;
    }
    list
}

#[test]
#[ignore = "needs root: loop, throttle"]
fn a_card_rewritten_with_copies_of_its_old_blocks_lost_the_new_data_to_the_replay() {
    let _lock = device_lock();
    let journal = journal_dir();
    let card = Card::new(9);
    crash_mid_write(&card, journal.path());
    let found = journals(journal.path());
    assert_eq!(found.len(), 1);
    let list = records(&found[0]);
    assert!(!list.is_empty(), "the journal holds no whole record");
    // The user puts old data back where the run wrote: each sector gets
    // what the journal saved for the sector after it (old blocks, copied
    // back in another order), none of it the run's.
    let saved = std::fs::read(&found[0]).expect("read");
    let device = std::fs::OpenOptions::new().write(true).open(card.node()).expect("open the card");
    for record in &list {
        let data = &saved[record.data_at as usize..(record.data_at + record.len) as usize];
        let mut moved = data[512..].to_vec();
        moved.extend(&data[..512]);
        std::os::unix::fs::FileExt::write_all_at(&device, &moved, record.offset).expect("rewrite");
    }
    device.sync_all().expect("sync");
    drop(device);
    let rewritten = card.hash();
    let out = verify(&card.path(), journal.path());
    let after = card.hash();
    eprintln!("{} records; device hashes: rewritten {rewritten}, after the rerun {after}", list.len());
    expect_foiled(after != rewritten, "the replay wrote over data the user put back after the crash");
    if !expect_vulnerable() {
        let line = assert_one_line_error(&out, 3);
        assert!(line.contains("nothing was restored"), "{line}");
        assert_eq!(journals(journal.path()).len(), 1, "the journal is kept");
    }
}

#[test]
#[ignore = "needs root: loop, throttle"]
fn a_journal_with_a_changed_record_was_replayed_in_part_and_deleted() {
    let _lock = device_lock();
    let journal = journal_dir();
    let card = Card::new(10);
    let original = card.hash();
    crash_mid_write(&card, journal.path());
    let found = journals(journal.path());
    assert_eq!(found.len(), 1);
    let list = records(&found[0]);
    assert!(list.len() >= 2, "{} whole records: a change must have one after it", list.len());
    // One byte of the first record's saved data, flipped.
    let file = std::fs::OpenOptions::new().read(true).write(true).open(&found[0]).expect("open");
    let at = list[0].data_at + 100;
    let mut byte = [0u8];
    std::os::unix::fs::FileExt::read_exact_at(&file, &mut byte, at).expect("read");
    std::os::unix::fs::FileExt::write_all_at(&file, &[byte[0] ^ 0x01], at).expect("flip");
    drop(file);
    let crashed = card.hash();
    let out = verify(&card.path(), journal.path());
    let after = card.hash();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("device hashes: original {original}, after the crash {crashed}, after the rerun {after}");
    // The old build read the changed record as a torn tail, restored what
    // came before it, deleted the journal, and the rest was lost for good.
    let lost = journals(journal.path()).is_empty() && after != original;
    expect_foiled(lost, "a changed journal was replayed in part and deleted, the card's data lost");
    if !expect_vulnerable() {
        assert!(stderr.contains("was changed") && stderr.contains("neither used nor deleted"), "{stderr}");
        assert_eq!(after, crashed, "nothing was replayed from the changed journal");
    }
}
