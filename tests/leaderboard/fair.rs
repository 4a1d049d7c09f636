//! A leaderboard that one person cannot bend, tried as an adversary would,
//! against the real server binary on SQLite and on a throwaway PostgreSQL
//! cluster: clients on several loopback addresses (127.0.1.1, 127.0.2.1, …;
//! Linux routes all of 127.0.0.0/8 to this machine) poison a card's row,
//! rename it, split it with look-alike names, reuse ids; a database of the
//! first schema is upgraded; a thousand idle sockets try to starve it.

use storage_score_test_support::lb_backends as backends;
use storage_score_test_support::leaderboard;
use storage_score_test_support::postgres;

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use backends::*;
use leaderboard::{Leaderboard, Options, Response, request};
use serde_json::{Value, json};

/// The loopback address of client `n` (127.0.n.1: a /24 of its own).
fn client(n: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, n, 1))
}

/// The Kingston SD64G on a Pi 4 at DDR50, its figures scaled.
fn pi4_ddr50(factor: f64) -> Value {
    let mut r = report();
    r["device"]["sd"]["host"] = json!({"clock_hz": 50000000, "timing": "sd uhs DDR50", "bus_width_bits": 4});
    for (_, v) in r["measurements"].as_object_mut().unwrap() {
        *v = json!((v.as_f64().unwrap() * factor * 10.0).round() / 10.0);
    }
    r
}

fn rows(server: &Leaderboard, query: &str) -> Vec<Value> {
    let reply = server.get(&format!("/api/v1/leaderboard?{query}"));
    assert_eq!(reply.status, 200, "{query}: {}", reply.text());
    reply.json()["rows"].as_array().unwrap().clone()
}

/// The row of the SD64G on the Pi 4 (there must be exactly one).
fn sd64g_row(server: &Leaderboard) -> Value {
    let found: Vec<Value> = rows(server, "q=sd64g&limit=500")
        .into_iter()
        .filter(|r| r["card"]["product_name"] == "SD64G" && r["family"] == "Raspberry Pi 4")
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].clone()
}

fn post(server: &Leaderboard, from: u8, body: &Value) -> Response {
    server.post_report_from(client(from), &body.to_string(), &key())
}

/// Nearest-rank median, as the server computes it.
fn median(values: &[i64]) -> i64 {
    let mut v = values.to_vec();
    v.sort();
    v[(v.len() as f64 * 0.5).ceil() as usize - 1]
}

fn five_genuine_submitters(server: &Leaderboard) -> Vec<i64> {
    [0.95, 0.97, 1.0, 1.02, 0.9]
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let reply = post(server, i as u8 + 1, &pi4_ddr50(*f));
            assert_eq!(reply.status, 201, "{}", reply.text());
            assert_eq!(reply.json()["status"], "public");
            reply.json()["score"]["pibenchmarks"].as_i64().unwrap()
        })
        .collect()
}

fn poisoning_from_one_address_moves_nothing(backend: Backend) {
    let server = start(backend, Options::default());
    let genuine = five_genuine_submitters(&server);
    let before = sd64g_row(&server);
    assert_eq!(before["median_score"], median(&genuine));
    assert_eq!((before["submitters"].as_i64(), before["samples"].as_i64()), (Some(5), Some(5)));
    assert_eq!(before["rank"], 1);

    // Twenty fabricated results, 12 000 read and write IOPS, from one
    // address, each under a new key: all stored, all flagged.
    let started = Instant::now();
    for i in 0..20 {
        let mut r = pi4_ddr50(1.0 + f64::from(i) / 1000.0);
        r["measurements"]["rand_read_4k_qd64_iops"] = json!(12000);
        r["measurements"]["rand_write_4k_qd64_iops"] = json!(12000);
        let reply = post(&server, 50, &r);
        assert_eq!(reply.status, 201, "{}", reply.text());
        let created = reply.json();
        assert_eq!(created["status"], "flagged", "{created}");
        let reason = created["reasons"][0].as_str().unwrap();
        assert!(reason.contains("beyond what the Raspberry Pi 4 SD slot"), "{reason}");
        assert!(created["standing"].is_null());
    }
    eprintln!("twenty fabricated results stored, flagged, in {:.2} s", started.elapsed().as_secs_f64());
    let after = sd64g_row(&server);
    assert_eq!(after["median_score"], before["median_score"], "median unchanged");
    assert_eq!((after["submitters"].as_i64(), after["samples"].as_i64()), (Some(5), Some(5)));

    // Twenty plausible results (within every ceiling) from one address:
    // one more submitter, and the median moves by at most one sample.
    let mut spammer = Vec::new();
    for i in 0..20 {
        let reply = post(&server, 51, &pi4_ddr50(1.3 + f64::from(i) / 1000.0));
        assert_eq!(reply.status, 201);
        assert_eq!(reply.json()["status"], "public", "{}", reply.text());
        spammer.push(reply.json()["score"]["pibenchmarks"].as_i64().unwrap());
    }
    let row = sd64g_row(&server);
    assert_eq!((row["submitters"].as_i64(), row["samples"].as_i64()), (Some(6), Some(25)));
    let mut samples = genuine.clone();
    samples.push(median(&spammer));
    assert_eq!(row["median_score"], median(&samples), "the spammer weighs one sample");
    let mut sorted = genuine.clone();
    sorted.sort();
    let moved = row["median_score"].as_i64().unwrap();
    assert!((sorted[1]..=sorted[3]).contains(&moved), "{moved} is a neighbour of the old median {sorted:?}");
    eprintln!(
        "median: 5 genuine {}, +20 fabricated {}, +20 plausible from one address {moved}",
        before["median_score"], after["median_score"]
    );

    // The same body under ten keys from one address, and from ten other
    // addresses: counted once.
    let copy = pi4_ddr50(0.99);
    for _ in 0..10 {
        assert_eq!(post(&server, 52, &copy).status, 201);
    }
    let row = sd64g_row(&server);
    assert_eq!((row["submitters"].as_i64(), row["samples"].as_i64()), (Some(7), Some(26)));
    for n in 60..70 {
        assert_eq!(post(&server, n, &copy).json()["status"], "public");
    }
    let row = sd64g_row(&server);
    assert_eq!(
        (row["submitters"].as_i64(), row["samples"].as_i64()),
        (Some(7), Some(26)),
        "a copy of a report is no new sample, from any address"
    );
    // Every result is stored: 5 + 20 + 20 + 10 + 10.
    assert_eq!(count(backend, &server), 65);
}

fn identity_cannot_be_bent(backend: Backend) {
    let server = start(backend, Options::default());
    five_genuine_submitters(&server);
    let before = sd64g_row(&server);
    assert_eq!(before["card"]["manufacturer"], "Kingston");
    assert_eq!(rows(&server, "class=A2").len(), 1);

    // One report says the card is a "SanDisk Extreme PRO" of class 10 only.
    let mut renaming = pi4_ddr50(1.01);
    renaming["device"]["sd"]["cid"]["manufacturer"] = json!("SanDisk Extreme PRO");
    renaming["device"]["sd"]["class_label"] = json!("Class 10");
    assert_eq!(post(&server, 40, &renaming).json()["status"], "public");
    let after = sd64g_row(&server);
    assert_eq!(after["card"]["manufacturer"], "Kingston", "the maker comes from the MID");
    assert_eq!(after["card"]["class_label"], "A2 Class 10 V30 U3", "the majority's class");
    assert_eq!(after["name"], before["name"]);
    assert_eq!(rows(&server, "class=A2").len(), 1, "still in the A2 filter");

    // Look-alike product names: refused, naming the field.
    for name in ["SD64\u{200b}G", "SD64G\u{a0}", "SD\u{2060}64G", "SD64\u{413}", "SD6\u{30a}4G"] {
        let mut r = pi4_ddr50(1.0);
        r["device"]["sd"]["cid"]["product_name"] = json!(name);
        let reply = post(&server, 41, &r);
        assert_eq!(reply.status, 422, "{name:?}: {}", reply.text());
        assert!(error_of(&reply).starts_with("device.sd.cid.product_name: "), "{}", error_of(&reply));
    }
    // Look-alike names elsewhere: NFKC folds what looks the same, the rest is refused.
    let usb = |model: &str, factor: f64| {
        let mut r = pi4_ddr50(factor);
        r["device"] = json!({"kind": "usb", "vendor": "SanDisk", "model": model, "firmware": "1.00",
                              "capacity_bytes": 32000000000u64, "usb": {"id": "0781:5583", "speed_mbps": 5000}});
        r
    };
    assert_eq!(post(&server, 42, &usb("Ultra Fit", 1.0)).status, 201);
    assert_eq!(post(&server, 43, &usb("Ultra\u{a0}Fit", 1.1)).status, 201, "NBSP is a space");
    assert_eq!(post(&server, 44, &usb("Ｕｌｔｒａ  Fit", 1.2)).status, 201, "full-width letters fold");
    assert_eq!(rows(&server, "kind=usb").len(), 1, "one card, one row");
    assert_eq!(rows(&server, "kind=usb")[0]["submitters"], 3);
    for (model, what) in [("Ultra\u{200b}Fit", "U+200B"), ("Ultra F\u{456}t", "Latin and Cyrillic")] {
        let reply = post(&server, 45, &usb(model, 1.0));
        assert_eq!(reply.status, 422);
        assert!(
            error_of(&reply).starts_with("device.model: ") && error_of(&reply).contains(what),
            "{}",
            error_of(&reply)
        );
    }

    // The board in lower case, with another revision: the same row.
    let mut lower = pi4_ddr50(0.98);
    lower["system"]["board"] = json!("raspberry pi 4 model b rev 1.5");
    assert_eq!(post(&server, 46, &lower).status, 201);
    let row = sd64g_row(&server);
    assert_eq!(row["board"], "Raspberry Pi 4 Model B");
    assert_eq!(row["submitters"], 7);
    // A board with a look-alike character: refused.
    let mut odd = pi4_ddr50(0.98);
    odd["system"]["board"] = json!("Raspberry P\u{456} 4 Model B Rev 1.4");
    let reply = post(&server, 47, &odd);
    assert_eq!(reply.status, 422);
    assert!(error_of(&reply).starts_with("system.board: "), "{}", error_of(&reply));
    // Filters by family and by model, in any case.
    assert_eq!(rows(&server, "board=Raspberry%20Pi%204&kind=sd").len(), 1);
    assert_eq!(rows(&server, "board=raspberry%20pi%204%20model%20b%20rev%201.4&kind=sd").len(), 1);
}

/// Newcomers on both sides of the five genuine networks' median (0.97):
/// the labelling networks arrive together, and a burst that moved the row
/// would be held (docs/leaderboard.md#held-results).
fn around_the_median(n: u8) -> f64 {
    0.955 + f64::from(n % 6) / 200.0
}

fn labels_name_a_row_once_its_networks_agree(backend: Backend) {
    let server = start(backend, Options::default());
    five_genuine_submitters(&server);
    assert!(rows(&server, "q=canvas").is_empty(), "no label yet");
    let labelled = |label: &str, factor: f64| {
        let mut r = pi4_ddr50(factor);
        r["label"] = json!(label);
        r
    };
    // Three networks of the row's eight type the label (in any case and
    // spacing): enough networks, but not a majority of the row.
    for (n, spelling) in [
        (30, "Kingston Canvas Go! Plus 64GB"),
        (31, "kingston  CANVAS go! plus 64gb"),
        (32, "Kingston Canvas Go! Plus 64GB"),
    ] {
        assert_eq!(post(&server, n, &labelled(spelling, around_the_median(n))).status, 201);
    }
    assert_eq!(sd64g_row(&server)["name"], "Kingston SD64G 6.1, 62.3 GB", "three of eight name nothing");
    assert!(rows(&server, "q=canvas").is_empty());
    // Three more: six of eleven.
    for n in 33..36 {
        assert_eq!(post(&server, n, &labelled("Kingston Canvas Go! Plus 64GB", around_the_median(n))).status, 201);
    }
    let row = sd64g_row(&server);
    assert_eq!(row["name"], "Kingston Canvas Go! Plus 64GB", "{row}");
    assert_eq!(rows(&server, "q=canvas%20go").len(), 1);
    assert_eq!(rows(&server, "q=CANVAS").len(), 1);
    // The same card on another board: its row is named by its own networks.
    let mut pi5 = pi4_ddr50(1.1);
    pi5["system"]["board"] = json!("Raspberry Pi 5 Model B Rev 1.0");
    assert_eq!(post(&server, 34, &pi5).status, 201);
    let all = rows(&server, "q=sd64g");
    let pi5_row = all.iter().find(|r| r["family"] == "Raspberry Pi 5").expect("a Pi 5 row");
    assert_eq!(pi5_row["name"], "Kingston SD64G 6.1, 62.3 GB", "{pi5_row}");
    assert_eq!(pi5_row["card"]["class_label"], row["card"]["class_label"]);
    // A label no CID-shaped rule would take, and one too long: 422.
    let reply = post(&server, 40, &labelled("Kingst\u{43e}n Canvas", 1.0));
    assert_eq!(reply.status, 422);
    assert!(error_of(&reply).starts_with("label: "));
    let reply = post(&server, 41, &labelled(&"x".repeat(81), 1.0));
    assert_eq!(reply.status, 422);
    assert!(error_of(&reply).starts_with("label: 81 characters, at most 80"));
}

fn finding_sorting_and_paging(backend: Backend) {
    let server = start(backend, Options::default());
    // 12 cards, 3 submitters each, figures rising with the card.
    for card in 0..12u8 {
        for who in 0..3u8 {
            let mut r = pi4_ddr50(0.6 + f64::from(card) * 0.05 + f64::from(who) * 0.01);
            r["device"]["sd"]["cid"]["product_name"] = json!(format!("C{card:02}"));
            // Card 5 writes randomly fastest, though its score is middling.
            if card == 5 {
                r["measurements"]["rand_write_4k_qd64_iops"] = json!(1500);
            }
            assert_eq!(post(&server, 100 + card * 3 + who, &r).status, 201);
        }
    }
    let page = |query: &str| server.get(&format!("/api/v1/leaderboard?{query}")).json();
    let first = page("limit=5");
    assert_eq!(first["total"], 12);
    assert_eq!(first["rows"].as_array().unwrap().len(), 5);
    assert_eq!(first["rows"][0]["rank"], 1);
    assert_eq!(first["next"], "/api/v1/leaderboard?sort=score&dir=desc&limit=5&offset=5");
    assert!(first["previous"].is_null());
    let third = page("limit=5&offset=10");
    assert_eq!(third["rows"].as_array().unwrap().len(), 2);
    assert!(third["next"].is_null());
    assert_eq!(third["rows"][1]["rank"], 12);
    assert_eq!(page("limit=5&offset=100")["total"], 12, "past the end: no rows, the true total");
    // Per-figure sort: random write puts card 5 first, and ranks by it.
    let by_write = page("sort=rand_write_4k_qd64_iops");
    assert_eq!(by_write["rows"][0]["card"]["product_name"], "C05");
    assert_eq!(by_write["rows"][0]["rank"], 1);
    for key in ["seq_read_mib_s", "seq_write_mb_s", "rand_read_4k_qd64_iops", "score", "submitters", "card"] {
        assert_eq!(server.get(&format!("/api/v1/leaderboard?sort={key}&dir=asc")).status, 200, "{key}");
    }
    // Search.
    assert_eq!(page("q=c05")["total"], 1);
    assert_eq!(page("q=kingston%20c0")["total"], 10);
    assert_eq!(page("q=%25")["total"], 0, "a wildcard is a character");
    assert_eq!(page("q=_")["total"], 0);
    for bad in ["limit=501", "limit=-1", "offset=-3", "q=a%20b%20c%20d%20e", "sort=%27%3B"] {
        let reply = server.get(&format!("/api/v1/leaderboard?{bad}"));
        assert_eq!(reply.status, 400, "{bad}");
        assert!(!error_of(&reply).is_empty());
    }
    // The page: the true total, and links to the pages around.
    let html = server.get("/?limit=5&offset=5").text();
    assert!(html.contains("6–10 of <strong>12</strong> rows"), "{html}");
    assert!(html.contains("rel=\"prev\" href=\"/?sort=score&amp;dir=desc&amp;limit=5\""));
    assert!(html.contains("rel=\"next\" href=\"/?sort=score&amp;dir=desc&amp;limit=5&amp;offset=10\""));
    assert_eq!(server.get("/?q=c05").text().matches("<tr data-card=").count(), 1);
}

fn ids_are_never_reused(backend: Backend) {
    let server = start(backend, Options::default());
    let first = post(&server, 1, &pi4_ddr50(1.0)).json();
    let second = post(&server, 2, &pi4_ddr50(0.9)).json();
    let id = second["id"].as_i64().unwrap();
    let bearer = format!("Bearer {}", second["delete_token"].as_str().unwrap());
    let deleted = request(server.addr, "DELETE", &format!("/api/v1/results/{id}"), &[("Authorization", &bearer)], b"");
    assert_eq!(deleted.status, 200);
    let third = post(&server, 3, &pi4_ddr50(0.8)).json();
    assert!(third["id"].as_i64().unwrap() > id, "{first} {second} {third}");
    assert_eq!(server.get(&format!("/api/v1/results/{id}")).status, 404, "an old link finds nothing");
}

fn networks_and_trusted_proxies(backend: Backend) {
    // Without --trusted-proxy, X-Forwarded-For is nobody's word.
    let server = start(backend, Options::default());
    for n in 1..=3u8 {
        let reply = request(
            server.addr,
            "POST",
            "/api/v1/results",
            &[("Idempotency-Key", &key()), ("X-Forwarded-For", &format!("198.51.100.{n}"))],
            pi4_ddr50(1.0 + f64::from(n) / 100.0).to_string().as_bytes(),
        );
        assert_eq!(reply.status, 201);
    }
    assert_eq!(sd64g_row(&server)["submitters"], 1, "one client, whatever it claims");
    // Two addresses of one /24 are one submitter.
    assert_eq!(server.post_report_from("127.0.9.1".parse().unwrap(), &pi4_ddr50(0.9).to_string(), &key()).status, 201);
    assert_eq!(server.post_report_from("127.0.9.2".parse().unwrap(), &pi4_ddr50(0.8).to_string(), &key()).status, 201);
    assert_eq!(sd64g_row(&server)["submitters"], 2);
    drop(server);

    // Behind a trusted proxy on 127.0.0.1: its header names the client, the
    // rate limit is per client network, and other peers' headers count for nothing.
    let options = Options {
        rate_limit: Some(2),
        args: vec!["--trusted-proxy".into(), "127.0.0.1/32".into()],
        ..Options::default()
    };
    let server = start(backend, options);
    let via_proxy = |client: &str, factor: f64| {
        request(
            server.addr,
            "POST",
            "/api/v1/results",
            &[("Idempotency-Key", &key()), ("X-Forwarded-For", &format!("1.2.3.4, {client}"))],
            pi4_ddr50(factor).to_string().as_bytes(),
        )
    };
    assert_eq!(via_proxy("198.51.100.7", 1.0).status, 201);
    assert_eq!(via_proxy("203.0.113.9", 0.9).status, 201);
    assert_eq!(via_proxy("192.0.2.1", 0.95).status, 201);
    assert_eq!(sd64g_row(&server)["submitters"], 3, "three clients behind one proxy");
    assert_eq!(via_proxy("198.51.100.8", 0.97).status, 201, "the second of its /24");
    let third = via_proxy("198.51.100.9", 0.96);
    assert_eq!(third.status, 429, "the limit is per network: {}", third.text());
    assert_eq!(via_proxy("203.0.113.10", 0.93).status, 201, "another network is not limited");
    let untrusted = server.post_report_from("127.0.7.1".parse().unwrap(), &pi4_ddr50(0.91).to_string(), &key());
    assert_eq!(untrusted.status, 201);
}

fn any_bytes_get_one_line_and_every_answer_its_headers(backend: Backend) {
    let server = start(backend, Options::default());
    let bodies: Vec<Vec<u8>> = vec![
        vec![0xff, 0xfe, 0xfd],
        b"{\"schema\": \"\xe2\x82".to_vec(),
        b"{\"schema\": \"storage-score/1\", \"x\": \"\xc3\x28\"}".to_vec(),
        "[".repeat(10_000).into_bytes(),
        "{\"a\":".repeat(5_000).into_bytes(),
        b"\0\0\0\0".to_vec(),
        "\u{feff}{}".as_bytes().to_vec(),
        (0..=255u8).collect(),
    ];
    for body in bodies {
        let reply = request(server.addr, "POST", "/api/v1/results", &[("Idempotency-Key", &key())], &body);
        assert!([400, 422].contains(&reply.status), "{} {}", reply.status, reply.text());
        let error = error_of(&reply);
        assert!(!error.contains('\n') && error.starts_with("body: "), "{error}");
    }
    assert_eq!(server.get("/").status, 200, "still serving");
    for path in
        ["/", "/about", "/style.css", "/api/v1/leaderboard", "/nope", "/api/v1/nope", "/results/1", "/export.csv"]
    {
        let reply = server.get(path);
        let csp = reply.header("content-security-policy").unwrap_or_else(|| panic!("{path}: no CSP"));
        assert!(csp.contains("frame-ancestors 'none'") && csp.contains("default-src 'none'"), "{path}: {csp}");
        assert_eq!(reply.header("x-content-type-options"), Some("nosniff"), "{path}");
        assert_eq!(reply.header("referrer-policy"), Some("no-referrer"), "{path}");
    }
    assert!(!server.log().contains("panicked"), "{}", server.log());
}

on_both_backends!(
    poisoning_from_one_address_moves_nothing,
    identity_cannot_be_bent,
    labels_name_a_row_once_its_networks_agree,
    migration_from_v2_merges_spellings,
    finding_sorting_and_paging,
    ids_are_never_reused,
    networks_and_trusted_proxies,
    any_bytes_get_one_line_and_every_answer_its_headers,
    migration_keeps_every_result,
    a_figure_kept_later_is_filled_from_the_reports,
);

/// A figure the leaderboard starts keeping after its database was made (a
/// new row of the figures' table in a later release): on start its column
/// is added to every table that holds figures, filled from the stored
/// reports, and every row's medians computed again. Dropping the
/// `rand_read` columns makes such a database out of a current one.
fn a_figure_kept_later_is_filled_from_the_reports(backend: Backend) {
    let mut server = start(backend, Options::default());
    for n in 1..=3u8 {
        assert_eq!(post(&server, n, &pi4_ddr50(1.0 + f64::from(n) / 10.0)).status, 201);
    }
    let key = "rand_read_4k_qd64_iops";
    let before = sd64g_row(&server)["median_figures"][key].clone();
    assert!(before.as_f64().is_some_and(|v| v > 0.0), "{before}");
    let db = server_db(&server);
    server.stop();
    let drop_columns = "ALTER TABLE results DROP COLUMN rand_read; ALTER TABLE submitters DROP COLUMN rand_read; \
        ALTER TABLE groups DROP COLUMN rand_read;";
    let mut again = Options::default();
    match backend {
        Backend::Sqlite => {
            let path = server.sqlite_path.clone().expect("sqlite");
            rusqlite::Connection::open(&path).unwrap().execute_batch(drop_columns).unwrap();
            again.sqlite_path = Some(path);
        }
        Backend::Postgres => {
            let url = db.expect("url");
            cluster().psql(postgres::PgCluster::database_of(&url), drop_columns).unwrap();
            again.db = Some(url);
        }
    }
    let restarted = Leaderboard::start_with(again);
    assert_eq!(sd64g_row(&restarted)["median_figures"][key], before, "{}", restarted.log());
    let sorted = rows(&restarted, &format!("sort={key}"));
    assert_eq!(sorted[0]["median_figures"][key], before);
}

// ---------------------------------------------------------------------------
// A database of the first schema (tests/fixtures/leaderboard/v1-*.sql,
// made by make_v1.py against that server): 30 results, 20 of them
// fabricated and public, one renaming the card, one on a lowercase board,
// one with a zero-width space in its name, a quick run, the last deleted.

fn migration_keeps_every_result(backend: Backend) {
    let dir = storage_score_test_support::temp_dir("lb-v1");
    let mut options = Options::default();
    let pg_db = match backend {
        Backend::Sqlite => {
            let path = dir.path().join("v1.db");
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(include_str!("../fixtures/leaderboard/v1-sqlite.sql")).unwrap();
            drop(conn);
            options.sqlite_path = Some(path);
            None
        }
        Backend::Postgres => {
            let url = cluster().new_database();
            let name = postgres::PgCluster::database_of(&url).to_owned();
            cluster()
                .psql_file(
                    &name,
                    &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                        .join("../../tests/fixtures/leaderboard/v1-postgres.sql"),
                )
                .unwrap();
            options.db = Some(url);
            Some(name)
        }
    };
    let server = Leaderboard::start_with(options);
    assert!(server.log().contains("migrated the database from schema 1 to 3: 29 results"), "{}", server.log());
    let db = server_db(&server);
    assert_eq!(stored_count(backend, &server, db.as_deref()), 29, "every stored result kept");
    // The fabricated twenty are flagged now; the row is the five genuine
    // results, the renaming one and the lowercase board's (legacy results
    // without a serial hash count alone).
    let row = sd64g_row(&server);
    assert_eq!(row["board"], "Raspberry Pi 4 Model B");
    assert_eq!(row["card"]["manufacturer"], "Kingston");
    assert_eq!(row["card"]["class_label"], "A2 Class 10 V30 U3");
    assert_eq!(row["samples"], 7);
    let export: Vec<Value> = export_lines(&server);
    let mut scores: Vec<i64> = export
        .iter()
        .filter(|l| l["report"]["device"]["sd"]["cid"]["product_name"] == "SD64G")
        .map(|l| l["score"]["pibenchmarks"].as_i64().unwrap())
        .collect();
    scores.sort();
    assert_eq!(scores.len(), 7);
    assert_eq!(row["median_score"], median(&scores));
    let flagged = |id: i64| server.get(&format!("/api/v1/results/{id}")).json();
    for id in 6..=25 {
        let r = flagged(id);
        assert_eq!(r["status"], "flagged", "{id}: {r}");
        assert!(r["reasons"][0].as_str().unwrap().contains("Raspberry Pi 4 SD slot"));
    }
    let zwsp = flagged(28);
    assert_eq!(zwsp["status"], "flagged");
    assert!(zwsp["reasons"][0].as_str().unwrap().starts_with("refused by the rules this server applies"), "{zwsp}");
    assert_eq!(flagged(29)["status"], "flagged", "the quick run");
    // New results go on from there, and their ids are never reused.
    let created = post(&server, 9, &pi4_ddr50(1.0)).json();
    let id = created["id"].as_i64().unwrap();
    assert!(id >= 30, "{created}");
    let bearer = format!("Bearer {}", created["delete_token"].as_str().unwrap());
    assert_eq!(
        request(server.addr, "DELETE", &format!("/api/v1/results/{id}"), &[("Authorization", &bearer)], b"").status,
        200
    );
    assert!(post(&server, 10, &pi4_ddr50(0.9)).json()["id"].as_i64().unwrap() > id);
    // A second start finds the schema current.
    let mut server = server;
    let sqlite = server.sqlite_path.clone();
    server.stop();
    let mut again = Options::default();
    match (&sqlite, &pg_db) {
        (Some(path), _) => again.sqlite_path = Some(path.clone()),
        (None, Some(_)) => again.db = db.clone(),
        _ => unreachable!(),
    }
    let restarted = Leaderboard::start_with(again);
    assert!(!restarted.log().contains("migrated"), "{}", restarted.log());
    assert_eq!(sd64g_row(&restarted)["samples"], 8);
    drop(dir);
}

/// A database of the second schema (tests/fixtures/leaderboard/v2-*.sql,
/// made by make_v2.py against that server): five SD64G results, and one
/// USB stick spelled TransMemory by three networks and TRANSMEMORY by two,
/// two cards then. Upgraded, they are one card of five networks, named as
/// it was first spelled, and the SD64G row is as it was.
fn migration_from_v2_merges_spellings(backend: Backend) {
    let dir = storage_score_test_support::temp_dir("lb-v2");
    let mut options = Options::default();
    match backend {
        Backend::Sqlite => {
            let path = dir.path().join("v2.db");
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(include_str!("../fixtures/leaderboard/v2-sqlite.sql")).unwrap();
            drop(conn);
            options.sqlite_path = Some(path);
        }
        Backend::Postgres => {
            let url = cluster().new_database();
            let name = postgres::PgCluster::database_of(&url).to_owned();
            cluster()
                .psql_file(
                    &name,
                    &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                        .join("../../tests/fixtures/leaderboard/v2-postgres.sql"),
                )
                .unwrap();
            options.db = Some(url);
        }
    }
    let server = Leaderboard::start_with(options);
    assert!(server.log().contains("migrated the database from schema 2 to 3: 10 results"), "{}", server.log());
    let sticks = rows(&server, "q=toshiba");
    assert_eq!(sticks.len(), 1, "{sticks:?}");
    assert_eq!(sticks[0]["card"]["product_name"], "TransMemory");
    assert_eq!((sticks[0]["submitters"].as_i64(), sticks[0]["held"].as_i64()), (Some(5), Some(0)));
    let row = sd64g_row(&server);
    assert_eq!((row["submitters"].as_i64(), row["samples"].as_i64()), (Some(5), Some(5)));
    // New results join the merged card, whatever their case.
    let mut r = report();
    r["device"] = json!({"kind": "usb", "model": "transmemory", "vendor": "TOSHIBA", "firmware": "1.00",
        "capacity_bytes": 31042043904u64, "usb": {"id": "0930:6545", "speed_mbps": 5000, "driver": "uas"}});
    assert_eq!(post(&server, 99, &r).status, 201);
    assert_eq!(rows(&server, "q=toshiba")[0]["submitters"], 6);
    drop(dir);
}

// ---------------------------------------------------------------------------

/// A thousand sockets that connect and send nothing, against the default
/// cap (1024): a fresh request is still answered at once, and the idle
/// sockets are closed after the 30 s header timeout.
#[test]
fn idle_sockets_cannot_starve_the_server() {
    raise_file_limit(4096);
    let server = Leaderboard::start();
    let mut idle = Vec::new();
    for i in 0..1000 {
        // Each from a network of its own: one network holds only a few.
        let from = IpAddr::V4(Ipv4Addr::new(127, 1 + (i / 250) as u8, (i % 250) as u8, 1));
        idle.push(leaderboard::connect_from(from, server.addr).expect("an idle socket"));
    }
    // The server has accepted them all: it holds a socket for each.
    let opened = Instant::now();
    let pid = server.pid().expect("a running server");
    while server_sockets(pid) < 1000 {
        assert!(opened.elapsed() < Duration::from_secs(60), "the server accepted {} of 1000", server_sockets(pid));
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = Instant::now();
    let reply = server.get("/api/v1/leaderboard");
    let answered = started.elapsed();
    assert_eq!(reply.status, 200);
    // A starved server would answer only once the header timeout (30 s) freed
    // a slot; 5 s tells that apart on a loaded machine.
    assert!(answered < Duration::from_secs(5), "a fresh GET took {answered:?}");
    eprintln!("with 1000 idle sockets open, a fresh GET answered in {:.1} ms", answered.as_secs_f64() * 1000.0);
    // Each idle socket sees the server close it: a read returns 0 bytes (or
    // a reset), not our own read timeout.
    let mut closed = 0;
    for socket in &mut idle {
        socket.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut byte = [0u8; 1];
        match std::io::Read::read(socket, &mut byte) {
            Ok(0) => closed += 1,
            Err(e) if !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => closed += 1,
            _ => {}
        }
    }
    let waited = opened.elapsed();
    eprintln!("the 1000 idle sockets were closed within {:.1} s of being accepted", waited.as_secs_f64());
    assert_eq!(closed, 1000);
    assert!(waited < Duration::from_secs(50) && waited > Duration::from_secs(25), "{waited:?}");
}

/// How many sockets process `pid` holds open.
fn server_sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.flatten()
                .filter(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t.to_string_lossy().starts_with("socket:")))
                .count()
        })
        .unwrap_or(0)
}

/// Lifts this process's soft open-file limit to `wanted` (the hard limit
/// permitting), for tests that hold many sockets.
fn raise_file_limit(wanted: libc::rlim_t) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: get/setrlimit on a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < wanted {
            limit.rlim_cur = wanted.min(limit.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}
