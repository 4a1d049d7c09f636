//! `submit` of an endurance or power-loss report
//! (docs/leaderboard.md#endurance-and-power-loss-results): the same
//! consent, receipt, key and retries as a run's report; what differs is
//! the payload (the report through the same privacy filter: the card's
//! serials dropped for a salted hash, the run's fingerprint hashed, paths
//! below mount points and personal names removed) and the summary shown
//! before consent.

use storage_scoring::privacy::{PrivacyError, Redaction};
use storage_scoring::wear::{EnduranceSummary, PowerLossSummary, WearReport};

use crate::payload::SummaryContext;

/// Whether the bytes are an endurance or power-loss report (by its `schema`).
pub fn is_wear(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|v| storage_scoring::input::wear_schema(&v).is_some())
}

/// Why an endurance or power-loss report cannot be sent.
#[derive(Debug, thiserror::Error)]
pub enum WearError {
    /// A label was given: it names a card in a benchmark report only.
    #[error(
        "--label names a card in a benchmark report; an endurance or power-loss report carries none: leave --label out"
    )]
    Label,
    /// The report does not say which card it is.
    #[error(
        "this report does not say which card it is (no \"identity\"), so a leaderboard cannot put it on the card's page; make it again with this version of storage-score"
    )]
    NoIdentity,
    /// The privacy filter failed.
    #[error(transparent)]
    Privacy(#[from] PrivacyError),
    /// The filtered report could not be encoded.
    #[error("cannot encode the payload: {0}")]
    Encode(#[source] serde_json::Error),
}

impl WearError {
    /// Whether the report or the command line is at fault (bad usage), not
    /// the run.
    pub fn is_usage(&self) -> bool {
        matches!(self, WearError::Label | WearError::NoIdentity)
    }
}

/// The exact bytes to send, and the summary to show before asking:
/// `labelled` when the user named the card (refused here),
/// `include_serials` as in [`Redaction`].
pub fn prepare(
    report: &WearReport,
    labelled: bool,
    include_serials: bool,
    salt: &[u8],
    ctx: &SummaryContext<'_>,
) -> Result<(Vec<u8>, String), WearError> {
    if labelled {
        return Err(WearError::Label);
    }
    if report.identity().is_none() {
        return Err(WearError::NoIdentity);
    }
    let how = Redaction { include_serials, salt: Some(salt), personal: ctx.personal.to_vec() };
    let sent = report.redact(&how)?;
    let mut body = match &sent {
        WearReport::Endurance(r) => serde_json::to_vec_pretty(r),
        WearReport::PowerLoss(r) => serde_json::to_vec_pretty(r),
    }
    .map_err(WearError::Encode)?;
    body.push(b'\n');
    let shown = summary(&sent, &body, ctx);
    Ok((body, shown))
}

/// What will be sent, from the payload itself.
fn summary(sent: &WearReport, body: &[u8], ctx: &SummaryContext<'_>) -> String {
    let mut lines = vec![format!("What will be sent to {}:", ctx.endpoint)];
    let mut line = |name: &str, value: String| lines.push(format!("  {name:<9} {value}"));
    let card = sent.identity().map(card_line).unwrap_or_default();
    line("card", card);
    match sent {
        WearReport::Endurance(r) => {
            let s = EnduranceSummary::of(r);
            let reached: Vec<String> =
                s.milestones.iter().map(|m| format!("{} at pass {}", m.milestone, m.pass)).collect();
            line(
                "endurance",
                format!(
                    "{} passes, {} bytes written, stopped: {}; milestones: {}",
                    s.passes,
                    s.total_written_bytes,
                    s.stopped.unwrap_or("still running"),
                    if reached.is_empty() { "none reached".to_owned() } else { reached.join(", ") }
                ),
            );
            line(
                "serials",
                if ctx.include_serials {
                    "SENT, as you asked with --include-serials (the card's, and the run's fingerprint)".to_owned()
                } else {
                    "not sent; a salted hash of the card's identity goes instead".to_owned()
                },
            );
        }
        WearReport::PowerLoss(r) => {
            let s = PowerLossSummary::of(r);
            line("power", format!("{} of {} power cuts survived, verdict {}", s.survived, s.cycles, s.verdict));
            line("serials", if ctx.include_serials { "SENT, as you asked" } else { "not sent" }.to_owned());
        }
    }
    line("removed", "the host name and user names wherever they appeared; paths below mount points".to_owned());
    line("payload", format!("{} ({} bytes): exactly these bytes are sent", ctx.payload_path.display(), body.len()));
    lines.join("\n") + "\n"
}

fn card_line(device: &storage_scoring::schema::Device) -> String {
    let mut parts = vec![device.kind.as_str().to_owned()];
    let sd = device
        .sd
        .as_ref()
        .and_then(|s| s.cid.as_ref())
        .map(|c| (c.manufacturer_id, &c.product_name, &c.product_revision));
    let mmc = device
        .emmc
        .as_ref()
        .and_then(|e| e.cid.as_ref())
        .map(|c| (c.manufacturer_id, &c.product_name, &c.product_revision));
    match sd.or(mmc) {
        Some((mid, name, rev)) => parts.push(format!("MID 0x{mid:02x} {name} rev {rev}")),
        None => parts.extend([device.vendor.clone(), device.model.clone()].into_iter().flatten()),
    }
    if let Some(bytes) = device.capacity_bytes {
        parts.push(format!("{:.2} GB", bytes as f64 / 1e9));
    }
    parts.join(" · ")
}
