//! A leaderboard that holds against a determined spammer, tried as one
//! would, against the real server binary on SQLite and on a throwaway
//! PostgreSQL cluster: an IPv6 /48 of 65 536 /64s and bursts of rented
//! networks (behind a trusted proxy on 127.0.0.1, whose `X-Forwarded-For`
//! names them), impossible cards, renames and look-alike names, full-width
//! markup, floods of boards, results and notes, idle sockets, slow
//! readers, guessed admin tokens and probes for hidden results. Every test
//! here failed on the server before these defences.

use storage_score_test_support::lb_backends as backends;
use storage_score_test_support::leaderboard;

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use backends::*;
use leaderboard::{Leaderboard, Options, Response, request};
use serde_json::{Value, json};

const ADMIN: &str = "admin-token-for-spam-tests-0123456789abcdef";

/// A server behind a trusted proxy on 127.0.0.1: `from(…)` names the client.
fn behind_proxy(backend: Backend, mut options: Options) -> Leaderboard {
    options.args.extend(["--trusted-proxy".into(), "127.0.0.1/32".into()]);
    start(backend, options)
}

/// The issue's Kingston SD64G on a Pi 4 at DDR50, its figures scaled.
fn pi4(factor: f64) -> Value {
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

/// The sum of the card page's claimed-vs-measured counts.
fn networks_in_class_table(page: &str) -> i64 {
    let table = page.split("<table id=\"classes\">").nth(1).expect("a classes table").split("</table>").next().unwrap();
    table
        .split("<td class=\"n\">")
        .skip(1)
        .map(|cell| cell.split('<').next().unwrap().parse::<i64>().expect("a count"))
        .sum()
}

fn sd64g_pi4(server: &Leaderboard) -> Value {
    let found: Vec<Value> = rows(server, "q=sd64g&limit=500")
        .into_iter()
        .filter(|r| {
            r["card"]["product_name"] == "SD64G" && r["family"] == "Raspberry Pi 4" && r["bus"] == "UHS-I DDR50"
        })
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].clone()
}

/// Seven honest networks (IPv4 /24s) whose results spread by ±6%.
fn seven_honest(server: &Leaderboard) -> i64 {
    for (n, f) in [0.95, 1.0, 1.03, 0.97, 1.06, 0.99, 1.01].iter().enumerate() {
        let reply = post_as(server, &format!("198.51.{}.7", 100 + n), &pi4(*f));
        assert_eq!(reply.status, 201, "{}", reply.text());
        assert_eq!(reply.json()["held"], false);
    }
    let row = sd64g_pi4(server);
    assert_eq!((row["submitters"].as_i64(), row["held"].as_i64()), (Some(7), Some(0)), "{row}");
    row["median_score"].as_i64().unwrap()
}

fn within_5_percent(before: i64, after: i64) -> bool {
    (after - before).abs() * 20 <= before
}

// ---------------------------------------------------------------------------
// Moving an established row.

/// Nine /64s of one home /48, every figure a hundredth of the truth: one
/// network, whose one sample contradicts the row and is held.
fn one_48_is_one_network(backend: Backend) {
    let server = behind_proxy(backend, Options::default());
    let before = seven_honest(&server);
    for n in 1..=9 {
        let reply = post_as(&server, &format!("2001:db8:77:{n:x}::1"), &pi4(0.01));
        assert_eq!(reply.status, 201, "{}", reply.text());
        let created = reply.json();
        assert_eq!((created["status"].as_str(), created["held"].as_bool()), (Some("public"), Some(true)), "{created}");
        assert!(created["standing"].is_null());
        assert!(created["held_reason"].as_str().unwrap().starts_with("held: "), "{created}");
    }
    let row = sd64g_pi4(&server);
    assert_eq!((row["submitters"].as_i64(), row["held"].as_i64()), (Some(7), Some(1)), "one /48, one network: {row}");
    assert_eq!(row["median_score"], before);
    eprintln!("median {before}, after nine /64s of one /48 at a hundredth: {}", row["median_score"]);
}

/// A burst of ten rented networks (ten /48s), at a hundredth and at half of
/// the truth: all held; agreeing newcomers are counted at once.
fn a_contradicting_burst_is_held(backend: Backend) {
    let server = behind_proxy(backend, Options { admin_token: Some(ADMIN.into()), ..Options::default() });
    let before = seven_honest(&server);
    let mut held_ids = Vec::new();
    for (burst, factor) in [(0, 0.01), (1, 0.5)] {
        for n in 0..10 {
            // Each body its own (a copy of a report counts once anyway).
            let body = pi4(factor * (1.0 + f64::from(n) / 1000.0));
            let reply = post_as(&server, &format!("2001:db8:{:x}::1", 0x100 * (burst + 1) + n), &body);
            assert_eq!(reply.json()["held"], true, "{}", reply.text());
            held_ids.push(reply.json()["id"].as_i64().unwrap());
        }
        let row = sd64g_pi4(&server);
        let after = row["median_score"].as_i64().unwrap();
        assert!(within_5_percent(before, after), "{before} -> {after}");
        assert_eq!(row["held"], 10 * (burst + 1), "{row}");
    }
    // Ten honest newcomers spreading ±10%, and five after a firmware update
    // that made the card a fifth faster: none held.
    for n in 0..15 {
        let factor = if n < 10 { 0.901 + f64::from(n) * 0.02 } else { 1.201 + f64::from(n - 10) * 0.02 };
        let reply = post_as(&server, &format!("203.0.{}.9", 10 + n), &pi4(factor));
        assert_eq!(reply.json()["held"], false, "{}", reply.text());
        assert!(reply.json()["standing"].is_object());
    }
    let row = sd64g_pi4(&server);
    assert_eq!((row["submitters"].as_i64(), row["held"].as_i64()), (Some(22), Some(20)), "{row}");
    // The held results are listed apart on the card page, with the reason,
    // and are in no plot.
    let page = server.get(&format!("/cards/{}", row["card_key"].as_str().unwrap())).text();
    let held_list = page.split("<ul id=\"held\">").nth(1).expect("a held list").split("</ul>").next().unwrap();
    assert_eq!(held_list.matches("<li>").count(), 20, "one entry per network");
    assert!(held_list.contains("contradicts this row, established by 22 networks"), "{held_list}");
    assert_eq!(networks_in_class_table(&page), 22, "held networks are not in the claimed-vs-measured counts");
    let recent = page.split("<ul id=\"recent\">").nth(1).unwrap().split("</ul>").next().unwrap();
    for id in &held_ids {
        assert!(!recent.contains(&format!("result {id}<")), "held result {id} is not among the counted");
    }
    // A moderator's acceptance counts one.
    let accept = request(
        server.addr,
        "POST",
        &format!("/api/v1/results/{}/accept", held_ids[15]),
        &[("Authorization", &format!("Bearer {ADMIN}"))],
        br#"{"reason": "the owner showed the card"}"#,
    );
    assert_eq!(accept.status, 200, "{}", accept.text());
    let row = sd64g_pi4(&server);
    assert_eq!((row["submitters"].as_i64(), row["held"].as_i64()), (Some(23), Some(19)), "{row}");
}

/// The same card on a slower bus mode is another row, never held.
fn a_slower_bus_mode_is_its_own_row(backend: Backend) {
    let server = behind_proxy(backend, Options::default());
    seven_honest(&server);
    let mut slow = pi4(0.6);
    slow["device"]["sd"]["host"] = json!({"clock_hz": 50000000, "timing": "sd high-speed", "bus_width_bits": 4});
    for n in 0..3 {
        slow["measurements"]["seq_write_mb_s"] = json!(12.0 + f64::from(n));
        assert_eq!(post_as(&server, &format!("192.0.{n}.2"), &slow).json()["held"], false);
    }
    let high_speed: Vec<Value> = rows(&server, "q=sd64g").into_iter().filter(|r| r["bus"] == "High Speed").collect();
    assert_eq!(high_speed[0]["submitters"], 3, "{high_speed:?}");
}

// ---------------------------------------------------------------------------
// Impossible cards.

/// The issue's four: each from three networks, none ranked.
fn impossible_cards_are_never_ranked(backend: Backend) {
    let server = behind_proxy(backend, Options::default());
    let with = |change: &dyn Fn(&mut Value)| {
        let mut r = report();
        change(&mut r);
        r
    };
    let nvme = with(&|r| {
        r["device"] = json!({"kind": "nvme", "model": "Fast NVMe 1TB", "vendor": "Acme", "firmware": "1.0",
            "capacity_bytes": 1000204886016u64, "nvme": {"transport": "pcie"}});
        r["system"]["board"] = json!("Raspberry Pi 5 Model B Rev 1.0");
        r["measurements"]["rand_read_4k_qd64_iops"] = json!(99_000_000);
    });
    let other = with(&|r| {
        r["device"] = json!({"kind": "other", "model": "Mystery Disk", "vendor": "Acme", "capacity_bytes": 1u64 << 40});
        r["measurements"]["rand_write_4k_qd64_iops"] = json!(50_000_000);
    });
    let express = with(&|r| {
        r["device"]["sd"].as_object_mut().unwrap().remove("host");
        r["device"]["sd"]["scr"] = json!({"spec_version": "8.xx", "bus_widths": [1, 4]});
        r["system"]["board"] = json!("Orange Pi 5");
        r["measurements"]["seq_read_mib_s"] = json!(900.0);
    });
    let stick = |link: u32| {
        with(&move |r: &mut Value| {
            r["device"] = json!({"kind": "usb", "model": "Flash Drive", "vendor": "Acme", "capacity_bytes": 64u64 << 30,
                "usb": {"id": "0781:5581", "speed_mbps": link, "driver": "uas"}});
            r["measurements"]["seq_read_mib_s"] = json!(1500.0);
        })
    };
    for (what, body) in
        [("nvme", nvme), ("other", other), ("express", express), ("stick", stick(5000)), ("20g", stick(20000))]
    {
        for n in 0..3 {
            let reply = post_as(&server, &format!("100.64.{n}.1"), &body);
            assert_eq!(reply.status, 201, "{what}: {}", reply.text());
            let created = reply.json();
            assert_eq!(created["status"], "flagged", "{what}: {created}");
            assert!(created["reasons"][0].as_str().unwrap().starts_with("impossible figure: "), "{what}: {created}");
        }
    }
    assert!(rows(&server, "limit=500").is_empty(), "no impossible card has a row");
}

// ---------------------------------------------------------------------------
// Names.

fn names_come_from_the_key_and_the_row(backend: Backend) {
    let server = behind_proxy(backend, Options::default());
    seven_honest(&server);
    // A label war from another row of the card (no board): four networks.
    for n in 0..4 {
        let mut r = pi4(1.0);
        r.as_object_mut().unwrap().remove("system");
        r["label"] = json!("AVOID fake card scam example");
        assert_eq!(post_as(&server, &format!("100.65.{n}.1"), &r).status, 201);
    }
    assert_eq!(sd64g_pi4(&server)["name"], "Kingston SD64G 6.1, 62.3 GB", "another row names nothing here");
    // One report naming the maker through its USB bridge's string.
    let mut nvme = report();
    nvme["device"] = json!({"kind": "nvme", "model": "SSD 970", "vendor": "Samsung", "capacity_bytes": 500107862016u64,
        "usb": {"id": "0bda:9210", "manufacturer": "COUNTERFEIT do not buy", "speed_mbps": 5000}});
    assert_eq!(post_as(&server, "100.66.0.1", &nvme).status, 201);
    let found = rows(&server, "q=970");
    assert_eq!(found[0]["card"]["manufacturer"], "Samsung", "{found:?}");
    assert!(!found[0]["name"].as_str().unwrap().contains("COUNTERFEIT"));
    // TransMemory, transmemory and TRANSMEMORY: one card, spelled as first sent.
    let stick = |vendor: &str, model: &str, n: u32| {
        let mut r = report();
        r["device"] = json!({"kind": "usb", "model": model, "vendor": vendor, "capacity_bytes": 31042043904u64,
            "usb": {"id": "0930:6545", "speed_mbps": 5000}});
        r["measurements"]["seq_write_mb_s"] = json!(20.0 + f64::from(n) / 10.0);
        r
    };
    let mut keys = Vec::new();
    for (n, model) in ["TransMemory", "transmemory", "TRANSMEMORY"].iter().enumerate() {
        let reply = post_as(&server, &format!("100.67.{n}.1"), &stick("TOSHIBA", model, n as u32));
        assert_eq!(reply.status, 201, "{model}: {}", reply.text());
        keys.push(server.get(&format!("/api/v1/results/{}", reply.json()["id"])).json()["card_key"].clone());
    }
    assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
    let toshiba = rows(&server, "q=toshiba");
    assert_eq!(toshiba.len(), 1, "{toshiba:?}");
    assert_eq!(
        (toshiba[0]["submitters"].as_i64(), toshiba[0]["card"]["product_name"].as_str()),
        (Some(3), Some("TransMemory"))
    );
    // A Cyrillic look-alike inside a Latin name is refused; a name all of
    // Cyrillic look-alikes (СОМЕТ) is the Latin card (COMET).
    let mixed = post_as(&server, "100.67.9.1", &stick("TOSHIBA", "Trans\u{41c}emory", 9));
    assert_eq!(mixed.status, 422, "{}", mixed.text());
    let latin = post_as(&server, "100.67.10.1", &stick("ACME", "COMET", 10)).json();
    let cyrillic = post_as(&server, "100.67.11.1", &stick("ACME", "\u{421}\u{41e}\u{41c}\u{415}\u{422}", 11)).json();
    let key_of = |created: &Value| server.get(&format!("/api/v1/results/{}", created["id"])).json()["card_key"].clone();
    assert_eq!(key_of(&latin), key_of(&cyrillic));
}

fn markup_is_refused_after_folding(backend: Backend) {
    let server = behind_proxy(backend, Options::default());
    for (field, value) in
        [("label", "\u{ff1c}img src\u{ff1d}x onerror\u{ff1d}alert(1)\u{ff1e}"), ("board", "\u{ff1c}script\u{ff1e}")]
    {
        let mut r = pi4(1.0);
        if field == "label" {
            r["label"] = json!(value);
        } else {
            r["system"]["board"] = json!(value);
        }
        let reply = post_as(&server, "100.68.0.1", &r);
        assert_eq!(reply.status, 422, "{field}: {}", reply.text());
        assert!(error_of(&reply).contains("markup or quoting character"), "{}", error_of(&reply));
    }
    assert!(export_lines(&server).is_empty(), "nothing stored");
}

// ---------------------------------------------------------------------------
// What everyone sees.

fn one_network_cannot_crowd_shared_pages(backend: Backend) {
    let server = behind_proxy(backend, Options::default());
    seven_honest(&server);
    let options_on_home = |server: &Leaderboard| server.get("/").text().matches("<option").count();
    let before = options_on_home(&server);
    // Thirty boards from one /24.
    for n in 0..30 {
        let mut r = pi4(1.0);
        r["system"]["board"] = json!(format!("Spam Board {n}"));
        assert_eq!(post_as(&server, "100.69.0.1", &r).status, 201);
    }
    assert_eq!(options_on_home(&server), before, "no choice offered below three networks");
    // Forty results from one /24 on the honest row (none a copy of an honest
    // network's report, which would count for that one): one entry on the
    // card page.
    for n in 0..40 {
        assert_eq!(post_as(&server, "100.70.0.1", &pi4(0.9013 + f64::from(n) / 400.0)).status, 201);
    }
    let row = sd64g_pi4(&server);
    let page = server.get(&format!("/cards/{}", row["card_key"].as_str().unwrap())).text();
    let recent = page.split("<ul id=\"recent\">").nth(1).unwrap().split("</ul>").next().unwrap();
    assert_eq!(recent.matches("<li>").count(), 9, "one entry per network: {recent}");
    assert!(recent.contains("(and 39 more from this network)"), "{recent}");
    assert!(recent.contains("(and 29 more from this network)"), "{recent}");
    assert!(page.matches("<circle").count() <= 9, "at most one dot per network");
    assert_eq!(networks_in_class_table(&page), 9, "the claimed-vs-measured table counts networks, not results");
    assert!(page.contains("And 30 more boards or bus modes with fewer than 3 networks each (30 results)"));
    assert!(!page.contains("Spam Board"), "their boards are not listed");
}

fn notes_bodies_and_quota_are_capped(backend: Backend) {
    let server = behind_proxy(backend, Options { quota_mib: Some(1), ..Options::default() });
    let mut r = pi4(1.0);
    r["notes"] = json!(["x".repeat(1900), "y".repeat(1900), "z".repeat(1900)]);
    let reply = post_as(&server, "100.71.0.1", &r);
    assert_eq!(reply.status, 422, "{}", reply.text());
    assert!(error_of(&reply).starts_with("notes: 5700 bytes in all, at most 4096"));
    let mut big = pi4(1.0);
    big["notes"] = json!(vec!["n".repeat(1000); 240]);
    let reply = post_as(&server, "100.71.0.1", &big);
    assert_eq!(reply.status, 413, "{}", reply.text());
    assert!(error_of(&reply).contains("larger than the 64 KiB a report may be"), "{}", error_of(&reply));
    // 1 MiB a day: about 300 reports of 3 KiB from one network, then 429.
    let mut refused = None;
    for n in 0..1000 {
        let reply = post_as(&server, "100.72.0.1", &pi4(1.0 + f64::from(n) / 100_000.0));
        if reply.status != 201 {
            refused = Some((n, reply));
            break;
        }
    }
    let (n, reply) = refused.expect("the quota ends a flood");
    assert_eq!(reply.status, 429, "{}", reply.text());
    assert!(reply.header("retry-after").is_some_and(|s| s.parse::<u64>().is_ok_and(|s| s > 86_000)), "{reply:?}");
    assert!(error_of(&reply).starts_with("quota: this network stored"));
    assert!((200..400).contains(&n), "{n} reports before the quota");
    assert_eq!(post_as(&server, "100.73.0.1", &pi4(1.0)).status, 201, "another network is not limited");
}

// ---------------------------------------------------------------------------
// Holding the server.

fn admin_tokens_are_throttled_and_hidden_is_missing(backend: Backend) {
    let server = start(backend, Options { admin_token: Some(ADMIN.into()), ..Options::default() });
    let id =
        server.post_report_from(IpAddr::V4(Ipv4Addr::new(127, 0, 5, 1)), &pi4(1.0).to_string(), &key()).json()["id"]
            .as_i64()
            .unwrap();
    let hide = |token: &str| {
        request(
            server.addr,
            "POST",
            &format!("/api/v1/results/{id}/hide"),
            &[("Authorization", &format!("Bearer {token}"))],
            br#"{"reason": "spam"}"#,
        )
    };
    let statuses: Vec<u16> = (0..60).map(|n| hide(&format!("guess-{n:040}")).status).collect();
    assert_eq!(&statuses[..5], [403; 5]);
    assert!(statuses[5..].iter().all(|s| *s == 429), "{statuses:?}");
    assert_eq!(hide(ADMIN).status, 429, "no token is even compared while throttled");
    // From another address, the moderator hides it.
    let hidden = request_from(
        &server,
        IpAddr::V4(Ipv4Addr::new(127, 0, 6, 1)),
        "POST",
        &format!("/api/v1/results/{id}/hide"),
        &[("Authorization", &format!("Bearer {ADMIN}"))],
        br#"{"reason": "spam"}"#,
    );
    assert_eq!(hidden.status, 200, "{}", hidden.text());
    // A hidden result and one that never was answer alike, byte for byte
    // apart from the id.
    let missing = 999_999;
    for (method, path, headers) in [
        ("GET", "/api/v1/results/{}", vec![]),
        ("GET", "/results/{}", vec![]),
        ("DELETE", "/api/v1/results/{}", vec![("Authorization", "Bearer 00000000")]),
    ] {
        let ask = |n: i64| request(server.addr, method, &path.replace("{}", &n.to_string()), &headers, b"");
        let (a, b) = (ask(id), ask(missing));
        assert_eq!(a.status, b.status, "{method} {path}");
        let same = |r: &Response, n: i64| r.text().replace(&format!("results/{n}"), "results/ID");
        assert_eq!(same(&a, id), same(&b, missing), "{method} {path}");
    }
}

/// A moderator hides, restores, accepts or bans everything one network
/// sent, in one request each.
fn a_network_is_moderated_in_one_request(backend: Backend) {
    let server = behind_proxy(backend, Options { admin_token: Some(ADMIN.into()), ..Options::default() });
    seven_honest(&server);
    let ids: Vec<i64> = (0..3)
        .map(|n| post_as(&server, "2001:db8:aa:1::1", &pi4(0.5 + f64::from(n) / 100.0)).json()["id"].as_i64().unwrap())
        .collect();
    let admin = format!("Bearer {ADMIN}");
    let on_network = |action: &str| {
        request(
            server.addr,
            "POST",
            &format!("/api/v1/results/{}/network/{action}", ids[1]),
            &[("Authorization", &admin)],
            br#"{"reason": "one spammer's network"}"#,
        )
    };
    let hidden = on_network("hide");
    assert_eq!(hidden.status, 200, "{}", hidden.text());
    assert_eq!((hidden.json()["network_results"].as_i64(), hidden.json()["changed"].as_i64()), (Some(3), Some(3)));
    assert!(ids.iter().all(|id| server.get(&format!("/api/v1/results/{id}")).status == 404));
    assert_eq!(on_network("restore").status, 200);
    assert!(ids.iter().all(|id| server.get(&format!("/api/v1/results/{id}")).json()["held"] == true));
    assert_eq!(on_network("accept").status, 200);
    assert_eq!(sd64g_pi4(&server)["submitters"], 8, "accepted: the network counts");
    let banned = on_network("ban");
    assert_eq!((banned.status, banned.json()["banned"].as_bool()), (200, Some(true)), "{}", banned.text());
    assert_eq!(sd64g_pi4(&server)["submitters"], 7);
    let refused = post_as(&server, "2001:db8:aa:ffff::9", &pi4(1.0));
    assert_eq!(refused.status, 403, "{}", refused.text());
    assert!(error_of(&refused).starts_with("network: a moderator banned this network"));
    assert_eq!(post_as(&server, "2001:db8:ab::1", &pi4(1.001)).status, 201, "another network is not banned");
    assert_eq!(on_network("unban").json()["banned"], false);
    assert_eq!(post_as(&server, "2001:db8:aa:2::1", &pi4(1.002)).status, 201);
}

fn request_from(
    server: &Leaderboard,
    source: IpAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let mut conn = leaderboard::Http::new(server.addr).from(source);
    conn.keep_alive = false;
    conn.send(method, path, headers, body).expect("a request")
}

fn the_verdict_of_a_quick_report_is_indicative(backend: Backend) {
    let server = start(backend, Options::default());
    let mut r = pi4(1.0);
    r["profile"] = json!("quick");
    let created = server.post_report(&r.to_string(), &key()).json();
    let stored = server.get(&format!("/api/v1/results/{}", created["id"])).json();
    assert_eq!(stored["verdict"]["indicative"], true, "{}", stored["verdict"]);
}

on_both_backends!(
    one_48_is_one_network,
    a_contradicting_burst_is_held,
    a_slower_bus_mode_is_its_own_row,
    impossible_cards_are_never_ranked,
    names_come_from_the_key_and_the_row,
    markup_is_refused_after_folding,
    one_network_cannot_crowd_shared_pages,
    notes_bodies_and_quota_are_capped,
    admin_tokens_are_throttled_and_hidden_is_missing,
    a_network_is_moderated_in_one_request,
    the_verdict_of_a_quick_report_is_indicative,
);

/// Forty idle sockets from one address against `--max-connections 32`: the
/// network holds at most a quarter of the slots, and a fresh request from
/// another network is answered.
#[test]
fn one_network_cannot_take_every_connection() {
    let server =
        Leaderboard::start_with(Options { args: vec!["--max-connections".into(), "32".into()], ..Options::default() });
    let spammer = IpAddr::V4(Ipv4Addr::new(127, 0, 40, 1));
    let idle: Vec<_> = (0..40).map(|_| leaderboard::connect_from(spammer, server.addr).expect("a socket")).collect();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let reply = request_from(&server, IpAddr::V4(Ipv4Addr::new(127, 0, 41, 1)), "GET", "/api/v1/leaderboard", &[], b"");
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(started.elapsed() < Duration::from_secs(5));
    // The spammer's next one is refused at once, naming its network.
    let theirs = request_from(&server, spammer, "GET", "/api/v1/leaderboard", &[], b"");
    assert_eq!(theirs.status, 503);
    assert!(theirs.text().contains("your network holds as many open connections"), "{}", theirs.text());
    drop(idle);
}

/// A server refuses an admin token shorter than 32 characters.
#[test]
fn a_short_admin_token_is_refused() {
    let dir = storage_score_test_support::temp_dir("lb-short-token");
    let out = std::process::Command::new(leaderboard::server_binary())
        .args(["--listen", "127.0.0.1:0", "--db", &format!("sqlite:{}", dir.path().join("x.db").display())])
        .env("STORAGE_SCORE_LEADERBOARD_ADMIN_TOKEN", "sixteen-chars-ok")
        .output()
        .expect("run the server");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("at least 32 characters"), "{stderr}");
    drop(dir);
}
