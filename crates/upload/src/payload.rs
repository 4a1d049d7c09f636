//! What leaves the machine, decided without a network: the payload (the
//! report through `scoring`'s privacy filter), its Idempotency-Key, the
//! readable summary shown before consent, and the files kept beside the
//! report (`NAME.upload.json`, the exact bytes sent; `NAME.receipt.json`,
//! what the leaderboard answered, with the delete token).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use storage_scoring::privacy::{PrivacyError, Redaction, redact};
use storage_scoring::schema::{MAX_LABEL_CHARS, MEASUREMENT_KEYS, Report};

use crate::installation::hex;

/// The report as it will be sent, and its exact bytes.
#[derive(Debug)]
pub struct Payload {
    pub report: Report,
    pub body: Vec<u8>,
}

/// Why a report's payload could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    /// The privacy filter failed.
    #[error(transparent)]
    Privacy(#[from] PrivacyError),
    /// The filtered report could not be encoded.
    #[error("cannot encode the payload: {0}")]
    Encode(#[source] serde_json::Error),
}

/// A label that is refused before anything is sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// It holds a control character.
    #[error("--label: contains the control character U+{:04X}; type the name as printed on the card", u32::from(*.0))]
    Control(char),
    /// It is longer than [`MAX_LABEL_CHARS`], in characters once spaces collapse.
    #[error(
        "--label: {0} characters, at most {MAX_LABEL_CHARS} are accepted; give the name printed on the card, e.g. \"SanDisk Extreme 64GB\""
    )]
    TooLong(usize),
}

/// Applies the privacy filter: serials dropped for a salted hash (unless
/// `include_serials`), the PSN zeroed in the raw CID, paths below mount
/// points and the `personal` names removed from every free-text field; then
/// puts the card's `label` (as the user typed it) in.
pub fn prepare(
    report: &Report,
    include_serials: bool,
    salt: &[u8],
    personal: &[String],
    label: Option<&str>,
) -> Result<Payload, PayloadError> {
    let how = Redaction { include_serials, salt: Some(salt), personal: personal.to_vec() };
    let mut report = redact(report, &how)?;
    if let Some(label) = label {
        report.label = Some(label.to_owned());
    }
    let mut body = serde_json::to_vec_pretty(&report).map_err(PayloadError::Encode)?;
    body.push(b'\n');
    Ok(Payload { report, body })
}

/// A label as typed, checked: one line, at most [`MAX_LABEL_CHARS`]
/// characters, spaces collapsed; empty means none. The leaderboard checks
/// the rest (look-alike characters, mixed scripts) and says which.
pub fn clean_label(text: &str) -> Result<Option<String>, LabelError> {
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(LabelError::Control(c));
    }
    let label = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let chars = label.chars().count();
    if chars > MAX_LABEL_CHARS {
        return Err(LabelError::TooLong(chars));
    }
    Ok((!label.is_empty()).then_some(label))
}

/// SHA-256 of the report file's bytes, as hex: which report a receipt is for.
pub fn report_digest(report_bytes: &[u8]) -> String {
    hex(&Sha256::digest(report_bytes))
}

/// One Idempotency-Key per report: derived from the report file's bytes and
/// the secret salt, so that every later `submit` of the same file on this
/// installation sends the same key. The salt keeps the key from being a
/// plain hash of a report that holds a serial (which could be found by
/// trying all serials against the public rest of the report).
pub fn idempotency_key(salt: &[u8], report_bytes: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"storage-score idempotency v1\0");
    hasher.update(salt);
    hasher.update(b"\0");
    hasher.update(report_bytes);
    format!("ss1-{}", hex(&hasher.finalize()[..16]))
}

/// `card.json` → `card.SUFFIX.json`, in the same directory.
pub fn beside(report: &Path, suffix: &str) -> PathBuf {
    let name = report.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = name.strip_suffix(".json").unwrap_or(&name);
    report.with_file_name(format!("{stem}.{suffix}.json"))
}

/// A receipt entry's status when the leaderboard could not be reached or
/// refused: nothing of this submission is on it.
pub const NOT_SENT: &str = "not sent";

/// The receipt kept beside a report: every submission of it, with what
/// the leaderboard answered. Written 0600: the delete tokens are secrets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    #[serde(default)]
    pub submissions: Vec<Submission>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Submission {
    /// The leaderboard's base URL.
    pub leaderboard: String,
    /// Which version of the report file this is for ([`report_digest`]).
    pub report_sha256: String,
    pub idempotency_key: String,
    /// `pending` while it is being sent, [`NOT_SENT`] when no leaderboard
    /// took it, else the status the leaderboard answered.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_token: Option<String>,
}

impl Receipt {
    /// The key already used for this version of the report, if any: kept so
    /// that a lost or replaced salt cannot make a second copy.
    pub fn key_for(&self, report_sha256: &str) -> Option<&str> {
        self.submissions.iter().find(|s| s.report_sha256 == report_sha256).map(|s| s.idempotency_key.as_str())
    }

    /// The entry for this report on this leaderboard, made if missing.
    pub fn entry(&mut self, leaderboard: &str, report_sha256: &str, key: &str) -> &mut Submission {
        let at = self.submissions.iter().position(|s| s.leaderboard == leaderboard && s.report_sha256 == report_sha256);
        let at = at.unwrap_or_else(|| {
            self.submissions.push(Submission {
                leaderboard: leaderboard.to_owned(),
                report_sha256: report_sha256.to_owned(),
                idempotency_key: key.to_owned(),
                status: "pending".to_owned(),
                ..Submission::default()
            });
            self.submissions.len() - 1
        });
        &mut self.submissions[at]
    }
}

/// What the summary needs besides the payload.
#[derive(Debug)]
pub struct SummaryContext<'a> {
    pub endpoint: &'a str,
    pub payload_path: &'a Path,
    pub include_serials: bool,
    pub personal: &'a [String],
}

/// The readable summary shown before consent, built from the payload
/// itself so that it shows what is sent, not what the report holds.
pub fn summary(payload: &Payload, ctx: &SummaryContext<'_>) -> String {
    let report = &payload.report;
    let mut lines = vec![format!("What will be sent to {}:", ctx.endpoint)];
    let mut line = |name: &str, value: String| {
        if !value.is_empty() {
            lines.push(format!("  {name:<9} {value}"));
        }
    };
    line("device", device_line(report));
    line("label", report.label.clone().unwrap_or_default());
    line("serials", serials_line(report, ctx.include_serials));
    if let Some(system) = &report.system {
        let kernel = system.kernel.as_ref().map(|k| format!("Linux {k}"));
        let parts = [system.board.as_deref(), system.os.as_deref(), kernel.as_deref(), system.arch.as_deref()];
        line("system", parts.into_iter().flatten().collect::<Vec<_>>().join(" · "));
    }
    line("bus", bus_line(report));
    if let Some(target) = &report.target {
        let on = target.partition.as_deref().or(target.disk.as_deref()).unwrap_or(&target.input);
        let mut text = on.to_owned();
        if let Some(mount) = &target.mount_point {
            text.push_str(&format!(" on {mount}"));
        }
        if let Some(fs) = &target.filesystem {
            text.push_str(&format!(" ({fs})"));
        }
        line("target", text);
    }
    line("figures", figures_line(report));
    let scrubbed = scrubbed_names(ctx.personal);
    let names = if scrubbed.is_empty() { String::new() } else { format!(" ({})", scrubbed.join(", ")) };
    line("removed", format!("the host name and user names{names} wherever they appeared; paths below mount points"));
    line(
        "payload",
        format!("{} ({}): exactly these bytes are sent", ctx.payload_path.display(), human_size(payload.body.len())),
    );
    lines.join("\n") + "\n"
}

/// The names the privacy filter actually replaces (it leaves defaults such
/// as `root` or `pi` alone), found by asking the filter itself.
fn scrubbed_names(personal: &[String]) -> Vec<String> {
    personal
        .iter()
        .filter(|name| {
            let mut probe = Report::new("probe");
            probe.notes.push(name.to_string());
            let how = Redaction { personal: vec![name.to_string()], ..Redaction::default() };
            redact(&probe, &how).is_ok_and(|r| r.notes != probe.notes)
        })
        .cloned()
        .collect()
}

fn device_line(report: &Report) -> String {
    let Some(device) = &report.device else { return "not identified".to_owned() };
    let mut parts = vec![device.kind.as_str().to_owned()];
    let sd_cid = device.sd.as_ref().and_then(|sd| sd.cid.as_ref());
    let emmc_cid = device.emmc.as_ref().and_then(|e| e.cid.as_ref());
    let name = if let Some(cid) = sd_cid {
        let maker = cid.manufacturer.clone().unwrap_or_else(|| format!("MID 0x{:02x}", cid.manufacturer_id));
        Some(format!("{maker} {} rev {}", cid.product_name, cid.product_revision))
    } else if let Some(cid) = emmc_cid {
        let maker = cid.manufacturer.clone().unwrap_or_else(|| format!("MID 0x{:02x}", cid.manufacturer_id));
        Some(format!("{maker} {} rev {}", cid.product_name, cid.product_revision))
    } else {
        let name = [device.vendor.as_deref(), device.model.as_deref()].into_iter().flatten().collect::<Vec<_>>();
        (!name.is_empty()).then(|| name.join(" "))
    };
    parts.extend(name);
    if let Some(bytes) = device.capacity_bytes {
        parts.push(format!("{:.2} GB", bytes as f64 / 1e9));
    }
    if let Some(made) = sd_cid.map(|c| &c.manufactured).or(emmc_cid.map(|c| &c.manufactured)) {
        parts.push(format!("made {made}"));
    }
    if let Some(label) = device.sd.as_ref().and_then(|sd| sd.class_label.as_ref()) {
        parts.push(format!("claims {label}"));
    }
    parts.join(" · ")
}

fn serials_line(report: &Report, include_serials: bool) -> String {
    let device = report.device.as_ref();
    let mut sent = Vec::new();
    if let Some(psn) = device.and_then(|d| d.sd.as_ref()).and_then(|sd| sd.cid.as_ref()).and_then(|c| c.serial) {
        sent.push(format!("card serial (PSN) 0x{psn:08x}"));
    }
    if let Some(psn) = device.and_then(|d| d.emmc.as_ref()).and_then(|e| e.cid.as_ref()).and_then(|c| c.serial) {
        sent.push(format!("card serial (PSN) 0x{psn:08x}"));
    }
    if let Some(serial) = device.and_then(|d| d.serial.as_ref()) {
        sent.push(format!("disk serial {serial}"));
    }
    match (include_serials, sent.is_empty()) {
        (true, false) => format!("SENT, as you asked with --include-serials: {}", sent.join(", ")),
        (true, true) => "none to send (this device reports none)".to_owned(),
        // Without --include-serials the filter leaves none: say what goes instead.
        (false, _) if device.and_then(|d| d.serial_hash.as_ref()).is_some() => {
            "not sent; a salted hash goes instead, so that repeat runs of this device group together".to_owned()
        }
        (false, _) => "not sent".to_owned(),
    }
}

fn bus_line(report: &Report) -> String {
    let device = report.device.as_ref();
    let host = device
        .and_then(|d| d.sd.as_ref().and_then(|s| s.host.as_ref()).or(d.emmc.as_ref().and_then(|e| e.host.as_ref())));
    if let Some(host) = host {
        let timing = host.timing.clone().unwrap_or_else(|| "unknown timing".to_owned());
        return match host.clock_hz {
            Some(hz) => format!("{timing} at {} MHz", hz / 1_000_000),
            None => timing,
        };
    }
    if let Some(usb) = device.and_then(|d| d.usb.as_ref()) {
        return usb.speed_mbps.map(|s| format!("USB at {s} Mb/s")).unwrap_or_default();
    }
    String::new()
}

fn figures_line(report: &Report) -> String {
    let present = report
        .measurements
        .as_ref()
        .map(|m| MEASUREMENT_KEYS.iter().filter(|k| m.get(k).is_some()).count())
        .unwrap_or(0);
    let mut text = format!("{present} of {} measurements", MEASUREMENT_KEYS.len());
    if !report.details.is_empty() {
        text.push_str(" with latency percentiles");
    }
    if let Some(profile) = &report.profile {
        text.push_str(&format!(", profile {profile}"));
    }
    if let Some(score) = report.score.as_ref().and_then(|s| s.pibenchmarks) {
        text.push_str(&format!("; score {score} here (the leaderboard computes its own)"));
    }
    if !report.notes.is_empty() {
        text.push_str(&format!("; {} note(s)", report.notes.len()));
    }
    text
}

fn human_size(bytes: usize) -> String {
    if bytes < 1024 { format!("{bytes} bytes") } else { format!("{:.1} KiB", bytes as f64 / 1024.0) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_scoring::schema::{Device, DeviceKind, SdCid, SdInfo, Target};

    fn card_report() -> Report {
        let mut report = Report::new("0.1.0");
        report.target = Some(Target {
            input: "/media/alice/usbstick/bench".to_owned(),
            disk: Some("/dev/sda".to_owned()),
            partition: Some("/dev/sda1".to_owned()),
            mount_point: Some("/media/alice/usbstick".to_owned()),
            filesystem: Some("ext4".to_owned()),
            ..Target::default()
        });
        let cid = SdCid {
            manufacturer_id: 0x9f,
            manufacturer: Some("Kingston".to_owned()),
            oem_id: "TI".to_owned(),
            product_name: "SD64G".to_owned(),
            product_revision: "6.1".to_owned(),
            serial: Some(0x3698_d765),
            manufactured: "2019-11".to_owned(),
            ..SdCid::default()
        };
        let mut sd = SdInfo { cid: Some(cid), class_label: Some("A2 Class 10 V30 U3".to_owned()), ..SdInfo::default() };
        sd.registers.insert("cid".to_owned(), "9f54495344363447613698d765013b4f".to_owned());
        report.device = Some(Device {
            kind: DeviceKind::SD,
            capacity_bytes: Some(62_277_025_792),
            serial: Some("0x3698d765".to_owned()),
            sd: Some(sd),
            ..Device::default()
        });
        report.notes.push("ran on alice-laptop as alice in /media/alice/usbstick/bench".to_owned());
        report
    }

    #[test]
    fn the_payload_carries_no_serial_name_or_private_path() {
        let personal = vec!["alice".to_owned(), "alice-laptop".to_owned()];
        let payload = prepare(&card_report(), false, b"0123456789abcdef0123456789abcdef", &personal, None).unwrap();
        let body = String::from_utf8(payload.body.clone()).unwrap();
        for secret in ["915986277", "3698d765", "3698D765", "alice", "/media/alice"] {
            assert!(!body.contains(secret), "{secret} leaked:\n{body}");
        }
        assert!(body.contains("\"serial_hash\""), "{body}");
        let text = summary(
            &payload,
            &SummaryContext {
                endpoint: "http://127.0.0.1:9/api/v1/results",
                payload_path: Path::new("/tmp/card.upload.json"),
                include_serials: false,
                personal: &personal,
            },
        );
        assert!(
            text.contains("sd · Kingston SD64G rev 6.1 · 62.28 GB · made 2019-11 · claims A2 Class 10 V30 U3"),
            "{text}"
        );
        assert!(text.contains("serials   not sent; a salted hash goes instead"), "{text}");
        assert!(text.contains("target    /dev/sda1 on /media/… (ext4)"), "{text}");
        assert!(text.contains("/tmp/card.upload.json"), "{text}");
        assert_eq!(scrubbed_names(&["root".to_owned(), "alice".to_owned(), "pi".to_owned()]), ["alice"]);
    }

    #[test]
    fn include_serials_says_which_serials_go() {
        let payload = prepare(&card_report(), true, b"salt-salt-salt-salt-salt-salt-00", &[], None).unwrap();
        let ctx = SummaryContext {
            endpoint: "http://x/api/v1/results",
            payload_path: Path::new("p"),
            include_serials: true,
            personal: &[],
        };
        let text = summary(&payload, &ctx);
        assert!(text.contains("SENT, as you asked with --include-serials: card serial (PSN) 0x3698d765"), "{text}");
        assert!(String::from_utf8_lossy(&payload.body).contains("915986277"));
    }

    #[test]
    fn one_key_per_report_file_and_salt() {
        let key = idempotency_key(b"salt-a", b"{\"report\": 1}");
        assert_eq!(key, idempotency_key(b"salt-a", b"{\"report\": 1}"));
        assert_ne!(key, idempotency_key(b"salt-b", b"{\"report\": 1}"));
        assert_ne!(key, idempotency_key(b"salt-a", b"{\"report\": 2}"));
        // docs/leaderboard.md#idempotency: 8–128 visible ASCII characters.
        assert!((8..=128).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic()), "{key}");
    }

    #[test]
    fn receipts_reuse_the_key_of_the_same_report_version() {
        let mut receipt = Receipt::default();
        receipt.entry("http://a", "digest-1", "ss1-k1").status = "public".to_owned();
        assert_eq!(receipt.key_for("digest-1"), Some("ss1-k1"));
        assert_eq!(receipt.key_for("digest-2"), None);
        receipt.entry("http://a", "digest-1", "ignored").id = Some("7".to_owned());
        assert_eq!(receipt.submissions.len(), 1);
        receipt.entry("http://b", "digest-1", "ss1-k1");
        assert_eq!(receipt.submissions.len(), 2);
    }

    #[test]
    fn files_beside_the_report() {
        assert_eq!(beside(Path::new("/r/card.json"), "upload"), PathBuf::from("/r/card.upload.json"));
        assert_eq!(beside(Path::new("card"), "receipt"), PathBuf::from("card.receipt.json"));
    }
}
