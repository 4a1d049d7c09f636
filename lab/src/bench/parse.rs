//! Reading the figures out of each tool's output. Nothing here panics on
//! odd output: every failure is an error that quotes what the tool printed.

use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

/// `hdparm -t/-T`: the rate after the last `=`, as in
/// ` Timing O_DIRECT disk reads: 152 MB in  3.01 seconds =  50.52 MB/sec`.
/// hdparm's MB is 2^20 bytes and it prints kB/sec below 1 MB/sec; returns MiB/s.
pub fn hdparm_mib_s(stdout: &str) -> Result<f64> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.contains('=') && l.trim_end().ends_with("B/sec"))
        .ok_or_else(|| anyhow!("no `= … MB/sec` line in hdparm's output:\n{stdout}"))?;
    let rate = line.rsplit('=').next().unwrap_or_default();
    let (value, unit) = number_and_unit(rate).with_context(|| format!("hdparm line `{line}`"))?;
    let scale = match unit {
        "kB/sec" => 1.0 / 1024.0,
        "MB/sec" => 1.0,
        "GB/sec" => 1024.0,
        _ => bail!("unknown unit `{unit}` in hdparm line `{line}`"),
    };
    Ok(value * scale)
}

/// `hdparm -Tt`: the rate on the line that contains `what` (`cached reads`
/// or `disk reads`), as [`hdparm_mib_s`] reads it.
pub fn hdparm_line_mib_s(stdout: &str, what: &str) -> Result<f64> {
    let line = stdout
        .lines()
        .find(|l| l.contains(what))
        .ok_or_else(|| anyhow!("no `{what}` line in hdparm's output:\n{stdout}"))?;
    hdparm_mib_s(line)
}

/// `dd`: the rate at the end of its last stderr line, as in
/// `545259520 bytes (545 MB, 520 MiB) copied, 13.9 s, 39.2 MB/s`; dd's units
/// are SI. Returns MB/s (10^6 B/s).
pub fn dd_mb_s(stderr: &str) -> Result<f64> {
    let line =
        stderr.lines().rev().find(|l| !l.trim().is_empty()).ok_or_else(|| anyhow!("dd printed nothing on stderr"))?;
    let rate = line.rsplit(", ").next().unwrap_or_default();
    let (value, unit) = number_and_unit(rate).with_context(|| format!("dd line `{line}`"))?;
    // Divide for the small units so that `950 kB/s` gives exactly 0.95.
    Ok(match unit {
        "B/s" => value / 1e6,
        "kB/s" => value / 1e3,
        "MB/s" => value,
        "GB/s" => value * 1e3,
        "TB/s" => value * 1e6,
        _ => bail!("unknown unit `{unit}` in dd line `{line}`"),
    })
}

/// `"  50.52 MB/sec"` → `(50.52, "MB/sec")`.
fn number_and_unit(text: &str) -> Result<(f64, &str)> {
    let mut words = text.split_whitespace();
    let (Some(number), Some(unit), None) = (words.next(), words.next(), words.next()) else {
        bail!("expected `<number> <unit>`, found `{}`", text.trim());
    };
    let value: f64 = number.parse().with_context(|| format!("`{number}` is not a number"))?;
    Ok((value, unit))
}

/// The figures of one fio job (`--output-format=json`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FioJob {
    pub iops: f64,
    /// KiB/s (fio's `bw`).
    pub bw_kib_s: f64,
    pub total_ios: u64,
    /// Seconds of I/O (fio's `runtime`, in ms).
    pub runtime_s: f64,
    /// The lowest of its bandwidth samples, KiB/s (`bw_min`; each sample
    /// averages `--bwavgtime` ms), when fio gave it.
    pub bw_min_kib_s: Option<f64>,
}

/// The `read` or `write` side of `jobs[0]` in fio's JSON output. fio may
/// print notes before the JSON, so it starts at the first `{`.
pub fn fio_job(stdout: &str, direction: Direction) -> Result<FioJob> {
    let start = stdout.find('{').ok_or_else(|| anyhow!("no JSON in fio's output:\n{stdout}"))?;
    let json: Value =
        serde_json::from_str(&stdout[start..]).with_context(|| format!("fio's JSON does not parse:\n{stdout}"))?;
    let job = json.pointer("/jobs/0").ok_or_else(|| anyhow!("fio's JSON has no jobs[0]:\n{stdout}"))?;
    if let Some(error) = job.get("error").and_then(Value::as_i64).filter(|&e| e != 0) {
        bail!("fio's job reports error {error}:\n{stdout}");
    }
    let side =
        job.get(direction.key()).ok_or_else(|| anyhow!("fio's jobs[0] has no `{}`:\n{stdout}", direction.key()))?;
    let number = |key: &str| {
        side.get(key)
            .and_then(Value::as_f64)
            .ok_or_else(|| anyhow!("fio's jobs[0].{}.{key} is missing:\n{stdout}", direction.key()))
    };
    let parsed = FioJob {
        iops: number("iops")?,
        bw_kib_s: number("bw")?,
        total_ios: number("total_ios")? as u64,
        runtime_s: number("runtime")? / 1000.0,
        bw_min_kib_s: side.get("bw_min").and_then(Value::as_f64),
    };
    if parsed.total_ios == 0 {
        bail!("fio did no {} I/O:\n{stdout}", direction.key());
    }
    Ok(parsed)
}

/// CPU time fio's job itself used: `(usr_cpu + sys_cpu)` percent of the
/// job's run time (`job_runtime`, or the read side's `runtime` in older fio).
pub fn fio_job_cpu(stdout: &str) -> Result<Duration> {
    let start = stdout.find('{').ok_or_else(|| anyhow!("no JSON in fio's output:\n{stdout}"))?;
    let json: Value =
        serde_json::from_str(&stdout[start..]).with_context(|| format!("fio's JSON does not parse:\n{stdout}"))?;
    let field = |pointer: &str| json.pointer(pointer).and_then(Value::as_f64);
    let (Some(usr), Some(sys)) = (field("/jobs/0/usr_cpu"), field("/jobs/0/sys_cpu")) else {
        bail!("fio's jobs[0] has no usr_cpu/sys_cpu:\n{stdout}");
    };
    let runtime_ms = field("/jobs/0/job_runtime")
        .or_else(|| field("/jobs/0/read/runtime"))
        .ok_or_else(|| anyhow!("fio's jobs[0] has no job_runtime:\n{stdout}"))?;
    let seconds = (usr + sys) / 100.0 * runtime_ms / 1000.0;
    Duration::try_from_secs_f64(seconds.max(0.0)).map_err(|e| anyhow!("fio's CPU time {seconds} s: {e}:\n{stdout}"))
}

/// Which side of a fio job to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Read,
    Write,
}

impl Direction {
    fn key(self) -> &'static str {
        match self {
            Direction::Read => "read",
            Direction::Write => "write",
        }
    }
}

/// `/usr/bin/time -v`: `Maximum resident set size (kbytes): N`, in KiB.
pub fn max_rss_kib(stderr: &str) -> Result<u64> {
    let line = stderr
        .lines()
        .find(|l| l.trim_start().starts_with("Maximum resident set size"))
        .ok_or_else(|| anyhow!("no `Maximum resident set size` in /usr/bin/time's output:\n{stderr}"))?;
    let value = line.rsplit(':').next().unwrap_or_default().trim();
    value.parse().with_context(|| format!("`{line}`: `{value}` is not a number"))
}

/// One figure of a `storage-score run --json` report.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub value: f64,
    /// `details.<key>.ios`.
    pub ios: u64,
    /// `details.<key>.engine`.
    pub engine: String,
    /// `details.<key>.cpu_s`: the engine threads' CPU over the timed window.
    pub cpu_s: Option<f64>,
}

/// `measurements.<key>` and its details from a storage-score JSON report.
pub fn ours(report: &Value, key: &str, raw: &str) -> Result<Figure> {
    let value = report
        .pointer(&format!("/measurements/{key}"))
        .and_then(Value::as_f64)
        .ok_or_else(|| anyhow!("storage-score's report has no measurements.{key}:\n{raw}"))?;
    let detail = report
        .pointer(&format!("/details/{key}"))
        .ok_or_else(|| anyhow!("storage-score's report has no details.{key}:\n{raw}"))?;
    let ios =
        detail.get("ios").and_then(Value::as_u64).ok_or_else(|| anyhow!("details.{key}.ios is missing:\n{raw}"))?;
    let engine = detail.get("engine").and_then(Value::as_str).unwrap_or("?").to_owned();
    let cpu_s = detail.get("cpu_s").and_then(Value::as_f64);
    Ok(Figure { value, ios, engine, cpu_s })
}

/// storage-score's JSON report from its stdout.
pub fn report(stdout: &str) -> Result<Value> {
    serde_json::from_str(stdout).with_context(|| format!("storage-score's --json output does not parse:\n{stdout}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hdparm_rates() {
        let out = "\n/dev/loop3:\n Timing O_DIRECT disk reads: 152 MB in  3.01 seconds =  50.52 MB/sec\n";
        assert_eq!(hdparm_mib_s(out).unwrap(), 50.52);
        let slow = " Timing O_DIRECT cached reads:   2 MB in  4.00 seconds = 512.00 kB/sec\n";
        assert_eq!(hdparm_mib_s(slow).unwrap(), 0.5);
        assert!(hdparm_mib_s("/dev/loop3: No such device\n").is_err());
        assert!(hdparm_mib_s(" Timing: = fast MB/sec\n").is_err());
    }

    #[test]
    fn hdparm_both_lines() {
        let out = "\n/dev/loop3:\n Timing O_DIRECT cached reads:   102 MB in  2.01 seconds =  50.75 MB/sec\n Timing O_DIRECT disk reads: 152 MB in  3.01 seconds =  50.52 MB/sec\n";
        assert_eq!(hdparm_line_mib_s(out, "cached reads").unwrap(), 50.75);
        assert_eq!(hdparm_line_mib_s(out, "disk reads").unwrap(), 50.52);
        assert!(hdparm_line_mib_s(out, "buffered disk reads").is_err());
    }

    #[test]
    fn dd_rates() {
        let err =
            "133120+0 records in\n133120+0 records out\n545259520 bytes (545 MB, 520 MiB) copied, 13.9 s, 39.2 MB/s\n";
        assert_eq!(dd_mb_s(err).unwrap(), 39.2);
        assert_eq!(dd_mb_s("1 bytes copied, 1 s, 950 kB/s").unwrap(), 0.95);
        assert_eq!(dd_mb_s("x copied, 0.4 s, 1.2 GB/s\n\n").unwrap(), 1200.0);
        assert!(dd_mb_s("").is_err());
        assert!(dd_mb_s("dd: error writing 'f': No space left on device").is_err());
    }

    #[test]
    fn fio_sides() {
        let out = r#"note: something
{"jobs":[{"error":0,"read":{"iops":1999.5,"bw":7998,"bw_min":7000,"total_ios":20480,"runtime":10243},
"write":{"iops":0,"bw":0,"total_ios":0,"runtime":0}}]}"#;
        let read = fio_job(out, Direction::Read).unwrap();
        let expected =
            FioJob { iops: 1999.5, bw_kib_s: 7998.0, total_ios: 20480, runtime_s: 10.243, bw_min_kib_s: Some(7000.0) };
        assert_eq!(read, expected);
        assert!(fio_job(out, Direction::Write).is_err());
        assert!(fio_job("fio: engine libaio not loadable", Direction::Read).is_err());
        assert!(fio_job(r#"{"jobs":[]}"#, Direction::Read).is_err());
    }

    #[test]
    fn fio_cpu() {
        let out = r#"{"jobs":[{"usr_cpu":10.0,"sys_cpu":40.0,"job_runtime":2000,"read":{"runtime":1900}}]}"#;
        assert_eq!(fio_job_cpu(out).unwrap(), Duration::from_secs(1));
        let old = r#"{"jobs":[{"usr_cpu":25.0,"sys_cpu":25.0,"read":{"runtime":1000}}]}"#;
        assert_eq!(fio_job_cpu(old).unwrap(), Duration::from_millis(500));
        assert!(fio_job_cpu(r#"{"jobs":[{}]}"#).is_err());
    }

    #[test]
    fn rss() {
        let err = "\tCommand being timed: \"x\"\n\tMaximum resident set size (kbytes): 9876\n";
        assert_eq!(max_rss_kib(err).unwrap(), 9876);
        assert!(max_rss_kib("nothing").is_err());
    }

    #[test]
    fn our_figures() {
        let raw = r#"{"measurements":{"seq_read_mib_s":50.5},"details":{"seq_read_mib_s":{"engine":"sync","ios":76}}}"#;
        let report = report(raw).unwrap();
        let fig = ours(&report, "seq_read_mib_s", raw).unwrap();
        assert_eq!(fig, Figure { value: 50.5, ios: 76, engine: "sync".into(), cpu_s: None });
        assert!(ours(&report, "cached_read_mib_s", raw).is_err());
    }
}
