//! `profile`'s studies (docs/profile.md) as the command line asks for
//! them: the configuration of [`storage_bench::profile`] (which studies,
//! the memory they may use, the SD card's allocation unit), the run with
//! the machine watched, the report, and the one line and exit code of an
//! error that stopped it; where the studies may write, and the files
//! (`--html`, `--csv`) written after them.

use std::path::Path;
use std::time::Duration;

use storage_bench::profile::{self, Config, Place, ProfileError, SdFacts, SustainedPlan};
use storage_bench::{EngineChoice, Observer, Plan, WriteTarget};
use storage_platform::{Resolved, Roots};
use storage_scoring::profile::ProfileReport;
use storage_scoring::schema::{Device, Medium, Report};

use crate::Failure;
use crate::outputs::{OutputDir, OutputFile};
use crate::watch::Session;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Which studies were asked for, and how: `profile`'s options.
#[derive(Debug, Clone, Default)]
pub struct StudyOptions {
    /// `--sweep`.
    pub sweep: bool,
    /// `--transfer-sizes`.
    pub transfer_sizes: bool,
    /// `--sustained [SIZE]`: `Some(None)` for a size of the study's choosing.
    pub sustained: Option<Option<u64>>,
    /// `--after-random SECONDS`.
    pub after_random: Option<u64>,
    /// `--max-time SECONDS`.
    pub max_time: u64,
    pub engine: EngineChoice,
}

/// `--html` and `--csv`, opened before the studies, so that a path that
/// cannot be written is refused first.
#[derive(Debug)]
pub struct Files {
    html: Option<OutputFile>,
    csv: Option<OutputDir>,
}

impl Files {
    pub fn prepare(html: Option<&Path>, csv: Option<&Path>) -> Result<Files, Failure> {
        Ok(Files {
            html: html.map(|path| OutputFile::prepare(path, "--html")).transpose()?,
            csv: csv.map(|dir| OutputDir::prepare(dir, "--csv")).transpose()?,
        })
    }

    /// The report as an HTML page and CSV tables; returns a line for each
    /// that says where it is.
    pub fn write(&self, doc: &ProfileReport) -> Result<Vec<String>, Failure> {
        let mut written = Vec::new();
        if let Some(html) = &self.html {
            html.write(storage_report::profile_page::render(doc).as_bytes())?;
            written.push(format!("HTML report: {}", html.path().display()));
        }
        if let Some(csv) = &self.csv {
            for (name, text) in storage_report::csv::files(&doc.profile) {
                csv.write(name, text.as_bytes())?;
            }
            written.push(format!("CSV tables: {}", csv.path().display()));
        }
        Ok(written)
    }
}

/// The studies write: a read-only filesystem is refused, unless `raw`
/// (the unmounted device).
pub fn writable(target: &str, raw: bool, resolved: &Resolved) -> Result<(), Failure> {
    if !raw && resolved.mount.as_ref().is_some_and(|m| m.read_only) {
        return Err(Failure::Usage(format!(
            "{target} is on a read-only filesystem: the profile studies write, so remount it read-write, or give --raw --destructive --yes on the unmounted device"
        )));
    }
    Ok(())
}

/// Where the studies write: where `run`'s plan would (a scratch file in a
/// mounted filesystem, or the raw device only with --destructive,
/// unmounted, confirmed), or a refusal when it has nowhere.
pub fn place(target: &str, plan: &Plan) -> Result<Place, Failure> {
    match &plan.write_target {
        WriteTarget::Scratch(dir) => Ok(Place::Scratch(dir.clone())),
        WriteTarget::Raw(device) => Ok(Place::Raw(device.clone())),
        WriteTarget::Unavailable(_) => Err(Failure::Usage(format!(
            "{target} has no mounted, writable filesystem: the profile studies write, so mount one, or give --raw --destructive --yes to write the unmounted device from its first GiB on"
        ))),
    }
}

/// Runs the studies of `config` on the resolved target, the machine
/// watched and `progress` hearing of each; `done` is called once they
/// end, before the report is made. The report, and the error that stopped
/// the studies early, if any.
pub fn study(
    config: &Config,
    resolved: &Resolved,
    device: Option<Device>,
    roots: &Roots,
    progress: &dyn Observer,
    done: impl FnOnce(),
) -> (ProfileReport, Option<ProfileError>) {
    let session = Session::start(resolved, device.as_ref(), roots);
    let (studies, error) = profile::run(config, &session.observer(progress));
    done();

    let mut report = Report::new(VERSION);
    report.created = Some(crate::document::now());
    session.finish(&mut report);
    report.target = Some(resolved.target.clone());
    report.device = device;
    report.system = Some(storage_identify::system::system(roots));
    if let Some(e) = &error {
        report.notes.push(format!("the run stopped early: {e}"));
    }
    (ProfileReport { report, profile: studies }, error)
}

/// The exit code and one line for an error that stopped the studies.
pub fn failure(e: ProfileError) -> Failure {
    if e.is_interrupt() {
        Failure::Run(format!("{e}; the figures measured so far are shown above, nothing was left behind"))
    } else if e.is_refusal() {
        Failure::Refused(e.to_string())
    } else if e.is_bad_target() {
        Failure::Usage(e.to_string())
    } else {
        Failure::Run(format!("the profile failed: {e}; nothing was left behind"))
    }
}

/// What was asked for, as the studies' configuration.
pub fn config(
    args: &StudyOptions,
    place: Place,
    device: Option<&Device>,
    roots: &Roots,
    plan: &storage_bench::Plan,
) -> Config {
    let named = args.sweep || args.sustained.is_some() || args.after_random.is_some() || args.transfer_sizes;
    let mut config = Config::new(place);
    config.sweep = !named || args.sweep;
    config.transfer = !named || args.transfer_sizes;
    config.sustained = (!named || args.sustained.is_some() || args.after_random.is_some()).then(|| SustainedPlan {
        size: args.sustained.flatten(),
        after_random: args.after_random.map(Duration::from_secs),
    });
    config.max_time = Duration::from_secs(args.max_time);
    config.engine = args.engine;
    config.memory_budget = memory_available(&roots.proc).map(|bytes| bytes / 2);
    config.sd = sd_facts(device);
    config.write_device = plan.write_device.clone();
    config
}

/// `MemAvailable` from `/proc/meminfo`, in bytes. Read as any kernel file
/// is (a FIFO or `/dev/zero` there under `--machine-root` is no figure).
fn memory_available(proc_root: &Path) -> Option<u64> {
    let text =
        storage_platform::sysfs::read_text(&proc_root.join("meminfo"), storage_platform::sysfs::ATTR_LIMIT).ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// For an SD card, its allocation unit and claimed video class, for the
/// note that relates the sustained curve to the SD speed classes. A card
/// with a video class counts its rate per video-class AU (`VSC_AU_SIZE`).
fn sd_facts(device: Option<&Device>) -> Option<SdFacts> {
    let device = device.filter(|d| d.kind.medium == Medium::Sd)?;
    let Some(ssr) = device.sd.as_ref().and_then(|sd| sd.ssr.as_ref()) else {
        return Some(SdFacts::default());
    };
    let vsc_au = u64::from(ssr.vsc_au_size_mib) << 20;
    let au = if ssr.video_class > 0 && vsc_au > 0 { vsc_au } else { ssr.au_size_bytes };
    Some(SdFacts { au_bytes: (au > 0).then_some(au), video_class: (ssr.video_class > 0).then_some(ssr.video_class) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_scoring::schema::DeviceKind;

    #[test]
    fn the_files_say_where_they_are() {
        let dir = tempfile::tempdir().expect("tempdir");
        let html = dir.path().join("profile.html");
        let csv = dir.path().join("tables");
        let files = Files::prepare(Some(&html), Some(&csv)).expect("prepare");
        assert!(csv.is_dir(), "--csv's directory is made before the studies");
        let written = files.write(&ProfileReport::default()).expect("write");
        assert_eq!(written, [format!("HTML report: {}", html.display()), format!("CSV tables: {}", csv.display())]);
        assert!(std::fs::read_to_string(&html).expect("html").contains("<html"));
        assert!(Files::prepare(None, None).expect("none").write(&ProfileReport::default()).expect("w").is_empty());
        let e = Files::prepare(Some(&dir.path().join("missing").join("p.html")), None).expect_err("no directory");
        assert!(e.to_string().starts_with("--html "), "{e}");
    }

    #[test]
    fn memory_comes_from_meminfo() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("meminfo"), "MemTotal: 1000 kB\nMemAvailable:     2048 kB\n").expect("write");
        assert_eq!(memory_available(dir.path()), Some(2 << 20));
        assert_eq!(memory_available(Path::new("/nonexistent")), None);
    }

    #[test]
    fn a_video_class_card_counts_per_video_au() {
        use storage_scoring::schema::{SdInfo, SdSsr};
        let device = |video_class, vsc_au_size_mib| Device {
            kind: DeviceKind::SD,
            sd: Some(SdInfo {
                ssr: Some(SdSsr { au_size_bytes: 4 << 20, video_class, vsc_au_size_mib, ..SdSsr::default() }),
                ..SdInfo::default()
            }),
            ..Device::default()
        };
        assert_eq!(sd_facts(Some(&device(30, 16))), Some(SdFacts { au_bytes: Some(16 << 20), video_class: Some(30) }));
        assert_eq!(sd_facts(Some(&device(0, 0))), Some(SdFacts { au_bytes: Some(4 << 20), video_class: None }));
        assert_eq!(sd_facts(None), None);
        assert_eq!(sd_facts(Some(&Device { kind: DeviceKind::USB, ..device(30, 16) })), None, "not an SD card");
    }
}
