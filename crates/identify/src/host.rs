//! The MMC host controller's view of the bus, parsed from debugfs
//! `mmcN/ios` (Linux `drivers/mmc/core/debugfs.c`, `mmc_ios_show`).
//!
//! The file is one `name:<tabs>value` line per setting, values as
//! `<code> (<meaning>)`, e.g. `bus width:\t2 (4 bits)` or
//! `timing spec:\t2 (sd high-speed)`. Unknown lines are ignored, and a value
//! that does not parse leaves its field `None`.

use storage_scoring::schema::HostIos;

/// Parses the text of debugfs `mmcN/ios`. Never fails: what cannot be read
/// stays `None`.
pub fn parse_ios(text: &str) -> HostIos {
    let mut ios = HostIos::default();
    for line in text.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.trim() {
            "clock" => ios.clock_hz = hz(value),
            "actual clock" => ios.actual_clock_hz = hz(value),
            "bus width" => ios.bus_width_bits = bus_width(value),
            "timing spec" => ios.timing = meaning(value).map(str::to_owned),
            "signal voltage" => ios.signal_voltage = meaning(value).map(str::to_owned),
            _ => {}
        }
    }
    ios
}

/// `50000000 Hz` → 50000000.
fn hz(value: &str) -> Option<u64> {
    value.split_whitespace().next()?.parse().ok()
}

/// The text inside the first parentheses: `2 (sd high-speed)` →
/// `sd high-speed`. `None` when absent, empty or `invalid`.
fn meaning(value: &str) -> Option<&str> {
    let (_, rest) = value.split_once('(')?;
    let (inner, _) = rest.rsplit_once(')')?;
    let inner = inner.trim();
    (!inner.is_empty() && inner != "invalid").then_some(inner)
}

/// `2 (4 bits)` → 4. Without the parenthesis, the kernel's code:
/// MMC_BUS_WIDTH_1 = 0, _4 = 2, _8 = 3.
fn bus_width(value: &str) -> Option<u8> {
    if let Some(inner) = meaning(value) {
        return inner.split_whitespace().next()?.parse().ok().filter(|w| matches!(w, 1 | 4 | 8));
    }
    match value.split_whitespace().next()? {
        "0" => Some(1),
        "2" => Some(4),
        "3" => Some(8),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SDHCI_HS: &str = "clock:\t\t50000000 Hz\n\
        actual clock:\t50000000 Hz\n\
        vdd:\t\t21 (3.3 ~ 3.4 V)\n\
        bus mode:\t2 (push-pull)\n\
        chip select:\t0 (don't care)\n\
        power mode:\t2 (on)\n\
        bus width:\t2 (4 bits)\n\
        timing spec:\t2 (sd high-speed)\n\
        signal voltage:\t0 (3.30 V)\n\
        driver type:\t0 (driver type B)\n";

    #[test]
    fn parses_sd_high_speed() {
        let ios = parse_ios(SDHCI_HS);
        assert_eq!(
            ios,
            HostIos {
                clock_hz: Some(50_000_000),
                actual_clock_hz: Some(50_000_000),
                bus_width_bits: Some(4),
                timing: Some("sd high-speed".to_owned()),
                signal_voltage: Some("3.30 V".to_owned()),
                ..HostIos::default()
            }
        );
    }

    #[test]
    fn parses_uhs_and_hs400() {
        let ios = parse_ios(
            "clock:\t\t208000000 Hz\nbus width:\t2 (4 bits)\ntiming spec:\t6 (sd uhs SDR104)\nsignal voltage:\t1 (1.80 V)\n",
        );
        assert_eq!(ios.timing.as_deref(), Some("sd uhs SDR104"));
        assert_eq!(ios.signal_voltage.as_deref(), Some("1.80 V"));
        assert_eq!(ios.actual_clock_hz, None);
        let ios = parse_ios("bus width:\t3 (8 bits)\ntiming spec:\t10 (mmc HS400 enhanced strobe)\n");
        assert_eq!(ios.bus_width_bits, Some(8));
        assert_eq!(ios.timing.as_deref(), Some("mmc HS400 enhanced strobe"));
    }

    #[test]
    fn survives_garbage() {
        assert_eq!(parse_ios(""), HostIos::default());
        assert_eq!(parse_ios("clock:\nbus width: (\ntiming spec: 99 (invalid)\n:::\n\u{0}"), HostIos::default());
        let ios = parse_ios("clock: -5 Hz\nbus width: 2\nactual clock: 18446744073709551616 Hz");
        assert_eq!(ios.clock_hz, None);
        assert_eq!(ios.bus_width_bits, Some(4));
        assert_eq!(ios.actual_clock_hz, None);
        assert_eq!(parse_ios("bus width:\t7 (7 bits)").bus_width_bits, None);
    }
}
