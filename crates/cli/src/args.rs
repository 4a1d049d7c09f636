//! The command line's shape: every subcommand, flag and help text, as clap
//! derive types. It is a library module so that `cargo xtask dist` can
//! generate the man page and shell completions from these same definitions.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use storage_scoring::schema::DeviceKind;

pub use crate::power_loss_args::{PowerLossArgs, PowerLossMode, WitnessArgs, WitnessCheckArgs, WitnessWriteArgs};

/// Where `verify-capacity` and `batch --verify` keep their undo journal
/// unless told otherwise (docs/verify-capacity.md#the-journal-directory).
pub const JOURNAL_DIR: &str = "/var/lib/storage-score/journal";

/// Where `endurance` keeps its runs' state unless told otherwise
/// (docs/endurance.md#the-state-directory).
pub const ENDURANCE_DIR: &str = "/var/lib/storage-score/endurance";

#[derive(Debug, Parser)]
#[command(
    name = "storage-score",
    version,
    about = "How good is this storage, really? Identifies the device and runs the PiBenchmarks test set natively.",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// With no subcommand: the same as `run`.
    #[command(flatten)]
    pub run: RunArgs,
    /// Read identification from a captured sysfs tree instead of /sys.
    #[arg(long, global = true, env = "STORAGE_SCORE_SYSFS_ROOT", value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
    /// Read a whole captured machine instead of this one: DIR/sys, DIR/proc
    /// and DIR/etc (for tests and bug reports; nothing is asked of a device).
    #[arg(long, global = true, env = "STORAGE_SCORE_MACHINE_ROOT", value_name = "DIR", conflicts_with = "sysfs_root")]
    pub machine_root: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Identify the device, then run the test set and score it.
    Run(RunArgs),
    /// Identify the device only (read-only, no benchmark).
    Identify(IdentifyArgs),
    /// Is this storage healthy, and is this machine using it well? Reads the
    /// device's own health (SMART, eMMC life time, SD vendor health) and
    /// checks the setup (alignment, TRIM, USB and PCIe links, SD bus mode,
    /// power, heat, swap). Read-only; a few seconds.
    Doctor(DoctorArgs),
    /// Score a saved report, or a bare measurements object ("-" reads stdin).
    Score(ScoreArgs),
    /// Set reports side by side: each figure, its ratio to the first
    /// report's, and whether the difference is beyond the noise.
    ///
    /// With samples on both sides (`run --repeat N`) a difference is "real"
    /// when the 95% interval of the ratio excludes 1, and "noise" when it
    /// holds 1; with one run on a side, differences under 10% "cannot tell".
    Compare(CompareArgs),
    /// Is this card as big as it says? Finds fake capacity; exit 4 when it is fake.
    VerifyCapacity(VerifyCapacityArgs),
    /// Does this card keep what it acknowledged when its power is cut?
    /// Writes records all over it, cuts its power with your command at a
    /// random moment while it writes, powers it on again, and counts what
    /// was lost, torn, misplaced or damaged. DESTROYS ALL DATA ON THE CARD.
    ///
    /// Exit codes: 0 kept, 7 lost (acknowledged writes lost or torn), 9
    /// damaged (data kept earlier changed, or a write landed elsewhere), 10
    /// did not return after a power-on; 1 a power command failed, 2 bad
    /// usage, 3 refused for safety.
    PowerLoss(PowerLossArgs),
    /// Will this card last? Writes the whole card and reads it back, pass
    /// after pass, until a milestone of failed blocks (--until, default
    /// 50%), --passes or --hours, or until the card dies (read-only,
    /// ignores writes, vanished), and names how. Resumes where it stopped.
    /// ALL DATA ON THE CARDS IS LOST. Exit codes: 0 a limit was reached,
    /// 1 interrupted or failed (the same command resumes), 2 bad usage,
    /// 3 refused, 4 the card is a counterfeit, 6 the card died.
    Endurance(EnduranceArgs),
    /// Send a saved report to a leaderboard: shows what will be sent and asks first.
    ///
    /// Serial numbers, the host name, user names and paths below mount points
    /// are removed before anything is sent. Exit codes: 0 sent, 1 not sent
    /// (the leaderboard could not be reached or refused it; the report stays
    /// on disk), 2 bad usage or report, 3 no consent (no terminal to ask on
    /// and no --yes, or the answer was no).
    Submit(SubmitArgs),
    /// The deep studies, with plots: a sustained write (speed against
    /// progress, where the cache runs out), a block size × jobs sweep, and
    /// random I/O speed against transfer size. With no study named, all three.
    Profile(ProfileArgs),
    /// Every block device of this machine, one line each: name, kind, maker,
    /// model or CID name, size, the class the card claims, whether it is
    /// mounted or holds `/`, and its health source. Reads only.
    Scan(ScanArgs),
    /// Many cards in one go: for each DEVICE, identify it, with --verify
    /// check its capacity (non-destructive), run a profile, judge it by
    /// --require, then summarize the batch (median and MAD per figure,
    /// outliers, cloned CIDs, mixed stock). Exit codes: 0 every card
    /// passed, 4 a card is fake, 5 a card failed --require (none fake),
    /// 3 a card was refused (and no card was fake or failed), 2 bad usage.
    Batch(BatchArgs),
    /// One reader, many cards: waits for cards to be inserted, runs the
    /// batch steps on each new one, prints PASS or FAIL with the reason,
    /// adds it to the report and waits for the next. Never touches a disk
    /// present at start unless named, nor one outside --only-kind,
    /// --max-size or --reader. Ctrl-C writes the report, exit 0.
    Station(StationArgs),
    /// Print a saved report's tables again ("-" reads stdin).
    Show(ShowArgs),
    /// Read a result another tool printed into a report: `import
    /// storage-sh FILE` takes PiBenchmarks' Storage.sh summary as pasted
    /// (console, Markdown, CRLF); its score must follow from its figures.
    /// Exit 2, with one line saying what is wrong, for a partial or
    /// inconsistent text.
    Import(ImportArgs),
    /// The published Storage.sh results shipped with the tool, each with its
    /// source, date, device, host, kind, figures and score.
    Reference(ReferenceArgs),
    /// Print the shell completion script for SHELL (what the .deb installs).
    Completions(CompletionsArgs),
    /// Print a man page, roff, as the .deb installs it (`storage-score man doctor | man -l -`):
    /// with no COMMAND the top page, storage-score(1).
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A report written by `run --output FILE` (or `--json`), or a
    /// leaderboard result saved as JSON; "-" for stdin.
    pub report: String,
    /// Print the report, checked, as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub export: ExportArgs,
}

/// `--export-csv` and `--export-markdown` (hyperfine's names), on `show`,
/// `compare`, `batch` and `station`.
#[derive(Debug, Args, Default, Clone)]
pub struct ExportArgs {
    /// Also write the results as CSV to FILE, one row per card or result,
    /// units in the header (RFC 4180); "-" for stdout instead of the tables.
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Also write the results as a Markdown table to FILE; "-" for stdout
    /// instead of the tables.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args, Default)]
#[command(group(ArgGroup::new("confirmable").args(["destructive", "submit"]).multiple(true)))]
pub struct RunArgs {
    /// A whole disk (/dev/mmcblk0), a partition (/dev/sda2) or a directory.
    #[arg(default_value = "/")]
    pub target: String,
    /// Print the report as one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON report to FILE.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// compat (PiBenchmarks sizes, comparable score) or quick (shortened).
    #[arg(long, value_enum, default_value_t = ProfileArg::Compat)]
    pub profile: ProfileArg,
    /// Run only these measurement keys, comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "KEY[,KEY…]")]
    pub only: Vec<String>,
    /// Write to the raw device (it must be unmounted). ALL DATA ON IT IS LOST.
    #[arg(long)]
    pub destructive: bool,
    /// Do not ask for confirmation: before a destructive run, before an upload.
    #[arg(long, requires = "confirmable")]
    pub yes: bool,
    /// After the run, send the report to a leaderboard at URL (default: the
    /// environment variable STORAGE_SCORE_LEADERBOARD), with the consent
    /// rules of `submit`. The report is saved first (--output, or the data
    /// directory), so a failed upload can be sent again later.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    pub submit: Option<String>,
    /// With --submit: also send serial numbers (the card's PSN, the disk's serial).
    #[arg(long, requires = "submit")]
    pub include_serials: bool,
    /// With --submit: the name printed on the card, e.g. "SanDisk Extreme 64GB" (at most 80 characters).
    #[arg(long, requires = "submit", value_name = "TEXT")]
    pub label: Option<String>,
    /// Queue-depth engine: io_uring, or threads of pread/pwrite.
    #[arg(long, value_enum, default_value_t = EngineArg::Auto)]
    pub engine: EngineArg,
    /// End the run after SECS seconds (a dying card can take hours): the test
    /// running then is cut short and marked partial, the rest are not run.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_time: Option<u64>,
    /// Run the test set N times: each figure is then the median of its N
    /// samples, and the report keeps every sample, so `compare` can tell a
    /// real difference from noise.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=100))]
    pub repeat: u16,
}

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// The list as JSON (`storage-score-scan/1`).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BatchArgs {
    /// The cards, as whole-disk device nodes (/dev/sdb /dev/mmcblk0 …);
    /// for station, cards to test at once even though they are present.
    #[arg(value_name = "DEVICE")]
    pub devices: Vec<String>,
    /// Check each card's real capacity first (verify-capacity,
    /// non-destructive unless --destructive --yes); a fake card is not
    /// measured further.
    #[arg(long)]
    pub verify: bool,
    /// The run profile for each card; `none` measures nothing.
    #[arg(long, value_enum, default_value_t = BatchProfileArg::Quick)]
    pub profile: BatchProfileArg,
    /// What every card must meet, e.g. "A1 genuine seq_read_mib_s>=20"
    /// (docs/batch.md#--require).
    #[arg(long, value_name = "EXPR")]
    pub require: Option<String>,
    /// How many cards run at once (cards on one reader or host take turns).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,
    /// Print the batch report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write the batch report (JSON) to FILE.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write the batch report as a self-contained HTML page to FILE (a
    /// strip plot per figure, the outliers marked).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub export: ExportArgs,
    /// Keep serial numbers in the report instead of salted hashes.
    #[arg(long)]
    pub include_serials: bool,
    /// Unmount what a desktop auto-mounted on a card (its partitions'
    /// filesystems) before testing it, and say what was unmounted. Never
    /// the running system's disk, a filesystem with files open, or one
    /// mounted through another device.
    #[arg(long)]
    pub unmount: bool,
    /// Let verify-capacity and the write tests write all over each card.
    #[arg(long)]
    pub destructive: bool,
    /// Confirm --destructive without asking.
    #[arg(long, requires = "destructive")]
    pub yes: bool,
    /// Where verify-capacity keeps its undo journal.
    #[arg(
        long,
        env = "STORAGE_SCORE_JOURNAL_DIR",
        value_name = "DIR",
        default_value = JOURNAL_DIR
    )]
    pub journal_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct StationArgs {
    #[command(flatten)]
    pub batch: BatchArgs,
    /// Test only a new disk of this kind (sd, emmc, usb, nvme, sata,
    /// virtio, loop); may be given more than once. Others are left alone.
    #[arg(long = "only-kind", value_name = "KIND", value_parser = parse_kind)]
    pub kinds: Vec<DeviceKind>,
    /// Test only a new disk of at most this size (64G, 256G: binary
    /// units), so that a USB drive or a disk put in by mistake is left alone.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_size: Option<u64>,
    /// Test only a new disk in this reader: a part of its sysfs path, such
    /// as its USB port (`1-1.3`) as `ls -l /sys/block/sdb` shows it.
    #[arg(long, value_name = "PATH")]
    pub reader: Option<String>,
    /// After each card, read its label (what is written on it, a sticker's
    /// number) from stdin, one line per card, kept in the report.
    #[arg(long)]
    pub ask_label: bool,
}

/// A device kind by its report word.
pub fn parse_kind(text: &str) -> Result<DeviceKind, String> {
    DeviceKind::parse(text).filter(|k| *k != DeviceKind::OTHER).ok_or_else(|| {
        let known: Vec<&str> =
            DeviceKind::NAMED.iter().filter(|k| **k != DeviceKind::OTHER).map(|k| k.as_str()).collect();
        format!("{text:?} is not a device kind; one of: {}", known.join(", "))
    })
}

#[derive(Debug, Clone, Copy, ValueEnum, Default, PartialEq, Eq)]
pub enum BatchProfileArg {
    #[default]
    Quick,
    Compat,
    None,
}

#[derive(Debug, Args)]
pub struct IdentifyArgs {
    /// A whole disk, a partition or a directory.
    #[arg(default_value = "/")]
    pub target: String,
    /// Print the target and device as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Whole disks, partitions or directories (default /); several give
    /// one report of the machine (storage-score-doctor/1).
    #[arg(value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Every disk of this machine (as scan lists them), in one report.
    #[arg(long, conflicts_with = "targets")]
    pub all: bool,
    /// Print the findings as one JSON document (a storage-score/1 report);
    /// with --history, the trend as JSON.
    #[arg(long)]
    pub json: bool,
    /// Print only what was found (nothing when nothing was); the exit status
    /// says the same as a bit mask: 8 health failing, 16 a warning, 32 a
    /// device that could not be read.
    #[arg(long, short, conflicts_with = "json")]
    pub quiet: bool,
    /// Append one snapshot of this device (bytes written, health,
    /// temperature, throttling, advice codes) to its history file.
    #[arg(long)]
    pub log: bool,
    /// Show the logged history instead of examining: bytes written per day,
    /// wear per day, a projected end of life. DEVICE is a device ID (or its
    /// start) or a disk name as logged; without it, every logged device.
    #[arg(long, value_name = "DEVICE", num_args = 0..=1, default_missing_value = "", conflicts_with_all = ["log", "prometheus", "quiet"])]
    pub history: Option<String>,
    /// Where --log writes and --history reads: a directory owned by root (or
    /// you) that nobody else may write.
    #[arg(
        long,
        env = "STORAGE_SCORE_HISTORY_DIR",
        value_name = "DIR",
        default_value = "/var/lib/storage-score/history"
    )]
    pub history_dir: PathBuf,
    /// With --history: the device's rated endurance in terabytes written
    /// (from its datasheet), to set the host's writes against.
    #[arg(long, value_name = "TB", requires = "history")]
    pub endurance_tbw: Option<f64>,
    /// Also write the findings as Prometheus metrics (node_exporter's
    /// textfile format) to FILE, atomically; "-" or no FILE: stdout.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub prometheus: Option<String>,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print, e.g. `doctor` or `power-loss witness`.
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub format: ImportFormat,
}

/// What a result to import was printed by.
#[derive(Debug, Subcommand)]
pub enum ImportFormat {
    /// PiBenchmarks' Storage.sh: its summary table, with or without the
    /// console lines around it, or a Markdown table of it.
    StorageSh(ImportStorageShArgs),
}

#[derive(Debug, Args)]
pub struct ImportStorageShArgs {
    /// The text holding one summary table; "-" for stdin.
    pub file: String,
    /// Write the report to FILE instead of printing it on stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReferenceArgs {
    /// Only results of this kind of storage.
    #[arg(long, value_parser = storage_scoring::reference::KINDS)]
    pub kind: Option<String>,
    /// Only results on a host whose name holds H (case-insensitive), e.g. "pi 5".
    #[arg(long, value_name = "H")]
    pub host: Option<String>,
    /// Print them as one JSON document (`storage-score-reference/1`).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// A report or measurements JSON file; "-" for stdin.
    pub file: String,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Saved reports (`run --output FILE`), or leaderboard results saved as
    /// JSON; the first is the one the others are compared with.
    #[arg(value_name = "REPORT")]
    pub reports: Vec<String>,
    /// A result on a leaderboard, by its address (URL/results/ID); it comes
    /// after the REPORT files. May be given more than once.
    #[arg(long, value_name = "URL")]
    pub from: Vec<String>,
    /// Print the comparisons as one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub export: ExportArgs,
}

#[derive(Debug, Args)]
pub struct VerifyCapacityArgs {
    /// The card's whole device, not mounted (/dev/sdb, /dev/mmcblk0); with --files, a directory on the mounted card.
    pub device: String,
    /// Print the finding as one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write without backing anything up: faster, and ALL DATA ON THE CARD IS LOST.
    #[arg(long)]
    pub destructive: bool,
    /// Do not ask for confirmation before a destructive run.
    #[arg(long, requires = "destructive")]
    pub yes: bool,
    /// Look through write caches up to 1 GiB instead of 256 MiB (slower on cards that show no cache).
    #[arg(long)]
    pub thorough: bool,
    /// DEVICE is a directory on a mounted card: fill its free space with self-identifying data, read it back, free it.
    #[arg(long, conflicts_with_all = ["destructive", "thorough"])]
    pub files: bool,
    /// Where the undo journal is kept: a directory on another disk than the card.
    #[arg(
        long,
        env = "STORAGE_SCORE_JOURNAL_DIR",
        value_name = "DIR",
        default_value = JOURNAL_DIR
    )]
    pub journal_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct EnduranceArgs {
    /// The cards' whole devices, not mounted (/dev/sdb /dev/sdc); several run at once, each at its own pace.
    #[arg(required = true, value_name = "DEVICE")]
    pub devices: Vec<String>,
    /// Required: endurance writes every card over and over; ALL DATA ON THEM IS LOST.
    #[arg(long)]
    pub destructive: bool,
    /// Do not ask for confirmation.
    #[arg(long, requires = "destructive")]
    pub yes: bool,
    /// Stop once this share of the 4 KiB blocks has failed: first, 1%, 10%, 25%, 50%, or forever.
    #[arg(long, value_name = "MILESTONE", default_value = "50%", value_parser = parse_until)]
    pub until: Until,
    /// Stop after this many passes in all.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub passes: Option<u32>,
    /// Stop after this many hours of wear in all (the sessions of a resumed run added up).
    #[arg(long, value_name = "H", value_parser = parse_hours)]
    pub hours: Option<f64>,
    /// Where the runs' state is kept: a directory on another disk than the cards, owned by root.
    #[arg(long, env = "STORAGE_SCORE_ENDURANCE_DIR", value_name = "DIR", default_value = ENDURANCE_DIR)]
    pub state_dir: PathBuf,
    /// How long to wait for a card that went away (pulled, reset) before calling it vanished.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub wait_s: u64,
    /// Start a new run on these cards, dropping a saved one (and the claim of an unfinished run on their slots).
    #[arg(long)]
    pub new: bool,
    /// Print the report as JSON on stdout (several cards: one storage-score-endurance-set/1 document).
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON report to FILE.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write a self-contained HTML page: rate and failed blocks against passes.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write one CSV row per pass (one card only).
    #[arg(long, value_name = "FILE")]
    pub stats_csv: Option<PathBuf>,
}

/// `--until`: a milestone, or no milestone at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    Milestone(storage_scoring::endurance::Milestone),
    Forever,
}

fn parse_until(text: &str) -> Result<Until, String> {
    if text == "forever" {
        return Ok(Until::Forever);
    }
    storage_scoring::endurance::Milestone::parse(text)
        .map(Until::Milestone)
        .ok_or_else(|| "expected first, 1%, 10%, 25%, 50% or forever".to_owned())
}

fn parse_hours(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(h) if h.is_finite() && h > 0.0 => Ok(h),
        _ => Err("expected a positive number of hours, e.g. 12 or 0.5".to_owned()),
    }
}

#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// A report saved by `storage-score run --output FILE`.
    pub report: PathBuf,
    /// The leaderboard's address, e.g. https://scores.example.org (no public server is assumed).
    #[arg(long, env = "STORAGE_SCORE_LEADERBOARD", value_name = "URL")]
    pub url: Option<String>,
    /// Send without asking (for scripts). The summary is still shown.
    #[arg(long)]
    pub yes: bool,
    /// Also send serial numbers (the card's PSN, the disk's serial). Without
    /// it, a salted hash that only groups repeat runs goes instead.
    #[arg(long)]
    pub include_serials: bool,
    /// The name printed on the card, e.g. "SanDisk Extreme 64GB" (at most 80
    /// characters); asked for on a terminal when not given. The leaderboard
    /// shows it once two submitters agree on it.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Seconds to wait for the leaderboard's answer to each attempt.
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub timeout: u64,
    /// Delete this report's result from the leaderboard, with the delete
    /// token kept beside the report when it was sent.
    #[arg(long, conflicts_with_all = ["yes", "include_serials", "label"])]
    pub delete: bool,
}

#[derive(Debug, Args, Default)]
pub struct ProfileArgs {
    /// A whole disk, a partition or a directory.
    #[arg(default_value = "/")]
    pub target: String,
    /// Run the block size {4K, 1M, 256M} × jobs {1, 4, 8} sweep, reading and writing.
    #[arg(long)]
    pub sweep: bool,
    /// Run the sustained write: SIZE (e.g. 2G, 512M) in 4 MiB chunks; by
    /// default a quarter of the free space, at most 8 GiB.
    #[arg(long, value_name = "SIZE", num_args = 0..=1, default_missing_value = "auto", value_parser = parse_size_or_auto)]
    pub sustained: Option<SizeArg>,
    /// After the sustained write, random 4 KiB writes for SECS seconds
    /// (default 60), then the same write again, the two curves side by side.
    #[arg(long, value_name = "SECS", num_args = 0..=1, default_missing_value = "60", value_parser = clap::value_parser!(u64).range(1..))]
    pub after_random: Option<u64>,
    /// Run the transfer-size scan: random O_DIRECT reads and writes of 512 B to 8 MiB.
    #[arg(long)]
    pub transfer_sizes: bool,
    /// Run the studies on the raw device instead of a file (needs
    /// --destructive, and the device unmounted).
    #[arg(long, requires = "destructive")]
    pub raw: bool,
    /// Allow writing the raw device from its first GiB on. ITS DATA THERE IS LOST.
    #[arg(long, requires = "raw")]
    pub destructive: bool,
    /// Do not ask for confirmation before a destructive run.
    #[arg(long, requires = "destructive")]
    pub yes: bool,
    /// Time box of the whole command in seconds, shared among the studies.
    #[arg(long, value_name = "SECS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(10..))]
    pub max_time: u64,
    /// Print the report (`storage-score/1` with a `profile` section) as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write a self-contained HTML report with the plots to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write the tables as CSV files into DIR (created if missing).
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,
    /// Queue-depth engine: io_uring, or threads of pread/pwrite.
    #[arg(long, value_enum, default_value_t = EngineArg::Auto)]
    pub engine: EngineArg,
}

/// A size given on the command line, or `auto` for the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeArg {
    Auto,
    Bytes(u64),
}

/// `512M`, `2G`, `1.5G`, `4096`, `8GiB`: binary units (K, M, G, T = powers
/// of 1024), as dd and fio read them; `auto` for the default.
pub fn parse_size_or_auto(text: &str) -> Result<SizeArg, String> {
    if text == "auto" {
        return Ok(SizeArg::Auto);
    }
    parse_size(text).map(SizeArg::Bytes)
}

/// A byte count with an optional binary unit.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let digits = lower.trim_end_matches("ib").trim_end_matches('b');
    let (number, scale) = match digits.chars().last() {
        Some('k') => (&digits[..digits.len() - 1], 1u64 << 10),
        Some('m') => (&digits[..digits.len() - 1], 1 << 20),
        Some('g') => (&digits[..digits.len() - 1], 1 << 30),
        Some('t') => (&digits[..digits.len() - 1], 1 << 40),
        _ => (digits, 1),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a size; write it as 512M, 2G or a number of bytes"))?;
    let bytes = value * scale as f64;
    if !(1.0..1e18).contains(&bytes) {
        return Err(format!("{text:?} is not a usable size; give at least one byte, e.g. 512M or 2G"));
    }
    Ok(bytes as u64)
}

#[derive(Debug, Clone, Copy, ValueEnum, Default)]
pub enum ProfileArg {
    #[default]
    Compat,
    Quick,
}

#[derive(Debug, Clone, Copy, ValueEnum, Default)]
pub enum EngineArg {
    #[default]
    Auto,
    #[value(name = "io_uring")]
    IoUring,
    Threads,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn definitions_are_consistent() {
        super::Cli::command().debug_assert();
    }

    #[test]
    fn sizes_read_in_binary_units() {
        use super::{SizeArg, parse_size, parse_size_or_auto};
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("1.5g"), Ok(3 << 29));
        assert_eq!(parse_size("8GiB"), Ok(8 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("lots").is_err() && parse_size("0").is_err() && parse_size("-1G").is_err());
        assert_eq!(parse_size_or_auto("auto"), Ok(SizeArg::Auto));
    }

    #[test]
    fn profile_flags_parse_and_raw_needs_destructive() {
        use clap::Parser;
        let cli = super::Cli::try_parse_from(["storage-score", "profile", "/mnt", "--sustained", "--after-random"])
            .expect("parse");
        let Some(super::Command::Profile(args)) = cli.command else { panic!("not profile") };
        assert_eq!(args.sustained, Some(super::SizeArg::Auto));
        assert_eq!(args.after_random, Some(60));
        assert!(super::Cli::try_parse_from(["storage-score", "profile", "--raw"]).is_err());
        assert!(super::Cli::try_parse_from(["storage-score", "profile", "--destructive"]).is_err());
        assert!(super::Cli::try_parse_from(["storage-score", "profile", "--raw", "--destructive", "--yes"]).is_ok());
    }
}
