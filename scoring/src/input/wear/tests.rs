//! The endurance and power-loss validator over reports made the way the
//! commands make them, and over each way a hostile body can contradict
//! itself.

use serde_json::{Value, json};

use super::*;
use crate::endurance::{Pass, Stopped};
use crate::power_loss::Cycle;

fn identity() -> Value {
    json!({"kind": "sd", "capacity_bytes": 409600,
        "sd": {"cid": {"manufacturer_id": 159, "oem_id": "TI", "product_name": "SD64G", "product_revision": "6.1",
                       "serial": 915931237, "manufactured": "2019-11"}}})
}

/// Three passes over 100 blocks: none failed, 5, then 10 more.
fn endurance() -> Value {
    let mut r = EnduranceReport::new(
        "2026-12-06T18:00:00Z",
        "storage-score 0.1.0",
        "/dev/sdb",
        "size=409600;cid=9f5449534436344761;",
        409_600,
        16,
    );
    for pass in 1..=3u32 {
        let new = u64::from(pass - 1) * 5;
        r.bad_blocks += new;
        let mut p = Pass { pass, bytes_written: 409_600, bytes_read: 409_600, write_mb_s: 20.5, ..Pass::default() };
        p.new_bad_blocks = new;
        p.read_errors = new;
        p.bad_blocks = r.bad_blocks;
        r.passes.push(p);
        r.total_written_bytes += 409_600;
        r.total_read_bytes += 409_600;
        r.mark_milestones(pass);
    }
    r.stopped = Some(Stopped::Passes);
    r.stopped_at_pass = Some(3);
    let mut v = serde_json::to_value(r).unwrap();
    v["identity"] = identity();
    v
}

fn power_loss() -> Value {
    let c =
        |n| Cycle { cycle: n, written: 40, acknowledged: 30, returned: 1, back_after_s: Some(0.4), ..Cycle::default() };
    let mut v = serde_json::to_value(PowerLossReport::new("t".into(), "/dev/sdc".into(), vec![c(1), c(2)])).unwrap();
    v["identity"] = identity();
    v
}

/// A change made to a report that must make it refused.
type Edit = fn(&mut Value);

fn refused(v: &Value) -> InputError {
    match wear_from(v.clone()) {
        Ok(_) => panic!("taken: {v}"),
        Err(e) => e,
    }
}

#[test]
fn reports_as_the_commands_write_them_are_taken() {
    let WearReport::Endurance(r) = parse_wear(endurance().to_string().as_bytes()).unwrap() else { panic!("kind") };
    assert_eq!(r.passes.len(), 3);
    assert_eq!(
        r.identity.as_ref().and_then(|d| d.sd.as_ref()).and_then(|s| s.cid.as_ref()).unwrap().product_name,
        "SD64G"
    );
    assert!(matches!(parse_wear(power_loss().to_string().as_bytes()).unwrap(), WearReport::PowerLoss(_)));
}

#[test]
fn numbers_that_cannot_be_are_422() {
    for (path, value, said) in [
        ("/passes/1/bytes_written", json!(-1), "passes[1].bytes_written"),
        ("/passes/1/new_bad_blocks", json!(1e30), "passes[1].new_bad_blocks"),
        ("/passes/0/write_mb_s", json!(1e12), "passes[0].write_mb_s"),
        ("/total_written_bytes", json!(1.5), "total_written_bytes"),
        ("/passes/0/pass", json!(5_000_000_000u64), "passes[0].pass"),
        ("/milestones/first", json!(-2), "milestones.first"),
    ] {
        let mut v = endurance();
        *v.pointer_mut(path).unwrap() = value;
        let e = refused(&v);
        assert!(e.is_implausible(), "{path}: {e}");
        assert!(e.to_string().starts_with(said), "{path}: {e}");
    }
}

#[test]
fn milestones_and_counts_must_agree_with_the_passes() {
    let cases: Vec<(Edit, &str)> = vec![
        (|v| v["milestones"]["first"] = json!(1), "milestones.first: pass 1, but pass 2 first reached it"),
        (|v| v["milestones"]["50%"] = json!(3), "milestones.50%: pass 3, but no pass reached it"),
        (
            |v| {
                v["milestones"].as_object_mut().unwrap().remove("10%");
            },
            "milestones.10%: not reached, but pass 3",
        ),
        (|v| v["passes"][2]["bad_blocks"] = json!(12), "passes[2].bad_blocks: 12"),
        (|v| v["passes"][1]["pass"] = json!(7), "passes[1].pass: 7"),
        (|v| v["total_written_bytes"] = json!(1), "total_written_bytes: 1 written"),
        (|v| v["passes"][0]["mismatches"] = json!(4), "passes[0].mismatches"),
        (|v| v["passes"][0]["bytes_written"] = json!(10_000_000), "passes[0].bytes_written"),
        (|v| v["stopped_at_pass"] = json!(9), "stopped_at_pass"),
        (|v| v["block_bytes"] = json!(512), "block_bytes"),
        (
            |v| {
                v.as_object_mut().unwrap().remove("identity");
            },
            "identity: missing",
        ),
    ];
    for (edit, said) in cases {
        let mut v = endurance();
        edit(&mut v);
        let e = refused(&v);
        assert!(e.is_implausible(), "{said}: {e}");
        assert!(e.to_string().starts_with(said), "{said}: {e}");
        assert!(!e.to_string().contains('\n'));
    }
}

#[test]
fn power_loss_counts_must_add_up() {
    let cases: Vec<(Edit, &str)> = vec![
        (|v| v["totals"]["lost"] = json!(3), "totals: not the sums"),
        (|v| v["verdict"] = json!("lost"), "verdict: lost, but the totals say kept"),
        (|v| v["cycles"][0]["acknowledged"] = json!(41), "cycles[0].acknowledged"),
        (
            |v| {
                v["cycles"][0]["returned"] = json!(0);
                v["cycles"][0]["back_after_s"] = json!(null);
            },
            "cycles[0].returned: 0, yet later",
        ),
        (|v| v["cycles"][1]["cycle"] = json!(1), "cycles[1].cycle"),
        (|v| v["cycles"][1]["back_after_s"] = json!(-0.5), "cycles[1].back_after_s"),
    ];
    for (edit, said) in cases {
        let mut v = power_loss();
        edit(&mut v);
        let e = refused(&v);
        assert!(e.is_implausible(), "{said}: {e}");
        assert!(e.to_string().starts_with(said), "{said}: {e}");
    }
}

#[test]
fn strings_and_identity_follow_the_run_reports_rules() {
    let mut v = endurance();
    v["device"] = json!("<script>");
    let e = refused(&v);
    assert!(!e.is_implausible() && e.to_string().starts_with("device: the character '<'"), "{e}");
    let mut v = endurance();
    v["notes"] = json!(["bell\u{7}"]);
    assert!(refused(&v).to_string().starts_with("notes[0]: contains the control character"));
    let mut v = power_loss();
    v["identity"]["capacity_bytes"] = json!(-5);
    let e = refused(&v);
    assert!(e.is_implausible() && e.to_string().starts_with("identity.capacity_bytes"), "{e}");
    let mut v = power_loss();
    v["identity"]["kind"] = json!("floppy");
    assert!(refused(&v).to_string().starts_with("identity.kind"));
    let mut v = power_loss();
    v["schema"] = json!("storage-score-power-loss/9");
    assert!(refused(&v).to_string().starts_with("schema: "));
    assert!(parse_wear(b"\xff").is_err() && parse_wear(b"[1]").is_err() && parse_wear(b"{\"schema\": NaN}").is_err());
}

#[test]
fn sums_beyond_any_count_are_refused_not_overflowed() {
    // Twenty cycles at the largest count each: their sum is beyond a u64.
    let mut v = power_loss();
    let one = v["cycles"][0].clone();
    v["cycles"] = (1..=20u32)
        .map(|n| {
            let mut c = one.clone();
            c["cycle"] = json!(n);
            c["written"] = json!(MAX_COUNT);
            c["acknowledged"] = json!(MAX_COUNT);
            c
        })
        .collect();
    let e = refused(&v);
    assert!(e.is_implausible() && e.to_string().starts_with("totals: the cycles sum to more than"), "{e}");
}

/// Any byte of a report changed, dropped or doubled, any number replaced by
/// an extreme one: never a panic, and a refusal is one line.
#[test]
fn mutated_reports_never_panic() {
    let seeds = [endurance().to_string(), power_loss().to_string()];
    let extremes = ["-1", "0", "1e308", "18446744073709551615", "18446744073709551616", "4294967296", "0.5", "null"];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..6000 {
        let seed = &seeds[round % 2];
        let mut bytes = seed.clone().into_bytes();
        let at = (next() as usize) % bytes.len();
        match next() % 4 {
            0 => bytes[at] = (next() % 256) as u8,
            1 => {
                bytes.remove(at);
            }
            2 => bytes.insert(at, bytes[at]),
            _ => {
                // A number replaced by an extreme one.
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let digits: Vec<usize> = text.match_indices(|c: char| c.is_ascii_digit()).map(|(i, _)| i).collect();
                let start = digits[(next() as usize) % digits.len()];
                let end =
                    text[start..].find(|c: char| !c.is_ascii_digit() && c != '.').map_or(text.len(), |e| start + e);
                let extreme = extremes[(next() as usize) % extremes.len()];
                bytes = format!("{}{extreme}{}", &text[..start], &text[end..]).into_bytes();
            }
        }
        if let Err(e) = parse_wear(&bytes) {
            assert!(!e.to_string().contains('\n'), "{e}");
        }
    }
}
