//! `storage-score profile`: resolve and identify the target, decide where
//! the studies may write (the same rules and refusals as `run`, docs/safety.md),
//! run them ([`storage_bench::profile`]), and hand the results to the
//! terminal, `--json`, `--html` and `--csv`.

use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use storage_bench::profile::{self, Config, Place, ProfileError, SdFacts, SustainedPlan};
use storage_bench::{EngineChoice, WriteTarget};
use storage_platform::Roots;
use storage_score::args::{ProfileArgs, SizeArg};
use storage_scoring::profile::ProfileReport;
use storage_scoring::schema::{Device, Medium, Report};

use storage_session::outputs::{OutputDir, OutputFile};

use crate::{EngineArg, Failure, RunArgs, profile_render};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `storage-score profile`.
pub fn profile(args: &ProfileArgs, roots: &Roots) -> Result<(), Failure> {
    // Outputs that could not be written are refused before the studies.
    let html = args.html.as_deref().map(|path| OutputFile::prepare(path, "--html")).transpose()?;
    let csv = args.csv.as_deref().map(|dir| OutputDir::prepare(dir, "--csv")).transpose()?;
    let (resolved, device) = storage_identify::identify(&args.target, roots)?;
    if !args.raw && resolved.mount.as_ref().is_some_and(|m| m.read_only) {
        return Err(Failure::Usage(format!(
            "{} is on a read-only filesystem: the profile studies write, so remount it read-write, or give --raw --destructive --yes on the unmounted device",
            args.target
        )));
    }
    // The same placement and refusals as `run`: a scratch file in a mounted
    // filesystem, or the raw device only with --destructive, unmounted,
    // confirmed.
    let run_args = RunArgs {
        target: args.target.clone(),
        destructive: args.destructive,
        yes: args.yes,
        json: args.json,
        ..RunArgs::default()
    };
    let plan = crate::run::build_plan(&run_args, &resolved, roots)?;
    let place = match &plan.write_target {
        WriteTarget::Scratch(dir) => Place::Scratch(dir.clone()),
        WriteTarget::Raw(device) => Place::Raw(device.clone()),
        WriteTarget::Unavailable(_) => {
            return Err(Failure::Usage(format!(
                "{} has no mounted, writable filesystem: the profile studies write, so mount one, or give --raw --destructive --yes to write the unmounted device from its first GiB on",
                args.target
            )));
        }
    };
    let config = config(args, place, device.as_ref(), roots, &plan);
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;

    let show_progress = !args.json && std::io::stderr().is_terminal();
    let bars = profile_render::Bars::new(show_progress);
    if show_progress {
        crate::terminal::errln(&profile_render::plan_line(&config));
    }
    let session = storage_session::watch::Session::start(&resolved, device.as_ref(), roots);
    let (studies, error) = profile::run(&config, &session.observer(&bars));
    bars.finish();

    let mut report = Report::new(VERSION);
    report.created = Some(storage_session::document::now());
    session.finish(&mut report);
    report.target = Some(resolved.target.clone());
    report.device = device;
    report.system = Some(storage_identify::system::system(roots));
    if let Some(e) = &error {
        report.notes.push(format!("the run stopped early: {e}"));
    }
    let doc = ProfileReport { report, profile: studies };
    let json = serde_json::to_string_pretty(&doc)
        .map_err(|e| Failure::Run(format!("cannot encode the report as JSON: {e}")))?;
    let mut written = Vec::new();
    if let Some(html) = &html {
        html.write(storage_report::profile_page::render(&doc).as_bytes())?;
        written.push(format!("HTML report: {}", html.path().display()));
    }
    if let Some(csv) = &csv {
        for (name, text) in storage_report::csv::files(&doc.profile) {
            csv.write(name, text.as_bytes())?;
        }
        written.push(format!("CSV tables: {}", csv.path().display()));
    }
    if args.json {
        crate::terminal::json_outln(&json);
    } else {
        crate::terminal::out(&profile_render::report(&doc, &written));
    }
    match error {
        None => Ok(()),
        Some(e) => Err(failure(e)),
    }
}

/// The exit code and one line for an error that stopped the studies.
fn failure(e: ProfileError) -> Failure {
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

/// What the command line asks for, as the studies' configuration.
fn config(
    args: &ProfileArgs,
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
        size: match args.sustained {
            Some(SizeArg::Bytes(bytes)) => Some(bytes),
            _ => None,
        },
        after_random: args.after_random.map(Duration::from_secs),
    });
    config.max_time = Duration::from_secs(args.max_time);
    config.engine = match args.engine {
        EngineArg::Auto => EngineChoice::Auto,
        EngineArg::IoUring => EngineChoice::IoUring,
        EngineArg::Threads => EngineChoice::Threads,
    };
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
