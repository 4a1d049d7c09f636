//! Human-readable output: comfy-table tables for identification and results,
//! and the score and verdict in plain words.

use std::fmt::Write;

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};

use crate::plain::table;
use storage_scoring::schema::{Device, Figure, Report, Score, SdInfo, System, Target, Verdict};

fn row(t: &mut Table, name: &str, value: Option<String>) {
    if let Some(value) = value.filter(|v| !v.is_empty()) {
        t.add_row(vec![name.to_owned(), value]);
    }
}

fn yes_no(v: Option<bool>) -> Option<String> {
    v.map(|b| if b { "yes" } else { "no" }.to_owned())
}

fn bytes(n: u64) -> String {
    format!("{:.2} GB ({:.2} GiB, {n} bytes)", n as f64 / 1e9, n as f64 / (1u64 << 30) as f64)
}

/// The identification table, with notes and hints under it.
pub fn identification(target: &Target, device: Option<&Device>, system: Option<&System>) -> String {
    let mut t = table(["", "identification"]);
    row(&mut t, "target", Some(target.input.clone()));
    row(&mut t, "disk", target.disk.clone());
    row(&mut t, "partition", target.partition.clone());
    row(&mut t, "stacked on", (!target.stack.is_empty()).then(|| target.stack.join(" → ")));
    row(&mut t, "backing file", target.backing_file.clone());
    row(&mut t, "mount point", target.mount_point.clone());
    row(&mut t, "filesystem", target.filesystem.clone());
    let mut notes: Vec<String> = target.notes.clone();
    let mut hints = Vec::new();
    if let Some(d) = device {
        row(&mut t, "kind", Some(d.kind.as_str().to_owned()));
        row(&mut t, "vendor", d.vendor.clone());
        row(&mut t, "model", d.model.clone());
        row(&mut t, "firmware", d.firmware.clone());
        row(&mut t, "capacity", d.capacity_bytes.map(bytes));
        row(
            &mut t,
            "block size",
            d.logical_block_size.map(|l| format!("{l} logical / {} physical", d.physical_block_size.unwrap_or(l))),
        );
        row(&mut t, "rotational", yes_no(d.rotational));
        row(&mut t, "discard", yes_no(d.discard));
        row(&mut t, "write cache", d.write_cache.clone());
        row(&mut t, "read-only", yes_no(d.read_only));
        row(&mut t, "removable", yes_no(d.removable));
        if let Some(sd) = &d.sd {
            sd_rows(&mut t, sd);
            notes.extend(
                sd.errors.iter().map(|e| format!("{} register unreadable: {}", e.register.to_uppercase(), e.message)),
            );
        }
        if let Some(emmc) = &d.emmc {
            if let Some(cid) = &emmc.cid {
                row(
                    &mut t,
                    "manufacturer",
                    Some(format!("0x{:02x} {}", cid.manufacturer_id, cid.manufacturer.clone().unwrap_or_default())),
                );
                row(&mut t, "OEM", Some(cid.oem_id.clone()));
                row(&mut t, "product", Some(format!("{} rev {}", cid.product_name, cid.product_revision)));
                row(&mut t, "manufactured", Some(cid.manufactured.clone()));
            }
            if let Some(ext) = &emmc.ext_csd {
                row(&mut t, "EXT_CSD revision", Some(ext.ext_csd_rev.to_string()));
                row(
                    &mut t,
                    "life time used (A/B)",
                    ext.life_time_est_a
                        .map(|a| format!("{} / {}", life(a), ext.life_time_est_b.map(life).unwrap_or_default())),
                );
                row(
                    &mut t,
                    "pre-EOL",
                    ext.pre_eol_info.map(|p| match p {
                        1 => "normal".to_owned(),
                        2 => "warning (80% of reserved blocks used)".to_owned(),
                        3 => "URGENT".to_owned(),
                        v => format!("{v}"),
                    }),
                );
                row(&mut t, "cache", ext.cache_size_bytes.map(|c| format!("{} KiB", c / 1024)));
            }
            host_rows(&mut t, emmc.host.as_ref());
            notes.extend(emmc.errors.iter().map(|e| format!("{} unreadable: {}", e.register, e.message)));
        }
        if let Some(usb) = &d.usb {
            row(&mut t, "USB id", Some(usb.id.clone()));
            row(&mut t, "USB bridge", usb.bridge.clone());
            row(
                &mut t,
                "USB device",
                usb.product
                    .clone()
                    .map(|p| format!("{} {p}", usb.manufacturer.clone().unwrap_or_default()).trim().to_owned()),
            );
            row(&mut t, "USB link", usb.speed_mbps.map(|s| format!("{s} Mb/s")));
            row(&mut t, "USB driver", usb.driver.clone());
        }
        if let Some(nvme) = &d.nvme {
            row(&mut t, "transport", nvme.transport.clone());
            row(
                &mut t,
                "PCIe link",
                nvme.pcie_link_speed.clone().map(|s| format!("{s} x{}", nvme.pcie_link_width.unwrap_or(0))),
            );
        }
        if let Some(l) = &d.loop_device {
            row(&mut t, "direct I/O", yes_no(l.direct_io));
        }
        notes.extend(d.notes.iter().cloned());
        hints =
            d.hints
                .iter()
                .map(|h| {
                    if h.weight.is_empty() {
                        h.message.clone()
                    } else {
                        format!("[{} evidence] {}", h.weight, h.message)
                    }
                })
                .collect();
    }
    if let Some(system) = system {
        row(&mut t, "board", system.board.clone());
        let kernel = system.kernel.as_ref().map(|k| format!("Linux {k}"));
        let parts: Vec<&str> =
            [system.os.as_deref(), kernel.as_deref(), system.arch.as_deref()].into_iter().flatten().collect();
        row(&mut t, "system", Some(parts.join(", ")));
    }
    let mut out = format!("{t}\n");
    for h in hints {
        let _ = writeln!(out, "warning: {h}");
    }
    for n in notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

fn life(v: u8) -> String {
    match v {
        0 => "undefined".to_owned(),
        1..=10 => format!("{}-{}%", (v - 1) * 10, v * 10),
        11 => "exceeded".to_owned(),
        v => format!("0x{v:02x}"),
    }
}

fn sd_rows(t: &mut Table, sd: &SdInfo) {
    if let Some(cid) = &sd.cid {
        let maker = cid.manufacturer.clone().unwrap_or_else(|| "unknown".to_owned());
        let shared = if cid.manufacturer_contested { "shared ID: " } else { "" };
        row(t, "manufacturer", Some(format!("{shared}{maker} (MID 0x{:02x})", cid.manufacturer_id)));
        row(t, "OEM", Some(format!("{} (0x{:04x})", cid.oem_id, cid.oem_id_raw)));
        row(t, "product", Some(format!("{} rev {}", cid.product_name, cid.product_revision)));
        row(t, "serial", cid.serial.map(|psn| format!("0x{psn:08x}")));
        row(t, "manufactured", Some(cid.manufactured.clone()));
    }
    if let Some(csd) = &sd.csd {
        row(
            t,
            "CSD",
            Some(format!(
                "{} (CSD {}.0), max transfer {} Mb/s, classes {:?}",
                if csd.capacity_type.is_empty() { "SD" } else { &csd.capacity_type },
                csd.csd_version,
                csd.max_transfer_rate_bps / 1_000_000,
                csd.command_classes
            )),
        );
    }
    if let Some(scr) = &sd.scr {
        row(t, "spec version", Some(scr.spec_version.clone()));
        row(t, "bus widths", Some(scr.bus_widths.iter().map(|w| format!("{w}-bit")).collect::<Vec<_>>().join(", ")));
        row(
            t,
            "CMD support",
            (!scr.cmd_support.is_empty())
                .then(|| scr.cmd_support.iter().map(|c| format!("CMD{c}")).collect::<Vec<_>>().join(" ")),
        );
    }
    let no_class = sd.ssr.is_some() && sd.class_label.is_none();
    row(
        t,
        "class (claimed)",
        if no_class { Some("the card reports no class".to_owned()) } else { sd.class_label.clone() },
    );
    if let Some(ssr) = &sd.ssr {
        if !ssr.reserved.is_empty() {
            row(t, "reserved codes", Some(ssr.reserved.join(", ")));
        }
        row(t, "AU size", Some(format!("{} KiB", ssr.au_size_bytes / 1024)));
        row(
            t,
            "command queue",
            Some(if ssr.command_queue_depth > 0 {
                format!("depth {}", ssr.command_queue_depth)
            } else {
                "none".to_owned()
            }),
        );
        row(t, "cache / discard / FULE", Some(format!("{} / {} / {}", yn(ssr.cache), yn(ssr.discard), yn(ssr.fule))));
    }
    if let Some(ocr) = &sd.ocr {
        row(t, "OCR (host-selected)", Some(ocr.voltage_window.clone()));
    }
    host_rows(t, sd.host.as_ref());
}

fn yn(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

fn host_rows(t: &mut Table, host: Option<&storage_scoring::schema::HostIos>) {
    let Some(h) = host else { return };
    row(
        t,
        "host clock",
        h.clock_hz.map(|c| {
            format!("{:.1} MHz (actual {:.1} MHz)", c as f64 / 1e6, h.actual_clock_hz.unwrap_or(c) as f64 / 1e6)
        }),
    );
    row(t, "host timing", h.timing.clone());
    row(t, "host bus width", h.bus_width_bits.map(|w| format!("{w}-bit")));
    row(t, "signal voltage", h.signal_voltage.clone());
}

fn us(v: f64) -> String {
    if v >= 10_000.0 { format!("{:.1} ms", v / 1000.0) } else { format!("{v:.0} µs") }
}

/// The figures with their latency, one table where it fits the width;
/// else the results and the latencies as two tables (the whole is about
/// 120 columns wide, and a table narrowed to 80 would cut its keys).
fn figure_tables(report: &Report) -> String {
    const HEADER: [&str; 8] = ["test", "result", "unit", "like", "p50", "p99", "p99.9", "max"];
    let m = report.measurements.unwrap_or_default();
    let rows: Vec<[String; 8]> = Figure::ALL
        .into_iter()
        .map(|figure| {
            let detail = report.details.get(figure.key());
            let value = match m.figure(figure) {
                // ≈ marks a low-confidence figure, and "partial" one cut short.
                Some(v) => match detail {
                    Some(d) if d.partial => format!("{v} (partial)"),
                    Some(d) if d.low_confidence => format!("≈ {v}"),
                    _ => format!("{v}"),
                },
                None => "—".to_owned(),
            };
            let lat = detail.map(|d| [d.latency.p50_us, d.latency.p99_us, d.latency.p99_9_us, d.latency.max_us]);
            let lat = lat.map_or([const { String::new() }; 4], |l| l.map(us));
            let [p50, p99, p999, max] = lat;
            let (key, unit, like) = (figure.key(), figure.unit().symbol(), figure.reference());
            [key.to_owned(), value, unit.to_owned(), like.to_owned(), p50, p99, p999, max]
        })
        .collect();
    let columns = |picked: &[usize]| {
        let mut t = table(picked.iter().map(|&c| HEADER[c]));
        for row in &rows {
            t.add_row(picked.iter().map(|&c| {
                let cell = Cell::new(&row[c]);
                if c == 1 || c >= 4 { cell.set_alignment(CellAlignment::Right) } else { cell }
            }));
        }
        t
    };
    let mut whole = columns(&[0, 1, 2, 3, 4, 5, 6, 7]);
    let natural = whole.clone().set_content_arrangement(ContentArrangement::Disabled).to_string();
    if natural.lines().next().is_some_and(|l| l.chars().count() <= crate::plain::width()) {
        return format!("{}\n", whole.set_content_arrangement(ContentArrangement::Disabled));
    }
    format!("{}\n{}\n", columns(&[0, 1, 2, 3]), columns(&[0, 4, 5, 6, 7]))
}

/// The whole run: identification, results with latency, score, verdict.
pub fn report(report: &Report) -> String {
    let mut out = match &report.target {
        Some(target) => identification(target, report.device.as_ref(), report.system.as_ref()),
        None => String::new(),
    };
    out.push_str(&figure_tables(report));
    out.push_str(&spread(report));
    for (key, detail) in &report.details {
        for note in &detail.notes {
            let _ = writeln!(out, "{key}: {note}");
        }
    }
    for s in &report.skipped {
        let _ = writeln!(out, "skipped {}: {}", s.key, s.reason);
    }
    for n in &report.notes {
        let _ = writeln!(out, "note: {n}");
    }
    if let Some(score) = &report.score {
        out.push_str(&score_lines(score, report.verdict.as_ref()));
        let kind = storage_scoring::reference::kind_of_report(report);
        let board = report.system.as_ref().and_then(|s| s.board.as_deref());
        if let Some(line) = context_line(score, kind, board) {
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

/// Where a comparable score stands among the published results of its
/// kind on its board family (docs/reference.md#a-result-in-context).
pub fn context_line(score: &Score, kind: Option<&str>, board: Option<&str>) -> Option<String> {
    let n = score.pibenchmarks.filter(|_| score.comparable)?;
    Some(storage_scoring::reference::place(n, kind, board, &storage_scoring::reference::set()).to_string())
}

/// With `--repeat`, each figure's samples: how many, and their range.
fn spread(report: &Report) -> String {
    let mut out = String::new();
    for figure in Figure::ALL {
        let (key, unit) = (figure.key(), figure.unit());
        let Some(s) = report.samples.get(key) else { continue };
        let values: Vec<String> = s.values.iter().map(|v| v.to_string()).collect();
        let _ = writeln!(
            out,
            "{key}: median {} of {} runs, {} to {} {unit} ({})",
            s.median,
            s.values.len(),
            s.min,
            s.max,
            values.join(", ")
        );
    }
    out
}

/// The score and the verdict in plain words.
pub fn score_lines(score: &Score, verdict: Option<&Verdict>) -> String {
    let mut out = String::new();
    match score.pibenchmarks {
        Some(n) if score.comparable => {
            let _ = writeln!(out, "PiBenchmarks score: {n}");
        }
        Some(n) => {
            let _ = writeln!(out, "PiBenchmarks score: {n} (not comparable with PiBenchmarks results: see the notes)");
        }
        None => {
            let _ = writeln!(out, "PiBenchmarks score: none (missing {})", score.missing.join(", "));
        }
    }
    if let Some(v) = verdict {
        if let Some(summary) = &v.summary {
            let _ = writeln!(out, "verdict: {summary}");
        }
        for c in v.checks.iter().filter(|c| c.claimed) {
            let status = match (c.pass, c.measured) {
                (Some(true), _) => "pass",
                (Some(false), _) => "below",
                (None, Some(_)) => "undecided",
                (None, None) => "not measured",
            };
            let measured = c.measured.map(|m| format!("{m} {}", c.unit)).unwrap_or_else(|| "—".to_owned());
            let _ = writeln!(out, "  {:<9} {:<40} measured {:<16} {status}", c.mark, c.requirement, measured);
            if let Some(why) = &c.why {
                let _ = writeln!(out, "            why: {why}");
            }
        }
        for n in &v.notes {
            let _ = writeln!(out, "note: {n}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_scoring::schema::Samples;

    #[test]
    fn repeated_figures_show_their_runs() {
        let mut report = Report::new("0.1.0");
        let samples = Samples::of(vec![19.9, 20.0, 20.2, 19.9]).expect("samples");
        report.samples.insert("seq_write_mb_s".into(), samples);
        assert_eq!(
            spread(&report),
            "seq_write_mb_s: median 19.95 of 4 runs, 19.9 to 20.2 MB/s (19.9, 20, 20.2, 19.9)\n"
        );
        assert_eq!(spread(&Report::new("0.1.0")), "");
    }
}
