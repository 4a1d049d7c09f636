//! `storage-score submit` and `run … --submit`: send a report to a
//! leaderboard (docs/leaderboard.md) with consent, privacy and no duplicates,
//! and `submit --delete`. What is said and asked goes through the caller's
//! [`Conversation`] (the command line's terminal).
//!
//! The order is fixed: read the report → filter it (`payload`) → write the
//! exact payload beside it → show the summary → ask → send with the
//! report's one Idempotency-Key (`client`, `retry`) → keep the answer and
//! the delete token in the receipt beside the report. Every failure is one
//! line saying that the report stays on disk and, where sending later can
//! work, the one command that does it.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use storage_platform::usage::shell_word;
use storage_scoring::schema::Report;

use storage_upload::client::{self, Accepted, Client, SendError};
use storage_upload::installation::{
    self, FsIdentity, Installation, read_report_bytes, write_atomically, writer_beside,
};
use storage_upload::payload::{
    self, Receipt, SummaryContext, clean_label, idempotency_key, prepare, report_digest, summary,
};
use storage_upload::place::Place;
use storage_upload::retry::Policy;
use storage_upload::url::absolute_url;
use storage_upload::wear;

use crate::Failure;

/// Seconds to wait for each answer when `run --submit` sends.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// An upload the user asked for.
#[derive(Debug, Clone)]
pub struct Upload {
    /// The leaderboard's base URL, without a trailing slash
    /// ([`leaderboard_base`]).
    pub base: String,
    /// `--yes`: consent given, nothing asked.
    pub yes: bool,
    pub include_serials: bool,
    /// The name on the card's label (`--label`), checked ([`label`]).
    pub label: Option<String>,
    /// How long to wait for each answer.
    pub timeout: Duration,
}

/// What a submission says and asks: the command line's terminal.
pub trait Conversation {
    /// A message for the user: a note, the summary of what will be sent, a
    /// retry, the answer.
    fn say(&self, text: &str);
    /// A line on stderr that stops nothing.
    fn warn(&self, line: &str);
    /// The name printed on the card, asked where it can be (`None`
    /// otherwise, or when the user skips it).
    fn ask_label(&self) -> Result<Option<String>, Failure>;
    /// Consent to send `payload_path` (exactly what would be sent) of
    /// `report`; a refusal (exit 3) when it cannot be asked or is not given.
    fn consent(&self, payload_path: &Path, report: &Path) -> Result<(), Failure>;
}

/// `--label`, checked: one line, not too long, spaces collapsed (bad usage
/// otherwise).
pub fn label(text: Option<&str>) -> Result<Option<String>, Failure> {
    text.map(clean_label).transpose().map_err(usage).map(Option::flatten)
}

/// `run --submit` without `--output`: keeps the report in the data
/// directory (the invoking user's, under sudo), where `submit` can find it
/// again. Returns its path.
pub fn keep_report(json: &str, report: &Report) -> Result<PathBuf, Failure> {
    let inst = Installation::discover().map_err(run)?;
    let dir = inst.data_dir.join("reports");
    let disk = report
        .device
        .as_ref()
        .and_then(|d| d.name.clone())
        .unwrap_or_else(|| "report".to_owned())
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .collect::<String>();
    let path = dir.join(format!("{}-{disk}.json", storage_history::time::compact(SystemTime::now())));
    installation::make_dir(inst.user, &dir)
        .and_then(|()| write_atomically(inst.user, &path, format!("{json}\n").as_bytes(), 0o644))
        .map_err(|e| {
            Failure::Run(format!(
                "cannot keep the report in {}: {e}; run again with --output FILE to save it elsewhere",
                path.display()
            ))
        })?;
    Ok(path)
}

/// Sends the report saved at `path`: the whole of `submit`, and the end of
/// `run --submit`.
pub fn send_saved(path: &Path, upload: &Upload, conv: &dyn Conversation) -> Result<(), Failure> {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    // Everything beside the report is read and written as the one it
    // belongs to (the user behind sudo), never through a planted link.
    let owner = writer_beside(&path);
    let (bytes, parsed) = read_report(owner, &path)?;
    if let Parsed::Run(report) = &parsed {
        if report.measurements.is_none() {
            return Err(Failure::Usage(format!(
                "{} has no measurements to send; make a report with `storage-score run --output FILE`",
                path.display()
            )));
        }
    }
    let inst = Installation::discover().map_err(run)?;
    let salt = inst.salt().map_err(run)?;
    // Beside the report, or the state directory when that cannot be written.
    let place = Place::for_report(&path, &inst).map_err(run)?;
    if let Some(moved) = &place.moved {
        conv.say(&format!("note: {moved}"));
    }
    let (receipt_path, payload_path) = (place.receipt.clone(), place.payload.clone());
    let mut receipt = load_receipt(&place)?;
    let digest = report_digest(&bytes);
    let key = receipt.key_for(&digest).map(str::to_owned).unwrap_or_else(|| idempotency_key(&salt, &bytes));
    let endpoint = format!("{}/api/v1/results", upload.base);
    let context = SummaryContext {
        endpoint: &endpoint,
        payload_path: &payload_path,
        include_serials: upload.include_serials,
        personal: &inst.personal,
    };
    let (body, shown, report) = match parsed {
        Parsed::Run(report) => {
            let label = match &upload.label {
                Some(label) => Some(label.clone()),
                None if !upload.yes => conv.ask_label()?,
                None => None,
            };
            let payload =
                prepare(&report, upload.include_serials, &salt, &inst.personal, label.as_deref()).map_err(run)?;
            let shown = summary(&payload, &context);
            (payload.body, shown, *report)
        }
        Parsed::Wear(wear) => {
            let (body, shown) = wear::prepare(&wear, upload.label.is_some(), upload.include_serials, &salt, &context)
                .map_err(|e| {
                if e.is_usage() { Failure::Usage(e.to_string()) } else { Failure::Run(e.to_string()) }
            })?;
            (body, shown, Report::default())
        }
    };
    let payload = payload::Payload { report, body };
    place.write(&payload_path, &payload.body, 0o644).map_err(|e| {
        Failure::Run(format!(
            "cannot write the payload beside the report ({}: {e}); copy the report into a directory you can write to",
            payload_path.display()
        ))
    })?;
    conv.say(&shown);
    warn_if_clear_text(conv, &upload.base, "the report, and the delete token in the answer,");
    if !upload.yes {
        conv.consent(&payload_path, &path)?;
    }

    // The key is on disk before the first byte leaves: whatever happens
    // next, a later submit of this report reuses it.
    receipt.entry(&upload.base, &digest, &key);
    save_receipt(&place, &receipt)?;
    let client = Client::new(upload.timeout, Policy::default()).map_err(run)?;
    let earlier = receipt.entry(&upload.base, &digest, &key).url.clone();
    let sent = client.submit(&endpoint, &key, &payload.body, &mut |note| conv.say(note));
    if sent.is_err() {
        // The receipt says what happened: an entry the leaderboard never
        // took is "not sent", not left "pending" as if an answer might come.
        let entry = receipt.entry(&upload.base, &digest, &key);
        if entry.id.is_none() {
            entry.status = payload::NOT_SENT.to_owned();
            let _ = save_receipt(&place, &receipt);
        }
    }
    let accepted = sent.map_err(|e| match (e, earlier) {
        // The key is this report's, the body differs: it went before with
        // other options (--include-serials, say). It is there, once.
        (SendError::Refused { status: 422, .. }, Some(url)) => Failure::Run(format!(
            "not sent again: this report is already on the leaderboard ({url}), sent with other options; to replace \
             it, delete it first with: storage-score submit {} --delete",
            shell_word(&path.to_string_lossy())
        )),
        (e, _) => not_sent(e, &path, &upload.base, &later_flags(upload)),
    })?;

    let result_url = absolute_url(&upload.base, accepted.url.as_deref(), &accepted.id);
    let entry = receipt.entry(&upload.base, &digest, &key);
    let had_token = entry.delete_token.is_some();
    record(entry, &accepted, &result_url);
    let kept = save_receipt(&place, &receipt);
    conv.say(&accepted_lines(&accepted, &result_url, &payload.report, &path, &receipt_path, had_token));
    if let Err(e) = kept {
        // Sent and stored: not a failure, but the token must not be lost unseen.
        conv.warn(&format!(
            "storage-score: warning: {e}; copy the delete token above if you may want to delete the result"
        ));
    }
    Ok(())
}

/// A report `submit` sends: a run's, or an endurance or power-loss one.
enum Parsed {
    Run(Box<Report>),
    Wear(storage_scoring::wear::WearReport),
}

fn read_report(owner: FsIdentity, path: &Path) -> Result<(Vec<u8>, Parsed), Failure> {
    // Under sudo the user's own rights read it, wherever it lies.
    let reader = storage_platform::sudo::sudo_user().or(owner);
    let bytes = read_report_bytes(reader, path).map_err(|e| {
        Failure::Usage(format!(
            "cannot read the report {}: {e}; give a report saved with `storage-score run --output FILE`",
            path.display()
        ))
    })?;
    // The leaderboard's own validator, so that what it would refuse is
    // refused here first, in the words `score` and `compare` use.
    let refused = |e| crate::saved::refused(&path.display().to_string(), &e);
    if wear::is_wear(&bytes) {
        return Ok((bytes.clone(), Parsed::Wear(storage_scoring::input::parse_wear(&bytes).map_err(refused)?)));
    }
    let report = storage_scoring::input::parse_report(&bytes).map_err(refused)?;
    Ok((bytes, Parsed::Run(Box::new(report))))
}

fn load_receipt(place: &Place) -> Result<Receipt, Failure> {
    let path = &place.receipt;
    match place.read_receipt() {
        Ok(Some(bytes)) => serde_json::from_slice(&bytes).map_err(|e| {
            Failure::Run(format!(
                "{} is not a receipt this tool wrote ({e}); move it away (it may hold a delete token) and try again",
                path.display()
            ))
        }),
        Ok(None) => Ok(Receipt::default()),
        Err(e) => {
            Err(Failure::Run(format!("cannot read the receipt {}: {e}; move it away and try again", path.display())))
        }
    }
}

/// Says, with what will be sent and before it is, that plain `http://`
/// shows `what` to anyone on the way.
fn warn_if_clear_text(conv: &dyn Conversation, base: &str, what: &str) {
    if base.starts_with("http://") {
        conv.say(&format!(
            "warning: {base} is plain http: {what} travel unencrypted, readable and changeable on the way; use https:// where the leaderboard offers it"
        ));
    }
}

fn save_receipt(place: &Place, receipt: &Receipt) -> Result<(), Failure> {
    let mut json = serde_json::to_vec_pretty(receipt).expect("a receipt always serializes");
    json.push(b'\n');
    // 0600: the delete tokens in it are secrets.
    place.write(&place.receipt, &json, 0o600).map_err(|e| {
        Failure::Run(format!(
            "cannot write the receipt {}: {e}; copy the report into a directory you can write to",
            place.receipt.display()
        ))
    })
}

fn record(entry: &mut payload::Submission, accepted: &Accepted, result_url: &str) {
    entry.status = accepted.status.clone();
    entry.id = Some(accepted.id.clone());
    entry.url = Some(result_url.to_owned());
    entry.reason = accepted.reason.clone();
    entry.score = accepted.score;
    // Only the first 201 carries the token: a replay must not erase it.
    if accepted.delete_token.is_some() {
        entry.delete_token = accepted.delete_token.clone();
    }
}

fn accepted_lines(
    accepted: &Accepted,
    result_url: &str,
    report: &Report,
    report_path: &Path,
    receipt_path: &Path,
    had_token: bool,
) -> String {
    let mut status = match &accepted.reason {
        Some(reason) => format!("{}: {reason}", accepted.status),
        None => accepted.status.clone(),
    };
    if let Some(score) = accepted.score {
        status.push_str(&format!("; score {score}"));
    }
    let mut lines = vec![format!("sent: {result_url} ({status})")];
    if let (Some(score), Some(standing)) = (accepted.score, &accepted.standing) {
        lines.push(standing_line(score, standing));
    }
    let local = report.score.as_ref().and_then(|s| s.pibenchmarks);
    if let (Some(theirs), Some(ours)) = (accepted.score, local) {
        if theirs != ours {
            lines.push(format!("note: the leaderboard computed {theirs} from the figures; this report says {ours}"));
        }
    }
    let delete_command = format!("storage-score submit {} --delete", shell_word(&report_path.to_string_lossy()));
    match (&accepted.delete_token, had_token) {
        (Some(token), _) => lines.push(format!(
            "delete token (shown once, kept in {}): {}; `{delete_command}` removes the result",
            receipt_path.display(),
            client::one_line(token, 200)
        )),
        (None, true) => lines.push(format!(
            "already sent before (receipt: {}); `{delete_command}` removes the result",
            receipt_path.display()
        )),
        (None, false) => lines.push(format!("receipt: {}", receipt_path.display())),
    }
    lines.join("\n")
}

/// Where the score stands, in one line: `score 1345: better than 62% of 41
/// submitters with this card on a Raspberry Pi 4 (median 1290)`.
fn standing_line(score: u64, standing: &client::Standing) -> String {
    let on = standing.board.as_deref().map(|b| format!(" on a {b}")).unwrap_or_default();
    if standing.group_submitters <= 1 {
        return format!("score {score}: the first submitter with this card{on} (median {})", standing.median_score);
    }
    format!(
        "score {score}: better than {}% of {} submitters with this card{on} (median {})",
        standing.percentile, standing.group_submitters, standing.median_score
    )
}

/// `submit REPORT --delete`: docs/leaderboard.md#delete-tokens, with the token kept
/// in the receipt.
pub fn delete(report: &Path, url: Option<&str>, timeout: Duration, conv: &dyn Conversation) -> Result<(), Failure> {
    let path = std::path::absolute(report).unwrap_or_else(|_| report.to_path_buf());
    let inst = Installation::discover().map_err(run)?;
    let place = Place::for_report(&path, &inst).map_err(run)?;
    let receipt_path = place.receipt.clone();
    if std::fs::symlink_metadata(&receipt_path).is_err() {
        return Err(Failure::Usage(format!(
            "no receipt of {} ({}): nothing was sent from it here, so there is no delete token",
            path.display(),
            receipt_path.display()
        )));
    }
    let mut receipt = load_receipt(&place)?;
    let wanted = url.filter(|u| !u.trim().is_empty()).map(|u| leaderboard_base(Some(u))).transpose()?;
    let candidates: Vec<usize> = (0..receipt.submissions.len())
        .filter(|&i| {
            let s = &receipt.submissions[i];
            s.delete_token.is_some() && s.id.is_some() && wanted.as_ref().is_none_or(|w| &s.leaderboard == w)
        })
        .collect();
    let at = match candidates.as_slice() {
        [] if receipt.submissions.iter().all(|s| s.status == payload::NOT_SENT && s.id.is_none()) => {
            return Err(Failure::Usage(format!(
                "nothing from {} ever reached a leaderboard: every attempt in {} is \"{}\", so there is nothing to delete",
                path.display(),
                receipt_path.display(),
                payload::NOT_SENT
            )));
        }
        [] => {
            return Err(Failure::Usage(format!(
                "{} holds no delete token{}: only the first answer to a submission carries one",
                receipt_path.display(),
                wanted.map(|w| format!(" for {w}")).unwrap_or_default()
            )));
        }
        [one] => *one,
        [.., last] if wanted.is_some() => *last,
        _ => {
            return Err(Failure::Usage(
                "this report was sent to more than one leaderboard: say which with --url URL".to_owned(),
            ));
        }
    };
    let entry = receipt.submissions[at].clone();
    let id = entry.id.clone().unwrap_or_default();
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(Failure::Run(format!("the receipt's result id {id:?} is not one this tool can address")));
    }
    let client = Client::new(timeout, Policy::default()).map_err(run)?;
    let endpoint = format!("{}/api/v1/results/{id}", entry.leaderboard);
    let token = entry.delete_token.clone().unwrap_or_default();
    warn_if_clear_text(conv, &entry.leaderboard, "the delete token");
    let status = client.delete(&endpoint, &token, &mut |note| conv.say(note)).map_err(|e| match e {
        SendError::Refused { status, message } => {
            Failure::Run(format!("not deleted: the leaderboard at {} refused ({status}: {message})", entry.leaderboard))
        }
        other => not_deleted(other, &path, &entry.leaderboard),
    })?;
    let target = &mut receipt.submissions[at];
    target.status = "deleted".to_owned();
    target.delete_token = None;
    save_receipt(&place, &receipt)?;
    let shown = entry.url.unwrap_or(endpoint);
    conv.say(&if status == 404 { format!("already gone: {shown}") } else { format!("deleted: {shown}") });
    Ok(())
}

/// The options of this upload that the command to send it later must
/// repeat: the consent already given (so that the command works where this
/// one did, off a terminal too) and the choice to send serials.
fn later_flags(upload: &Upload) -> String {
    let mut flags = String::new();
    if upload.yes {
        flags.push_str(" --yes");
    }
    if upload.include_serials {
        flags.push_str(" --include-serials");
    }
    flags
}

/// GETs the leaderboard document at `url` (a result, for `compare --from`),
/// retried as uploads are (`notify` hears of each retry); the error is one
/// line naming the address.
pub fn fetch(url: &str, timeout: Duration, notify: &mut dyn FnMut(&str)) -> Result<serde_json::Value, Failure> {
    let client = Client::new(timeout, Policy::default()).map_err(run)?;
    client.fetch(url, notify).map_err(|e| {
        Failure::Run(match e {
            SendError::Unreachable { attempts, last } => {
                format!("cannot fetch {url}: no answer after {attempts} attempts (the last: {last}); check the address and try again")
            }
            SendError::Busy { wait } => {
                format!("cannot fetch {url}: the leaderboard is busy and asks to wait {} s; try again later", wait.as_secs())
            }
            SendError::Refused { status, message } => {
                format!("cannot fetch {url}: the leaderboard answered {status} ({message}); check the result's address")
            }
            SendError::Garbage { what } => {
                format!("cannot fetch {url}: it did not answer as a leaderboard does ({what}); check the address")
            }
            SendError::Tls { what } => {
                format!("cannot fetch {url}: it was not trusted: {what}; it was not retried: check the address, or the server's certificate")
            }
        })
    })
}

/// The one-line failure for an upload that did not happen, with the way to
/// send later (`flags` from [`later_flags`]) where waiting can help.
fn not_sent(e: SendError, report: &Path, base: &str, flags: &str) -> Failure {
    let kept = format!("the report is kept in {}", report.display());
    let later = format!(
        "send it later with: storage-score submit {} --url {}{flags}",
        shell_word(&report.to_string_lossy()),
        shell_word(base)
    );
    Failure::Run(match e {
        SendError::Unreachable { attempts, last } => {
            format!(
                "not sent: the leaderboard at {base} did not take it after {attempts} attempts (the last: {last}); {kept}; {later}"
            )
        }
        SendError::Busy { wait } => format!(
            "not sent: the leaderboard at {base} is busy and asks to wait {} s; {kept}; {later}",
            wait.as_secs()
        ),
        SendError::Refused { status, message } => {
            format!("not sent: the leaderboard at {base} refused the report ({status}: {message}); {kept}")
        }
        SendError::Garbage { what } => {
            format!("not sent: {base} did not answer as a leaderboard does ({what}); check the URL; {kept}; {later}")
        }
        SendError::Tls { what } => format!(
            "not sent: {base} was not trusted: {what}; nothing was sent and it was not retried: check the URL, or the server's certificate; {kept}"
        ),
    })
}

/// The one-line failure for a delete that did not reach the leaderboard.
fn not_deleted(e: SendError, report: &Path, base: &str) -> Failure {
    let later =
        format!("try again later with: storage-score submit {} --delete", shell_word(&report.to_string_lossy()));
    Failure::Run(match e {
        SendError::Unreachable { attempts, last } => {
            format!(
                "not deleted: the leaderboard at {base} did not take it after {attempts} attempts (the last: {last}); {later}"
            )
        }
        SendError::Busy { wait } => {
            format!("not deleted: the leaderboard at {base} is busy and asks to wait {} s; {later}", wait.as_secs())
        }
        SendError::Refused { status, message } => {
            format!("not deleted: the leaderboard at {base} refused ({status}: {message})")
        }
        SendError::Garbage { what } => {
            format!("not deleted: {base} did not answer as a leaderboard does ({what}); check the receipt; {later}")
        }
        SendError::Tls { what } => format!(
            "not deleted: {base} was not trusted: {what}; the token was not sent and it was not retried: check the receipt's address, or the server's certificate"
        ),
    })
}

/// A leaderboard URL reduced to its base, or the usage error (exit 2).
pub fn leaderboard_base(url: Option<&str>) -> Result<String, Failure> {
    storage_upload::url::leaderboard_base(url).map_err(usage)
}

/// A library's error as bad usage (exit 2).
fn usage(e: impl std::fmt::Display) -> Failure {
    Failure::Usage(e.to_string())
}

/// A library's error as a failed run (exit 1).
fn run(e: impl std::fmt::Display) -> Failure {
    Failure::Run(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_upload::url::URL_VARIABLE;

    #[test]
    fn no_leaderboard_is_bad_usage() {
        let none = leaderboard_base(None).unwrap_err();
        assert_eq!(none.exit_code(), 2);
        assert!(none.to_string().contains(URL_VARIABLE));
    }

    #[test]
    fn commands_to_send_later_survive_the_shell() {
        assert_eq!(shell_word("/home/alice/card.json"), "/home/alice/card.json");
        assert_eq!(shell_word("/tmp/my card's.json"), "'/tmp/my card'\\''s.json'");
        assert_eq!(shell_word("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
    }

    #[test]
    fn a_delete_that_did_not_arrive_says_to_delete_later_not_to_send() {
        let line = not_deleted(
            SendError::Unreachable { attempts: 5, last: "cannot connect: Connection refused".to_owned() },
            Path::new("/r/card.json"),
            "http://127.0.0.1:9",
        )
        .to_string();
        assert!(line.starts_with("not deleted: the leaderboard at http://127.0.0.1:9 did not take it"), "{line}");
        assert!(line.ends_with("try again later with: storage-score submit /r/card.json --delete"), "{line}");
    }

    #[test]
    fn not_sent_keeps_the_report_and_says_how_to_send_later() {
        let line = not_sent(
            SendError::Unreachable { attempts: 5, last: "cannot connect: Connection refused".to_owned() },
            Path::new("/r/card.json"),
            "http://127.0.0.1:9",
            " --yes",
        )
        .to_string();
        assert!(line.contains("the report is kept in /r/card.json"), "{line}");
        assert!(
            line.ends_with("send it later with: storage-score submit /r/card.json --url http://127.0.0.1:9 --yes"),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }

    #[test]
    fn the_standing_is_one_line() {
        let standing = client::Standing {
            group_submitters: 41,
            percentile: 62,
            median_score: 1290,
            board: Some("Raspberry Pi 4".into()),
        };
        assert_eq!(
            standing_line(1345, &standing),
            "score 1345: better than 62% of 41 submitters with this card on a Raspberry Pi 4 (median 1290)"
        );
        let alone = client::Standing { group_submitters: 1, percentile: 0, median_score: 1164, board: None };
        assert_eq!(standing_line(1164, &alone), "score 1164: the first submitter with this card (median 1164)");
    }
}
