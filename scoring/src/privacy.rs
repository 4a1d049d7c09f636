//! The privacy filter of docs/leaderboard.md#privacy, applied by the upload client before it
//! sends a report and again by the leaderboard server to whatever it
//! receives, so that no client can make the server store a serial number.
//!
//! What leaves the machine by default:
//! - no serial number: the SD/eMMC CID's PSN and a disk's serial are dropped,
//!   and the PSN bits (and the CRC7 computed over them) are zeroed in the raw
//!   `cid` register text. A salted hash may go instead ([`Redaction::salt`]),
//!   so that repeat runs of one card on one machine can be grouped without
//!   the serial being recoverable (a 32-bit PSN hashed without a secret salt
//!   could be found by trying all 2^32 values);
//! - no path below a mount point: `/media/alice/usb` becomes `/media/…`, in
//!   the target and in every free-text note;
//! - no hostname or user name: the client names them ([`Redaction::personal`])
//!   and every whole-word occurrence in a prose field (a note, a hint's
//!   message, a skip reason, advice: [`PROSE_KEYS`]) or a path field
//!   ([`PATH_KEYS`]) is replaced.
//!
//! Only those fields are scrubbed. Enum-valued fields (`kind`, `profile`,
//! `engine`, a bus `timing`) and keyed fields (measurement keys, register
//! names) are never touched: a user named `nvme` or `compat` must not turn
//! an NVMe report into an unreadable one, or a compat run into another
//! profile.
//!
//! Pure: no I/O. The salt and the personal names are the caller's to find.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::schema::{Device, Report, SerialField};

/// Keys whose values are prose a user's or host's name can appear in. (A
/// `source` names a public reference or a health source such as
/// `nvme-smart-log`: a word of the schema, never scrubbed.)
pub const PROSE_KEYS: [&str; 9] =
    ["notes", "message", "reason", "summary", "requirement", "why", "engine_detail", "evidence", "fix"];

/// Keys whose values are paths a user chose (a directory target, a mount
/// point, a loop device's backing file): reduced below the mount point and
/// scrubbed of personal names.
pub const PATH_KEYS: [&str; 5] = ["input", "mount_point", "mount_source", "stack", "backing_file"];

/// The filter could not give the report back in its own shape. Scrubbing
/// touches free text only, so this is a bug, reported rather than a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the privacy filter could not rebuild the report ({0}); nothing was sent")]
pub struct PrivacyError(pub String);

/// What to remove, and what to send instead.
#[derive(Debug, Clone, Default)]
pub struct Redaction<'a> {
    /// Keep serial numbers (`--include-serials`). Paths and personal names
    /// are removed regardless.
    pub include_serials: bool,
    /// A secret, per-installation salt: when given, `device.serial_hash`
    /// replaces the serials. Without it, an incoming `serial_hash` is kept
    /// only if it is well formed (the server's case).
    pub salt: Option<&'a [u8]>,
    /// Host and user names to replace wherever they appear as a whole word.
    /// Common defaults (`root`, `pi`, …) are left alone: they identify no one,
    /// and `root` in "needs root" is not a user name.
    pub personal: Vec<String>,
}

impl Redaction<'_> {
    /// What the leaderboard server applies to every report it receives.
    pub fn server() -> Redaction<'static> {
        Redaction::default()
    }
}

/// What replaces a removed path tail or personal name.
pub const ELIDED: &str = "…";

/// Names that are defaults on millions of machines, not personal data.
const COMMON_NAMES: [&str; 9] =
    ["root", "pi", "ubuntu", "debian", "admin", "user", "localhost", "raspberrypi", "nobody"];

/// Paths that are the same on every machine and are kept whole.
const SYSTEM_PATHS: [&str; 5] = ["/boot/firmware", "/var/tmp", "/var/lib", "/run/user", "/mnt/data"];

/// The report as it may leave the machine.
pub fn redact(report: &Report, how: &Redaction<'_>) -> Result<Report, PrivacyError> {
    let mut out = report.clone();
    if !how.include_serials {
        if let Some(device) = out.device.as_mut() {
            redact_serials(device, how.salt);
        }
    }
    if let Some(target) = out.target.as_mut() {
        // A directory target says where the user keeps things; the mount
        // point (reduced below) says all the leaderboard needs.
        if !target.input.starts_with("/dev/") {
            target.input = target.mount_point.clone().unwrap_or_else(|| reduce_path(&target.input));
        }
    }
    let personal = personal_names(how);
    // Free text and paths, wherever they sit (a note of the target, of a
    // test, of the device), go through the same scrub; nothing else does.
    let mut value = serde_json::to_value(&out).map_err(|e| PrivacyError(e.to_string()))?;
    scrub_fields(&mut value, &personal, false);
    serde_json::from_value(value).map_err(|e| PrivacyError(e.to_string()))
}

/// The personal names worth replacing: two characters or more, and not a
/// default that millions of machines share ([`COMMON_NAMES`]).
pub fn personal_names<'a>(how: &'a Redaction<'_>) -> Vec<&'a str> {
    how.personal
        .iter()
        .map(|name| name.trim())
        .filter(|name| name.chars().count() >= 2 && !COMMON_NAMES.contains(&name.to_ascii_lowercase().as_str()))
        .collect()
}

fn redact_serials(device: &mut Device, salt: Option<&[u8]>) {
    let identity = serial_identity(device);
    device.serial_hash = match (salt, identity) {
        (Some(salt), Some(identity)) => Some(salted_hash(salt, &identity)),
        _ => device.serial_hash.take().filter(|h| is_well_formed_hash(h)),
    };
    device.serial = None;
    if let Some(sd) = device.sd.as_mut() {
        if let Some(cid) = sd.cid.as_mut() {
            cid.serial = None;
        }
        mask_register(&mut sd.registers, CidLayout::Sd);
    }
    if let Some(emmc) = device.emmc.as_mut() {
        if let Some(cid) = emmc.cid.as_mut() {
            cid.serial = None;
        }
        mask_register(&mut emmc.registers, CidLayout::Mmc);
    }
}

/// What makes this device one physical device: where its medium keeps its
/// serial (the medium table), the card's identity with its PSN, or the
/// disk's model with its serial. Every serial field is dropped whatever the
/// medium says ([`redact_serials`]); the table only picks the identity.
fn serial_identity(device: &Device) -> Option<String> {
    let card = match device.kind.medium.facts().serial {
        SerialField::SdCid => device.sd.as_ref().and_then(|sd| sd.cid.as_ref()).map(|cid| {
            cid.serial
                .map(|psn| format!("sd:{:02x}:{}:{}:{psn:08x}", cid.manufacturer_id, cid.oem_id, cid.product_name))
        }),
        SerialField::MmcCid => device.emmc.as_ref().and_then(|emmc| emmc.cid.as_ref()).map(|cid| {
            cid.serial
                .map(|psn| format!("mmc:{:02x}:{}:{}:{psn:08x}", cid.manufacturer_id, cid.oem_id, cid.product_name))
        }),
        SerialField::Device => None,
    };
    // A card whose CID was read is that card, PSN or not; without a CID,
    // the disk's own serial is all there is.
    if let Some(card) = card {
        return card;
    }
    let serial = device.serial.as_deref()?.trim();
    (!serial.is_empty()).then(|| format!("disk:{}:{serial}", device.model.as_deref().unwrap_or("")))
}

/// 128 bits of SHA-256 over the salt and the identity, as 32 hex digits.
pub fn salted_hash(salt: &[u8], identity: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"storage-score serial v1\0");
    hasher.update(salt);
    hasher.update(b"\0");
    hasher.update(identity.as_bytes());
    hasher.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// A hash as [`salted_hash`] makes it: 32 lowercase hex digits.
pub fn is_well_formed_hash(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Where the PSN sits in a CID.
#[derive(Debug, Clone, Copy)]
enum CidLayout {
    /// SD Physical Layer Simplified Specification 5.2: PSN is CID[55:24].
    Sd,
    /// JEDEC JESD84 (eMMC) 7.2: PSN is CID[47:16].
    Mmc,
}

impl CidLayout {
    /// The CID's bytes (most significant first) that hold the PSN.
    fn psn_bytes(self) -> std::ops::Range<usize> {
        match self {
            CidLayout::Sd => 9..13,
            CidLayout::Mmc => 10..14,
        }
    }
}

/// Zeroes the PSN and the CRC byte (CRC7 over the PSN would give 7 bits of
/// it away) in the raw `cid` text. A `cid` that is not 32 hex digits cannot
/// be masked with certainty and is removed.
fn mask_register(registers: &mut std::collections::BTreeMap<String, String>, layout: CidLayout) {
    let Some(text) = registers.get("cid") else { return };
    match mask_psn(text, layout) {
        Some(masked) => {
            registers.insert("cid".to_owned(), masked);
        }
        None => {
            registers.remove("cid");
        }
    }
}

fn mask_psn(text: &str, layout: CidLayout) -> Option<String> {
    let hex = text.trim();
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let zeroed = |i: usize| layout.psn_bytes().contains(&i) || i == 15;
    Some((0..16).map(|i| if zeroed(i) { "00" } else { &hex[2 * i..2 * i + 2] }).collect())
}

/// Scrubs the strings under free-text and path keys (`inside` says the
/// walk is below one, as in a list of notes); every other string is left
/// as it is.
fn scrub_fields(value: &mut Value, personal: &[&str], inside: bool) {
    match value {
        Value::String(text) if inside => {
            let scrubbed = scrub_text(text, personal);
            if scrubbed != *text {
                *text = scrubbed;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| scrub_fields(item, personal, inside)),
        Value::Object(fields) => {
            for (key, field) in fields.iter_mut() {
                let scrubbed = PROSE_KEYS.contains(&key.as_str()) || PATH_KEYS.contains(&key.as_str());
                scrub_fields(field, personal, scrubbed);
            }
        }
        _ => {}
    }
}

/// Reduces every absolute path in a free text and replaces personal names.
pub fn scrub_text(text: &str, personal: &[&str]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('/') {
        // A path starts at a '/' at the beginning of a word.
        let at_word_start = start == 0 || rest[..start].ends_with(is_path_boundary);
        let tail = &rest[start..];
        let end = tail.find(is_path_boundary).unwrap_or(tail.len());
        out.push_str(&rest[..start]);
        if at_word_start {
            // A sentence's closing punctuation is not part of the path.
            let path = tail[..end].trim_end_matches(['.', ',', ';', ':', ')', '!', '?']);
            out.push_str(&reduce_path(path));
            out.push_str(&tail[path.len()..end]);
        } else {
            out.push_str(&tail[..end]);
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    personal.iter().fold(out, |text, name| replace_word(&text, name))
}

fn is_path_boundary(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '(' | '[' | '{' | '<' | '>' | '=')
}

/// Keeps kernel names and the first component of anything else:
/// `/media/alice/usb` → `/media/…`, `/dev/mmcblk0p2` stays, and so does
/// `/dev/disk/by-id` itself but not the serial-bearing name below it.
pub fn reduce_path(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let kernel_name = matches!(parts.first(), Some(&"dev" | &"sys" | &"proc")) && parts.get(1) != Some(&"disk");
    if parts.len() <= 1 || kernel_name || SYSTEM_PATHS.contains(&path.trim_end_matches('/')) {
        return path.to_owned();
    }
    let keep = if parts[0] == "dev" { 3.min(parts.len()) } else { 1 };
    if keep == parts.len() {
        return path.to_owned();
    }
    format!("/{}/{ELIDED}", parts[..keep].join("/"))
}

/// Replaces `name` where it stands as a whole word (not inside another word).
fn replace_word(text: &str, name: &str) -> String {
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(name) {
        let before_ok = !rest[..at].chars().next_back().is_some_and(is_word);
        let after = &rest[at + name.len()..];
        let after_ok = !after.chars().next().is_some_and(is_word);
        out.push_str(&rest[..at]);
        out.push_str(if before_ok && after_ok { ELIDED } else { name });
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_and_crc_are_zeroed_in_the_raw_cid() {
        // docs/report.md's Kingston SD64G: PSN 915931237 = 0x3698d765 is bytes 9..13.
        let cid = "9f544953443634476136".to_owned() + "98d765013b4f";
        assert_eq!(mask_psn(&cid, CidLayout::Sd).unwrap(), "9f5449534436344761000000".to_owned() + "00013b00");
        // eMMC: PSN is bytes 10..14; MDT (byte 14) stays.
        let emmc = "150100514531334d42036c4f3b80a8e5";
        assert_eq!(mask_psn(emmc, CidLayout::Mmc).unwrap(), "150100514531334d420300000000a800");
        assert_eq!(mask_psn("not hex", CidLayout::Sd), None);
    }

    #[test]
    fn paths_below_a_mount_point_are_reduced() {
        assert_eq!(reduce_path("/media/alice/usbstick"), "/media/…");
        assert_eq!(reduce_path("/home/alice"), "/home/…");
        assert_eq!(reduce_path("/"), "/");
        assert_eq!(reduce_path("/mnt"), "/mnt");
        assert_eq!(reduce_path("/boot/firmware"), "/boot/firmware");
        assert_eq!(reduce_path("/dev/mmcblk0p2"), "/dev/mmcblk0p2");
        assert_eq!(reduce_path("/dev/disk/by-id/usb-SanDisk_Ultra_4C530001"), "/dev/disk/by-id/…");
        assert_eq!(
            scrub_text("write tests use /media/alice/usb/x (ext4), then /dev/sda1.", &[]),
            "write tests use /media/… (ext4), then /dev/sda1."
        );
        assert_eq!(scrub_text("MB/s and read/write stay", &[]), "MB/s and read/write stay");
    }

    #[test]
    fn personal_names_go_as_whole_words_only() {
        assert_eq!(scrub_text("run on alice-laptop by alice", &["alice-laptop", "alice"]), "run on … by …");
        assert_eq!(scrub_text("malice", &["alice"]), "malice");
    }

    #[test]
    fn the_salted_hash_is_stable_and_depends_on_the_salt() {
        let a = salted_hash(b"salt-1", "sd:9f:TI:SD64G:3698d765");
        assert_eq!(a, salted_hash(b"salt-1", "sd:9f:TI:SD64G:3698d765"));
        assert_ne!(a, salted_hash(b"salt-2", "sd:9f:TI:SD64G:3698d765"));
        assert!(is_well_formed_hash(&a));
        assert!(!is_well_formed_hash("3698d765"));
    }

    #[test]
    fn names_that_are_enum_words_leave_the_shape_alone() {
        let report: Report = serde_json::from_value(serde_json::json!({
            "schema": "storage-score/1", "tool": {"name": "storage-score", "version": "0.1.0"},
            "profile": "compat",
            "target": {"input": "/media/nvme/bench", "mount_point": "/media/nvme"},
            "device": {"kind": "nvme", "model": "compat nvme drive", "notes": ["read by nvme on compat"]},
            "details": {"seq_read_mib_s": {"engine": "sync", "bytes": 1, "ios": 1, "seconds": 1.0,
                "latency": {"p50_us": 1.0, "p99_us": 1.0, "p99_9_us": 1.0, "max_us": 1.0, "mean_us": 1.0},
                "notes": ["nvme and compat and sync"]}},
            "notes": ["run by compat as nvme"]
        }))
        .unwrap();
        let how = Redaction { personal: vec!["nvme".into(), "compat".into(), "sync".into()], ..Redaction::default() };
        let out = redact(&report, &how).unwrap();
        assert_eq!(out.profile.as_deref(), Some("compat"));
        let device = out.device.as_ref().unwrap();
        assert_eq!(device.kind, crate::schema::DeviceKind::NVME);
        assert_eq!(device.model.as_deref(), Some("compat nvme drive"), "a model name is not free text");
        assert_eq!(device.notes, ["read by … on …"]);
        assert_eq!(out.details["seq_read_mib_s"].engine, crate::kinds::Engine::Sync);
        assert_eq!(out.details["seq_read_mib_s"].notes, ["… and … and …"]);
        assert_eq!(out.notes, ["run by … as …"]);
        assert_eq!(out.target.as_ref().unwrap().input, "/media/…");
    }
}
