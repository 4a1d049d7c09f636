//! The machine a run is made on: the report's `system` section (docs/report.md#system),
//! so that the leaderboard can set a card beside others on the same board.
//!
//! - board: the device tree's `model` on ARM boards (`Raspberry Pi 4 Model B
//!   Rev 1.4`), else DMI's vendor and product name on a PC;
//! - kernel: the running kernel's release;
//! - arch: the machine architecture, as `uname -m` prints it;
//! - os: os-release's `NAME VERSION_ID` (`Debian GNU/Linux 12`).
//!
//! Every read goes through [`Roots`]; what cannot be read, or reads as
//! garbage or as a firmware placeholder, is left out rather than guessed.
//! Nothing here names the host or its users.

use std::path::Path;

use storage_scoring::schema::System;

use crate::Roots;
use storage_platform::sysfs::{ATTR_LIMIT, read_bytes};

/// Longest board, kernel or OS string kept: real ones are far shorter, and
/// the leaderboard groups on them.
const MAX_CHARS: usize = 100;

/// Reads the `system` section through `roots`.
pub fn system(roots: &Roots) -> System {
    System { board: board(roots), kernel: kernel(roots), arch: arch(roots), os: os(roots) }
}

fn board(roots: &Roots) -> Option<String> {
    // The device tree is under sysfs; /proc/device-tree is the kernel's
    // link to the same directory, kept for older layouts.
    let device_tree =
        [roots.sys.join("firmware/devicetree/base/model"), roots.proc.join("device-tree/model")].into_iter();
    if let Some(model) =
        device_tree.filter_map(|path| read_bytes(&path, ATTR_LIMIT).ok()).find_map(|bytes| clean_text(&bytes))
    {
        return Some(model);
    }
    let dmi = roots.sys.join("class/dmi/id");
    let field = |name: &str| read_bytes(&dmi.join(name), ATTR_LIMIT).ok().and_then(|bytes| clean_text(&bytes));
    board_from_dmi(
        field("sys_vendor").as_deref(),
        field("product_name").as_deref(),
        field("product_version").as_deref(),
    )
}

fn kernel(roots: &Roots) -> Option<String> {
    read_clean(&roots.proc.join("sys/kernel/osrelease"))
}

fn arch(roots: &Roots) -> Option<String> {
    // procfs has it since Linux 6.1 or so; uname(2) says the same thing for
    // the live system on older kernels. A captured procfs without the file
    // is not this machine, so uname would be wrong there.
    read_clean(&roots.proc.join("sys/kernel/arch")).or_else(|| {
        (roots.proc == Path::new("/proc"))
            .then(|| nix::sys::utsname::uname().ok())
            .flatten()
            .and_then(|uts| clean_text(uts.machine().as_encoded_bytes()))
    })
}

fn os(roots: &Roots) -> Option<String> {
    // os-release(5): /etc/os-release wins; /usr/lib/os-release is the fallback.
    ["etc/os-release", "usr/lib/os-release"]
        .iter()
        .filter_map(|path| read_bytes(&roots.os.join(path), ATTR_LIMIT).ok())
        .find_map(|bytes| os_from_release(&String::from_utf8_lossy(&bytes)))
}

fn read_clean(path: &Path) -> Option<String> {
    clean_text(&read_bytes(path, ATTR_LIMIT).ok()?)
}

/// One printable line from a kernel or firmware string: cut at the first
/// NUL (device-tree strings are NUL-terminated), invalid UTF-8 and control
/// characters replaced, blanks collapsed, at most [`MAX_CHARS`] characters.
/// `None` when nothing printable is left.
pub fn clean_text(bytes: &[u8]) -> Option<String> {
    let bytes = bytes.split(|&b| b == 0).next().unwrap_or_default();
    let text = String::from_utf8_lossy(bytes);
    let words: Vec<&str> =
        text.split(|c: char| c.is_whitespace() || c.is_control() || c == char::REPLACEMENT_CHARACTER).collect();
    let joined = words.into_iter().filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ");
    let cut: String = joined.chars().take(MAX_CHARS).collect();
    let cut = cut.trim_end().to_owned();
    (!cut.is_empty()).then_some(cut)
}

/// Values that firmware leaves where a vendor or product name should be.
/// They name no board, and grouping results under them would lump unrelated
/// PCs together.
fn is_placeholder(value: &str) -> bool {
    const PLACEHOLDERS: [&str; 16] = [
        "to be filled by o.e.m.",
        "to be filled by oem",
        "system manufacturer",
        "system product name",
        "system version",
        "default string",
        "not specified",
        "not applicable",
        "none",
        "n/a",
        "oem",
        "o.e.m.",
        "unknown",
        "invalid",
        "type1productconfigid",
        "0123456789",
    ];
    let lower = value.trim().to_ascii_lowercase();
    let mut chars = lower.chars();
    // "0", "00000000", "xxxxx", "....": one repeated character.
    let repeated = chars.next().is_some_and(|first| chars.all(|c| c == first));
    repeated || PLACEHOLDERS.contains(&lower.as_str())
}

/// A board name from DMI: vendor and product, each only if it is real.
/// Lenovo keeps the machine-type number in `product_name` and the model
/// name (`ThinkPad X1 Carbon Gen 9`) in `product_version`, so the latter
/// names a Lenovo board.
pub fn board_from_dmi(vendor: Option<&str>, product: Option<&str>, version: Option<&str>) -> Option<String> {
    let vendor = real_dmi(vendor);
    let mut product = real_dmi(product);
    if vendor.is_some_and(|v| v.eq_ignore_ascii_case("lenovo")) {
        product = real_dmi(version).or(product);
    }
    let board = match (vendor, product) {
        (Some(v), Some(p)) if p.to_lowercase().starts_with(&v.to_lowercase()) => p.to_owned(),
        (Some(v), Some(p)) => format!("{v} {p}"),
        // A vendor alone says too little to group by.
        (None, Some(p)) => p.to_owned(),
        (_, None) => return None,
    };
    clean_text(board.as_bytes())
}

fn real_dmi(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty() && !is_placeholder(v))
}

/// `NAME VERSION_ID` from an os-release file (os-release(5): shell-style
/// `KEY=value` lines, values optionally quoted). Falls back to `ID` for the
/// name and to `PRETTY_NAME` when there is no name at all; a rolling
/// release has no `VERSION_ID` and gives the name alone.
pub fn os_from_release(text: &str) -> Option<String> {
    let mut fields = std::collections::HashMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_') {
            continue;
        }
        fields.insert(key, unquote(value));
    }
    let get = |key: &str| fields.get(key).and_then(|v| clean_text(v.as_bytes()));
    let os = match (get("NAME").or_else(|| get("ID")), get("VERSION_ID")) {
        (Some(name), Some(version)) => format!("{name} {version}"),
        (Some(name), None) => name,
        (None, _) => get("PRETTY_NAME")?,
    };
    clean_text(os.as_bytes())
}

/// A shell-style value: `"a \"b\""`, `'a b'` or `a\ b`.
fn unquote(value: &str) -> String {
    let value = value.trim();
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (Some('\''), c) => out.push(c),
            (_, '\\') => out.extend(chars.next()),
            (_, c) => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_tree_strings_stop_at_the_nul() {
        assert_eq!(clean_text(b"Raspberry Pi 4 Model B Rev 1.4\0").as_deref(), Some("Raspberry Pi 4 Model B Rev 1.4"));
        assert_eq!(clean_text(b"\0junk after").as_deref(), None);
        assert_eq!(clean_text(b"  a\tb\n\x07c\xff d  ").as_deref(), Some("a b c d"));
        assert_eq!(clean_text(&[b'x'; 500]).map(|s| s.len()), Some(MAX_CHARS));
        assert_eq!(clean_text(b"\xff\xfe\n").as_deref(), None);
    }

    #[test]
    fn dmi_placeholders_name_no_board() {
        let board = |v, p, ver| board_from_dmi(v, p, ver);
        assert_eq!(board(Some("Dell Inc."), Some("OptiPlex 7090"), None).as_deref(), Some("Dell Inc. OptiPlex 7090"));
        assert_eq!(
            board(Some("To Be Filled By O.E.M."), Some("To Be Filled By O.E.M."), Some("To Be Filled By O.E.M.")),
            None
        );
        assert_eq!(board(Some("System manufacturer"), Some("ROG STRIX"), None).as_deref(), Some("ROG STRIX"));
        assert_eq!(board(Some("ASUS"), Some("Default string"), None), None);
        assert_eq!(board(Some("QEMU"), Some("QEMU Virtual Machine"), None).as_deref(), Some("QEMU Virtual Machine"));
        assert_eq!(
            board(Some("LENOVO"), Some("20XW0055GE"), Some("ThinkPad X1 Carbon Gen 9")).as_deref(),
            Some("LENOVO ThinkPad X1 Carbon Gen 9")
        );
        assert_eq!(board(Some("LENOVO"), Some("20XW0055GE"), Some("0000")).as_deref(), Some("LENOVO 20XW0055GE"));
    }

    #[test]
    fn os_release_is_parsed_as_shell_assignments() {
        let debian =
            "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nID=debian\n";
        assert_eq!(os_from_release(debian).as_deref(), Some("Debian GNU/Linux 12"));
        assert_eq!(os_from_release("NAME='Arch Linux'\nID=arch\n").as_deref(), Some("Arch Linux"));
        assert_eq!(os_from_release("ID=alpine\nVERSION_ID=3.20.1").as_deref(), Some("alpine 3.20.1"));
        assert_eq!(os_from_release("NAME=\"A \\\"quoted\\\" name\"").as_deref(), Some("A \"quoted\" name"));
        assert_eq!(os_from_release("PRETTY_NAME=Something").as_deref(), Some("Something"));
        assert_eq!(os_from_release("# only a comment\n=x\nlower=case\n\u{0}\u{1}"), None);
    }
}
