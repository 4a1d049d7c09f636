//! The leaderboard's pages in a real browser: headless Chromium loads the
//! leaderboard, a card page and a result page from the real server, the
//! tests check the DOM it built (the card is listed, sorting by a header
//! link works, a `<script>` in a note is shown as text and never runs), and
//! screenshots go to `target/leaderboard-screenshots/` for a person to look at.

#[path = "support/chromium.rs"]
mod chromium;
#[path = "support/leaderboard.rs"]
mod leaderboard;

use std::path::PathBuf;

use leaderboard::Leaderboard;
use serde_json::{Value, json};

const REPORT: &str = include_str!("fixtures/leaderboard/report.json");

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
#[ignore = "needs Chromium: cargo xtask test installs it (apt-get install chromium)"]
fn pages_in_headless_chromium() {
    if let Some(reason) = chromium::binary().is_none().then_some("chromium is not installed") {
        panic!("{reason}");
    }
    let server = Leaderboard::start();
    let mut keys = 0;
    let mut post = |body: String| {
        keys += 1;
        let reply = server.post_report(&body, &format!("browser-test-{keys:04}"));
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
    let href = sort_link(&dom, "median");
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
