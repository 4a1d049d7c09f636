//! `verify-capacity`'s whole-device probe as `verify-capacity` and `batch
//! --verify` run it (docs/verify-capacity.md): refuse or clear the device,
//! replay an unfinished journal, probe; and the one-line failures of the
//! probe, of a raw open, and of a run whose error may mean a fake card;
//! and `verify-capacity --files`, the check of a mounted card's free space.

use std::path::{Path, PathBuf};

use storage_capacity::files::{FilesError, FilesReport};
use storage_capacity::preflight::{self, Refusal};
use storage_capacity::replay::age_words;
use storage_capacity::{DirError, JournalDir, Leftover, Options, ProbeError, RawDisk, Safety, VerifyError, Watch};
use storage_platform::usage::OpenRefusal;

use crate::Failure;
use crate::failure::Confirm;

/// What the probe was asked for: `verify-capacity`'s options.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// The whole device, as given.
    pub device: String,
    /// `--destructive`: no journal, the card's data is lost.
    pub destructive: bool,
    /// `--yes`: nothing asked before a destructive probe.
    pub yes: bool,
    /// `--thorough`: the larger cache bound.
    pub thorough: bool,
    /// `--journal-dir`.
    pub journal_dir: PathBuf,
    /// Asks before writing all over the device (the device, what will be
    /// done to it); refuses when it cannot ask or is not told yes.
    pub confirm: Confirm,
    /// A line on stderr: what was found of an earlier, unfinished run.
    pub note: fn(&str),
}

/// The whole-device probe of `verify-capacity` and `batch --verify`:
/// preflight, journal place, an unfinished run replayed, then the probe.
/// `--destructive` without `--yes` asks (`confirm`) once the card is
/// cleared (`batch` asks once, up front, and passes `--yes` on).
pub fn probe(args: &ProbeOptions, watch: &dyn Watch) -> Result<storage_capacity::Report, Failure> {
    let cleared = preflight::check(&args.device).map_err(|r| match r {
        Refusal::Usage(m) => Failure::Usage(m),
        Refusal::Unsafe(m) => Failure::Refused(m),
    })?;
    let mut disk = RawDisk::open(&cleared.node, cleared.dev).map_err(|e| open_failure(&args.device, e))?;

    // The journal's place is checked before it is read or written; with
    // --destructive there is no journal to keep, and an unusable place is
    // no reason to stop.
    let journal_dir = match JournalDir::open(&args.journal_dir, &cleared.family, &args.device) {
        Ok(dir) => Some(dir),
        Err(_) if args.destructive => None,
        Err(e) => return Err(journal_dir_refused(&e, args)),
    };
    // An unfinished run of this card comes first, whatever else was asked.
    if let Some(dir) = &journal_dir {
        match storage_capacity::replay_unfinished(dir, &args.device, &cleared.fingerprint, &mut disk) {
            Ok(leftovers) => leftovers_said(&leftovers, &args.device, args.note)?,
            Err(e) => return Err(Failure::Run(e.to_string())),
        }
    }

    if args.destructive && !args.yes {
        (args.confirm)(&args.device, "writes all over")?;
    }
    let safety = match (&journal_dir, args.destructive) {
        (_, true) => Safety::Destructive,
        (Some(dir), false) => Safety::Journal { dir, fingerprint: cleared.fingerprint.clone() },
        (None, false) => return Err(Failure::Run("no journal directory was opened".to_owned())),
    };
    let bound =
        if args.thorough { storage_capacity::THOROUGH_CACHE_BOUND } else { storage_capacity::DEFAULT_CACHE_BOUND };
    let options = Options { cache_bound: bound, ..Options::default() };
    storage_capacity::verify(&mut disk, &args.device, &safety, options, watch).map_err(|e| verify_failure(e, args))
}

/// A whole-device report's verdict as the exit code: a fake card is exit 4.
pub fn verdict(report: &storage_capacity::Report) -> Result<(), Failure> {
    if report.verdict.is_fake() { Err(Failure::Fake(report.summary())) } else { Ok(()) }
}

/// `verify-capacity DIR --files`: the free space of the mounted card at
/// `dir` filled with nameless files and read back.
pub fn files(dir: &str, watch: &dyn Watch) -> Result<FilesReport, Failure> {
    if !Path::new(dir).is_dir() {
        return Err(Failure::Usage(format!(
            "--files wants a directory on the mounted card, and {dir} is not one; for the whole device, leave --files out"
        )));
    }
    // The links on the path are followed here, once, as for any path a
    // user gives; from then on none is: the directory is opened by its real
    // path, and every file made relative to that handle.
    let real = std::fs::canonicalize(dir)
        .map_err(|e| Failure::Usage(format!("{dir}: {e}; give a directory on the mounted card")))?;
    storage_capacity::files::verify_files(&real, watch).map_err(|e| match e {
        FilesError::Stopped(ProbeError::Interrupted(signal)) => {
            Failure::Run(format!("interrupted by {signal}; the scratch files had no names and are gone"))
        }
        FilesError::NoRoom { .. } => Failure::Refused(e.to_string()),
        other => Failure::Usage(other.to_string()),
    })
}

/// `--files`' verdict as the exit code: a fake card is exit 4, with what to do.
pub fn files_verdict(report: &FilesReport) -> Result<(), Failure> {
    if !report.verdict.is_fake() {
        return Ok(());
    }
    Err(Failure::Fake(format!(
        "{} is on a fake card ({}): {} of the {} written there did not hold its data; copy your files off it",
        report.dir,
        report.verdict.as_str(),
        storage_capacity::verdict::size(report.bad_bytes),
        storage_capacity::verdict::size(report.tested_bytes)
    )))
}

/// docs/verify-capacity.md#from-run: an I/O error at an offset may be a card that
/// is smaller than it claims. Returns "; …verify-capacity…" for the error
/// line, or nothing when the error is not of that kind.
pub fn hint_after_run_error(error: &storage_bench::RunError, plan: &storage_bench::Plan) -> String {
    use storage_bench::engine::EngineError;
    use storage_bench::{ReadTarget, RunError, WriteTarget};
    let RunError::Engine { key, source } = error else { return String::new() };
    let at_offset = match source {
        EngineError::Io { source, .. } => source.raw_os_error() == Some(libc::EIO),
        EngineError::Short { .. } => true,
        _ => false,
    };
    if !at_offset {
        return String::new();
    }
    let reads_device = matches!(
        storage_scoring::figure::Figure::from_key(key),
        Some(storage_scoring::figure::Figure::SeqRead | storage_scoring::figure::Figure::CachedRead)
    );
    match (&plan.read_target, &plan.write_target) {
        (ReadTarget::Device(device), _) if reads_device => format!(
            "; a card that fails there may be smaller than it claims: check it with sudo storage-score verify-capacity {}",
            device.display()
        ),
        (_, WriteTarget::Raw(device)) => format!(
            "; a card that fails there may be smaller than it claims: check it with sudo storage-score verify-capacity {}",
            device.path.display()
        ),
        (_, WriteTarget::Scratch(dir)) => format!(
            "; a card that fails there may be smaller than it claims: check it with sudo storage-score verify-capacity {} --files",
            dir.display()
        ),
        _ => String::new(),
    }
}

pub fn open_failure(device: &str, refusal: OpenRefusal) -> Failure {
    let e = match refusal {
        OpenRefusal::Open(e) => e,
        OpenRefusal::InUse(found) => return Failure::Refused(preflight::in_use(device, &found)),
        other => return Failure::Refused(other.message(device)),
    };
    match e.raw_os_error() {
        Some(libc::EBUSY) => Failure::Refused(format!(
            "{device} is in use (another program holds it exclusively, or something on it is mounted); release it first, `sudo fuser -v {device}` shows who holds it"
        )),
        Some(libc::EACCES | libc::EPERM) => Failure::Usage(format!(
            "cannot open {device}: permission denied; run as root: sudo storage-score verify-capacity {device}"
        )),
        Some(libc::EROFS) => Failure::Usage(format!(
            "{device} is read-only (a write-protect switch?); make it writable: the probe must write to it"
        )),
        _ => Failure::Run(format!("cannot open {device}: {e}")),
    }
}

fn leftovers_said(leftovers: &[Leftover], device: &str, errln: fn(&str)) -> Result<(), Failure> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let made = |header: &storage_capacity::journal::Header| {
        format!("made {} ago for {}", age_words(now.saturating_sub(header.created_unix)), header.device)
    };
    let rm = |journal: &Path| format!("sudo rm {}", storage_platform::usage::shell_word(&journal.to_string_lossy()));
    for leftover in leftovers {
        match leftover {
            Leftover::Replayed { journal, bytes } => errln(&format!(
                "storage-score: an earlier run on {device} did not finish; its {bytes} overwritten bytes were restored from {}",
                journal.display()
            )),
            Leftover::Kept { journal, header } => errln(&format!(
                "storage-score: note: {} holds the undo data of an unfinished run ({}); this card needed nothing from it, but nothing shows that it is that card, so it is kept: if that card is gone, remove it: {}",
                journal.display(),
                made(header),
                rm(journal)
            )),
            Leftover::Mismatch { journal, header } => {
                return Err(Failure::Refused(format!(
                    "{} holds the undo data of an unfinished run on another card ({}); nothing was restored: put that card back and rerun to restore it, or, if that card is gone, remove it: {}",
                    journal.display(),
                    made(header),
                    rm(journal)
                )));
            }
            Leftover::Stale { journal, header, why } => {
                return Err(Failure::Refused(format!(
                    "{} holds the undo data of an unfinished run ({}), and {device} does not hold what that run left ({why}): another card, or this one rewritten since; nothing was restored and the journal is kept: put that run's card in and rerun, or, if this is it and its data since is what counts, remove it: {}",
                    journal.display(),
                    made(header),
                    rm(journal)
                )));
            }
            Leftover::OtherDevice { journal, header } => errln(&format!(
                "storage-score: note: {} holds the undo data of an unfinished run ({}); to restore it, run: storage-score verify-capacity {}",
                journal.display(),
                made(header),
                header.device
            )),
            Leftover::Untrusted { journal, why } => errln(&format!(
                "storage-score: note: {} was ignored, neither used nor deleted: {why}",
                journal.display()
            )),
        }
    }
    Ok(())
}

/// A journal directory that cannot be trusted or used: refused (exit 3),
/// with what would do instead.
fn journal_dir_refused(e: &DirError, args: &ProbeOptions) -> Failure {
    Failure::Refused(format!(
        "no safe place for the undo journal ({e}); give --journal-dir DIR: a directory of root's, writable by no one else, on a disk other than {} and not in memory (the default is /var/lib/storage-score/journal), or add --destructive --yes if every byte on it may be lost",
        args.device
    ))
}

fn verify_failure(e: VerifyError, args: &ProbeOptions) -> Failure {
    match e {
        VerifyError::NoJournal { dir, source } => Failure::Refused(format!(
            "no writable place for the undo journal ({}: {source}); give --journal-dir DIR on another disk, or add --destructive --yes if every byte on {} may be lost",
            dir.display(),
            args.device
        )),
        VerifyError::Probe(ProbeError::Interrupted(signal)) => Failure::Run(format!(
            "interrupted by {signal}; {}",
            if args.destructive {
                "the card was left as the probe had written it"
            } else {
                "every byte written was restored"
            }
        )),
        VerifyError::Probe(e @ ProbeError::TooSmall(_)) => Failure::Usage(e.to_string()),
        VerifyError::Probe(e) => Failure::Run(format!("the probe failed: {e}; every byte written was restored")),
        e @ (VerifyError::Undo { .. } | VerifyError::Replay { .. }) => Failure::Run(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use storage_capacity::verdict::Verdict;

    use super::*;

    #[test]
    fn files_wants_a_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("card.img");
        std::fs::write(&file, b"").expect("write");
        for not_a_dir in [file, dir.path().join("missing")] {
            let name = not_a_dir.to_str().expect("utf-8");
            let e = files(name, &storage_capacity::Quiet).expect_err("not a directory");
            assert_eq!(e.exit_code(), 2);
            assert_eq!(
                e.to_string(),
                format!(
                    "--files wants a directory on the mounted card, and {name} is not one; for the whole device, leave --files out"
                )
            );
        }
    }

    #[test]
    fn a_fake_found_by_files_is_exit_4() {
        let report = |verdict| FilesReport {
            dir: "/media/card".to_owned(),
            verdict,
            announced_bytes: 64 << 30,
            tested_bytes: 8 << 30,
            usable_bytes: 4 << 30,
            bad_bytes: 4 << 30,
            reserve_bytes: 1 << 20,
            seconds: 1.0,
            notes: Vec::new(),
        };
        assert!(files_verdict(&report(Verdict::Genuine)).is_ok());
        let e = files_verdict(&report(Verdict::Wraparound)).expect_err("fake");
        assert_eq!(e.exit_code(), 4);
        assert!(e.to_string().starts_with("/media/card is on a fake card (wraparound): "), "{e}");
        assert!(e.to_string().ends_with("copy your files off it"), "{e}");
    }
}
