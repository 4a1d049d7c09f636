//! The checks: the report that `storage-score identify --json` printed in the
//! guest against two sources of truth.
//!
//! - **QEMU's emulated card** (hw/sd/sd.c, `sd_set_cid`, `sd_set_csd`,
//!   `sd_set_scr`, `sd_set_sdstatus`): MID 0xaa, OID "XY", PNM "QEMU!", PRV
//!   0x01, PSN 0xdeadbeef, MDT February 2006; a version 1.0 CSD for a
//!   standard-capacity card (up to 2 GiB), 2.0 for a high-capacity one;
//!   SCR physical layer 2.00 with 1- and 4-bit buses; an all-zero
//!   SD Status, so no speed, UHS, video or application class.
//! - **What the guest kernel exposed**: the raw registers in sysfs must come
//!   back unchanged in `device.sd.registers`, and the host's debugfs `ios`
//!   must match `device.sd.host`.

use serde_json::{Value, json};

use super::guest::GuestOutput;

pub use xtask::check::Check;

/// What QEMU's card holds, as JSON values at report paths.
#[derive(Debug, Clone)]
pub struct Expected {
    pub fields: Vec<(&'static str, Value)>,
}

impl Expected {
    /// The default `sd-card` of QEMU 7.2 behind an image of `image_bytes`.
    pub fn qemu_card(image_bytes: u64) -> Expected {
        // hw/sd/sd.c: CSD 1.0 up to SDSC_MAX_CAPACITY (2 GiB), CSD 2.0 above.
        let (csd_version, capacity_type) = if image_bytes > 2 << 30 { (2, "SDHC") } else { (1, "SDSC") };
        Expected {
            fields: vec![
                ("/target/disk", json!("/dev/mmcblk0")),
                ("/device/kind", json!("sd")),
                ("/device/capacity_bytes", json!(image_bytes)),
                ("/device/sd/cid/manufacturer_id", json!(0xaa)),
                ("/device/sd/cid/oem_id", json!("XY")),
                ("/device/sd/cid/product_name", json!("QEMU!")),
                ("/device/sd/cid/product_revision", json!("0.1")),
                ("/device/sd/cid/serial", json!(0xdead_beef_u32)),
                ("/device/sd/cid/manufactured", json!("2006-02")),
                ("/device/sd/csd/csd_version", json!(csd_version)),
                ("/device/sd/csd/capacity_type", json!(capacity_type)),
                ("/device/sd/csd/capacity_bytes", json!(image_bytes)),
                ("/device/sd/scr/spec_version", json!("2.00")),
                ("/device/sd/scr/bus_widths", json!([1, 4])),
                ("/device/sd/ssr/speed_class", json!(0)),
                ("/device/sd/ssr/uhs_grade", json!(0)),
                ("/device/sd/ssr/video_class", json!(0)),
                ("/device/sd/ssr/app_class", json!(0)),
            ],
        }
    }
}

/// Runs every check. With no report at all, the guest-side checks say why.
pub fn run(expected: &Expected, out: &GuestOutput, timed_out: bool) -> Vec<Check> {
    let mut checks = guest_checks(out, timed_out);
    let Some(report) = parse_report(out, &mut checks) else {
        checks.push(Check::new("report fields", false, "no JSON report to check"));
        return checks;
    };
    for (pointer, want) in &expected.fields {
        checks.push(field_check(&report, pointer, want));
    }
    checks.push(ssr_present(&report, out));
    checks.extend(register_checks(&report, out));
    checks.extend(host_checks(&report, out));
    checks
}

/// The guest booted, loaded the modules, got the card and ran the tool.
fn guest_checks(out: &GuestOutput, timed_out: bool) -> Vec<Check> {
    let mut checks = vec![
        Check::new(
            "guest ran /init",
            out.kernel_release.is_some() && !timed_out,
            match (&out.kernel_release, timed_out) {
                (_, true) => "QEMU was killed at the timeout".to_owned(),
                (Some(release), false) => format!("kernel {release}"),
                (None, false) => "no output from /init in the serial log".to_owned(),
            },
        ),
        Check::new(
            "modules loaded",
            out.kernel_release.is_some() && out.insmod_failed.is_empty(),
            if out.insmod_failed.is_empty() {
                "every insmod succeeded".to_owned()
            } else {
                format!("insmod failed: {}", out.insmod_failed.join(", "))
            },
        ),
        Check::new(
            "/dev/mmcblk0 appeared",
            !out.sysfs.is_empty() && !out.no_device,
            if out.no_device { "not within 20 s" } else { "block device and sysfs registers present" },
        ),
    ];
    checks.push(Check::new(
        "identify --json exit code",
        out.identify_exit == Some(0),
        format!("expected 0, got {}", out.identify_exit.map_or("nothing".to_owned(), |c| c.to_string())),
    ));
    checks.push(Check::new(
        "identify (table) exit code",
        out.table_exit == Some(0),
        format!("expected 0, got {}", out.table_exit.map_or("nothing".to_owned(), |c| c.to_string())),
    ));
    checks.push(table_check(out));
    checks
}

/// The table is readable on the guest's serial console (a terminal whose
/// window size is 0x0, as on a headless Pi's serial login): the product name
/// shows whole on one line.
fn table_check(out: &GuestOutput) -> Check {
    let name = "identify table shows \"QEMU!\" on one line";
    let Some(table) = out.table.as_deref() else {
        return Check::new(name, false, "no table output");
    };
    let widest = table.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    let detail = format!("{} lines, widest {widest} columns", table.lines().count());
    Check::new(name, table.lines().any(|l| l.contains("QEMU!")), detail)
}

/// The `--json` output must be exactly one JSON document.
fn parse_report(out: &GuestOutput, checks: &mut Vec<Check>) -> Option<Value> {
    let text = out.identify_json.as_deref().unwrap_or("");
    match serde_json::from_str::<Value>(text) {
        Ok(report) => {
            let keys: Vec<&str> =
                report.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
            checks.push(Check::new(
                "identify --json is one JSON document",
                true,
                format!("top-level keys: {}", keys.join(", ")),
            ));
            Some(report)
        }
        Err(e) => {
            let shown: String = text.chars().take(200).collect();
            checks.push(Check::new(
                "identify --json is one JSON document",
                false,
                format!("{e}; stdout was {shown:?}"),
            ));
            None
        }
    }
}

pub fn field_check(report: &Value, pointer: &str, want: &Value) -> Check {
    let name = pointer.trim_start_matches('/').replace('/', ".");
    match report.pointer(pointer) {
        Some(got) if got == want => Check::new(name, true, format!("{got}")),
        Some(got) => Check::new(name, false, format!("expected {want}, got {got}")),
        None => Check::new(name, false, format!("expected {want}, key absent")),
    }
}

/// `device.sd.ssr` is there, and if not, whose fault that is.
fn ssr_present(report: &Value, out: &GuestOutput) -> Check {
    let name = "device.sd.ssr present";
    match (report.pointer("/device/sd/ssr").is_some(), out.sysfs.get("ssr")) {
        (true, _) => Check::new(name, true, "decoded"),
        (false, Some(raw)) => Check::new(
            name,
            false,
            format!("the guest kernel exposes ssr ({} hex digits) but the report has no device.sd.ssr", raw.len()),
        ),
        (false, None) => Check::new(name, false, "the guest kernel exposes no /sys/block/mmcblk0/device/ssr"),
    }
}

/// Raw registers in the report equal the sysfs files they came from.
fn register_checks(report: &Value, out: &GuestOutput) -> Vec<Check> {
    ["cid", "csd", "scr", "ssr"]
        .iter()
        .filter_map(|reg| {
            let sysfs = out.sysfs.get(*reg)?;
            let name = format!("device.sd.registers.{reg} == sysfs");
            Some(match report.pointer(&format!("/device/sd/registers/{reg}")).and_then(Value::as_str) {
                Some(got) if normalize_hex(got) == normalize_hex(sysfs) => Check::new(name, true, sysfs.clone()),
                Some(got) => Check::new(name, false, format!("sysfs has {sysfs}, report has {got}")),
                None => Check::new(name, false, format!("sysfs has {sysfs}, report has none")),
            })
        })
        .collect()
}

fn normalize_hex(s: &str) -> String {
    s.trim().trim_start_matches("0x").to_ascii_lowercase()
}

/// `device.sd.host` matches the debugfs `ios` file the guest printed.
fn host_checks(report: &Value, out: &GuestOutput) -> Vec<Check> {
    let Some(ios) = out.ios.as_deref() else {
        return vec![Check::new("device.sd.host", false, "the guest printed no debugfs ios")];
    };
    let want = [
        ("clock_hz", ios_field(ios, "clock").and_then(first_number).map(Value::from)),
        ("bus_width_bits", ios_field(ios, "bus width").and_then(in_parens).and_then(first_number).map(Value::from)),
        ("timing", ios_field(ios, "timing spec").and_then(in_parens).map(Value::from)),
    ];
    let mut checks: Vec<Check> = want
        .into_iter()
        .filter_map(|(key, want)| Some((key, want?)))
        .map(|(key, want)| field_check(report, &format!("/device/sd/host/{key}"), &want))
        .collect();
    // MMC_CAP2_CQE (bit 23 of debugfs caps2): the host has a command-queue engine.
    let caps2 = out.debugfs_listing.as_deref().and_then(|listing| {
        let value = listing.lines().find_map(|l| l.trim().strip_prefix("caps2="))?;
        u64::from_str_radix(value.trim().trim_start_matches("0x"), 16).ok()
    });
    if let Some(caps2) = caps2 {
        let want = Value::from(caps2 & (1 << 23) != 0);
        checks.push(field_check(report, "/device/sd/host/command_queue", &want));
    }
    checks
}

/// The value of `name:` in an `ios` file (`clock:\t\t50000000 Hz`).
fn ios_field<'a>(ios: &'a str, name: &str) -> Option<&'a str> {
    ios.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')).map(str::trim)
}

/// `sd high-speed` from `2 (sd high-speed)`.
fn in_parens(s: &str) -> Option<&str> {
    s.split_once('(')?.1.rsplit_once(')').map(|(inner, _)| inner)
}

fn first_number(s: &str) -> Option<u64> {
    s.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const IOS: &str =
        "clock:\t\t50000000 Hz\nactual clock:\t26000000 Hz\nbus width:\t2 (4 bits)\ntiming spec:\t2 (sd high-speed)\n";

    #[test]
    fn reads_the_ios_file() {
        assert_eq!(ios_field(IOS, "clock").and_then(first_number), Some(50_000_000));
        assert_eq!(ios_field(IOS, "bus width").and_then(in_parens).and_then(first_number), Some(4));
        assert_eq!(ios_field(IOS, "timing spec").and_then(in_parens), Some("sd high-speed"));
    }

    #[test]
    fn a_wrong_field_fails_with_both_values() {
        let report = json!({"device": {"sd": {"cid": {"oem_id": "YX"}}}});
        let check = field_check(&report, "/device/sd/cid/oem_id", &json!("XY"));
        assert!(!check.passed);
        assert_eq!(check.to_string(), "FAIL device.sd.cid.oem_id: expected \"XY\", got \"YX\"");
        assert!(!field_check(&report, "/device/kind", &json!("sd")).passed);
    }

    #[test]
    fn no_report_is_a_failure() {
        let out = GuestOutput { kernel_release: Some("6.1".into()), identify_exit: Some(2), ..GuestOutput::default() };
        let checks = run(&Expected::qemu_card(64 << 20), &out, false);
        assert!(checks.iter().any(|c| !c.passed));
    }
}
