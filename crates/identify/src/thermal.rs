//! Temperature and throttling: the SoC's thermal zone, the Raspberry Pi
//! firmware's `get_throttled` word, the `rpi_volt` under-voltage alarm and
//! the drive's own sensor, read through [`Roots`]; and a sampler that
//! watches them while a measurement runs.
//!
//! Sources:
//! - `get_throttled` bits: Raspberry Pi documentation, `vcgencmd
//!   get_throttled` (bit 0 under-voltage, 1 ARM frequency capped, 2
//!   throttled, 3 soft temperature limit, each now; bits 16-19 the same
//!   since boot). The downstream kernel shows the word in the firmware
//!   device's `get_throttled` attribute as `%x` (drivers/firmware/raspberrypi.c).
//! - `rpi_volt`: drivers/hwmon/raspberrypi-hwmon.c, `in0_lcrit_alarm`.
//! - Thermal zones and trip points: Linux
//!   Documentation/driver-api/thermal/sysfs-api.rst (millidegrees Celsius).
//! - hwmon temperatures: Documentation/hwmon/sysfs-interface.rst
//!   (`temp1_input`, millidegrees).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use storage_scoring::health::{FigureThermal, ThermalSnapshot, ThermalWatch, ThrottleFlag};

use storage_platform::sysfs::{self, Roots, read_attr};

/// `get_throttled` text (`50005`, `0x50005`, or vcgencmd's `throttled=0x50005`).
pub fn parse_get_throttled(text: &str) -> Option<u32> {
    let text = text.trim();
    let text = text.strip_prefix("throttled=").unwrap_or(text);
    let hex = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")).unwrap_or(text);
    if hex.is_empty() || hex.len() > 8 {
        return None;
    }
    u32::from_str_radix(hex, 16).ok()
}

/// The flags that hold now (bits 0-3) and those seen since boot (16-19).
pub fn decode_get_throttled(word: u32) -> (Vec<ThrottleFlag>, Vec<ThrottleFlag>) {
    let flags = |shift: u32| {
        ThrottleFlag::ALL
            .iter()
            .enumerate()
            .filter(|(bit, _)| word >> (shift + *bit as u32) & 1 == 1)
            .map(|(_, f)| *f)
            .collect()
    };
    (flags(0), flags(16))
}

/// One thermal zone: its type, temperature and trip points (°C).
#[derive(Debug, Clone, PartialEq)]
pub struct Zone {
    pub kind: String,
    pub temperature_c: Option<f64>,
    /// `(type, °C)`: `passive`, `active`, `hot`, `critical`.
    pub trips: Vec<(String, f64)>,
}

fn millidegrees(text: &str) -> Option<f64> {
    let v: i64 = text.trim().parse().ok()?;
    // Below absolute zero or above 500 °C is not a reading.
    (-273_000..=500_000).contains(&v).then(|| v as f64 / 1000.0)
}

/// Every `class/thermal/thermal_zone*`, in name order.
pub fn zones(roots: &Roots) -> Vec<Zone> {
    let dir = roots.sys.join("class/thermal");
    let Ok(entries) = fs::read_dir(&dir) else { return Vec::new() };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("thermal_zone"))
        .collect();
    names.sort_by_key(|n| n.trim_start_matches("thermal_zone").parse::<u32>().unwrap_or(u32::MAX));
    names
        .iter()
        .map(|name| {
            let zone = dir.join(name);
            let mut trips = Vec::new();
            for n in 0..32 {
                let (Some(kind), Some(temp)) = (
                    read_attr(&zone.join(format!("trip_point_{n}_type"))),
                    read_attr(&zone.join(format!("trip_point_{n}_temp"))).and_then(|t| millidegrees(&t)),
                ) else {
                    break;
                };
                trips.push((kind, temp));
            }
            Zone {
                kind: read_attr(&zone.join("type")).unwrap_or_default(),
                temperature_c: read_attr(&zone.join("temp")).and_then(|t| millidegrees(&t)),
                trips,
            }
        })
        .collect()
}

/// The zone of the CPU or SoC: by its type, else the first zone.
pub fn soc_zone(zones: &[Zone]) -> Option<&Zone> {
    let named = |z: &&Zone| {
        let k = z.kind.to_ascii_lowercase();
        ["cpu", "soc", "x86_pkg_temp", "package"].iter().any(|w| k.contains(w))
    };
    zones.iter().find(named).or_else(|| zones.first()).filter(|z| z.temperature_c.is_some())
}

/// The lowest passive trip point: where the kernel starts cooling by
/// slowing the CPU down.
pub fn passive_limit(zone: &Zone) -> Option<f64> {
    zone.trips.iter().filter(|(k, _)| k == "passive").map(|(_, t)| *t).reduce(f64::min)
}

/// The Raspberry Pi firmware device's `get_throttled`, found through the
/// bound driver (its device path differs from one Pi to the next).
pub fn read_get_throttled(roots: &Roots) -> Option<u32> {
    let driver = roots.sys.join("bus/platform/drivers/raspberrypi-firmware");
    let mut candidates: Vec<PathBuf> =
        fs::read_dir(&driver).map(|e| e.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    candidates.sort();
    // Older kernels and captures: the usual place.
    candidates.push(roots.sys.join("devices/platform/soc/soc:firmware"));
    candidates.iter().find_map(|dir| read_attr(&dir.join("get_throttled")).and_then(|t| parse_get_throttled(&t)))
}

/// hwmon devices as `(name, directory)`.
fn hwmons(roots: &Roots) -> Vec<(String, PathBuf)> {
    let dir = roots.sys.join("class/hwmon");
    let Ok(entries) = fs::read_dir(&dir) else { return Vec::new() };
    let mut out: Vec<(String, PathBuf)> = entries
        .flatten()
        .map(|e| sysfs::resolve_dir(&e.path()))
        .map(|p| (read_attr(&p.join("name")).unwrap_or_default(), p))
        .collect();
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out
}

/// The `rpi_volt` hwmon's under-voltage alarm.
pub fn read_under_voltage_alarm(roots: &Roots) -> Option<bool> {
    hwmons(roots).iter().filter(|(name, _)| name == "rpi_volt").find_map(|(_, dir)| {
        match read_attr(&dir.join("in0_lcrit_alarm"))?.as_str() {
            "0" => Some(false),
            "1" => Some(true),
            _ => None,
        }
    })
}

/// The hwmon sensor of the drive whose device directory is `device_dir`
/// (an `nvme` hwmon under the controller, `drivetemp` under the SCSI
/// device): its `temp1_input`, and `temp1_max` / `temp1_crit` when given.
pub fn drive_sensor(roots: &Roots, device_dir: &Path) -> Option<(f64, Option<f64>, Option<f64>)> {
    let device_dir = sysfs::resolve_dir(device_dir);
    hwmons(roots).iter().find_map(|(_, dir)| {
        let owner = sysfs::resolve_dir(&dir.join("device"));
        let related = owner != *dir && (device_dir.starts_with(&owner) || owner.starts_with(&device_dir));
        if !related || owner.as_os_str().is_empty() {
            return None;
        }
        let temp = |name: &str| read_attr(&dir.join(name)).and_then(|t| millidegrees(&t));
        Some((temp("temp1_input")?, temp("temp1_max"), temp("temp1_crit")))
    })
}

/// Everything above, now. `drive_dir` is the disk's `device` directory.
pub fn snapshot(roots: &Roots, drive_dir: Option<&Path>) -> ThermalSnapshot {
    let zones = zones(roots);
    let soc = soc_zone(&zones);
    let throttled = read_get_throttled(roots);
    let (now, since) = throttled.map(decode_get_throttled).unwrap_or_default();
    ThermalSnapshot {
        soc_temperature_c: soc.and_then(|z| z.temperature_c),
        soc_limit_c: soc.and_then(passive_limit),
        get_throttled: throttled.map(|w| format!("{w:#x}")),
        throttled_now: now,
        throttled_since_boot: since,
        under_voltage_alarm: read_under_voltage_alarm(roots),
        drive_temperature_c: drive_dir.and_then(|d| drive_sensor(roots, d)).map(|(t, _, _)| t),
    }
}

/// One timed reading.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub at: Instant,
    pub snapshot: ThermalSnapshot,
}

/// Samples [`snapshot`] on a thread until stopped, and on demand
/// ([`Watcher::sample_now`]) at the edges of each measured window, so that
/// even a test shorter than the interval has a reading at each end.
#[derive(Debug)]
pub struct Watcher {
    roots: Roots,
    drive_dir: Option<PathBuf>,
    interval: Duration,
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<Sample>>>,
    thread: Option<JoinHandle<()>>,
}

impl Watcher {
    /// Starts sampling every `interval`; the first sample is taken at once.
    pub fn start(roots: Roots, drive_dir: Option<PathBuf>, interval: Duration) -> Watcher {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let (stop_flag, shared) = (Arc::clone(&stop), Arc::clone(&samples));
        let (thread_roots, thread_dir) = (roots.clone(), drive_dir.clone());
        let thread = std::thread::Builder::new()
            .name("thermal-watch".to_owned())
            .spawn(move || {
                while !stop_flag.load(Ordering::Relaxed) {
                    let s = Sample { at: Instant::now(), snapshot: snapshot(&thread_roots, thread_dir.as_deref()) };
                    if let Ok(mut all) = shared.lock() {
                        all.push(s);
                    }
                    // Sleep in short steps so that stop() returns quickly.
                    let mut slept = Duration::ZERO;
                    while slept < interval && !stop_flag.load(Ordering::Relaxed) {
                        let step = Duration::from_millis(50).min(interval - slept);
                        std::thread::sleep(step);
                        slept += step;
                    }
                }
            })
            .ok();
        Watcher { roots, drive_dir, interval, stop, samples, thread }
    }

    /// Takes a reading now, on the caller's thread, and returns its time.
    pub fn sample_now(&self) -> Instant {
        let s = Sample { at: Instant::now(), snapshot: snapshot(&self.roots, self.drive_dir.as_deref()) };
        let at = s.at;
        if let Ok(mut all) = self.samples.lock() {
            all.push(s);
        }
        at
    }

    /// Stops the thread; returns the interval and every reading, in time order.
    pub fn stop(mut self) -> (Duration, Vec<Sample>) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let mut all = self.samples.lock().map(|s| s.clone()).unwrap_or_default();
        all.sort_by_key(|s| s.at);
        (self.interval, all)
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The flags that say a reading was taken while slowed down.
fn slowed(s: &ThermalSnapshot) -> Vec<ThrottleFlag> {
    let mut flags = s.throttled_now.clone();
    if s.under_voltage_alarm == Some(true) && !flags.contains(&ThrottleFlag::UnderVoltage) {
        flags.push(ThrottleFlag::UnderVoltage);
    }
    flags
}

fn max(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// What a run of readings saw, taken together.
pub fn summarize(interval: Duration, samples: &[Sample]) -> ThermalWatch {
    let mut w = ThermalWatch {
        interval_ms: u64::try_from(interval.as_millis()).unwrap_or(u64::MAX),
        ..ThermalWatch::default()
    };
    for s in samples {
        record(&mut w, &s.snapshot);
    }
    w
}

/// Adds one snapshot to the watch.
pub fn record(w: &mut ThermalWatch, s: &ThermalSnapshot) {
    w.samples = w.samples.saturating_add(1);
    w.max_soc_temperature_c = max(w.max_soc_temperature_c, s.soc_temperature_c);
    w.max_drive_temperature_c = max(w.max_drive_temperature_c, s.drive_temperature_c);
    let flags = slowed(s);
    if !flags.is_empty() {
        w.throttled_samples = w.throttled_samples.saturating_add(1);
    }
    for f in flags {
        if !w.flags_seen.contains(&f) {
            w.flags_seen.push(f);
        }
    }
    w.flags_seen.sort();
}

/// The readings of one measured window (`from..=to`): whether the machine
/// was slowed down at any of them, or a since-boot flag appeared between
/// the first and the last.
pub fn window(key: &str, samples: &[Sample], from: Instant, to: Instant) -> FigureThermal {
    let inside: Vec<&Sample> = samples.iter().filter(|s| s.at >= from && s.at <= to).collect();
    let mut flags: Vec<ThrottleFlag> = inside.iter().flat_map(|s| slowed(&s.snapshot)).collect();
    if let (Some(first), Some(last)) = (inside.first(), inside.last()) {
        let before = &first.snapshot.throttled_since_boot;
        flags.extend(last.snapshot.throttled_since_boot.iter().filter(|f| !before.contains(f)));
    }
    flags.sort();
    flags.dedup();
    FigureThermal {
        key: key.to_owned(),
        samples: u32::try_from(inside.len()).unwrap_or(u32::MAX),
        max_soc_temperature_c: inside.iter().map(|s| s.snapshot.soc_temperature_c).fold(None, max),
        max_drive_temperature_c: inside.iter().map(|s| s.snapshot.drive_temperature_c).fold(None, max),
        throttled: !flags.is_empty(),
        flags,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_decodes_get_throttled() {
        assert_eq!(parse_get_throttled("50005\n"), Some(0x50005));
        assert_eq!(parse_get_throttled("throttled=0x0"), Some(0));
        assert_eq!(parse_get_throttled("0x"), None);
        assert_eq!(parse_get_throttled("123456789"), None);
        assert_eq!(parse_get_throttled("zz"), None);
        let (now, since) = decode_get_throttled(0x50005);
        assert_eq!(now, [ThrottleFlag::UnderVoltage, ThrottleFlag::Throttled]);
        assert_eq!(since, [ThrottleFlag::UnderVoltage, ThrottleFlag::Throttled]);
        let (now, since) = decode_get_throttled(0x80000);
        assert!(now.is_empty());
        assert_eq!(since, [ThrottleFlag::SoftTemperatureLimit]);
        assert_eq!(decode_get_throttled(0xfff0_fff0), (vec![], vec![]));
    }

    #[test]
    fn reads_millidegrees() {
        assert_eq!(millidegrees("48312\n"), Some(48.312));
        assert_eq!(millidegrees("-5000"), Some(-5.0));
        assert_eq!(millidegrees("9999999"), None);
        assert_eq!(millidegrees("hot"), None);
    }

    #[test]
    fn the_soc_zone_is_found_by_type() {
        let zone = |kind: &str, t: f64| Zone { kind: kind.to_owned(), temperature_c: Some(t), trips: vec![] };
        let zones = [zone("acpitz", 30.0), zone("x86_pkg_temp", 55.0)];
        assert_eq!(soc_zone(&zones).map(|z| z.temperature_c), Some(Some(55.0)));
        let zones = [zone("cpu-thermal", 47.0)];
        assert_eq!(soc_zone(&zones).map(|z| z.kind.as_str()), Some("cpu-thermal"));
        assert_eq!(soc_zone(&[]), None);
    }

    #[test]
    fn a_window_sees_flags_inside_it_only() {
        let t0 = Instant::now();
        let at = |ms: u64, s: ThermalSnapshot| Sample { at: t0 + Duration::from_millis(ms), snapshot: s };
        let plain = ThermalSnapshot { get_throttled: Some("0x0".into()), ..ThermalSnapshot::default() };
        let capped = ThermalSnapshot {
            throttled_now: vec![ThrottleFlag::ArmFrequencyCapped],
            throttled_since_boot: vec![ThrottleFlag::ArmFrequencyCapped],
            ..plain.clone()
        };
        let since = ThermalSnapshot { throttled_since_boot: vec![ThrottleFlag::ArmFrequencyCapped], ..plain.clone() };
        let samples =
            [at(0, plain.clone()), at(500, plain.clone()), at(1000, capped), at(1500, since.clone()), at(2000, since)];
        let early = window("a", &samples, t0, t0 + Duration::from_millis(600));
        assert!(!early.throttled);
        assert_eq!(early.samples, 2);
        let middle = window("b", &samples, t0 + Duration::from_millis(900), t0 + Duration::from_millis(1100));
        assert_eq!(middle.flags, [ThrottleFlag::ArmFrequencyCapped]);
        // Between its edges a since-boot flag appeared: throttled, though no
        // sample caught it happening.
        let spanning = window("c", &samples, t0 + Duration::from_millis(400), t0 + Duration::from_millis(1600));
        assert!(spanning.throttled);
        let late = window("d", &samples, t0 + Duration::from_millis(1400), t0 + Duration::from_millis(2100));
        assert!(!late.throttled, "the flag was set before this window");
        assert_eq!(summarize(Duration::from_millis(500), &samples).throttled_samples, 1);
    }

    #[test]
    fn a_watch_collects_flags_and_maxima() {
        let mut w = ThermalWatch::default();
        let hot = ThermalSnapshot {
            soc_temperature_c: Some(81.0),
            throttled_now: vec![ThrottleFlag::SoftTemperatureLimit],
            ..ThermalSnapshot::default()
        };
        let cool = ThermalSnapshot {
            soc_temperature_c: Some(50.0),
            under_voltage_alarm: Some(false),
            ..ThermalSnapshot::default()
        };
        record(&mut w, &cool);
        record(&mut w, &hot);
        assert_eq!((w.samples, w.throttled_samples), (2, 1));
        assert_eq!(w.max_soc_temperature_c, Some(81.0));
        assert_eq!(w.flags_seen, [ThrottleFlag::SoftTemperatureLimit]);
    }
}
