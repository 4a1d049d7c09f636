//! The held rule against bursts and for honest change, through the real
//! server on SQLite and on a throwaway PostgreSQL cluster, with the
//! server's clock moved by the test (`STORAGE_SCORE_LEADERBOARD_TEST_CLOCK`)
//! so that weeks of arrivals take seconds:
//!
//! - bursts of 1 to 20 new networks (IPv6 /48s) at 0.5×, 0.7×, 0.9×, 1.1×,
//!   1.3× and 2× of an established row and just inside and outside its
//!   band's edges, then honest networks a day and two weeks later: the
//!   move of the row's published median from what it is without the
//!   burst, right after it and later (at most 5% for bursts of up to ten;
//!   a table on stderr), and from the same row as judged without the
//!   burst's networks (at most 5% for any burst);
//! - drawn honest rows whose card changes by a fifth (a firmware update)
//!   or gains a faster board revision: how many networks are held, and
//!   for how long;
//! - a card page with a burst held, at a phone's 390 px, in Chromium.
//!
//! The same tables, pure and over more rows, are the unit tests of
//! crates/leaderboard/src/store/held_tests.rs.

use storage_score_test_support::lb_backends as backends;
use storage_score_test_support::{chromium, leaderboard};

use backends::*;
use leaderboard::{Leaderboard, Options, TestClock};
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

const DAY: i64 = 86_400;
/// 2026-09-21: the simulated time starts here.
const START: i64 = 1_790_000_000;

/// A server behind a trusted proxy on 127.0.0.1 (so `X-Forwarded-For`
/// names each network), on a clock the test moves.
struct Board {
    server: Leaderboard,
    clock: TestClock,
    networks: u32,
}

impl Board {
    fn start(backend: Backend) -> Board {
        let clock = TestClock::at(START);
        let options = Options {
            args: vec!["--trusted-proxy".into(), "127.0.0.1/32".into()],
            clock: Some(clock.path.clone()),
            ..Options::default()
        };
        Board { server: start(backend, options), clock, networks: 0 }
    }

    /// Posts the card `product` at `factor` of the fixture's figures from a
    /// network never seen before (an IPv6 /48): its reply.
    fn post(&mut self, product: &str, factor: f64) -> Value {
        self.networks += 1;
        let network = format!("2001:db8:{:x}::1", self.networks);
        let reply = post_as(&self.server, &network, &body(product, factor));
        assert_eq!(reply.status, 201, "{}", reply.text());
        assert_eq!(reply.json()["status"], "public", "{}", reply.text());
        reply.json()
    }

    /// The Pi 4 row of `product`.
    fn row(&self, product: &str) -> Value {
        let reply = self.server.get(&format!("/api/v1/leaderboard?q={product}&limit=10"));
        assert_eq!(reply.status, 200, "{}", reply.text());
        let rows: Vec<Value> = reply.json()["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["card"]["product_name"] == product)
            .cloned()
            .collect();
        assert_eq!(rows.len(), 1, "{rows:?}");
        rows[0].clone()
    }
}

/// A card on a Pi 4 at DDR50, every figure scaled by `factor`: its random
/// IOPS at half the fixture's, so that twice them is still within what the
/// Pi 4's slot is published reaching (and the result public, not flagged).
fn body(product: &str, factor: f64) -> Value {
    let mut r = report();
    r["device"]["sd"]["cid"]["product_name"] = json!(product);
    r["device"]["sd"]["host"] = json!({"clock_hz": 50000000, "timing": "sd uhs DDR50", "bus_width_bits": 4});
    for key in ["rand_read_4k_qd64_iops", "rand_write_4k_qd64_iops"] {
        r["measurements"][key] = json!(r["measurements"][key].as_f64().unwrap() / 2.0);
    }
    for (_, v) in r["measurements"].as_object_mut().unwrap() {
        *v = json!((v.as_f64().unwrap() * factor * 100.0).round() / 100.0);
    }
    r
}

fn score_of(reply: &Value) -> i64 {
    reply["score"]["pibenchmarks"].as_i64().expect("a score")
}

/// How far `after` is from `before`, in percent.
fn moved(before: i64, after: i64) -> f64 {
    (after - before).abs() as f64 * 100.0 / before as f64
}

const SIZES: [usize; 9] = [1, 2, 3, 5, 7, 10, 11, 15, 20];

/// Where a burst lies: a factor on the row's median, or on an end of its
/// band (p10 ÷ 1.5 low, p90 × 1.5 high).
const POSITIONS: [(&str, f64, Option<bool>); 10] = [
    ("0.5x", 0.5, None),
    ("0.7x", 0.7, None),
    ("0.9x", 0.9, None),
    ("1.1x", 1.1, None),
    ("1.3x", 1.3, None),
    ("2x", 2.0, None),
    ("band low -1% (in)", 1.01, Some(false)),
    ("band low +1% (out)", 0.99, Some(false)),
    ("band high -1% (in)", 0.99, Some(true)),
    ("band high +1% (out)", 1.01, Some(true)),
];

/// The nearest-rank median of `scores`.
fn median(mut scores: Vec<i64>) -> i64 {
    scores.sort_unstable();
    scores[scores.len().div_ceil(2) - 1]
}

/// One honest network's results, alike in a row and its twin.
fn post_both(board: &mut Board, (product, twin): (&str, &str), honest: &mut Vec<(i64, i64)>, f: f64) {
    let reply = board.post(product, f);
    honest.push((reply["id"].as_i64().unwrap(), score_of(&reply)));
    board.post(twin, f);
}

/// One burst against a fresh established row (seven honest networks over
/// a week, ±10%), and the same row without it (its twin, card `twin`,
/// with the same networks' figures at the same times): the move of the
/// row's published median from its twin's right after the burst, and the
/// worst a day and two weeks later (an honest network arriving in both
/// each time); then the same two from the median of the row as the server
/// judged it, the burst's networks taken out (its other counted results).
fn one_burst(
    board: &mut Board,
    rng: &mut impl Rng,
    (product, twin): (&str, &str),
    size: usize,
    at: (f64, Option<bool>),
) -> [f64; 4] {
    let base = board.clock.now();
    let unit = score_of(&board.post(&format!("P{}", &product[1..]), 1.0)) as f64;
    // The row's honest results: (id, score).
    let mut honest = Vec::new();
    for day in 0..7 {
        board.clock.set(base + day * DAY);
        post_both(board, (product, twin), &mut honest, rng.gen_range(0.9..1.1));
    }
    let row = board.row(twin);
    let (p10, p90) = (row["p10_score"].as_f64().unwrap(), row["p90_score"].as_f64().unwrap());
    let target = match at {
        (f, None) => row["median_score"].as_f64().unwrap() * f,
        (f, Some(false)) => p10 / 1.5 * f,
        (f, Some(true)) => p90 * 1.5 * f,
    };
    board.clock.set(base + 30 * DAY);
    for i in 0..size {
        board.clock.advance(60);
        board.post(product, target / unit * (1.0 + i as f64 / 10_000.0));
    }
    let gaps = |board: &Board, honest: &[(i64, i64)]| {
        let with = board.row(product)["median_score"].as_i64().unwrap();
        let twin = board.row(twin)["median_score"].as_i64().unwrap();
        let counted =
            honest.iter().filter(|(id, _)| board.server.get(&format!("/api/v1/results/{id}")).json()["held"] != true);
        [moved(twin, with), moved(median(counted.map(|(_, s)| *s).collect()), with)]
    };
    let [now, own_now] = gaps(board, &honest);
    let (mut later, mut own_later): (f64, f64) = (0.0, 0.0);
    for day in [31, 45] {
        board.clock.set(base + day * DAY);
        post_both(board, (product, twin), &mut honest, rng.gen_range(0.9..1.1));
        let [gap, own] = gaps(board, &honest);
        (later, own_later) = (later.max(gap), own_later.max(own));
    }
    board.clock.set(base + 60 * DAY);
    [now, later, own_now, own_later]
}

fn bursts_of_ten_or_fewer_move_no_established_median(backend: Backend) {
    let mut board = Board::start(backend);
    let mut rng = rand::rngs::StdRng::seed_from_u64(41);
    let mut table = format!("| burst | {} |\n|---|", POSITIONS.map(|p| p.0).join(" | "));
    table.push_str(&"---|".repeat(POSITIONS.len()));
    let mut failures = Vec::new();
    for (s, size) in SIZES.iter().enumerate() {
        table.push_str(&format!("\n| {size} |"));
        for (p, (name, factor, edge)) in POSITIONS.iter().enumerate() {
            let (product, twin) = (format!("H{s}{p:03}"), format!("G{s}{p:03}"));
            let [now, later, own_now, own_later] =
                one_burst(&mut board, &mut rng, (&product, &twin), *size, (*factor, *edge));
            table.push_str(&format!(" {now:.1}/{later:.1} ({own_now:.1}/{own_later:.1}) |"));
            // The bounds: the published median within 5% of the row as
            // judged without the burst, always, and of its twin for a burst
            // of up to ten, right after it and later.
            if own_now > 5.0 || own_later > 5.0 || (*size <= 10 && (now > 5.0 || later > 5.0)) {
                failures.push(format!("{size} networks at {name}: {now:.1}/{later:.1} ({own_now:.1}/{own_later:.1})"));
            }
        }
    }
    eprintln!(
        "{backend:?}: move (%) of an established published median (7 honest networks) by a burst, from the same \
         row without it (its twin): right after it / worst a day or two weeks later (and from the same row as \
         judged, the burst's networks taken out):\n{table}"
    );
    assert!(failures.is_empty(), "bursts of up to ten moved a median more than 5%: {failures:?}");
}

/// What honest rows saw: networks, how many were held, how long each waited.
#[derive(Debug, Default)]
struct Tally {
    networks: usize,
    held: usize,
    waits: Vec<i64>,
    still_held: usize,
}

/// An honest row for `days` at `per_day` networks a day (a Poisson
/// stream), around the fixture's figures ±10%; from `change_day` on every
/// newcomer at `change` (a firmware update) or, with `board_revision`,
/// half of them (a faster board revision in the same row).
#[allow(clippy::too_many_arguments)]
fn honest_row(
    board: &mut Board,
    rng: &mut impl Rng,
    product: &str,
    per_day: f64,
    days: i64,
    change_day: i64,
    change: f64,
    board_revision: bool,
    tally: &mut Tally,
) {
    let base = board.clock.now();
    let mut held: Vec<(i64, i64)> = Vec::new();
    let mut t = 0i64;
    loop {
        t += (-(1.0 - rng.gen_range(0.0..1.0f64)).ln() / per_day * DAY as f64) as i64 + 1;
        if t > days * DAY {
            break;
        }
        board.clock.set(base + t);
        let changed = t >= change_day * DAY && (!board_revision || rng.gen_bool(0.5));
        let reply = board.post(product, rng.gen_range(0.9..1.1) * if changed { change } else { 1.0 });
        tally.networks += 1;
        if reply["held"] == true {
            tally.held += 1;
            held.push((reply["id"].as_i64().unwrap(), t));
        }
        held.retain(|(id, since)| {
            let now_held = board.server.get(&format!("/api/v1/results/{id}")).json()["held"] == true;
            if !now_held {
                tally.waits.push(t - since);
            }
            now_held
        });
    }
    for (_, since) in held {
        tally.waits.push(days * DAY - since);
        tally.still_held += 1;
    }
    board.clock.set(base + (days + 30) * DAY);
}

fn honest_change_is_held_briefly(backend: Backend) {
    let mut board = Board::start(backend);
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut tally = Tally::default();
    let mut rows = 0;
    for (per_day, change, revision) in [
        (0.5, 1.0, false),
        (2.0, 1.0, false),
        (0.5, 1.2, false),
        (2.0, 1.2, false),
        (0.5, 0.8, false),
        (2.0, 0.8, false),
        (0.5, 1.25, true),
        (2.0, 1.25, true),
        (5.0, 1.2, false),
        (5.0, 0.8, false),
    ] {
        rows += 1;
        let change_day = rng.gen_range(10..25);
        honest_row(&mut board, &mut rng, &format!("F{rows:04}"), per_day, 45, change_day, change, revision, &mut tally);
    }
    tally.waits.sort_unstable();
    let longest = tally.waits.last().copied().unwrap_or(0);
    let median_wait = tally.waits.get(tally.waits.len() / 2).copied().unwrap_or(0);
    eprintln!(
        "{backend:?}: {rows} honest rows over 45 days, {} networks: {} held ({:.1}%), median wait {:.1} h, longest {:.1} days, {} still held at the end",
        tally.networks,
        tally.held,
        tally.held as f64 * 100.0 / tally.networks as f64,
        median_wait as f64 / 3600.0,
        longest as f64 / DAY as f64,
        tally.still_held,
    );
    // Few held, none for long: it counts once the next days' networks fill
    // the row around it (rows of one network every two days included).
    assert!(tally.held * 20 <= tally.networks, "{} held of {}", tally.held, tally.networks);
    assert!(longest <= 14 * DAY, "an honest network waited {:.1} days", longest as f64 / DAY as f64);
}

on_both_backends!(bursts_of_ten_or_fewer_move_no_established_median, honest_change_is_held_briefly);

/// The burst (ten /48s at 0.7 of a row) held, on the card page at
/// 390 px: the held results apart, each with why. The screenshot goes to
/// target/leaderboard-screenshots/card-burst-held-390.png.
#[test]
#[ignore = "needs chromium"]
fn a_card_page_with_a_burst_held_at_390_px() {
    let mut board = Board::start(Backend::Sqlite);
    for (day, f) in [0.95, 1.0, 1.03, 0.97, 1.06, 0.99, 1.01].iter().enumerate() {
        board.clock.set(START + day as i64 * DAY);
        board.post("BURST", *f);
    }
    board.clock.set(START + 30 * DAY);
    for i in 0..10 {
        board.clock.advance(60);
        board.post("BURST", 0.7 + f64::from(i) / 1000.0);
    }
    let row = board.row("BURST");
    assert!(row["held"].as_i64().unwrap() > 0, "{row}");
    let card = row["card_key"].as_str().unwrap().to_owned();
    let page = board.server.get(&format!("/cards/{card}")).text();
    let held = page.split("<ul id=\"held\">").nth(1).expect("a held list").split("</ul>").next().unwrap();
    assert_eq!(held.matches("<li>").count() as i64, row["held"].as_i64().unwrap(), "{held}");
    assert!(held.contains("came with a burst of new networks"), "{held}");
    let exe = std::env::current_exe().unwrap();
    let shots = exe.ancestors().nth(3).unwrap().join("leaderboard-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let mut browser = chromium::Cdp::launch(390, 844, true).expect("chromium");
    browser.navigate(&format!("{}/", board.server.url)).unwrap();
    browser.navigate(&format!("{}/cards/{card}#held", board.server.url)).unwrap();
    let file = shots.join("card-burst-held-390.png");
    browser.screenshot(&file, false).unwrap();
    assert!(std::fs::metadata(&file).unwrap().len() > 5_000, "a real picture");
    let width = browser.eval("document.documentElement.scrollWidth").unwrap().as_u64().unwrap();
    assert!(width <= 390, "the card page at 390 px is {width} px wide");
}
