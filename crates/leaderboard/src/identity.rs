//! One card, one name: what the server accepts as a card's identity and
//! its names, before anything is grouped or shown.
//!
//! - The CID's product name and OEM ID must be what a CID can hold: 5
//!   printable ASCII characters (SD) or 6 (eMMC) for the name; 2 printable
//!   ASCII characters, or the `0xHHHH` that `identify` writes for an
//!   unprintable OID (SD), or `0xHH` (eMMC, one byte). Anything else is a
//!   forged report: 422 naming the field. The product revision is `N.M`.
//! - Every other name-like string (a USB or disk model, a vendor, the
//!   board, the label) is NFKC-normalised, its spaces collapsed, and refused
//!   (422) if it holds invisible or format characters (zero-width space,
//!   word joiner, soft hyphen…), blanks other than a plain space, unassigned
//!   or private-use characters, or letters of more than one script (a
//!   Cyrillic "Г" in a Latin name), Unicode's "highly restrictive" rule
//!   (UTS #39: Latin beside Han and kana, Han and Bopomofo, or Han and
//!   Hangul is one writing system). NFKC already turns an NBSP or a
//!   full-width letter into its plain form, so those look-alikes merge
//!   instead of splitting a card in two.
//!
//! The maker is never taken from the report: it comes from the MID through
//! `storage_scoring::manufacturers` ([`crate::card`]).

use storage_scoring::schema::{MAX_LABEL_CHARS, Report};
use unicode_normalization::UnicodeNormalization;
use unicode_script::{Script, UnicodeScript};

use crate::error::ApiError;

/// Checks the CID's text and normalises every other name of the report in
/// place; the first field that cannot be a name is refused, by its path.
pub fn settle(report: &mut Report) -> Result<(), ApiError> {
    if let Some(device) = report.device.as_mut() {
        if let Some(cid) = device.sd.as_mut().and_then(|sd| sd.cid.as_mut()) {
            cid_text("device.sd.cid.product_name", &cid.product_name, 5)?;
            sd_oem_id("device.sd.cid.oem_id", &cid.oem_id)?;
            revision("device.sd.cid.product_revision", &cid.product_revision)?;
        }
        if let Some(cid) = device.emmc.as_mut().and_then(|e| e.cid.as_mut()) {
            cid_text("device.emmc.cid.product_name", &cid.product_name, 6)?;
            mmc_oem_id("device.emmc.cid.oem_id", &cid.oem_id)?;
            revision("device.emmc.cid.product_revision", &cid.product_revision)?;
        }
        for (path, field) in [
            ("device.model", &mut device.model),
            ("device.vendor", &mut device.vendor),
            ("device.firmware", &mut device.firmware),
        ] {
            settle_field(path, field)?;
        }
        if let Some(usb) = device.usb.as_mut() {
            for (path, field) in [
                ("device.usb.manufacturer", &mut usb.manufacturer),
                ("device.usb.product", &mut usb.product),
                ("device.usb.bridge", &mut usb.bridge),
                ("device.usb.scsi_vendor", &mut usb.scsi_vendor),
                ("device.usb.scsi_model", &mut usb.scsi_model),
                ("device.usb.scsi_revision", &mut usb.scsi_revision),
            ] {
                settle_field(path, field)?;
            }
        }
    }
    if let Some(system) = report.system.as_mut() {
        for (path, field) in [
            ("system.board", &mut system.board),
            ("system.os", &mut system.os),
            ("system.kernel", &mut system.kernel),
            ("system.arch", &mut system.arch),
        ] {
            settle_field(path, field)?;
        }
    }
    settle_field("label", &mut report.label)?;
    if let Some(label) = &report.label {
        let chars = label.chars().count();
        if chars > MAX_LABEL_CHARS {
            return Err(ApiError::unprocessable(format!(
                "label: {chars} characters, at most {MAX_LABEL_CHARS} are accepted; give the name printed on the card, e.g. \"SanDisk Extreme 64GB\""
            )));
        }
    }
    Ok(())
}

/// Normalises an optional name in place; an empty result means none.
fn settle_field(path: &str, field: &mut Option<String>) -> Result<(), ApiError> {
    if let Some(text) = field.take() {
        let name = normalize_name(path, &text)?;
        *field = (!name.is_empty()).then_some(name);
    }
    Ok(())
}

/// NFKC, refusals, collapsed spaces: the one form of a name.
pub fn normalize_name(path: &str, text: &str) -> Result<String, ApiError> {
    let normal: String = text.nfkc().collect();
    let refuse = |what: String| {
        Err(ApiError::unprocessable(format!(
            "{path}: {what}; type the name with visible letters of one script, as printed"
        )))
    };
    for c in normal.chars() {
        // Checked again after the fold: a full-width `＜` passes a check of
        // the text as sent and becomes a real `<` in NFKC.
        if storage_scoring::input::FORBIDDEN_IN_NAMES.contains(&c) {
            return refuse(format!("holds the markup or quoting character {c:?} once folded (NFKC)"));
        }
        if c.is_control() || is_invisible(c) {
            return refuse(format!("holds the invisible or format character U+{:04X}", u32::from(c)));
        }
        if c.is_whitespace() && c != ' ' {
            return refuse(format!("holds the blank U+{:04X}, which is not a plain space", u32::from(c)));
        }
        if c.script() == Script::Unknown {
            return refuse(format!("holds U+{:04X}, an unassigned or private-use character", u32::from(c)));
        }
    }
    if mixes_scripts(&normal) {
        return refuse(format!("mixes the scripts {}", scripts_of(&normal).join(" and ")));
    }
    Ok(normal.split(' ').filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" "))
}

/// A name for comparing names: normalised, case folded and with its spaces
/// collapsed (labels agree when these agree).
pub fn fold(text: &str) -> String {
    let normal: String = text.nfkc().collect();
    normal.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `text` uses letters of more than one script, beyond what one
/// writing system combines (UTS #39, "highly restrictive").
fn mixes_scripts(text: &str) -> bool {
    if !unicode_script::ScriptExtension::for_str(text).is_empty() {
        return false;
    }
    const WRITING_SYSTEMS: [&[Script]; 3] = [
        &[Script::Latin, Script::Han, Script::Hiragana, Script::Katakana],
        &[Script::Latin, Script::Han, Script::Bopomofo],
        &[Script::Latin, Script::Han, Script::Hangul],
    ];
    !WRITING_SYSTEMS.iter().any(|system| {
        text.chars().all(|c| {
            let ext = c.script_extension();
            system.iter().any(|s| ext.contains_script(*s))
        })
    })
}

/// The scripts of the letters of `text`, in order of appearance, for the message.
fn scripts_of(text: &str) -> Vec<&'static str> {
    let mut names = Vec::new();
    for c in text.chars() {
        let script = c.script();
        if !matches!(script, Script::Common | Script::Inherited | Script::Unknown)
            && !names.contains(&script.full_name())
        {
            names.push(script.full_name());
        }
    }
    names
}

/// Default-ignorable code points (Unicode's DerivedCoreProperties) and the
/// format characters (category Cf) outside them: characters that show as
/// nothing, or change how their neighbours show.
fn is_invisible(c: char) -> bool {
    matches!(u32::from(c),
        0x00AD | 0x034F | 0x061C | 0x115F..=0x1160 | 0x17B4..=0x17B5 | 0x180B..=0x180F
        | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0F
        | 0xFEFF | 0xFFA0 | 0xFFF0..=0xFFFB | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A
        | 0xE0000..=0xE0FFF
        // Format characters (Cf) that are not default-ignorable.
        | 0x0600..=0x0605 | 0x06DD | 0x070F | 0x0890..=0x0891 | 0x08E2 | 0x110BD | 0x110CD
        | 0x13430..=0x1343F
        // Blank-looking letters and symbols.
        | 0x2800 | 0x3000)
}

/// A CID text field: at most `max` printable ASCII characters.
fn cid_text(path: &str, text: &str, max: usize) -> Result<(), ApiError> {
    let printable = text.bytes().all(|b| (0x20..=0x7e).contains(&b));
    if !printable || text.len() > max {
        return Err(ApiError::unprocessable(format!(
            "{path}: {:?} is not what a CID holds ({max} printable ASCII characters at most); send the report as storage-score read it from the card",
            clip(text)
        )));
    }
    Ok(())
}

/// An SD OEM ID: two printable ASCII characters, or `0xHHHH`.
fn sd_oem_id(path: &str, text: &str) -> Result<(), ApiError> {
    let ascii = text.len() == 2 && text.bytes().all(|b| (0x20..=0x7e).contains(&b));
    if ascii || is_hex_code(text, 4) {
        return Ok(());
    }
    Err(ApiError::unprocessable(format!(
        "{path}: {:?} is not what a CID holds (2 printable ASCII characters, or 0xHHHH); send the report as storage-score read it from the card",
        clip(text)
    )))
}

/// An eMMC OEM ID: one byte as `0xHH` (or two as `0xHHHH`, or two
/// printable ASCII characters, as older MMC cards carry).
fn mmc_oem_id(path: &str, text: &str) -> Result<(), ApiError> {
    let ascii = (1..=2).contains(&text.len()) && text.bytes().all(|b| (0x20..=0x7e).contains(&b));
    if ascii || is_hex_code(text, 2) || is_hex_code(text, 4) {
        return Ok(());
    }
    Err(ApiError::unprocessable(format!(
        "{path}: {:?} is not what a CID holds (0xHH); send the report as storage-score read it from the card",
        clip(text)
    )))
}

fn is_hex_code(text: &str, digits: usize) -> bool {
    text.len() == digits + 2
        && (text.starts_with("0x") || text.starts_with("0X"))
        && text.bytes().skip(2).all(|b| b.is_ascii_hexdigit())
}

/// `N.M`, each a nibble of the CID's PRV (0 to 15).
fn revision(path: &str, text: &str) -> Result<(), ApiError> {
    let nibble = |s: &str| !s.is_empty() && s.len() <= 2 && s.parse::<u8>().is_ok_and(|n| n <= 15);
    match text.split_once('.') {
        Some((major, minor)) if nibble(major) && nibble(minor) => Ok(()),
        _ if text.is_empty() => Ok(()),
        _ => Err(ApiError::unprocessable(format!(
            "{path}: {:?} is not a CID revision (N.M, each 0 to 15); send the report as storage-score read it from the card",
            clip(text)
        ))),
    }
}

fn clip(text: &str) -> String {
    text.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> Result<String, String> {
        normalize_name("device.model", text).map_err(|e| e.message)
    }

    #[test]
    fn look_alikes_merge_or_are_refused() {
        assert_eq!(name("Kingston\u{a0}DataTraveler").unwrap(), "Kingston DataTraveler", "NBSP is a space");
        assert_eq!(name("  Ｋｉｎｇｓｔｏｎ   DT  ").unwrap(), "Kingston DT", "full-width letters fold");
        assert_eq!(name("Kingston\u{2003}DT").unwrap(), "Kingston DT", "an em space is a space");
        for (text, what) in [
            ("King\u{200b}ston", "U+200B"),
            ("King\u{2060}ston", "U+2060"),
            ("King\u{ad}ston", "U+00AD"),
            ("Kingston\u{3164}", "invisible"),
            ("\u{e000}Kingston", "U+E000"),
            ("SD64\u{413}", "Latin and Cyrillic"),
            ("Kingst\u{43e}n", "Latin and Cyrillic"),
            ("Kingston\u{1680}DT", "U+1680"),
        ] {
            let e = name(text).unwrap_err();
            assert!(e.starts_with("device.model: ") && e.contains(what), "{text:?}: {e}");
        }
        // One writing system is one name, even with Latin beside it.
        assert_eq!(name("キオクシア EXCERIA 東芝").unwrap(), "キオクシア EXCERIA 東芝");
        assert_eq!(name("Флешка 64").unwrap(), "Флешка 64");
        assert_eq!(name("삼성 EVO Plus").unwrap(), "삼성 EVO Plus");
    }

    #[test]
    fn cid_fields_hold_what_a_cid_holds() {
        assert!(cid_text("p", "SD64G", 5).is_ok());
        assert!(cid_text("p", "A'B<C", 5).is_ok(), "any printable ASCII");
        assert!(cid_text("p", "SD64\u{413}", 5).unwrap_err().message.starts_with("p: \"SD64Г\" is not what a CID"));
        assert!(cid_text("p", "SD64GX", 5).is_err());
        assert!(cid_text("p", "SD\u{200b}64", 5).is_err());
        assert!(cid_text("p", "AAG2GA", 6).is_ok());
        assert!(sd_oem_id("o", "TI").is_ok() && sd_oem_id("o", "0x0102").is_ok());
        assert!(sd_oem_id("o", "TIX").is_err() && sd_oem_id("o", "0x01").is_err());
        assert!(mmc_oem_id("o", "0x4a").is_ok() && mmc_oem_id("o", "0x4a4a4a").is_err());
        assert!(revision("r", "6.1").is_ok() && revision("r", "15.15").is_ok());
        assert!(revision("r", "6.1b").is_err() && revision("r", "16.0").is_err());
    }

    #[test]
    fn markup_is_refused_after_the_fold() {
        for (path, text) in
            [("label", "＜img src＝x onerror＝alert(1)＞"), ("system.board", "＜script＞"), ("label", "ｘ＂ｙ")]
        {
            let e = normalize_name(path, text).unwrap_err();
            assert_eq!(e.status.as_u16(), 422, "{text}");
            assert!(e.message.starts_with(&format!("{path}: holds the markup or quoting character")), "{}", e.message);
        }
        assert_eq!(normalize_name("label", "ＳａｎＤｉｓｋ Ｅｘｔｒｅｍｅ").unwrap(), "SanDisk Extreme");
    }

    #[test]
    fn folded_labels_compare_case_and_spacing_free() {
        assert_eq!(fold("SanDisk  Extreme 64GB"), fold(" sandisk extreme 64gb"));
        assert_ne!(fold("SanDisk Extreme"), fold("SanDisk Extreme PRO"));
    }
}
