//! What a run is to do: the profile and its sizes, where the write tests
//! write, which tests run, and how much scratch space they need.

use std::path::PathBuf;
use std::time::Duration;
use storage_scoring::figure::{Figure, Tool};

use super::steady::Steady;
use crate::engine::EngineChoice;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

/// With `--destructive`, the write tests start this far into the device:
/// clear of the partition table and the FAT area, which many cards handle
/// in a faster mode, and aligned for any allocation-unit size.
pub const RAW_OFFSET: u64 = GIB;

/// How long or large each test is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// The reference tools' own sizes: comparable with PiBenchmarks.
    #[default]
    Compat,
    /// Windows that end when their figure settles ([`steady`]), for a fast
    /// look; the score is not comparable.
    Quick,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Compat => storage_scoring::run_profile::COMPAT,
            Profile::Quick => storage_scoring::run_profile::QUICK,
        }
    }

    /// The sizes this profile uses.
    pub fn sizes(self) -> Sizes {
        match self {
            Profile::Compat => Sizes {
                seq_read_time: Duration::from_secs(3),
                cached_read_time: Duration::from_secs(2),
                settle: Duration::from_secs(3),
                flush_pause: Duration::from_secs(1),
                dd_bytes: 130 * KIB * 4096,
                test_file_bytes: 80 * MIB,
                laid_out_bytes: 80 * MIB,
                sustained_bytes: 130 * KIB * 4096,
                steady: None,
            },
            Profile::Quick => Sizes {
                seq_read_time: QUICK_WINDOW.min,
                cached_read_time: QUICK_WINDOW.min,
                settle: Duration::from_millis(200),
                flush_pause: Duration::from_millis(100),
                dd_bytes: 64 * MIB,
                test_file_bytes: 64 * MIB,
                laid_out_bytes: 4 * MIB,
                sustained_bytes: 64 * MIB,
                steady: Some(QUICK_WINDOW),
            },
        }
    }
}

/// Test lengths, sizes and pauses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sizes {
    pub seq_read_time: Duration,
    pub cached_read_time: Duration,
    /// hdparm's pause before each timing ("give time for I/O to settle":
    /// `sync(); sleep(3)` in `prepare_timing_buf`).
    pub settle: Duration,
    /// hdparm's pause after flushing the device's buffers (`sleep(1)`).
    pub flush_pause: Duration,
    /// dd's file: its figure exists only once the file is written and
    /// flushed, so this one stays a byte count in every profile.
    pub dd_bytes: u64,
    /// The random-write file (allocated) and iozone's file (as large as the
    /// write pass makes it, up to this).
    pub test_file_bytes: u64,
    /// The random-read file, laid out before it is read; with a steady
    /// window the reads go round it as often as the window needs, as fio's
    /// `time_based` jobs do.
    pub laid_out_bytes: u64,
    /// The sustained write's file, written end to end: as large as dd's,
    /// so the run needs no more room than Storage.sh's set.
    pub sustained_bytes: u64,
    /// Windows that close when their figure settles; `None`: the reference
    /// tools' sizes.
    pub steady: Option<Steady>,
}

/// The quick profile's windows: after 0.15 s not counted (a queue filling,
/// a rate limiter's first allowance), 1 to 3 s each, closed once the rates
/// over the window and over its last third agree within 2%.
pub const QUICK_WINDOW: Steady = Steady {
    ramp: Duration::from_millis(150),
    min: Duration::from_secs(1),
    max: Duration::from_secs(3),
    tolerance: 0.02,
};

/// Where the write tests write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteTarget {
    /// A directory on a mounted, writable filesystem of the device.
    Scratch(PathBuf),
    /// The raw, unmounted device (`--destructive --yes`); its data from
    /// [`RAW_OFFSET`] on is lost. Opened only through its opener.
    Raw(crate::raw::RawDevice),
    /// No write tests can run; the reason goes into the report.
    Unavailable(String),
}

/// Where the read tests read.
#[derive(Debug, Clone)]
pub enum ReadTarget {
    /// The raw device, opened `O_DIRECT` read-only.
    Device(PathBuf),
    /// The read tests cannot run; the reason goes into the report.
    Unavailable(String),
}

/// What to run, and where.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The raw device for the read tests, or why they cannot run.
    pub read_target: ReadTarget,
    pub write_target: WriteTarget,
    pub profile: Profile,
    /// The figures to measure, in any order; they run in Storage.sh's order.
    pub figures: Vec<Figure>,
    pub engine: EngineChoice,
    /// The run ends by then (`--max-time`): the test running is cut short,
    /// and the rest are not run.
    pub max_time: Option<Duration>,
    /// The block device the write target resolved to, for its I/O counters
    /// when the filesystem has none of its own (btrfs, overlayfs).
    pub write_device: Option<PathBuf>,
    /// The write target's filesystem type, for messages.
    pub filesystem: Option<String>,
    /// The live sysfs, for the device counters (see [`crate::devstat`]).
    pub live_sysfs: PathBuf,
}

impl Plan {
    /// A plan with the defaults: compat profile, every figure, automatic engine.
    pub fn new(read_target: ReadTarget, write_target: WriteTarget) -> Self {
        Plan {
            read_target,
            write_target,
            profile: Profile::Compat,
            figures: Figure::ALL.to_vec(),
            engine: EngineChoice::Auto,
            max_time: None,
            write_device: None,
            filesystem: None,
            live_sysfs: PathBuf::from("/sys"),
        }
    }

    pub(super) fn wants(&self, figure: Figure) -> bool {
        self.figures.contains(&figure)
    }

    /// Bytes of scratch space the planned write tests need at most at once.
    pub fn scratch_bytes(&self) -> u64 {
        let sizes = self.profile.sizes();
        let dd = if self.wants(Figure::SeqWrite) { sizes.dd_bytes } else { 0 };
        let file = if file_tests().any(|f| self.wants(f)) { sizes.test_file_bytes } else { 0 };
        let sustained = if self.wants(Figure::SustainedSeqWrite) { sizes.sustained_bytes } else { 0 };
        // Each file is gone (rm -f test) before the next one is made.
        dd.max(file).max(sustained)
    }
}

/// The tests on 80 MiB files, in run order: fio's, then iozone's (by the
/// tool each figure names, whatever its place in the table), of
/// Storage.sh's set.
pub(super) fn file_tests() -> impl Iterator<Item = Figure> {
    Figure::ALL.into_iter().filter(|f| matches!(f.tool(), Tool::Fio | Tool::Iozone) && storage_sh_test(*f))
}

/// The figures one tool's run in Storage.sh measures, in table order.
pub(super) fn tool_tests(tool: Tool) -> impl Iterator<Item = Figure> {
    Figure::ALL.into_iter().filter(move |f| f.tool() == tool && storage_sh_test(*f))
}

/// Whether Storage.sh runs the test of `figure`: the figures it does not
/// (the sustained write) have tests of their own, run after its set.
fn storage_sh_test(figure: Figure) -> bool {
    figure.storage_sh().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_tests_are_the_six_4k_tests() {
        assert_eq!(file_tests().count(), 6);
        assert!(file_tests().all(|f| f.key().contains("_4k_")));
        assert_eq!(tool_tests(Tool::Iozone).count(), 4);
        assert_eq!(tool_tests(Tool::Fio).collect::<Vec<_>>(), [Figure::RandWriteQd64, Figure::RandReadQd64]);
    }

    #[test]
    fn scratch_need_is_the_larger_test() {
        let plan = Plan::new(ReadTarget::Unavailable(String::new()), WriteTarget::Unavailable(String::new()));
        assert_eq!(plan.scratch_bytes(), 520 * MIB);
        let only_file = Plan { figures: vec![Figure::RandReadQd64], ..plan.clone() };
        assert_eq!(only_file.scratch_bytes(), 80 * MIB);
        let only_sustained = Plan { figures: vec![Figure::SustainedSeqWrite], profile: Profile::Quick, ..plan };
        assert_eq!(only_sustained.scratch_bytes(), 64 * MIB);
    }
}
