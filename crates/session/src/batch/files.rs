//! `batch`'s run as a whole (docs/batch.md): the checks before any card,
//! the files asked for (`--output`, `--html`, the exports) opened first and
//! written after, and the exit status of the report
//! (docs/batch.md#exit-status). `station` shares the files.

use std::time::SystemTime;

use storage_scoring::batch::BatchReport;

use super::card::Steps;
use super::{BatchOptions, assemble, check_devices, checked_require, run_all};
use crate::Failure;
use crate::export::Exports;
use crate::failure::Confirm;
use crate::measure::Measured;
use crate::outputs::OutputFile;

/// The files a batch writes, opened before any card is touched, so that a
/// path that cannot be written is refused first.
#[derive(Debug)]
pub struct Files {
    pub output: Option<OutputFile>,
    pub html: Option<OutputFile>,
    pub exports: Exports,
}

impl Files {
    /// Opens `--output`, `--html` and the exports.
    pub fn prepare(options: &BatchOptions) -> Result<Files, Failure> {
        let output = options.output.as_deref().map(|path| OutputFile::prepare(path, "--output")).transpose()?;
        let html = options.html.as_deref().map(|path| OutputFile::prepare(path, "--html")).transpose()?;
        let exports = Exports::prepare(&options.export, options.json)?;
        Ok(Files { output, html, exports })
    }

    /// `batch`'s report to `--output` and the exports; returns its JSON,
    /// for stdout.
    pub fn write(&self, report: &BatchReport) -> Result<String, Failure> {
        let json = encode(report)?;
        if let Some(output) = &self.output {
            output.write(format!("{json}\n").as_bytes())?;
        }
        if !self.exports.is_empty() {
            self.exports.write(&crate::export_sheets::batch(report))?;
        }
        Ok(json)
    }

    /// `--html`.
    pub fn write_html(&self, report: &BatchReport) -> Result<(), Failure> {
        match &self.html {
            Some(html) => html.write(storage_report::batch_page::render(report).as_bytes()),
            None => Ok(()),
        }
    }

    /// `station`'s report so far, written again after every card: to
    /// `--output`, `--html` and the exports' files (not stdout).
    pub fn save(&self, report: &BatchReport) -> Result<(), Failure> {
        if let Some(output) = &self.output {
            output.write(format!("{}\n", encode(report)?).as_bytes())?;
        }
        self.write_html(report)?;
        self.exports.write_files(&crate::export_sheets::batch(report))
    }
}

/// The report as pretty JSON.
pub fn encode(report: &BatchReport) -> Result<String, Failure> {
    serde_json::to_string_pretty(report)
        .map_err(|e| Failure::Run(format!("cannot encode the batch report as JSON: {e}")))
}

/// `batch DEVICE…`: `--require` read, the files opened, the devices
/// checked, `confirm` asked before `--destructive` (unless `--yes`), then
/// every card tested ([`run_all`]) with `measure`, each step a line
/// through `errln`. Returns the report and the files to write it to.
pub fn batch(
    options: &BatchOptions,
    roots: &storage_platform::Roots,
    measure: &(dyn Fn(&str) -> Result<Measured, Failure> + Sync),
    errln: fn(&str),
    confirm: Confirm,
) -> Result<(BatchReport, Files), Failure> {
    let require = checked_require(options)?;
    let files = Files::prepare(options)?;
    if options.devices.is_empty() {
        return Err(Failure::Usage(
            "batch needs the cards: name their devices, e.g. storage-score batch /dev/sdb /dev/sdc (storage-score scan lists them)"
                .to_owned(),
        ));
    }
    check_devices(&options.devices)?;
    if options.destructive && !options.yes {
        confirm(&options.devices.join(" "), "writes all over")?;
    }
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;
    let created = storage_history::time::rfc3339(SystemTime::now());
    let steps = Steps { options, require: require.as_ref(), roots, errln, measure };
    let cards = run_all(&options.devices, options.jobs, &steps);
    Ok((assemble(options, created, cards), files))
}

/// The exit status of docs/batch.md#exit-status, with one line saying why.
pub fn exit_status(report: &BatchReport) -> Result<(), Failure> {
    let c = &report.summary.counts;
    match report.exit_code() {
        0 => Ok(()),
        4 => Err(Failure::Fake(format!("{} of {} cards are fake", c.fake, c.cards))),
        5 => Err(Failure::Require(format!("{} of {} cards fail --require", c.fail, c.cards))),
        3 => Err(Failure::Refused(format!(
            "{} of {} cards were refused (mounted, holding the root filesystem, or in use)",
            c.refused, c.cards
        ))),
        _ => Err(Failure::Run(format!("the test of {} of {} cards failed", c.error, c.cards))),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::PathBuf;

    use storage_scoring::batch::{Card, Status};

    use super::*;

    /// A batch's options with nothing asked for but `devices`.
    pub(crate) fn options(devices: &[&str]) -> BatchOptions {
        BatchOptions {
            unmount: false,
            verify: false,
            destructive: false,
            journal_dir: PathBuf::from("/nonexistent"),
            profile: None,
            include_serials: true,
            require: None,
            devices: devices.iter().map(|d| (*d).to_owned()).collect(),
            jobs: 1,
            yes: false,
            json: false,
            output: None,
            html: None,
            export: crate::export::ExportOptions::default(),
        }
    }

    fn card(target: &str, status: Status) -> Card {
        Card { target: target.to_owned(), status, ..Card::default() }
    }

    fn never(_: &str) -> Result<Measured, Failure> {
        Err(Failure::Run("not measured in a unit test".to_owned()))
    }

    fn quiet(_: &str) {}

    fn no(_: &str, _: &str) -> Result<(), Failure> {
        Err(Failure::Refused("no".to_owned()))
    }

    #[test]
    fn the_files_hold_the_report_and_its_sheets() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut options = options(&[]);
        options.output = Some(dir.path().join("batch.json"));
        options.html = Some(dir.path().join("batch.html"));
        options.export.csv = Some(dir.path().join("batch.csv"));
        let files = Files::prepare(&options).expect("prepare");
        let report = assemble(&options, "2026-12-07T00:00:00Z".to_owned(), vec![card("/dev/sdx", Status::Pass)]);
        let json = files.write(&report).expect("write");
        let saved = std::fs::read_to_string(dir.path().join("batch.json")).expect("read");
        assert_eq!(saved, format!("{json}\n"));
        assert!(std::fs::read_to_string(dir.path().join("batch.csv")).expect("csv").contains("/dev/sdx"));
        assert!(!dir.path().join("batch.html").exists(), "--html is written apart");
        files.write_html(&report).expect("html");
        assert!(std::fs::read_to_string(dir.path().join("batch.html")).expect("html").contains("/dev/sdx"));

        std::fs::remove_file(dir.path().join("batch.json")).expect("rm");
        files.save(&report).expect("save");
        let again: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("batch.json")).expect("read")).expect("json");
        assert_eq!(again["cards"][0]["target"], "/dev/sdx");
    }

    #[test]
    fn an_unwritable_output_is_refused_before_any_card() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut options = options(&["/dev/null"]);
        options.output = Some(dir.path().join("missing").join("batch.json"));
        let e = batch(&options, &storage_platform::Roots::live(), &never, quiet, no).expect_err("refused");
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(e.to_string().starts_with("--output "), "{e}");
    }

    #[test]
    fn the_devices_are_checked_before_anything_is_asked() {
        let roots = storage_platform::Roots::live();
        let e = batch(&options(&[]), &roots, &never, quiet, no).expect_err("no devices");
        assert!(e.to_string().starts_with("batch needs the cards"), "{e}");
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("card");
        std::fs::write(&file, b"").expect("write");
        let mut not_block = options(&[file.to_str().expect("utf-8")]);
        not_block.destructive = true;
        let e = batch(&not_block, &roots, &never, quiet, no).expect_err("not a block device");
        assert!(e.to_string().contains("is not a block device"), "{e}");
        let mut genuine = options(&[]);
        genuine.require = Some("genuine".to_owned());
        assert_eq!(batch(&genuine, &roots, &never, quiet, no).expect_err("needs --verify").exit_code(), 2);
    }

    #[test]
    fn the_worst_card_is_the_exit_status() {
        let options = options(&[]);
        let status = |cards: Vec<Card>| {
            exit_status(&assemble(&options, "2026-12-07T00:00:00Z".to_owned(), cards)).map_err(|f| f.to_string())
        };
        assert_eq!(status(vec![card("a", Status::Pass)]), Ok(()));
        assert_eq!(
            status(vec![card("a", Status::Pass), card("b", Status::Refused)]),
            Err("1 of 2 cards were refused (mounted, holding the root filesystem, or in use)".to_owned())
        );
        assert_eq!(status(vec![card("a", Status::Error)]), Err("the test of 1 of 1 cards failed".to_owned()));
    }
}
