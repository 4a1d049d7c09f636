//! The `thermal` section's types and the pure rule that decides whether a
//! figure was measured while the machine was throttled
//! (docs/doctor.md#thermal).

use serde::{Deserialize, Serialize};

/// Raspberry Pi firmware `get_throttled` flags (each is a "now" bit 0-3
/// and a "since boot" bit 16-19).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThrottleFlag {
    UnderVoltage,
    ArmFrequencyCapped,
    Throttled,
    SoftTemperatureLimit,
    #[serde(other)]
    Unknown,
}

impl ThrottleFlag {
    pub const ALL: [ThrottleFlag; 4] = [
        ThrottleFlag::UnderVoltage,
        ThrottleFlag::ArmFrequencyCapped,
        ThrottleFlag::Throttled,
        ThrottleFlag::SoftTemperatureLimit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ThrottleFlag::UnderVoltage => "under-voltage",
            ThrottleFlag::ArmFrequencyCapped => "arm-frequency-capped",
            ThrottleFlag::Throttled => "throttled",
            ThrottleFlag::SoftTemperatureLimit => "soft-temperature-limit",
            ThrottleFlag::Unknown => "unknown",
        }
    }
}

/// The machine's temperature and throttling at one moment.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ThermalSnapshot {
    /// The SoC (CPU) temperature, from the thermal zone of the CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soc_temperature_c: Option<f64>,
    /// The lowest passive trip point of that zone: where the kernel
    /// starts to slow the CPU down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soc_limit_c: Option<f64>,
    /// The firmware's `get_throttled` word, as `vcgencmd` prints it (`0x50005`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_throttled: Option<String>,
    /// Its bits 0-3: what holds now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttled_now: Vec<ThrottleFlag>,
    /// Its bits 16-19: what has happened since boot.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttled_since_boot: Vec<ThrottleFlag>,
    /// The `rpi_volt` hwmon's under-voltage alarm (`in0_lcrit_alarm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under_voltage_alarm: Option<bool>,
    /// The drive's own temperature sensor (hwmon), where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive_temperature_c: Option<f64>,
}

impl ThermalSnapshot {
    /// Something says the machine is slowed down now.
    pub fn throttled_now(&self) -> bool {
        !self.throttled_now.is_empty() || self.under_voltage_alarm == Some(true)
    }

    /// There is any throttling source to read at all.
    pub fn has_throttle_source(&self) -> bool {
        self.get_throttled.is_some() || self.under_voltage_alarm.is_some()
    }
}

/// What a sampler saw while the figures were measured.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ThermalWatch {
    pub samples: u32,
    pub interval_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_soc_temperature_c: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_drive_temperature_c: Option<f64>,
    /// Samples in which something said the machine was slowed down.
    #[serde(default)]
    pub throttled_samples: u32,
    /// Every flag seen "now" in any sample (and the under-voltage alarm as
    /// `under-voltage`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags_seen: Vec<ThrottleFlag>,
}

/// The machine while one figure (or study) was measured.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FigureThermal {
    /// The measurement key, or the study's name for `profile`.
    pub key: String,
    pub samples: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_soc_temperature_c: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_drive_temperature_c: Option<f64>,
    /// Slowed down at some reading in the window, or a since-boot flag
    /// appeared within it.
    pub throttled: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<ThrottleFlag>,
}

/// The `thermal` section: the machine before, during and after a
/// measurement.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Thermal {
    /// A single reading, when nothing was measured (`doctor`, `identify`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<ThermalSnapshot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<ThermalSnapshot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during: Option<ThermalWatch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<ThermalSnapshot>,
    /// Each figure's own window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<FigureThermal>,
    /// True when the figures were (at least partly) measured while the
    /// machine was throttled or under-volted; null when this machine has
    /// no source that could tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_during: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Thermal {
    /// Works out [`Thermal::throttled_during`] from the snapshots and the
    /// sampler: a flag set now at either end or in any sample, or a
    /// since-boot flag that appeared between the two ends. `None` when no
    /// snapshot had a throttling source.
    pub fn assess(&mut self) {
        if self.before.is_none() && self.after.is_none() && self.during.is_none() {
            // A single reading says nothing about a measurement.
            self.throttled_during = None;
            return;
        }
        let ends = [self.before.as_ref(), self.after.as_ref()];
        let any_source = ends.iter().flatten().any(|s| s.has_throttle_source());
        if !any_source {
            self.throttled_during = None;
            return;
        }
        let now = ends.iter().flatten().any(|s| s.throttled_now());
        let sampled =
            self.during.as_ref().is_some_and(|w| w.throttled_samples > 0) || self.figures.iter().any(|f| f.throttled);
        let appeared = match (self.before.as_ref(), self.after.as_ref()) {
            (Some(b), Some(a)) => a.throttled_since_boot.iter().any(|f| !b.throttled_since_boot.contains(f)),
            _ => false,
        };
        self.throttled_during = Some(now || sampled || appeared);
    }

    /// Whether the figure under `key` was measured while throttled: from its
    /// own window when the report has windows, else from the whole run.
    pub fn figure_throttled(&self, key: &str) -> bool {
        if self.figures.is_empty() {
            return self.throttled_during == Some(true);
        }
        self.figures.iter().any(|f| f.key == key && f.throttled)
    }

    /// The flags that make the run count as throttled, for the notes.
    pub fn flags(&self) -> Vec<ThrottleFlag> {
        let mut flags: Vec<ThrottleFlag> = Vec::new();
        let ends = [self.before.as_ref(), self.after.as_ref()];
        for snapshot in ends.into_iter().flatten() {
            flags.extend(&snapshot.throttled_now);
            if snapshot.under_voltage_alarm == Some(true) {
                flags.push(ThrottleFlag::UnderVoltage);
            }
        }
        if let (Some(b), Some(a)) = (self.before.as_ref(), self.after.as_ref()) {
            flags.extend(a.throttled_since_boot.iter().filter(|f| !b.throttled_since_boot.contains(f)));
        }
        if let Some(w) = &self.during {
            flags.extend(&w.flags_seen);
        }
        for f in &self.figures {
            flags.extend(&f.flags);
        }
        flags.sort();
        flags.dedup();
        flags
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(now: &[ThrottleFlag], since: &[ThrottleFlag]) -> ThermalSnapshot {
        ThermalSnapshot {
            get_throttled: Some("0x0".to_owned()),
            throttled_now: now.to_vec(),
            throttled_since_boot: since.to_vec(),
            ..ThermalSnapshot::default()
        }
    }

    #[test]
    fn throttled_during_needs_a_source() {
        let mut t = Thermal {
            before: Some(ThermalSnapshot { soc_temperature_c: Some(40.0), ..ThermalSnapshot::default() }),
            ..Thermal::default()
        };
        t.assess();
        assert_eq!(t.throttled_during, None);
    }

    #[test]
    fn a_since_boot_flag_that_appears_counts() {
        let mut t = Thermal {
            before: Some(snapshot(&[], &[])),
            after: Some(snapshot(&[], &[ThrottleFlag::UnderVoltage])),
            ..Thermal::default()
        };
        t.assess();
        assert_eq!(t.throttled_during, Some(true));
        assert_eq!(t.flags(), [ThrottleFlag::UnderVoltage]);
        // Already set before the run: says nothing about the run.
        let mut t = Thermal {
            before: Some(snapshot(&[], &[ThrottleFlag::UnderVoltage])),
            after: Some(snapshot(&[], &[ThrottleFlag::UnderVoltage])),
            ..Thermal::default()
        };
        t.assess();
        assert_eq!(t.throttled_during, Some(false));
    }

    #[test]
    fn a_sampled_flag_counts() {
        let mut t = Thermal {
            before: Some(snapshot(&[], &[])),
            after: Some(snapshot(&[], &[])),
            during: Some(ThermalWatch {
                samples: 10,
                throttled_samples: 2,
                flags_seen: vec![ThrottleFlag::SoftTemperatureLimit],
                ..ThermalWatch::default()
            }),
            ..Thermal::default()
        };
        t.assess();
        assert_eq!(t.throttled_during, Some(true));
    }
}
