//! The leaderboard's pages in a real browser: headless Chromium loads the
//! leaderboard, a search, a card page, a result page and `/about` from the
//! real server, the tests check the DOM it built (the card is listed,
//! sorting by a header link works, a `<script>` in a note is shown as text
//! and never runs) and, over the DevTools protocol at a phone's 390×844,
//! that the rank, the card and its median score are on the first screen.
//! Screenshots at 1280 and 390 px go to `target/leaderboard-screenshots/`
//! for a person to look at.

use storage_score_test_support::chromium;
use storage_score_test_support::leaderboard;

use std::path::PathBuf;

use leaderboard::Leaderboard;
use serde_json::{Value, json};

const REPORT: &str = include_str!("../fixtures/leaderboard/report.json");

fn report_with(change: impl FnOnce(&mut Value)) -> String {
    let mut value: Value = serde_json::from_str(REPORT).unwrap();
    change(&mut value);
    value.to_string()
}

fn variant(product: &str, board: &str, factor: f64, fast_bus: bool) -> String {
    report_with(|r| {
        r["device"]["sd"]["cid"]["product_name"] = json!(product);
        r["system"]["board"] = json!(board);
        for (_, v) in r["measurements"].as_object_mut().unwrap() {
            *v = json!((v.as_f64().unwrap() * factor).round());
        }
        if fast_bus {
            r["device"]["sd"]["host"] = json!({"clock_hz": 208000000, "timing": "sd uhs sdr104", "bus_width_bits": 4});
        }
    })
}

fn screenshot_dir() -> PathBuf {
    // target/<profile>/deps/<test> → target/leaderboard-screenshots
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap().to_path_buf();
    let dir = target.join("leaderboard-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The `data-card` attributes of the leaderboard's rows, in order.
fn row_cards(dom: &str) -> Vec<String> {
    dom.split("<tr data-card=\"").skip(1).map(|s| s[..s.find('"').unwrap()].to_owned()).collect()
}

/// The `href` of the header link that sorts by `key`, as the DOM has it.
fn sort_link(dom: &str, key: &str) -> String {
    let at = dom.find(&format!("data-sort=\"{key}\"")).expect("a sort link");
    let rest = &dom[at..];
    let href = &rest[rest.find("href=\"").unwrap() + 6..];
    href[..href.find('"').unwrap()].replace("&amp;", "&")
}

#[test]
#[ignore = "needs chromium"]
fn pages_in_headless_chromium() {
    if let Some(reason) = chromium::binary().is_none().then_some("chromium is not installed") {
        panic!("{reason}");
    }
    let server = Leaderboard::start();
    let mut keys = 0;
    let mut post = |body: String| {
        keys += 1;
        // Each result from a network of its own: every row gets its submitters.
        let from = std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, keys as u8, 1));
        let reply = server.post_report_from(from, &body, &format!("browser-test-{keys:04}"));
        assert_eq!(reply.status, 201, "{}", reply.text());
        reply.json()
    };
    for factor in [1.0, 0.92, 1.04, 0.85] {
        post(variant("SD64G", "Raspberry Pi 4 Model B Rev 1.4", factor, false));
    }
    for factor in [2.1, 2.3, 2.2] {
        post(variant("SD128", "Raspberry Pi 5 Model B Rev 1.0", factor, true));
    }
    let script = "<script>document.title='pwned';document.documentElement.setAttribute('data-pwned','1')</script>";
    let noted = post(report_with(|r| r["notes"] = json!([script, "a plain note"])));
    let noted_id = noted["id"].as_i64().unwrap();
    let rows = server.get("/api/v1/leaderboard").json()["rows"].as_array().unwrap().clone();
    let card_of = |product: &str| {
        rows.iter().find(|r| r["card"]["product_name"] == product).unwrap()["card_key"].as_str().unwrap().to_owned()
    };
    let (slow, fast) = (card_of("SD64G"), card_of("SD128"));
    let shots = screenshot_dir();

    // The leaderboard: both cards, highest median first.
    let dom = chromium::dump_dom(&format!("{}/", server.url)).unwrap();
    assert_eq!(row_cards(&dom), [fast.clone(), slow.clone()], "{dom}");
    assert!(dom.contains("Kingston SD128 6.1"), "the card's name is on the page");
    chromium::screenshot(&format!("{}/", server.url), &shots.join("leaderboard.png"), 1280, 700).unwrap();
    // Clicking "Median score" again (a plain link) sorts lowest first.
    let href = sort_link(&dom, "score");
    assert!(href.contains("dir=asc"), "{href}");
    let sorted = chromium::dump_dom(&format!("{}{href}", server.url)).unwrap();
    assert_eq!(row_cards(&sorted), [slow.clone(), fast.clone()]);
    // The filter form's GET: only the Pi 5 row.
    let filtered = chromium::dump_dom(&format!("{}/?board=Raspberry+Pi+5+Model+B+Rev+1.0", server.url)).unwrap();
    assert_eq!(row_cards(&filtered), std::slice::from_ref(&fast));

    // The card page: its strip plot holds one dot per public result.
    let card_url = format!("{}/cards/{slow}", server.url);
    let dom = chromium::dump_dom(&card_url).unwrap();
    assert!(dom.contains("id=\"strip-plot\""));
    assert_eq!(dom.matches("<circle").count(), 5, "four runs and the one with notes");
    assert!(dom.contains("A2 Class 10 V30 U3"), "the claimed class");
    chromium::screenshot(&card_url, &shots.join("card.png"), 1280, 1100).unwrap();

    // The result page: the note's script is text, and it did not run.
    let result_url = format!("{}/results/{noted_id}", server.url);
    let dom = chromium::dump_dom(&result_url).unwrap();
    assert!(dom.contains("&lt;script&gt;document.title='pwned'"), "the script shows as text");
    assert!(!dom.contains("data-pwned=\"1\""), "the script did not run");
    assert!(dom.contains("<title>Result"), "the title is ours");
    assert!(dom.contains("rand_read_4k_qd64_iops") && dom.contains("21000"), "figures with latency percentiles");
    assert!(dom.contains("id=\"checks\""));
    chromium::screenshot(&result_url, &shots.join("result.png"), 1280, 1800).unwrap();
    for name in ["leaderboard.png", "card.png", "result.png"] {
        assert!(std::fs::metadata(shots.join(name)).unwrap().len() > 10_000, "{name} is a real picture");
    }
}

/// A leaderboard a Pi owner would search: forty cards, each with three to
/// six submitters, one with an agreed label and three held results from
/// networks that contradict its row.
fn populated() -> (Leaderboard, String, i64) {
    let server = Leaderboard::start();
    let makers = [(0x03, "SN"), (0x1b, "SM"), (0x9f, "TI"), (0x27, "PH"), (0xad, "LS")];
    let mut n: u32 = 0;
    let mut post = |body: String| {
        n += 1;
        let from = std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, (n / 250) as u8 + 2, (n % 250) as u8, 1));
        let reply = server.post_report_from(from, &body, &format!("browser-populated-{n:05}"));
        assert_eq!(reply.status, 201, "{}", reply.text());
        reply.json()
    };
    let mut result = 0;
    for card in 0..40u32 {
        let (mid, oid) = makers[card as usize % makers.len()];
        for who in 0..(3 + card % 4) {
            let factor = 0.6 + f64::from(card % 17) * 0.02 + f64::from(who) * 0.01;
            let body = report_with(|r| {
                r["device"]["sd"]["cid"]["manufacturer_id"] = json!(mid);
                r["device"]["sd"]["cid"]["oem_id"] = json!(oid);
                r["device"]["sd"]["cid"]["product_name"] = json!(format!("C{card:02}64"));
                r["system"]["board"] = json!(if card % 3 == 0 {
                    "Raspberry Pi 5 Model B Rev 1.0"
                } else {
                    "Raspberry Pi 4 Model B Rev 1.4"
                });
                if card % 3 == 0 {
                    r["device"]["sd"]["host"] =
                        json!({"clock_hz": 208000000, "timing": "sd uhs sdr104", "bus_width_bits": 4});
                }
                for (_, v) in r["measurements"].as_object_mut().unwrap() {
                    *v = json!((v.as_f64().unwrap() * factor).round());
                }
                if card == 7 && who < 4 {
                    r["label"] = json!("SanDisk Extreme 64GB");
                }
                r["notes"] = json!(["write tests used a scratch file on / (ext4)"]);
            });
            result = post(body)["id"].as_i64().unwrap();
        }
    }
    // Three newcomers at a fifth of the labelled card's figures: held.
    for who in 0..3 {
        let body = report_with(|r| {
            r["device"]["sd"]["cid"]["manufacturer_id"] = json!(makers[7 % makers.len()].0);
            r["device"]["sd"]["cid"]["oem_id"] = json!(makers[7 % makers.len()].1);
            r["device"]["sd"]["cid"]["product_name"] = json!("C0764");
            r["system"]["board"] = json!("Raspberry Pi 4 Model B Rev 1.4");
            for (_, v) in r["measurements"].as_object_mut().unwrap() {
                *v = json!((v.as_f64().unwrap() * (0.15 + f64::from(who) * 0.01)).round());
            }
        });
        assert_eq!(post(body)["held"], true);
    }
    let card = server.get("/api/v1/leaderboard?q=extreme").json()["rows"][0]["card_key"].as_str().unwrap().to_owned();
    (server, card, result)
}

#[test]
#[ignore = "needs chromium"]
fn pages_at_desktop_and_phone_widths() {
    let (server, card, result) = populated();
    let shots = screenshot_dir();
    let pages = [
        ("leaderboard", "/".to_owned()),
        ("search", "/?q=sandisk+extreme".to_owned()),
        ("card", format!("/cards/{card}")),
        ("result", format!("/results/{result}")),
        // Scrolled to its held results, listed apart (after another page:
        // a fragment on the same page is no navigation to wait for).
        ("card-held", format!("/cards/{card}#held")),
        ("about", "/about".to_owned()),
    ];
    let held = chromium::dump_dom(&format!("{}/cards/{card}", server.url)).unwrap();
    assert!(held.contains("<h3>Held results (not counted)</h3>"), "{held}");
    assert_eq!(
        held.split("<ul id=\"held\">").nth(1).unwrap().split("</ul>").next().unwrap().matches("<li>").count(),
        3
    );
    for (width, height, mobile) in [(1280u32, 900u32, false), (390, 844, true)] {
        let mut browser = chromium::Cdp::launch(width, height, mobile).expect("chromium");
        for (name, path) in &pages {
            browser.navigate(&format!("{}{path}", server.url)).unwrap();
            let file = shots.join(format!("{name}-{width}.png"));
            browser.screenshot(&file, false).unwrap();
            assert!(std::fs::metadata(&file).unwrap().len() > 5_000, "{name}-{width}.png is a real picture");
            // Nothing is wider than the screen: a wide table scrolls in its box.
            let page_width = browser.eval("document.documentElement.scrollWidth").unwrap().as_u64().unwrap();
            assert!(page_width <= u64::from(width), "{path} at {width} px is {page_width} px wide");
        }
        // The leaderboard's first row: rank, card and median score on the
        // first screen.
        browser.navigate(&format!("{}/", server.url)).unwrap();
        let cells = browser
            .eval(
                "JSON.stringify(Array.from(document.querySelector('#leaderboard tbody tr').cells).slice(0, 3)\
                 .map(c => { const r = c.getBoundingClientRect(); return [c.textContent.trim(), r.right, r.bottom]; }))",
            )
            .unwrap();
        let cells: Vec<(String, f64, f64)> = serde_json::from_str(cells.as_str().unwrap()).unwrap();
        eprintln!("{width}x{height}: first row's rank, card, median score: {cells:?}");
        assert_eq!(cells[0].0, "1", "the rank");
        assert!(cells[2].0.parse::<u64>().is_ok(), "the median score: {:?}", cells[2]);
        for (text, right, bottom) in &cells {
            assert!(*right <= f64::from(width) && *bottom <= f64::from(height), "{text:?} ends at ({right}, {bottom})");
        }
        // The search finds the labelled card by its label.
        browser.navigate(&format!("{}/?q=sandisk+extreme", server.url)).unwrap();
        let found = browser.eval("document.querySelectorAll('#leaderboard tbody tr').length").unwrap();
        assert_eq!(found, 1);
        let total = browser.eval("document.querySelector('#pager-top .count strong').textContent").unwrap();
        assert_eq!(total, "1");
    }
    // The true total and the way to the rest.
    let dom = chromium::dump_dom(&format!("{}/?limit=10", server.url)).unwrap();
    assert!(dom.contains("1–10 of <strong>40</strong> rows"), "{dom}");
    assert!(dom.contains("next 10 →"));
}

/// The reference set's results: all, and its SD cards.
fn reference_counts() -> (usize, usize) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scoring/reference/set.json");
    let set: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let results = set["results"].as_array().unwrap();
    (results.len(), results.iter().filter(|r| r["kind"] == "sd").count())
}

/// A server with `--reference` and one card of three submitters.
fn with_reference() -> (Leaderboard, String) {
    let server =
        Leaderboard::start_with(leaderboard::Options { args: vec!["--reference".into()], ..Default::default() });
    for who in 0..3u8 {
        let from = std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 9, who, 1));
        let reply = server.post_report_from(
            from,
            &variant("REF64", "Raspberry Pi 4 Model B Rev 1.4", 1.0 + f64::from(who) * 0.01, false),
            &format!("reference-{who}"),
        );
        assert_eq!(reply.status, 201, "{}", reply.text());
    }
    let card = server.get("/api/v1/leaderboard").json()["rows"][0]["card_key"].as_str().unwrap().to_owned();
    (server, card)
}

#[test]
fn published_results_are_shown_apart_and_counted_nowhere() {
    let set = reference_counts();
    let (server, card) = with_reference();
    // The API's rows are the submissions only: one card, three submitters.
    let api = server.get("/api/v1/leaderboard").json();
    assert_eq!(api["rows"].as_array().unwrap().len(), 1, "{api}");
    assert_eq!(api["rows"][0]["submitters"], 3, "{api}");
    let home = server.get("/").text();
    assert_eq!(row_cards(&home).len(), 1, "the leaderboard's own rows");
    let published = home.split("<section id=\"published\">").nth(1).expect("a published section");
    assert_eq!(published.matches("<tr><td class=\"n\">").count(), set.0, "every published result, on the home page");
    assert!(published.contains("not in its medians, standings or ranks"));
    assert!(published.contains("href=\"https://github.com/"), "each links to its source");
    // The card page lists only the SD cards of the set.
    let page = server.get(&format!("/cards/{card}")).text();
    let section = page.split("<section id=\"published\">").nth(1).expect("a published section on the card");
    assert_eq!(section.matches("<tr><td class=\"n\">").count(), set.1, "the set's SD cards");
    // Without --reference there is no such section.
    let plain = Leaderboard::start();
    assert!(!plain.get("/").text().contains("id=\"published\""));
}

#[test]
#[ignore = "needs chromium"]
fn published_results_at_desktop_and_phone_widths() {
    let (server, card) = with_reference();
    let shots = screenshot_dir();
    for (width, height, mobile) in [(1280u32, 900u32, false), (390, 844, true)] {
        let mut browser = chromium::Cdp::launch(width, height, mobile).expect("chromium");
        for (name, path) in
            [("published-home", "/#published".to_owned()), ("published-card", format!("/cards/{card}#published"))]
        {
            browser.navigate(&format!("{}{path}", server.url)).unwrap();
            let file = shots.join(format!("{name}-{width}.png"));
            browser.screenshot(&file, false).unwrap();
            assert!(std::fs::metadata(&file).unwrap().len() > 5_000, "{name}-{width}.png is a real picture");
            let page_width = browser.eval("document.documentElement.scrollWidth").unwrap().as_u64().unwrap();
            assert!(page_width <= u64::from(width), "{path} at {width} px is {page_width} px wide");
        }
    }
}
