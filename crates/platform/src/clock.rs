//! The date today, and whether the system clock can be trusted for it.
//!
//! A Raspberry Pi before the 5 has no real-time clock: an offline boot
//! restores the time saved at the last shutdown (fake-hwclock), which can be
//! months old. A manufacturing date "in the future" is only evidence when the
//! kernel says the clock is synchronised, which `adjtimex` reports
//! (`man 2 adjtimex`: the return value `TIME_ERROR` and the status bit
//! `STA_UNSYNC` mean "not synchronised"; NTP clients such as
//! systemd-timesyncd and chrony clear them once they have set the clock).
//!
//! [`ClockSource`] is the seam: `System` reads the real clock, `Fixed` is a
//! reading tests give.

use std::time::{SystemTime, UNIX_EPOCH};

/// What the clock says, as far as identification needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockReading {
    /// The year today (0 when the clock is before 1970 or unreadable).
    pub year: u16,
    /// The month today, 1 to 12.
    pub month: u8,
    /// Whether the kernel reports the clock synchronised; `None` when it
    /// cannot be asked.
    pub synchronized: Option<bool>,
}

/// Where the clock reading comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClockSource {
    /// The system clock and the kernel's synchronisation status.
    #[default]
    System,
    /// A fixed reading (tests).
    Fixed(ClockReading),
}

impl ClockSource {
    pub fn read(self) -> ClockReading {
        match self {
            ClockSource::Fixed(reading) => reading,
            ClockSource::System => {
                let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
                let (year, month) = year_month(secs);
                ClockReading { year, month, synchronized: kernel_clock_synchronized() }
            }
        }
    }
}

/// The civil (proleptic Gregorian, UTC) year and month of a Unix time
/// ((0, 1) past the year 9999, which no clock reading here reaches).
pub fn year_month(unix_secs: u64) -> (u16, u8) {
    i64::try_from(unix_secs)
        .ok()
        .and_then(|secs| time::OffsetDateTime::from_unix_timestamp(secs).ok())
        .and_then(|at| Some((u16::try_from(at.year()).ok()?, u8::from(at.month()))))
        .unwrap_or((0, 1))
}

/// `TIME_ERROR`, the `adjtimex` return value for an unsynchronised clock
/// (include/uapi/linux/timex.h).
const TIME_ERROR: libc::c_int = 5;
/// `STA_UNSYNC`, the status bit of an unsynchronised clock (same header).
const STA_UNSYNC: libc::c_int = 0x0040;

/// Asks the kernel whether the system clock is synchronised. A read-only
/// call (`modes` 0), allowed without privileges.
fn kernel_clock_synchronized() -> Option<bool> {
    // SAFETY: `timex` is plain old data, so all-zero is a valid value, and
    // modes 0 asks adjtimex only to fill it in, not to change the clock.
    let mut timex: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer is to a live, writable `timex` owned by this frame.
    let state = unsafe { libc::adjtimex(&mut timex) };
    if state < 0 {
        return None;
    }
    Some(state != TIME_ERROR && timex.status & STA_UNSYNC == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(year_month(0), (1970, 1));
        // 2000-02-29 12:00 UTC.
        assert_eq!(year_month(951_825_600), (2000, 2));
        // 2024-12-31 23:59:59 and one second later.
        assert_eq!(year_month(1_735_689_599), (2024, 12));
        assert_eq!(year_month(1_735_689_600), (2025, 1));
    }

    #[test]
    fn system_clock_reads() {
        let reading = ClockSource::System.read();
        assert!(reading.year >= 2024 && (1..=12).contains(&reading.month), "{reading:?}");
        let fixed = ClockReading { year: 2030, month: 6, synchronized: Some(false) };
        assert_eq!(ClockSource::Fixed(fixed).read(), fixed);
    }
}
