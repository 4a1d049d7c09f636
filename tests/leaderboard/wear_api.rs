//! Endurance and power-loss results on the leaderboard's API and pages
//! (docs/leaderboard.md#endurance-and-power-loss-results), against the real
//! server binary on SQLite and on PostgreSQL, with the reports that real
//! runs wrote (`tests/fixtures/leaderboard/endurance.json`, a FUSE card
//! worn until 10% of its blocks failed, and `power-loss.json`, the file
//! mode on ext4; both made by `tests/cli/leaderboard_wear.rs`): what lands on
//! the card page and in the API, what hostile bodies get (422, one line,
//! nothing stored), and the trust rules of run results (idempotency, the
//! delete token, moderation of a result and of a network, the ban, the
//! quota, one entry per network).

use std::net::IpAddr;

use storage_score_test_support::lb_backends::{self as backends, *};
use storage_score_test_support::leaderboard::{Leaderboard, Options, request};
use storage_score_test_support::postgres;

use serde_json::{Value, json};

const ENDURANCE: &str = include_str!("../fixtures/leaderboard/endurance.json");
const POWER_LOSS: &str = include_str!("../fixtures/leaderboard/power-loss.json");
const ADMIN: &str = "admin-token-for-tests-0123456789";
/// The fixture card's PSN (0x4890060a), which the runs' reports hold.
const PSN_DECIMAL: &str = "1217398282";

fn endurance() -> Value {
    serde_json::from_str(ENDURANCE).expect("fixture")
}

fn power_loss() -> Value {
    serde_json::from_str(POWER_LOSS).expect("fixture")
}

/// Wear rows stored, whatever their status.
fn wear_count(backend: Backend, server: &Leaderboard) -> i64 {
    match backend {
        Backend::Sqlite => {
            let conn = rusqlite::Connection::open(server.sqlite_path.as_ref().expect("sqlite")).expect("open");
            conn.query_row("SELECT COUNT(*) FROM wear_results", [], |r| r.get(0)).expect("count")
        }
        Backend::Postgres => {
            let db = postgres::PgCluster::database_of(&server_db(server).expect("url")).to_owned();
            backends::cluster().psql(&db, "SELECT COUNT(*) FROM wear_results").expect("count").parse().expect("n")
        }
    }
}

fn from(n: u8) -> IpAddr {
    IpAddr::from([127, 0, n, 1])
}

fn admin(server: &Leaderboard, path: &str, body: &str) -> u16 {
    let auth = format!("Bearer {ADMIN}");
    request(
        server.addr,
        "POST",
        path,
        &[("Authorization", &auth), ("Content-Type", "application/json")],
        body.as_bytes(),
    )
    .status
}

fn with_admin() -> Options {
    Options { admin_token: Some(ADMIN.to_owned()), ..Options::default() }
}

fn both_land_on_the_card_page_beside_its_runs(backend: Backend) {
    let server = start(backend, Options::default());
    let e = server.post_report(ENDURANCE, &key());
    assert_eq!(e.status, 201, "{}", e.text());
    let e = e.json();
    assert_eq!((e["status"].as_str(), e["schema"].as_str()), (Some("public"), Some("storage-score-endurance/1")));
    assert!(e["delete_token"].as_str().is_some_and(|t| t.len() == 64));
    let p = server.post_report(POWER_LOSS, &key()).json();
    let key = e["card_key"].as_str().expect("key").to_owned();
    assert_eq!(p["card_key"], key);
    assert_eq!(e["card_url"], format!("{}/cards/{key}", server.url));
    // A run's result of the same card: the same key, the same page.
    let mut run = report();
    run["device"] = endurance()["identity"].clone();
    let r = server.post_report(&run.to_string(), &backends::key()).json();
    assert_eq!(server.get(&format!("/api/v1/results/{}", r["id"])).json()["card_key"], key);
    let (e_id, p_id, r_id) = (e["id"].as_i64().unwrap(), p["id"].as_i64().unwrap(), r["id"].as_i64().unwrap());
    assert!(e_id < p_id && p_id < r_id, "one id space, never reused: {e_id} {p_id} {r_id}");

    // The figures: recomputed from the passes, as the fixture's own numbers say.
    let report = endurance();
    let api = server.get(&format!("/api/v1/cards/{key}/wear")).json();
    let summary = &api["endurance"][0]["summary"];
    let first = report["milestones"]["first"].as_u64().expect("first");
    let by_first: u64 = report["passes"].as_array().unwrap()[..first as usize]
        .iter()
        .map(|p| p["bytes_written"].as_u64().unwrap())
        .sum();
    assert_eq!(summary["milestones"][0], json!({"milestone": "first", "pass": first, "bytes_written": by_first}));
    assert_eq!(summary["total_written_bytes"], report["total_written_bytes"]);
    assert_eq!(summary["stopped"], report["stopped"]);
    let power = &api["power_loss"][0]["summary"];
    assert_eq!(power["cycles"], power_loss()["totals"]["cycles"]);
    assert_eq!(power["survived"], power["cycles"], "an honest file system kept every cut");
    assert_eq!(power["verdict"], "kept");

    let page = server.get(&format!("/cards/{key}")).text();
    for needle in [
        "<h3 id=\"endurance-title\">Endurance</h3>",
        "<h3 id=\"power-loss-title\">Power loss</h3>",
        "id=\"strip-plot\"",
    ] {
        assert!(page.contains(needle), "{needle}:\n{page}");
    }
    let result = server.get(&format!("/results/{e_id}"));
    assert_eq!(result.status, 200);
    assert!(result.text().contains(&format!("href=\"/cards/{key}\"")));
    let got = server.get(&format!("/api/v1/results/{p_id}")).json();
    assert_eq!(got["report"]["verdict"], "kept");
    assert_eq!(got["name"], api["name"]);
    // The card's serial and the run's fingerprint stayed out.
    let stored = format!("{api}{got}{}", server.get(&format!("/api/v1/results/{e_id}")).text());
    assert!(!stored.contains(PSN_DECIMAL), "the PSN was stored");
    let fingerprint = report["fingerprint"].as_str().unwrap();
    assert!(!fingerprint.is_empty() && !stored.contains(fingerprint), "the fingerprint was stored");
    // Not a leaderboard row.
    assert_eq!(server.get("/api/v1/leaderboard").json()["total"], 1);
    assert_eq!(server.get("/api/v1/cards/0123456789abcdef/wear").status, 404);
    assert_eq!(wear_count(backend, &server), 2);
}

fn a_card_with_only_wear_results_has_a_page(backend: Backend) {
    let server = start(backend, Options::default());
    let p = server.post_report(POWER_LOSS, &key()).json();
    let page = server.get(&format!("/cards/{}", p["card_key"].as_str().unwrap()));
    assert_eq!(page.status, 200);
    let page = page.text();
    assert!(page.contains("id=\"no-runs\"") && page.contains("id=\"power-loss\""), "{page}");
    assert!(!page.contains("id=\"endurance\""));
}

fn hostile_bodies_get_one_line_and_nothing_is_stored(backend: Backend) {
    let server = start(backend, Options::default());
    let cases: Vec<(Value, u16, &str)> = vec![
        (
            {
                let mut v = endurance();
                v["passes"][0]["bytes_written"] = json!(-4096);
                v
            },
            422,
            "passes[0].bytes_written",
        ),
        (
            {
                let mut v = endurance();
                v["total_written_bytes"] = json!(1e300);
                v
            },
            422,
            "total_written_bytes",
        ),
        (
            {
                let mut v = endurance();
                v["bad_blocks"] = json!(99_999_999_999_999_999_999u128.to_string().parse::<f64>().unwrap());
                v
            },
            422,
            "bad_blocks",
        ),
        (
            {
                let mut v = endurance();
                v["milestones"]["first"] = json!(v["passes"].as_array().unwrap().len() + 1);
                v
            },
            422,
            "milestones.first",
        ),
        (
            {
                let mut v = endurance();
                v["milestones"]["50%"] = json!(1);
                v
            },
            422,
            "milestones.50%",
        ),
        (
            {
                let mut v = endurance();
                v["passes"][0]["new_bad_blocks"] = json!(3);
                v
            },
            422,
            "passes[0].bad_blocks",
        ),
        (
            {
                let mut v = endurance();
                v["identity"] = json!(null);
                v
            },
            422,
            "identity",
        ),
        (
            {
                let mut v = endurance();
                v["identity"]["sd"]["cid"]["product_name"] = json!("SD64\u{200b}G");
                v
            },
            422,
            "identity.sd.cid.product_name",
        ),
        (
            {
                let mut v = power_loss();
                v["totals"]["lost"] = json!(7);
                v
            },
            422,
            "totals",
        ),
        (
            {
                let mut v = power_loss();
                v["verdict"] = json!("damaged");
                v
            },
            422,
            "verdict",
        ),
        (
            {
                let mut v = power_loss();
                v["cycles"][0]["lost"] = json!(1_000_000_000);
                v
            },
            422,
            "cycles[0].lost",
        ),
        (
            {
                let mut v = power_loss();
                v["cycles"][0]["returned"] = json!(2);
                v
            },
            422,
            "cycles[0].returned",
        ),
        (
            {
                let mut v = power_loss();
                v["verdict"] = json!("fine");
                v
            },
            400,
            "verdict",
        ),
        (
            {
                let mut v = power_loss();
                v["device"] = json!("<img src=x>");
                v
            },
            400,
            "device",
        ),
    ];
    for (body, status, field) in cases {
        let reply = server.post_report(&body.to_string(), &key());
        assert_eq!(reply.status, status, "{field}: {}", reply.text());
        let error = error_of(&reply);
        assert!(error.starts_with(field), "{field}: {error}");
        assert!(!error.contains('\n'));
    }
    // Bytes no report is, under a wear schema.
    let nan = ENDURANCE.replacen("\"seconds\":", "\"seconds\": NaN, \"x\":", 1);
    assert_eq!(server.post_report(&nan, &key()).status, 422);
    let truncated = &POWER_LOSS[..POWER_LOSS.len() / 2];
    assert_eq!(server.post_report(truncated, &key()).status, 400);
    let huge = format!("{{\"schema\": \"storage-score-endurance/1\", \"notes\": [\"{}\"]}}", "x".repeat(300 * 1024));
    assert_eq!(server.post_report(&huge, &key()).status, 413);
    assert_eq!(wear_count(backend, &server), 0);
    assert_eq!(count(backend, &server), 0);
    assert_eq!(server.get("/").status, 200, "still serving");
}

fn keys_tokens_and_moderation_as_for_runs(backend: Backend) {
    let server = start(backend, with_admin());
    let k = key();
    let first = server.post_report(ENDURANCE, &k);
    let again = server.post_report(ENDURANCE, &k);
    assert_eq!(again.status, 201);
    assert_eq!(again.json()["id"], first.json()["id"]);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert!(again.json().get("delete_token").is_none());
    assert_eq!(server.post_report(POWER_LOSS, &k).status, 422, "a key names one report");
    let run_key = key();
    assert_eq!(server.post_report(REPORT, &run_key).status, 201);
    assert_eq!(server.post_report(POWER_LOSS, &run_key).status, 422, "a run's key too");
    assert_eq!(wear_count(backend, &server), 1);

    let created = first.json();
    let id = created["id"].as_i64().unwrap();
    let key_of_card = created["card_key"].as_str().unwrap().to_owned();
    let token = created["delete_token"].as_str().unwrap().to_owned();
    let delete = |token: &str| {
        let auth = format!("Bearer {token}");
        request(server.addr, "DELETE", &format!("/api/v1/results/{id}"), &[("Authorization", &auth)], b"")
    };
    assert_eq!(request(server.addr, "DELETE", &format!("/api/v1/results/{id}"), &[], b"").status, 401);
    assert_eq!(delete(&"0".repeat(64)).status, 403);

    // Hidden: gone for everyone but a moderator, and from the card page.
    assert_eq!(admin(&server, &format!("/api/v1/results/{id}/hide"), r#"{"reason": "spam"}"#), 200);
    assert_eq!(server.get(&format!("/api/v1/results/{id}")).status, 404);
    assert_eq!(server.get(&format!("/results/{id}")).status, 404);
    assert_eq!(delete(&"0".repeat(64)).status, 404, "hidden and missing answer alike");
    let auth = format!("Bearer {ADMIN}");
    let seen = request(server.addr, "GET", &format!("/api/v1/results/{id}"), &[("Authorization", &auth)], b"");
    assert_eq!(seen.json()["status"], "hidden");
    assert_eq!(server.get(&format!("/api/v1/cards/{key_of_card}/wear")).status, 404);
    assert_eq!(admin(&server, &format!("/api/v1/results/{id}/restore"), "{}"), 200);
    assert_eq!(server.get(&format!("/api/v1/cards/{key_of_card}/wear")).json()["endurance"][0]["id"], id);
    // Flagged: shown with the moderator's reason.
    assert_eq!(admin(&server, &format!("/api/v1/results/{id}/flag"), r#"{"reason": "<b>odd</b>"}"#), 200);
    let page = server.get(&format!("/cards/{key_of_card}")).text();
    assert!(page.contains("flagged by a moderator: &lt;b&gt;odd&lt;/b&gt;"), "{page}");
    assert_eq!(admin(&server, &format!("/api/v1/results/{id}/restore"), "{}"), 200);

    assert_eq!(delete(&token).status, 200);
    assert_eq!(server.get(&format!("/api/v1/results/{id}")).status, 404);
    assert_eq!(delete(&token).status, 404);
    assert_eq!(wear_count(backend, &server), 0);
}

fn networks_count_once_and_are_moderated_and_banned_whole(backend: Backend) {
    let server = start(backend, with_admin());
    // One network, two distinct reports and a copy: one entry, "1 more".
    let mut other = power_loss();
    other["created"] = json!("2026-12-06T23:59:59Z");
    assert_eq!(server.post_report_from(from(1), POWER_LOSS, &key()).status, 201);
    assert_eq!(server.post_report_from(from(1), POWER_LOSS, &key()).status, 201);
    let newest = server.post_report_from(from(1), &other.to_string(), &key()).json();
    let second = server.post_report_from(from(2), POWER_LOSS, &key()).json();
    let card = newest["card_key"].as_str().unwrap().to_owned();
    let api = server.get(&format!("/api/v1/cards/{card}/wear")).json();
    let listed: Vec<(i64, i64)> = api["power_loss"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["id"].as_i64().unwrap(), e["more_from_network"].as_i64().unwrap()))
        .collect();
    assert_eq!(listed, vec![(second["id"].as_i64().unwrap(), 0), (newest["id"].as_i64().unwrap(), 1)], "{api}");
    assert!(server.get(&format!("/cards/{card}")).text().contains("(and 1 more from this network)"));

    // The network's results, all at once; then a ban.
    let id = newest["id"].as_i64().unwrap();
    let hidden = request(
        server.addr,
        "POST",
        &format!("/api/v1/results/{id}/network/hide"),
        &[("Authorization", &format!("Bearer {ADMIN}"))],
        br#"{"reason": "one network"}"#,
    );
    assert_eq!(hidden.status, 200, "{}", hidden.text());
    assert_eq!(hidden.json()["changed"], 3);
    let api = server.get(&format!("/api/v1/cards/{card}/wear")).json();
    assert_eq!(api["power_loss"].as_array().map(Vec::len), Some(1), "{api}");
    assert_eq!(admin(&server, &format!("/api/v1/results/{id}/network/ban"), r#"{"reason": "spam"}"#), 200);
    let refused = server.post_report_from(from(1), ENDURANCE, &key());
    assert_eq!(refused.status, 403, "{}", refused.text());
    assert_eq!(server.post_report_from(from(2), ENDURANCE, &key()).status, 201);
}

fn the_quota_counts_them(backend: Backend) {
    let server = start(backend, Options { quota_mib: Some(1), ..Options::default() });
    // 1 MiB a day: distinct endurance reports from one network until 429.
    let mut accepted = 0;
    let refused = (0..400).find_map(|i| {
        let mut v = endurance();
        v["created"] = json!(format!("2026-12-06T{:02}:{:02}:00Z", i / 60, i % 60));
        let reply = server.post_report_from(from(3), &v.to_string(), &key());
        if reply.status == 201 {
            accepted += 1;
            None
        } else {
            Some(reply)
        }
    });
    let reply = refused.expect("the quota ends a flood");
    assert_eq!(reply.status, 429, "{}", reply.text());
    assert!(reply.header("retry-after").is_some_and(|s| s.parse::<u64>().is_ok_and(|s| s > 0)));
    assert!(error_of(&reply).starts_with("quota: this network stored"), "{}", error_of(&reply));
    assert!(accepted >= 10, "{accepted} reports before the quota");
    assert_eq!(wear_count(backend, &server), accepted);
    // A run's report counts against the same quota; another network is free.
    assert_eq!(server.post_report_from(from(3), REPORT, &key()).status, 429);
    assert_eq!(server.post_report_from(from(4), REPORT, &key()).status, 201);
}

fn pages_escape_what_users_wrote(backend: Backend) {
    let server = start(backend, Options::default());
    let mut v = endurance();
    v["notes"] = json!(["<script>alert(1)</script> & '); DROP TABLE wear_results; --"]);
    let created = server.post_report(&v.to_string(), &key()).json();
    let page = server.get(&format!("/results/{}", created["id"])).text();
    assert!(!page.contains("<script>alert(1)"), "{page}");
    // `'` is text here: only `&`, `<`, `>` and `"` (attributes are double-quoted) need escaping.
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; '); DROP TABLE wear_results; --"), "{page}");
    assert_eq!(wear_count(backend, &server), 1);
}

/// A card with 2000 endurance and power-loss results from 200 networks:
/// its page and its wear API still answer in well under 100 ms (the
/// newest per network comes from the index on card, schema and network).
fn a_card_with_thousands_of_results_answers_fast(backend: Backend) {
    let server = start(backend, Options::default());
    let mut card = String::new();
    let started = std::time::Instant::now();
    for i in 0..2000u32 {
        let mut v = if i % 2 == 0 { endurance() } else { power_loss() };
        v["created"] = json!(format!("2026-12-{:02}T{:02}:{:02}:00Z", 1 + i / 1440 % 28, i / 60 % 24, i % 60));
        let reply = server.post_report_from(from((i % 200) as u8 + 1), &v.to_string(), &key());
        assert_eq!(reply.status, 201, "{}", reply.text());
        if card.is_empty() {
            card = reply.json()["card_key"].as_str().unwrap().to_owned();
        }
    }
    eprintln!("{backend:?}: 2000 wear results stored in {:.1} s", started.elapsed().as_secs_f64());
    for path in [format!("/cards/{card}"), format!("/api/v1/cards/{card}/wear")] {
        let mut times: Vec<f64> = (0..21)
            .map(|_| {
                let t = std::time::Instant::now();
                assert_eq!(server.get(&path).status, 200);
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        times.sort_by(f64::total_cmp);
        eprintln!("{backend:?}: {path}: median {:.1} ms, slowest {:.1} ms", times[10], times[20]);
        assert!(times[10] < 100.0, "{path}: {:.1} ms", times[10]);
    }
    let api = server.get(&format!("/api/v1/cards/{card}/wear")).json();
    assert_eq!(api["endurance"].as_array().map(Vec::len), Some(100), "the newest of each of 100 networks");
    assert_eq!(api["power_loss"].as_array().map(Vec::len), Some(100), "and of the other 100");
}

on_both_backends!(
    both_land_on_the_card_page_beside_its_runs,
    a_card_with_only_wear_results_has_a_page,
    hostile_bodies_get_one_line_and_nothing_is_stored,
    keys_tokens_and_moderation_as_for_runs,
    networks_count_once_and_are_moderated_and_banned_whole,
    the_quota_counts_them,
    pages_escape_what_users_wrote,
    a_card_with_thousands_of_results_answers_fast,
);

/// The card page's Endurance and Power loss tables in headless Chromium at
/// 1280 and 390 px: nothing wider than the screen, and at 390 px the run,
/// its first failed block and 1% (power loss: cuts survived and verdict)
/// in view; screenshots in `target/leaderboard-screenshots/`.
#[test]
#[ignore = "needs chromium"]
fn the_card_page_at_desktop_and_phone_widths() {
    use storage_score_test_support::chromium;
    let server = Leaderboard::start();
    let mut run = report();
    run["device"] = endurance()["identity"].clone();
    assert_eq!(server.post_report(&run.to_string(), &key()).status, 201);
    let e = server.post_report(ENDURANCE, &key()).json();
    assert_eq!(server.post_report(POWER_LOSS, &key()).status, 201);
    let card = e["card_key"].as_str().unwrap().to_owned();
    let exe = std::env::current_exe().unwrap();
    let shots = exe.ancestors().nth(3).unwrap().join("leaderboard-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    for (width, height, mobile) in [(1280u32, 900u32, false), (390, 844, true)] {
        let mut browser = chromium::Cdp::launch(width, height, mobile).expect("chromium");
        let started = std::time::Instant::now();
        browser.navigate(&format!("{}/cards/{card}#endurance-title", server.url)).unwrap();
        eprintln!("card page with wear results at {width} px: loaded in {:?}", started.elapsed());
        let file = shots.join(format!("card-wear-{width}.png"));
        browser.screenshot(&file, false).unwrap();
        assert!(std::fs::metadata(&file).unwrap().len() > 5_000);
        let page_width = browser.eval("document.documentElement.scrollWidth").unwrap().as_u64().unwrap();
        assert!(page_width <= u64::from(width), "{page_width} px wide at {width}");
        for (table, cells) in [("endurance", 3usize), ("power-loss", 3)] {
            let script = format!(
                "JSON.stringify(Array.from(document.querySelector('#{table} tbody tr').cells).slice(0, {cells})\
                 .map(c => {{ const r = c.getBoundingClientRect(); return [c.textContent.trim(), r.right, r.width]; }}))"
            );
            let shown: Vec<(String, f64, f64)> =
                serde_json::from_str(browser.eval(&script).unwrap().as_str().unwrap()).unwrap();
            eprintln!("{width} px, {table}: {shown:?}");
            for (text, right, cell_width) in &shown {
                assert!(*cell_width > 0.0 && *right <= f64::from(width), "{table}: {text:?} ends at {right}");
            }
            assert!(shown[0].0.starts_with("result "), "{shown:?}");
        }
        let verdict = browser.eval("document.querySelector('#power-loss tbody tr').cells[2].textContent").unwrap();
        assert_eq!(verdict, "kept");
    }
}
