//! The importer on real Storage.sh output (as published; the whole set is
//! checked by the reference set's own test), on the ways people paste it,
//! and on broken text.

use proptest::prelude::*;

use super::*;

/// A summary as Storage.sh printed it on a Pi 4 with a SanDisk Ultra 64GB
/// (a blog's console paste; scoring/reference/sources/ has it with its source).
const CONSOLE: &str = "     Category                  Test                      Result
---------------------------------------------------------------------------
HDParm                    Disk Read                 40.97 MB/s
HDParm                    Cached Disk Read          39.58 MB/s
DD                        Disk Write                17.4 MB/s
FIO                       4k random read            2807 IOPS (11228 KB/s)
FIO                       4k random write           838 IOPS (3352 KB/s)
IOZone                    4k read                   8966 KB/s
IOZone                    4k write                  2859 KB/s
IOZone                    4k random read            7792 KB/s
IOZone                    4k random write           3287 KB/s

                          Score: 1132
";

/// Storage.sh on a Pi 5's PCIe 2.0 NVMe (a blog's paste, hdparm in MB/sec).
const NVME: &str = "     Category                  Test                      Result
HDParm                    Disk Read                 391.16 MB/sec
HDParm                    Cached Disk Read          434.70 MB/sec
DD                        Disk Write                297 MB/s
FIO                       4k random read            68039 IOPS (272159 KB/s)
FIO                       4k random write           87521 IOPS (350085 KB/s)
IOZone                    4k read                   179024 KB/s
IOZone                    4k write                  167546 KB/s
IOZone                    4k random read            75154 KB/s
IOZone                    4k random write           180317 KB/s

                          Score: 39018
";

fn figures(s: &Summary) -> Vec<(Figure, f64)> {
    s.measurements.iter().collect()
}

#[test]
fn the_console_table_is_read_to_its_printed_score() {
    let s = parse(CONSOLE).expect("parses");
    assert_eq!(s.score, 1132);
    assert_eq!(
        figures(&s),
        [
            (Figure::SeqRead, 40.97),
            (Figure::CachedRead, 39.58),
            (Figure::SeqWrite, 17.4),
            (Figure::RandWriteQd64, 838.0),
            (Figure::RandReadQd64, 2807.0),
            (Figure::SeqWrite4kQd1, 2859.0),
            (Figure::SeqRead4kQd1, 8966.0),
            (Figure::RandRead4kQd1, 7792.0),
            (Figure::RandWrite4kQd1, 3287.0),
        ]
    );
    let s = parse(NVME).expect("parses");
    assert_eq!((s.score, s.measurements[Figure::SeqRead]), (39018, Some(391.16)));
}

/// `text` as a Markdown table: `| HDParm | Disk Read | 40.97 MB/s |`.
fn as_markdown(text: &str) -> String {
    let mut out = String::from("| Category | Test | Result |\n|---|---|---|\n");
    for line in text.lines() {
        let cells: Vec<&str> = line.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
        if cells.len() == 3 && !line.contains("Category") {
            out.push_str(&format!("| {} | {} | {} |\n", cells[0], cells[1], cells[2]));
        } else if let Some(score) = line.trim().strip_prefix("Score: ") {
            out.push_str(&format!("| | **Score: {score}** | |\n"));
        }
    }
    out
}

#[test]
fn markdown_crlf_colours_and_typos_read_the_same() {
    let want = parse(CONSOLE).expect("console");
    let markdown = as_markdown(CONSOLE);
    assert!(markdown.contains("| DD | Disk Write | 17.4 MB/s |"), "{markdown}");
    assert_eq!(parse(&markdown).expect("markdown"), want);
    let crlf = CONSOLE.replace('\n', "\r\n");
    assert_eq!(parse(&crlf).expect("crlf"), want);
    // Storage.sh's colours, with and without the escape character itself.
    let coloured = CONSOLE.replace("     Category", "\u{1b}[1m\u{1b}[4m     Category").replace(
        "IOZone                    4k random write           3287 KB/s",
        "IOZone                    4k random write           3287 KB/s[0m",
    );
    assert_eq!(parse(&coloured).expect("colours"), want);
    let typo = CONSOLE.replace("17.4 MB/s", "17.4 Mb/s").replace("40.97 MB/s", "40.97 MB/sec");
    assert_eq!(parse(&typo).expect("typo"), want);
    let collapsed: String =
        CONSOLE.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ") + "\n").collect();
    assert_eq!(parse(&collapsed).expect("collapsed"), want);
}

#[test]
fn console_lines_around_give_the_board_and_description() {
    let text = format!(
        "Board information: Manufacturer: Raspberry Pi Foundation - Model: Raspberry Pi 4 Model B Rev 1.1 - Architecture: armv7l - OS: Raspbian GNU/Linux 10 (buster)\n\
         HDParm: 40.97 MB/s - HDParmCached: 39.58 MB/s\nRunning dd tests ...\nDD Write Speed: 17.4 MB/s\n\
         RandRead: 7792 - RandWrite: 3287 - Read: 8966 - Write: 2859\n\
         Description: SanDisk Ultra 64GB <b>A1</b>\nAlias (leave blank for Anonymous):\n{CONSOLE}\nCompare with previous benchmark results at:\nhttps://pibenchmarks.com/\n"
    );
    let s = parse(&text).expect("parses");
    assert_eq!(s.score, 1132);
    assert_eq!(s.board.as_deref(), Some("Raspberry Pi 4 Model B Rev 1.1"));
    assert_eq!(s.arch.as_deref(), Some("armv7l"));
    assert_eq!(s.os.as_deref(), Some("Raspbian GNU/Linux 10 (buster)"));
    assert_eq!(s.description.as_deref(), Some("SanDisk Ultra 64GB bA1/b"));
    let report = to_report(&s, "card.txt", "0.1.0", None);
    assert_eq!(report.profile.as_deref(), Some("compat"));
    assert_eq!(report.score.as_ref().and_then(|s| s.pibenchmarks), Some(1132));
    assert_eq!(
        report.imported_from.as_ref().map(|i| (i.format.as_str(), i.source.as_str())),
        Some(("storage-sh", "card.txt"))
    );
    // The report passes the one validator, as `score` and `show` read it.
    let json = serde_json::to_value(&report).expect("json");
    let back = crate::input::report_from(json, crate::input::Use::Submission).expect("valid");
    assert_eq!(back, report);
}

#[test]
fn dd_in_gb_s_is_1000_mb_s_and_scored_as_printed() {
    // NVME's dd at 1.2 GB/s: its 297 × 1024 = 304128 leaves the total
    // (3901850) and 1.2 × 1024 = 1228.8 enters: 3598950.8 → 35989.
    let gb = NVME.replace("297 MB/s", "1.2 GB/s").replace("Score: 39018", "Score: 35989");
    let s = parse(&gb).expect("GB/s");
    assert_eq!((s.measurements[Figure::SeqWrite], s.score), (Some(1200.0), 35989));
    // Storage.sh before 2024 printed MB/s after dd's GB/s number; dd's own
    // console line keeps the unit.
    let old = NVME.replace("297 MB/s", "1.2 MB/s").replace("Score: 39018", "Score: 35989");
    assert_eq!(parse(&old).expect("old").measurements[Figure::SeqWrite], Some(1.2));
    let with_console = format!("DD Write Speed: 1.2 GB/s\n{old}");
    assert_eq!(parse(&with_console).expect("console").measurements[Figure::SeqWrite], Some(1200.0));
}

#[test]
fn numbers_as_people_print_them() {
    assert_eq!(rows::number("18,3"), Some(18.3));
    assert_eq!(rows::number("12,203"), Some(12203.0));
    assert_eq!(rows::number("1,234.5"), Some(1234.5));
    assert_eq!(rows::number("194,123"), Some(194123.0));
    for bad in ["", "-3", "1.2.3", "1,23,4", "12,34,567", ",5", "5.", "x", "1e9", "NaN"] {
        assert_eq!(rows::number(bad), None, "{bad}");
    }
}

#[test]
fn partial_and_inconsistent_texts_are_refused_in_one_line() {
    let cases: [(String, &str); 9] = [
        (
            CONSOLE.replace("IOZone                    4k write                  2859 KB/s\n", ""),
            "the `IOZone 4k write` row is missing",
        ),
        (CONSOLE.replace("2807 IOPS (11228 KB/s)", " IOPS ( KB/s)"), "the `FIO 4k random read` row has no figure"),
        (CONSOLE.replace("Score: 1132", "Score: 1133"), "the printed score is 1133 but the table's figures give 1132"),
        (CONSOLE.replace("Score: 1132", "Score: "), "the Score line is empty"),
        (CONSOLE.replace("                          Score: 1132\n", ""), "the table has no `Score:` line"),
        (format!("{CONSOLE}\n{NVME}"), "2 Storage.sh summary tables"),
        ("Hello, this is not a benchmark.\nScore: 12\n".to_owned(), "no Storage.sh summary table found"),
        (CONSOLE.replace("838 IOPS (3352 KB/s)", "838 IOPS (9352 KB/s)"), "do not agree"),
        (CONSOLE.replace("17.4 MB/s", "17.4 IOPS"), "not a figure in MB/s or GB/s"),
    ];
    for (text, want) in cases {
        let err = parse(&text).expect_err(want).to_string();
        assert!(err.contains(want), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }
    // A failed hdparm (Storage.sh printed its unit alone) is only a note:
    // hdparm is not in the score.
    let s = parse(&CONSOLE.replace("39.58 MB/s", "MB/sec MB/s")).expect("hdparm cached missing");
    assert_eq!(s.measurements[Figure::CachedRead], None);
    assert_eq!(s.notes.len(), 1);
    let err = parse(&CONSOLE.replace("2807 IOPS (11228 KB/s)", "2807000000000 IOPS (11228000000000 KB/s)"))
        .expect_err("implausible")
        .to_string();
    assert!(err.contains("more than any storage device"), "{err}");
}

#[test]
fn a_markdown_copy_with_fio_bandwidth_on_rows_of_its_own() {
    // As pxpunx/rpi's Compute Blade pages lay it out (fio's KB/s after its
    // IOPS, thousands grouped, the score in bold): 12,132 IOPS with 48,530 KB/s.
    let text = "| Category | Test | Result |\n|:-|:-|:-|\n| DD | Disk Write | 132 MB/s |\n\
| HDParm | Disk Read | 352.04 MB/s |\n| HDParm | Cached Disk Read | 349.51 MB/s |\n\
| FIO | 4k Random Read | 12,132 IOPS |\n| FIO | 4k Random Write | 41,967 IOPS |\n\
| FIO | 4k Random Read | 48,530 KB/s |\n| FIO | 4k Random Write | 167,868 KB/s |\n\
| IOZone | 4k Read | 90,193 KB/s |\n| IOZone | 4k Write | 57,748 KB/s |\n\
| IOZone | 4k Random Read | 43,397 KB/s |\n| IOZone | 4k Random Write | 89,487 KB/s |\n| **Score** | | 16,407 |\n";
    // That page's fio rows were swapped when it was typed up: its figures
    // give 18197, and 16407 only with read and write exchanged. Refused, and
    // the line says what the figures give and that the swap would fit.
    let err = parse(text).expect_err("inconsistent").to_string();
    assert!(err.contains("the printed score is 16407 but the table's figures give 18197"), "{err}");
    assert!(err.contains("FIO read and write rows exchanged"), "{err}");
    let fixed = text
        .replace("| 4k Random Read | 12,132 IOPS", "| 4k Random Read | 41,967 IOPS")
        .replace("| 4k Random Write | 41,967 IOPS", "| 4k Random Write | 12,132 IOPS");
    let fixed =
        fixed.replace("48,530 KB/s", "TMP").replace("167,868 KB/s", "48,530 KB/s").replace("TMP", "167,868 KB/s");
    let s = parse(&fixed).expect("parses");
    assert_eq!((s.score, s.measurements[Figure::RandReadQd64]), (16407, Some(41967.0)));
    // A bandwidth that does not match its IOPS is still caught.
    let err = parse(&fixed.replace("48,530 KB/s", "58,530 KB/s")).expect_err("mismatch");
    assert!(matches!(err, ImportError::FioMismatch { .. }), "{err}");
}

#[test]
fn a_score_written_in_the_sentence_before_a_markdown_table() {
    // As maroskukan/k3s-on-rpi lays its cards out: the score moved out of
    // the table into the line before it, `… scored **1430**.`
    let card = |name: &str, score: &str| {
        format!(
            "{name} scored **{score}**.\n\n| Category | Test | Result |\n| -------- | ---- | ------ |\n\
| HDParm   | Disk Read        | 34.97 MB/s             |\n| HDParm   | Cached Disk Read | 37.32 Mb/s             |\n\
| DD       | Disk Write       | 25.3 MB/s              |\n| FIO      | 4k random read   | 3434 IOPS (13738 KB/s) |\n\
| FIO      | 4k random write  | 1147 IOPS (4589 KB/s)  |\n| IOZone   | 4k read          | 11081 KB/s             |\n\
| IOZone   | 4k write         | 3767 KB/s              |\n| IOZone   | 4k random read   | 10954 KB/s             |\n\
| IOZone   | 4k random write  | 3330 KB/s              |\n\n"
        )
    };
    let s = parse(&card("Samsung Evo Plus 64 GB", "1430")).expect("parses");
    assert_eq!((s.score, s.measurements[Figure::CachedRead]), (1430, Some(37.32)));
    // Each sentence scores the table after it, not the one before.
    let two = format!("{}{}", card("A", "1430"), card("B", "1431"));
    let all: Vec<_> = parse_all(&two).into_iter().map(|r| r.map(|s| s.score)).collect();
    assert_eq!(all[0], Ok(1430));
    assert!(matches!(all[1], Err(ImportError::ScoreMismatch { printed: 1431, computed: 1430, .. })), "{all:?}");
    // A Score line of the table's own wins over the sentence; prose that
    // only mentions a score is no score.
    let own = format!("{}Score: 1430\n", card("A", "999"));
    assert_eq!(parse(&own).map(|s| s.score), Ok(1430));
    let prose = card("A", "1430").replace("scored **1430**.", "scored well, 1430 points");
    assert_eq!(parse(&prose).map(|s| s.score), Err(ImportError::NoScore));
}

#[test]
fn every_table_of_a_page_is_read_on_its_own() {
    let both = format!("## SD card\n```\n{CONSOLE}```\n\n## NVMe\n```\n{NVME}```\n");
    let all: Vec<u64> = parse_all(&both).into_iter().map(|r| r.expect("each").score).collect();
    assert_eq!(all, [1132, 39018]);
}

/// A table in one of the pasted styles, from figures whose score follows.
fn styled(values: &[(Figure, f64)], score: u64, style: u8) -> String {
    let mut lines = vec!["     Category                  Test                      Result     ".to_owned()];
    for figure in STORAGE_SH {
        let words = row_name(figure);
        let Some((_, v)) = values.iter().find(|(f, _)| *f == figure) else { continue };
        let result = match figure {
            Figure::SeqRead | Figure::CachedRead => format!("{v:.2} MB/sec"),
            Figure::SeqWrite if *v >= 1000.0 => format!("{:.1} GB/s", v / 1000.0),
            Figure::SeqWrite if *v >= 100.0 => format!("{v:.0} MB/s"),
            Figure::SeqWrite => format!("{v:.1} MB/s"),
            Figure::RandReadQd64 | Figure::RandWriteQd64 => format!("{v:.0} IOPS ({:.0} KB/s)", v * 4.0),
            _ => format!("{v:.0} KB/s"),
        };
        let name = row_name(figure);
        let (cat, test) = name.split_at(name.find(' ').unwrap_or(0));
        assert!(words.len() > 3);
        lines.push(match style % 3 {
            0 => format!("{:<25} {:<25} {:<25}", cat, test.trim(), result),
            1 => format!("| {} | {} | {} |", cat, test.trim(), result),
            _ => format!("{} {} {}", cat, test.trim(), result.replace("MB/s", "Mb/s")),
        });
    }
    lines.push(String::new());
    lines.push(format!("                          Score: {score}"));
    let end = if style >= 3 { "\r\n" } else { "\n" };
    lines.join(end) + end
}

fn printed_figures() -> impl Strategy<Value = Vec<(Figure, f64)>> {
    (0u32..200_000, 0u32..100_000, 0u32..9_000, 0u32..300_000, 0u32..300_000, prop::array::uniform4(0u32..400_000))
        .prop_map(|(hd, hdc, dd, rr, rw, io)| {
            // dd: tenths below 100, whole MB/s to 999, tenths of GB/s from 1000.
            let dd = match dd {
                0..1000 => f64::from(dd) / 10.0,
                1000..1900 => f64::from(dd - 900),
                _ => f64::from(dd / 100) * 100.0,
            };
            vec![
                (Figure::SeqRead, f64::from(hd) / 100.0),
                (Figure::CachedRead, f64::from(hdc) / 100.0),
                (Figure::SeqWrite, dd),
                (Figure::RandReadQd64, f64::from(rr)),
                (Figure::RandWriteQd64, f64::from(rw)),
                (Figure::SeqRead4kQd1, f64::from(io[0])),
                (Figure::SeqWrite4kQd1, f64::from(io[1])),
                (Figure::RandRead4kQd1, f64::from(io[2])),
                (Figure::RandWrite4kQd1, f64::from(io[3])),
            ]
        })
}

proptest! {
    #[test]
    fn any_printed_table_reads_back_to_its_figures_and_score(values in printed_figures(), style in 0u8..6) {
        let mut m = Measurements::default();
        for (f, v) in &values {
            m.set_figure(*f, *v);
        }
        let score = crate::score::pibenchmarks(&m, true).pibenchmarks.expect("whole");
        let text = styled(&values, score, style);
        let s = parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(s.score, score);
        for (f, v) in &values {
            let got = s.measurements.figure(*f).expect("figure");
            prop_assert!((got - v).abs() < 1e-9, "{} {} {}", f, got, v);
        }
        // One more or one less than the figures give is refused.
        let off = styled(&values, score + 1, style);
        let refused = matches!(parse(&off), Err(ImportError::ScoreMismatch { .. }));
        prop_assert!(refused);
    }

    #[test]
    fn any_text_is_read_or_refused_in_one_line(text in ".{0,400}", cut in 0usize..600) {
        for candidate in [text.clone(), format!("{}{}", &CONSOLE[..cut.min(CONSOLE.len())], text)] {
            match parse(&candidate) {
                Ok(s) => prop_assert_eq!(crate::score::pibenchmarks(&s.measurements, true).pibenchmarks, Some(s.score)),
                Err(e) => prop_assert!(!e.to_string().contains('\n')),
            }
        }
    }
}
