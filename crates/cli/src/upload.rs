//! `storage-score submit` and `run … --submit` on the terminal: the
//! arguments, and what is said and asked ([`Channel`], the consent and the
//! label); the sending is [`storage_session::submit`]'s.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use storage_session::submit::{Conversation, Upload, label, leaderboard_base, send_saved};
use storage_upload::payload::clean_label;

use crate::{Failure, SubmitArgs};

/// Where an upload's messages go: stdout, unless `run --json` keeps stdout
/// for the report alone. The consent prompt is on stderr either way.
#[derive(Debug, Clone, Copy)]
pub enum Channel {
    Stdout,
    Stderr,
}

impl Channel {
    pub fn say(self, text: &str) {
        let text = if text.ends_with('\n') { text.to_owned() } else { format!("{text}\n") };
        match self {
            Channel::Stdout => crate::terminal::out(&text),
            Channel::Stderr => crate::terminal::err(&text),
        }
    }
}

impl Conversation for Channel {
    fn say(&self, text: &str) {
        Channel::say(*self, text);
    }

    fn warn(&self, line: &str) {
        crate::terminal::errln(line);
    }

    fn ask_label(&self) -> Result<Option<String>, Failure> {
        ask_label()
    }

    fn consent(&self, payload_path: &Path, report: &Path) -> Result<(), Failure> {
        consent(payload_path, report)
    }
}

/// `storage-score submit REPORT`.
pub fn submit_command(args: &SubmitArgs) -> Result<(), Failure> {
    let timeout = Duration::from_secs(args.timeout);
    if args.delete {
        return storage_session::submit::delete(&args.report, args.url.as_deref(), timeout, &Channel::Stdout);
    }
    let upload = Upload {
        base: leaderboard_base(args.url.as_deref())?,
        yes: args.yes,
        include_serials: args.include_serials,
        label: label(args.label.as_deref())?,
        timeout,
    };
    send_saved(&args.report, &upload, &Channel::Stdout)
}

/// On a terminal, the name printed on the card (optional: Enter skips it);
/// nothing is asked without one.
fn ask_label() -> Result<Option<String>, Failure> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Ok(None);
    }
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "Name printed on the card, e.g. SanDisk Extreme 64GB (optional, Enter to skip): ")
        .and_then(|()| stderr.flush());
    let mut answer = String::new();
    let _ = stdin.lock().read_line(&mut answer);
    clean_label(answer.trim_end_matches(['\n', '\r'])).map_err(|e| Failure::Usage(e.to_string()))
}

/// y/N on a terminal (`--yes` answers for scripts, and nothing is asked);
/// no terminal is a refusal (exit 3), and so is any answer but yes.
fn consent(payload_path: &Path, report: &Path) -> Result<(), Failure> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(Failure::Refused(format!(
            "not sent: there is no terminal to ask for consent on; read {} (exactly what would be sent), then run \
             again with --yes",
            payload_path.display()
        )));
    }
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "Send it? [y/N] ").and_then(|()| stderr.flush());
    let mut answer = String::new();
    let _ = stdin.lock().read_line(&mut answer);
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err(Failure::Refused(format!("not sent, as you answered; the report stays in {}", report.display()))),
    }
}
