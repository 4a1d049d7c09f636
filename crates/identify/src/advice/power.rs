//! Power and heat: under-voltage (`under-voltage`), the firmware or kernel
//! slowing the CPU (`throttled`), and a SoC or drive near its temperature
//! limit (`hot`). Each of these halves benchmark figures without the card
//! being any slower.

use storage_scoring::health::{Advice, AdviceCode, CriticalWarning, Severity, ThrottleFlag};

use super::{Context, advice};

const PI_SOURCE: &str = "Raspberry Pi documentation: vcgencmd get_throttled (bits 0-3 now, 16-19 since boot), power \
     supply, and \"Frequency management and thermal control\" (throttling from 80 °C); Linux \
     drivers/hwmon/raspberrypi-hwmon.c (rpi_volt in0_lcrit_alarm)";

/// The Raspberry Pi firmware throttles the ARM cores from 80 °C (Raspberry
/// Pi documentation, "Frequency management and thermal control").
const PI_THROTTLE_C: f64 = 80.0;
/// How close to a limit counts as near it.
const NEAR_C: f64 = 5.0;

fn word(ctx: &Context<'_>) -> String {
    ctx.thermal.get_throttled.as_deref().map(|w| format!("get_throttled is {w}")).unwrap_or_default()
}

pub fn under_voltage(ctx: &Context<'_>) -> Option<Advice> {
    let t = ctx.thermal;
    let now = t.throttled_now.contains(&ThrottleFlag::UnderVoltage) || t.under_voltage_alarm == Some(true);
    let since = t.throttled_since_boot.contains(&ThrottleFlag::UnderVoltage);
    if !now && !since {
        return None;
    }
    let mut what = Vec::new();
    if t.throttled_now.contains(&ThrottleFlag::UnderVoltage) {
        what.push("under-voltage now (bit 0)".to_owned());
    }
    if since {
        what.push("under-voltage since boot (bit 16)".to_owned());
    }
    let mut evidence = if what.is_empty() { String::new() } else { format!("{}: {}", word(ctx), what.join(", ")) };
    if t.under_voltage_alarm == Some(true) {
        if !evidence.is_empty() {
            evidence.push_str("; ");
        }
        evidence.push_str("the rpi_volt sensor's in0_lcrit_alarm is 1 (the supply is below 4.63 V now)");
    }
    Some(advice(
        AdviceCode::UnderVoltage,
        if now { Severity::Critical } else { Severity::Warn },
        evidence,
        "use the official supply (5.1 V 3 A for a Pi 4, 5.1 V 5 A for a Pi 5) or one as good, with a short, thick \
         cable; power USB drives from a powered hub; under-voltage slows the CPU and can corrupt the card during \
         writes. `vcgencmd get_throttled` shows whether it is gone (0x0 after a reboot)",
        PI_SOURCE,
    ))
}

pub fn throttled(ctx: &Context<'_>) -> Option<Advice> {
    let t = ctx.thermal;
    let other = |flags: &[ThrottleFlag]| -> Vec<ThrottleFlag> {
        flags.iter().copied().filter(|f| *f != ThrottleFlag::UnderVoltage).collect()
    };
    let (now, since) = (other(&t.throttled_now), other(&t.throttled_since_boot));
    if now.is_empty() && since.is_empty() {
        return None;
    }
    let names = |flags: &[ThrottleFlag]| flags.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", ");
    let mut what = Vec::new();
    if !now.is_empty() {
        what.push(format!("now: {}", names(&now)));
    }
    if !since.is_empty() {
        what.push(format!("since boot: {}", names(&since)));
    }
    let temp = t.soc_temperature_c.map(|c| format!("; the SoC is at {c:.1} °C")).unwrap_or_default();
    Some(advice(
        AdviceCode::Throttled,
        if now.is_empty() { Severity::Info } else { Severity::Warn },
        format!("{} ({}){temp}", word(ctx), what.join("; ")),
        "cool the board (a heatsink, a fan or a case with airflow; the Pi 5 Active Cooler), and fix under-voltage \
         first if it shows too: a throttled CPU lowers every figure, the card's included; benchmark again once \
         `vcgencmd get_throttled` stays 0x0",
        PI_SOURCE,
    ))
}

pub fn hot(ctx: &Context<'_>) -> Option<Advice> {
    let mut findings = Vec::new();
    let mut fixes = Vec::new();
    if let Some(temp) = ctx.thermal.soc_temperature_c {
        let limit = if ctx.pi_generation().is_some() {
            Some((PI_THROTTLE_C, "where the Raspberry Pi firmware starts to throttle".to_owned()))
        } else {
            ctx.thermal.soc_limit_c.map(|l| (l, "the thermal zone's first passive trip point".to_owned()))
        };
        if let Some((limit, what)) = limit.filter(|(l, _)| temp >= l - NEAR_C) {
            findings.push(format!("the SoC is at {temp:.1} °C, near {limit:.0} °C, {what}"));
            fixes.push("cool the board: a heatsink, a fan, or a case with airflow");
        }
    }
    if let Some(h) = ctx.health {
        let warn = h.temperature_warning_c.filter(|&w| w > 0);
        let drive = h.temperature_c.map(f64::from).or(ctx.thermal.drive_temperature_c);
        let raised = h.critical_warning.as_ref().is_some_and(|c| c.contains(&CriticalWarning::Temperature));
        let near = match (drive, warn) {
            (Some(temp), Some(w)) if temp >= f64::from(w) - NEAR_C => {
                Some(format!("the drive is at {temp:.0} °C, near its own warning temperature of {w} °C"))
            }
            _ => None,
        };
        if raised || near.is_some() {
            let mut what = near.unwrap_or_else(|| match (drive, warn) {
                (Some(temp), Some(w)) => format!("the drive is at {temp:.0} °C (its warning temperature is {w} °C)"),
                (Some(temp), None) => format!("the drive is at {temp:.0} °C"),
                _ => "the drive's temperature is not reported".to_owned(),
            });
            if raised {
                what.push_str(" and raises its temperature critical warning (a sensor is past one of its thresholds)");
            }
            findings.push(what);
            fixes.push("give the drive a heatsink or airflow");
        }
    }
    if findings.is_empty() {
        return None;
    }
    fixes.dedup();
    Some(advice(
        AdviceCode::Hot,
        Severity::Warn,
        findings.join("; "),
        format!("{}; hot flash throttles itself and wears faster", fixes.join("; ")),
        "Raspberry Pi documentation, \"Frequency management and thermal control\"; Linux \
         Documentation/driver-api/thermal/sysfs-api.rst (trip points); NVM Express Base Specification (WCTEMP, \
         Critical Warning bit 1)",
    ))
}
