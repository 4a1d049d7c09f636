//! The leaderboard's API of docs/leaderboard.md, against the real server binary on
//! 127.0.0.1: on a real SQLite file, and the same tests on a real PostgreSQL
//! cluster (initdb in a temp dir, private port; one cluster per run of this
//! test binary, stopped at exit).

use storage_score_test_support::lb_backends as backends;
use storage_score_test_support::leaderboard;
use storage_score_test_support::postgres;

use backends::*;
use leaderboard::{Leaderboard, Options, request};
use serde_json::{Value, json};
const PSN_DECIMAL: &str = "915931237";
const PSN_HEX: &str = "3698d765";
const ADMIN: &str = "admin-token-for-tests-0123456789";

// ---------------------------------------------------------------------------

fn submit_recomputes_the_score_and_drops_serials(backend: Backend) {
    let server = start(backend, Options::default());
    // The client claims 99999; the figures say 1164.
    let body = report_with(|r| r["score"]["pibenchmarks"] = json!(99999));
    let reply = server.post_report(&body, &key());
    assert_eq!(reply.status, 201, "{}", reply.text());
    let created = reply.json();
    assert_eq!(created["status"], "public", "{created}");
    assert_eq!(created["score"]["pibenchmarks"], 1164);
    assert!(created["delete_token"].as_str().is_some_and(|t| t.len() == 64));
    let id = created["id"].as_i64().unwrap();
    assert_eq!(created["url"], format!("{}/results/{id}", server.url));

    let got = server.get(&format!("/api/v1/results/{id}"));
    assert_eq!(got.status, 200);
    let got = got.json();
    assert_eq!(got["score"]["pibenchmarks"], 1164);
    assert_eq!(got["score"]["formula"], "pibenchmarks-1");
    assert_eq!(got["report"]["score"]["pibenchmarks"], 1164, "the stored report carries the server's score");
    assert_eq!(got["verdict"]["claimed"], "A2 Class 10 V30 U3");
    assert!(!got["verdict"]["checks"].as_array().unwrap().is_empty(), "the server's verdict has its checks");
    assert!(got["report"]["device"]["sd"]["cid"].get("serial").is_none());
    assert_eq!(got["report"]["device"]["sd"]["registers"]["cid"], "9f544953443634476100000000013b00");

    let leaderboard = server.get("/api/v1/leaderboard").json();
    let rows = leaderboard["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["median_score"], 1164);
    assert_eq!(rows[0]["card"]["product_name"], "SD64G");
    assert_eq!(rows[0]["bus"], "High Speed");
    assert_eq!(rows[0]["board"], "Raspberry Pi 4 Model B");
    assert_eq!(rows[0]["family"], "Raspberry Pi 4");
    assert_eq!(rows[0]["name"], "Kingston SD64G 6.1, 62.3 GB");
    assert_eq!((rows[0]["samples"].as_i64(), rows[0]["submitters"].as_i64()), (Some(1), Some(1)));
    assert_eq!(rows[0]["median_figures"]["rand_write_4k_qd64_iops"], 800.0);
    assert_eq!(rows[0]["median_figures"]["seq_read_mib_s"], 22.1);
    assert!(rows[0]["rank"].is_null(), "one submitter: no rank");
    assert_eq!(leaderboard["total"], 1);
    // Where the result stands: alone in its row.
    assert_eq!(created["standing"]["group_submitters"], 1);
    assert_eq!(created["standing"]["median_score"], 1164);
    assert_eq!(created["standing"]["family"], "Raspberry Pi 4");
    assert_eq!(got["standing"], created["standing"]);
    assert_eq!(got["board_revision"], "1.4");
    assert_eq!(server.get("/api/v1/results/999999").status, 404);
    assert_eq!(server.get("/api/v1/results/abc").status, 404);
}

fn idempotency_keys(backend: Backend) {
    let server = start(backend, Options::default());
    let db = db_url(&server);
    let k = key();
    let first = server.post_report(REPORT, &k);
    assert_eq!(first.status, 201);
    let again = server.post_report(REPORT, &k);
    assert_eq!(again.status, 201, "{}", again.text());
    assert_eq!(again.json()["id"], first.json()["id"], "the same answer");
    assert_eq!(again.json()["status"], first.json()["status"]);
    assert!(again.json().get("delete_token").is_none(), "the delete token is shown once");
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    let other = server.post_report(&variant("SD32G", "Pi 3", 0.5), &k);
    assert_eq!(other.status, 422, "{}", other.text());
    assert!(error_of(&other).starts_with("Idempotency-Key: "));

    let no_key = request(server.addr, "POST", "/api/v1/results", &[], REPORT.as_bytes());
    assert_eq!(no_key.status, 400);
    assert!(error_of(&no_key).starts_with("Idempotency-Key: "));
    for bad in ["short", "has space in it", &"x".repeat(129)] {
        let r = request(server.addr, "POST", "/api/v1/results", &[("Idempotency-Key", bad)], REPORT.as_bytes());
        assert_eq!(r.status, 400, "{bad:?}");
    }
    assert_eq!(stored_count(backend, &server, db.as_deref().or(server_db(&server).as_deref())), 1);
}

fn concurrent_retries_store_once(backend: Backend) {
    let server = start(backend, Options::default());
    // Twenty copies of one submission at once, as a client whose first
    // tries timed out might send them: one row, one id for all.
    let k = key();
    let ids: Vec<i64> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..20).map(|_| scope.spawn(|| server.post_report(REPORT, &k))).collect();
        handles
            .into_iter()
            .map(|h| {
                let r = h.join().unwrap();
                assert_eq!(r.status, 201, "{}", r.text());
                r.json()["id"].as_i64().unwrap()
            })
            .collect()
    });
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    assert_eq!(count(backend, &server), 1);
    assert_eq!(server.get("/api/v1/leaderboard").json()["rows"][0]["samples"], 1);
}

fn bad_input_is_refused_naming_the_field(backend: Backend) {
    let server = start(backend, Options::default());
    let post = |body: &[u8]| request(server.addr, "POST", "/api/v1/results", &[("Idempotency-Key", &key())], body);
    for (body, start_of_error) in [
        (&b"{\"schema\": \"storage-score/1\", "[..], "body: not valid JSON"),
        (&b""[..], "body: empty"),
        (&b"[1, 2]"[..], "body: expected a storage-score/1 report"),
        (&b"{\"schema\": \"other/9\", \"measurements\": {}}"[..], "schema: "),
        (&b"{\"measurements\": {}}"[..], "schema: "),
        (&b"{\"schema\": \"storage-score/1\", \"tool\": {\"name\": \"x\", \"version\": \"1\"}}"[..], "measurements: "),
    ] {
        let r = post(body);
        assert_eq!(r.status, 400, "{}: {}", String::from_utf8_lossy(body), r.text());
        assert!(error_of(&r).starts_with(start_of_error), "{}", error_of(&r));
    }
    let wrong_type = report_with(|r| r["measurements"]["rand_read_4k_qd64_iops"] = json!("many"));
    let r = post(wrong_type.as_bytes());
    assert_eq!(r.status, 400);
    assert!(error_of(&r).starts_with("measurements.rand_read_4k_qd64_iops: "), "{}", error_of(&r));
    let unknown = report_with(|r| r["measurements"]["seq_write_kb_s"] = json!(1));
    let r = post(unknown.as_bytes());
    assert_eq!(r.status, 400);
    assert!(error_of(&r).contains("seq_write_kb_s"), "{}", error_of(&r));

    // 10 MiB: refused from its Content-Length, before the body is sent.
    let huge = vec![b' '; 10 << 20];
    let r = request(
        server.addr,
        "POST",
        "/api/v1/results",
        &[("Idempotency-Key", &key()), ("Expect", "100-continue")],
        &huge,
    );
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(error_of(&r).starts_with("body: larger than 256 KiB"));
    // Just over the limit, sent whole: refused too.
    let padded = report_with(|r| r["notes"] = json!(vec!["x".repeat(1000); 270]));
    assert!(padded.len() > 256 * 1024);
    assert_eq!(post(padded.as_bytes()).status, 413);

    // SQL metacharacters and markup in every name-like string: 400 naming
    // it; in the CID's text (where any printable ASCII can stand), 422 for
    // a shape no CID holds.
    let mut paths = Vec::new();
    collect_string_paths(&report(), String::new(), &mut paths);
    assert!(paths.len() >= 20, "{paths:?}");
    for path in &paths {
        if path == "schema" || path.starts_with("score") || path.starts_with("verdict") || path.starts_with("notes") {
            continue;
        }
        let cid_text = path.ends_with(".product_name") || path.ends_with(".oem_id");
        for evil in ["x'); DROP TABLE results; --", "<b onmouseover=alert(1)>x</b>"] {
            let body = report_with(|r| *pointer(r, path) = json!(evil));
            let r = post(body.as_bytes());
            assert_eq!(r.status, if cid_text { 422 } else { 400 }, "{path} = {evil:?}: {}", r.text());
            assert!(error_of(&r).starts_with(&format!("{path}: ")), "{path}: {}", error_of(&r));
        }
    }
    // Not UTF-8 (a byte of the product name, and bytes cut from a
    // character where the parser's position would fall inside it), and too long.
    let mut not_utf8 = REPORT.as_bytes().to_vec();
    let at = not_utf8.windows(5).position(|w| w == b"SD64G").expect("the product name");
    not_utf8[at + 4] = 0xff;
    for body in [not_utf8, b"{\"schema\": \"\xef\xbf\xbd\xef\xbf".to_vec(), vec![0xff; 10]] {
        let r = post(&body);
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(error_of(&r).starts_with("body: not UTF-8 text"), "{}", error_of(&r));
    }
    let long = report_with(|r| r["system"]["board"] = json!("B".repeat(300)));
    let r = post(long.as_bytes());
    assert_eq!(r.status, 400);
    assert!(error_of(&r).starts_with("system.board: 300 characters, at most 256"), "{}", error_of(&r));
    // Control characters anywhere, free text included.
    let body = report_with(|r| r["notes"] = json!(["line\u{0}break"]));
    let r = post(body.as_bytes());
    assert_eq!(r.status, 400);
    assert!(error_of(&r).starts_with("notes[0]: contains the control character U+0000"));
    assert_eq!(count(backend, &server), 0, "nothing was stored");
    assert!(export_lines(&server).is_empty());
}

/// Dotted paths of every string in `value` (`device.sd.cid.oem_id`, `notes[0]`).
fn collect_string_paths(value: &Value, path: String, out: &mut Vec<String>) {
    match value {
        Value::String(_) => out.push(path),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                collect_string_paths(item, format!("{path}[{i}]"), out);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                collect_string_paths(v, p, out);
            }
        }
        _ => {}
    }
}

fn pointer<'a>(value: &'a mut Value, path: &str) -> &'a mut Value {
    let pointer: String = path.split('.').map(|p| format!("/{}", p.replace('[', "/").replace(']', ""))).collect();
    value.pointer_mut(&pointer).unwrap_or_else(|| panic!("no {pointer}"))
}

fn impossible_figures_are_refused_or_flagged(backend: Backend) {
    let server = start(backend, Options::default());
    for figure in ["-1", "NaN", "1e300", "1e400", "Infinity", "-0.5"] {
        let body = REPORT.replace("\"seq_write_mb_s\": 20.0", &format!("\"seq_write_mb_s\": {figure}"));
        assert_ne!(body, REPORT);
        let r = server.post_report(&body, &key());
        assert_eq!(r.status, 422, "{figure}: {}", r.text());
        assert!(error_of(&r).contains("seq_write_mb_s"), "{figure}: {}", error_of(&r));
    }
    assert_eq!(count(backend, &server), 0);
    // 10 GB/s on an SD card: beyond every SD bus there is, refused.
    let body = report_with(|r| r["measurements"]["seq_write_mb_s"] = json!(10000.0));
    let r = server.post_report(&body, &key());
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(error_of(&r).starts_with("measurements.seq_write_mb_s: 10000 is 10000.0 MB/s, beyond the 3938 MB/s"));
    // 100 MB/s over a 50 MHz SD bus: stored, flagged, never ranked.
    let body = report_with(|r| r["measurements"]["seq_write_mb_s"] = json!(100.0));
    let r = server.post_report(&body, &key());
    assert_eq!(r.status, 201, "{}", r.text());
    let created = r.json();
    assert_eq!(created["status"], "flagged");
    assert!(created["standing"].is_null(), "a flagged result stands nowhere");
    let reason = created["reasons"][0].as_str().unwrap();
    assert!(
        reason.starts_with("impossible figure: seq_write_mb_s 100 is 100.0 MB/s, beyond the 25.0 MB/s"),
        "{reason}"
    );
    // Quick profile and an incomplete run: flagged with their reasons.
    let quick = report_with(|r| r["profile"] = json!("quick"));
    let r = server.post_report(&quick, &key()).json();
    assert_eq!(r["status"], "flagged");
    assert!(r["reasons"][0].as_str().unwrap().starts_with("quick profile"));
    let partial = report_with(|r| {
        r["measurements"].as_object_mut().unwrap().remove("rand_write_4k_qd64_iops");
    });
    let r = server.post_report(&partial, &key()).json();
    assert_eq!(r["status"], "flagged");
    assert!(r["score"]["pibenchmarks"].is_null());
    assert!(r["reasons"][0].as_str().unwrap().starts_with("incomplete run: not measured: rand_write_4k_qd64_iops"));
    assert_eq!(count(backend, &server), 3);
    assert!(server.get("/api/v1/leaderboard").json()["rows"].as_array().unwrap().is_empty(), "flagged: never ranked");
    assert!(export_lines(&server).is_empty(), "the export has public results only");
    let page = server.get(&format!("/results/{}", created["id"]));
    assert!(page.text().contains("Status: <strong>flagged</strong>"));
}

/// The loopback address of the `n`th client (127.0.n.1: one /24 each).
fn source(n: usize) -> std::net::IpAddr {
    std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, u8::try_from(n).unwrap(), 1))
}

fn leaderboard_groups_ranks_filters_and_exports(backend: Backend) {
    let server = start(backend, Options::default());
    // Card A on a Pi 4: five submitters (scores 1164 × factors); card B: two.
    let factors = [1.0, 0.9, 1.05, 0.8, 0.95];
    for (i, f) in factors.into_iter().enumerate() {
        let body = variant("SD64G", "Raspberry Pi 4 Model B Rev 1.4", f);
        assert_eq!(server.post_report_from(source(i + 1), &body, &key()).status, 201);
    }
    for (i, f) in [2.0, 2.2].into_iter().enumerate() {
        let body = variant("SD32G", "Raspberry Pi 5 Model B Rev 1.0", f);
        assert_eq!(server.post_report_from(source(i + 20), &body, &key()).status, 201);
    }
    // An eMMC-less USB stick of another kind, for the kind filter.
    let usb = report_with(|r| {
        r["device"] = json!({"kind": "usb", "vendor": "SanDisk", "model": "Ultra Fit", "firmware": "1.00",
                              "capacity_bytes": 32000000000u64, "usb": {"id": "0781:5583", "speed_mbps": 5000}});
    });
    assert_eq!(server.post_report(&usb, &key()).status, 201);

    let rows = server.get("/api/v1/leaderboard").json()["rows"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 3, "{rows:?}");
    let a = rows.iter().find(|r| r["card"]["product_name"] == "SD64G").unwrap();
    assert_eq!(a["samples"], 5);
    // The five scores, sorted: nearest-rank p10 = 1st, median = 3rd, p90 = 5th.
    let mut scores: Vec<i64> = export_lines(&server)
        .iter()
        .filter(|l| l["report"]["device"]["sd"]["cid"]["product_name"] == "SD64G")
        .map(|l| l["score"]["pibenchmarks"].as_i64().unwrap())
        .collect();
    scores.sort();
    assert_eq!(scores.len(), 5);
    assert_eq!(
        (a["p10_score"].as_i64(), a["median_score"].as_i64(), a["p90_score"].as_i64()),
        (Some(scores[0]), Some(scores[2]), Some(scores[4]))
    );
    assert_eq!(a["rank"], 1, "five submitters: ranked");
    assert_eq!(a["submitters"], 5);
    let b = rows.iter().find(|r| r["card"]["product_name"] == "SD32G").unwrap();
    assert!(b["rank"].is_null(), "two submitters: listed without a rank");
    assert!(b["median_score"].as_i64() > a["median_score"].as_i64());
    assert_eq!(rows[0]["card"]["product_name"], "SD64G", "ranked rows first, then the unranked");

    let query = |q: &str| server.get(&format!("/api/v1/leaderboard?{q}")).json()["rows"].as_array().unwrap().clone();
    assert_eq!(query("kind=usb").len(), 1);
    assert_eq!(query("kind=sd").len(), 2);
    assert_eq!(query("board=Raspberry%20Pi%205%20Model%20B%20Rev%201.0").len(), 1);
    assert_eq!(query("class=A2").len(), 2);
    assert_eq!(query("class=A1").len(), 0, "A1 is not A2");
    assert_eq!(query("class=Class%2010").len(), 2);
    assert_eq!(query("bus=USB%205000%20Mb%2Fs").len(), 1);
    let ascending = query("sort=median&dir=asc");
    assert_eq!(ascending[0]["card"]["product_name"], "SD64G", "the ranked row first, whatever the order");
    assert_eq!(ascending.last().unwrap()["card"]["product_name"], "SD32G");
    assert_eq!(query("sort=samples")[0]["samples"], 5);
    assert_eq!(server.get("/api/v1/leaderboard?sort=bogus").status, 400);
    assert_eq!(server.get("/api/v1/leaderboard?limit=0").status, 400);

    let lines = export_lines(&server);
    assert_eq!(lines.len(), 8);
    assert!(lines.iter().all(|l| l["status"] == "public"));
    let csv = server.get("/export.csv");
    assert_eq!(csv.status, 200);
    assert!(csv.header("content-type").unwrap().starts_with("text/csv"));
    let text = csv.text();
    assert_eq!(text.lines().count(), 9, "{text}");
    assert!(text.starts_with("id,created_at,kind,manufacturer_id"));

    // The card page answers for the card, and 404 for others.
    let card = a["card_key"].as_str().unwrap();
    let page = server.get(&format!("/cards/{card}"));
    assert_eq!(page.status, 200);
    assert_eq!(page.text().matches("<circle").count(), 5);
    assert_eq!(server.get("/cards/0000000000000000").status, 404);
    assert_eq!(server.get("/cards/%3Cscript%3E").status, 404);
}

fn delete_needs_the_token(backend: Backend) {
    let server = start(backend, Options::default());
    let created = server.post_report(REPORT, &key()).json();
    let id = created["id"].as_i64().unwrap();
    let token = created["delete_token"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/results/{id}");
    let none = request(server.addr, "DELETE", &path, &[], b"");
    assert_eq!(none.status, 401);
    assert_eq!(none.header("www-authenticate"), Some("Bearer"));
    let wrong = request(server.addr, "DELETE", &path, &[("Authorization", "Bearer 0123456789abcdef")], b"");
    assert_eq!(wrong.status, 403);
    assert_eq!(server.get(&path).status, 200, "a wrong token changes nothing");
    let bearer = format!("Bearer {token}");
    let ok = request(server.addr, "DELETE", &path, &[("Authorization", &bearer)], b"");
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert_eq!(server.get(&path).status, 404);
    assert!(server.get("/api/v1/leaderboard").json()["rows"].as_array().unwrap().is_empty(), "its row is gone");
    assert_eq!(request(server.addr, "DELETE", &path, &[("Authorization", &bearer)], b"").status, 404);
    assert_eq!(count(backend, &server), 0);
}

fn moderation_needs_the_admin_token(backend: Backend) {
    // Off without a token.
    let server = start(backend, Options::default());
    let id = server.post_report(REPORT, &key()).json()["id"].as_i64().unwrap();
    let admin = format!("Bearer {ADMIN}");
    let flag = |s: &Leaderboard, auth: Option<&str>, action: &str| {
        let headers: Vec<(&str, &str)> = auth.map(|a| vec![("Authorization", a)]).unwrap_or_default();
        request(
            s.addr,
            "POST",
            &format!("/api/v1/results/{id}/{action}"),
            &headers,
            br#"{"reason": "figures copied from another result"}"#,
        )
    };
    let r = flag(&server, Some(&admin), "flag");
    assert_eq!(r.status, 403);
    assert!(error_of(&r).starts_with("moderation is off"));
    drop(server);

    let server = start(backend, Options { admin_token: Some(ADMIN.into()), ..Options::default() });
    let id = server.post_report(REPORT, &key()).json()["id"].as_i64().unwrap();
    let rows = || server.get("/api/v1/leaderboard").json()["rows"].as_array().unwrap().len();
    assert_eq!(rows(), 1);
    assert_eq!(flag(&server, None, "flag").status, 401);
    assert_eq!(flag(&server, Some("Bearer wrong-token-wrong-token"), "hide").status, 403);
    assert_eq!(server.get(&format!("/api/v1/results/{id}")).json()["status"], "public", "401/403 changed nothing");
    assert_eq!(rows(), 1);

    let r = flag(&server, Some(&admin), "flag");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["status"], "flagged");
    assert_eq!(rows(), 0, "flagged: not ranked");
    let got = server.get(&format!("/api/v1/results/{id}")).json();
    assert_eq!(got["reasons"][0], "flagged by a moderator: figures copied from another result");

    assert_eq!(flag(&server, Some(&admin), "hide").json()["status"], "hidden");
    assert_eq!(server.get(&format!("/api/v1/results/{id}")).status, 404);
    assert_eq!(server.get(&format!("/results/{id}")).status, 404);
    let as_admin = request(server.addr, "GET", &format!("/api/v1/results/{id}"), &[("Authorization", &admin)], b"");
    assert_eq!(as_admin.json()["status"], "hidden");

    assert_eq!(flag(&server, Some(&admin), "restore").json()["status"], "public");
    assert_eq!(rows(), 1);
    let r = request(server.addr, "POST", &format!("/api/v1/results/{id}/flag"), &[("Authorization", &admin)], b"{}");
    assert_eq!(r.status, 400, "a flag needs a reason");
    assert_eq!(flag(&server, Some(&admin), "promote").status, 404);
}

fn rate_limit_answers_429_with_retry_after(backend: Backend) {
    let server = start(backend, Options { rate_limit: Some(2), ..Options::default() });
    assert_eq!(server.post_report(REPORT, &key()).status, 201);
    assert_eq!(server.post_report(&variant("SD32G", "Pi 3", 0.5), &key()).status, 201);
    let third = server.post_report(&variant("SD16G", "Pi 3", 0.5), &key());
    assert_eq!(third.status, 429, "{}", third.text());
    let wait: u64 = third.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=30).contains(&wait), "{wait}");
    let read = server.get("/api/v1/leaderboard");
    assert_eq!(read.status, 200, "reading is not limited: {}", read.text());
    assert_eq!(count(backend, &server), 2);
}

fn privacy_no_psn_in_database_or_logs(backend: Backend) {
    let mut server = start(backend, Options::default());
    assert!(REPORT.contains(PSN_DECIMAL) && REPORT.contains(PSN_HEX), "the fixture carries the PSN");
    let db = server_db(&server);
    let created = server.post_report(REPORT, &key()).json();
    let id = created["id"].as_i64().unwrap();
    // Every page and export that shows the result.
    for path in [
        format!("/results/{id}"),
        format!("/api/v1/results/{id}"),
        "/export.json".into(),
        "/export.csv".into(),
        "/".into(),
    ] {
        let text = server.get(&path).text().to_ascii_lowercase();
        assert!(!text.contains(PSN_DECIMAL) && !text.contains(PSN_HEX), "{path} shows the PSN");
    }
    assert_eq!(server.stop().map(|s| s.code()), Some(Some(0)), "SIGTERM: exit 0");
    let mut haystacks = vec![("server log".to_owned(), std::fs::read(&server.log_path).unwrap())];
    assert!(String::from_utf8_lossy(&haystacks[0].1).contains("POST /api/v1/results 201"), "the log has the request");
    match backend {
        Backend::Sqlite => {
            let path = server.sqlite_path.clone().unwrap();
            for suffix in ["", "-wal", "-shm"] {
                let file = format!("{}{suffix}", path.display());
                if let Ok(bytes) = std::fs::read(&file) {
                    haystacks.push((file, bytes));
                }
            }
        }
        Backend::Postgres => {
            let name = postgres::PgCluster::database_of(db.as_deref().unwrap()).to_owned();
            haystacks.push(("pg_dump".into(), cluster().dump(&name).into_bytes()));
        }
    }
    let psn: u32 = PSN_DECIMAL.parse().unwrap();
    let needles: Vec<Vec<u8>> = vec![
        PSN_DECIMAL.as_bytes().to_vec(),
        PSN_HEX.as_bytes().to_vec(),
        PSN_HEX.to_ascii_uppercase().into_bytes(),
        psn.to_be_bytes().to_vec(),
        psn.to_le_bytes().to_vec(),
    ];
    for (name, bytes) in &haystacks {
        for needle in &needles {
            assert!(!bytes.windows(needle.len()).any(|w| w == needle.as_slice()), "{name} holds the PSN as {needle:?}");
        }
    }
}

fn pages_escape_what_users_wrote(backend: Backend) {
    let server = start(backend, Options::default());
    let note = "<script>document.title='pwned'</script> & '); DROP TABLE results; --";
    let body = report_with(|r| r["notes"] = json!([note]));
    let created = server.post_report(&body, &key()).json();
    let id = created["id"].as_i64().unwrap();
    let page = server.get(&format!("/results/{id}")).text();
    assert!(!page.contains("<script>"), "{page}");
    assert!(page.contains(
        // `'` is text here: only `&`, `<`, `>` and `"` (attributes are double-quoted) need escaping.
        "&lt;script&gt;document.title='pwned'&lt;/script&gt; &amp; '); DROP TABLE results; --"
    ));
    // The note is stored verbatim (parameters, not SQL text) and the table survived.
    assert_eq!(server.get(&format!("/api/v1/results/{id}")).json()["report"]["notes"][0], note);
    assert_eq!(count(backend, &server), 1);
    // A filter value from the URL is escaped too.
    let page = server.get("/?board=%3Cscript%3Ealert(1)%3C%2Fscript%3E").text();
    assert!(!page.contains("<script>alert(1)"));
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_eq!(server.get("/nope").status, 404);
    assert_eq!(server.get("/api/v1/nope").json()["error"].as_str().map(|e| e.starts_with("/api/v1/nope")), Some(true));
}

on_both_backends!(
    submit_recomputes_the_score_and_drops_serials,
    idempotency_keys,
    concurrent_retries_store_once,
    bad_input_is_refused_naming_the_field,
    impossible_figures_are_refused_or_flagged,
    leaderboard_groups_ranks_filters_and_exports,
    delete_needs_the_token,
    moderation_needs_the_admin_token,
    rate_limit_answers_429_with_retry_after,
    privacy_no_psn_in_database_or_logs,
    pages_escape_what_users_wrote,
);

#[test]
fn prints_its_address_and_stops_on_sigterm() {
    let mut server = Leaderboard::start();
    assert!(server.url.starts_with("http://127.0.0.1:"));
    assert_ne!(server.addr.port(), 0, "port 0 picked a real port");
    assert_eq!(server.get("/").status, 200);
    let status = server.stop().expect("stopped");
    assert_eq!(status.code(), Some(0));
    assert!(server.log().contains("stopped"));
}

#[test]
fn bad_usage_exits_2() {
    let out = std::process::Command::new(leaderboard::server_binary())
        .args(["--db", "mysql://nope", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("storage-score-leaderboard: --db \"mysql://nope\": expected sqlite:PATH"), "{err}");
    assert_eq!(err.lines().count(), 1);
}
