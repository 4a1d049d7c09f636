//! No page lets a hostile string through as markup: every string of a run,
//! endurance and power-loss report is, one at a time, a payload (`<script>`,
//! a closing quote and an `onerror` image, `'`, `</title>`, `javascript:`,
//! `&` entities, control characters); a moderator's reason is one too, and
//! so are the query string and the path. Then every route of the router
//! (read from `crates/leaderboard/src/lib.rs`, so that a route added later
//! without a line here fails this test) is fetched for every card and
//! result, and each HTML answer is tokenised: only tags, attributes and
//! link targets this server writes itself may appear.

use std::net::IpAddr;

use serde_json::{Value, json};
use storage_score_test_support::lb_backends::*;
use storage_score_test_support::leaderboard::{Leaderboard, Options, request};

const ROUTER: &str = include_str!("../../crates/leaderboard/src/lib.rs");
const ENDURANCE: &str = include_str!("../fixtures/leaderboard/endurance.json");
const POWER_LOSS: &str = include_str!("../fixtures/leaderboard/power-loss.json");
const ADMIN: &str = "admin-token-for-tests-0123456789";

/// The payload, with and without control characters (names refuse them).
const HOSTILE: &str =
    "<script>alert(1)</script>\"><img src=x onerror=alert(2)>'</title>javascript:alert(3)&amp;&lt;x\u{1}\u{7}\u{7f}";
const HOSTILE_PRINTABLE: &str =
    "<script>alert(1)</script>\"><img src=x onerror=alert(2)>'</title>javascript:alert(3)&amp;&lt;x";

/// Elements this server's pages and its SVG plots are made of.
const TAGS: &[&str] = &[
    "!doctype", "html", "head", "meta", "title", "link", "body", "header", "h1", "h2", "h3", "a", "p", "code", "pre",
    "ul", "li", "strong", "span", "div", "table", "thead", "tbody", "tr", "th", "td", "form", "input", "button",
    "details", "summary", "label", "select", "option", "optgroup", "section", "figure", "svg", "g", "rect", "line",
    "circle", "text", "path", "polyline", "tspan", "defs", "desc",
];

/// Every `.route("PATH"` of the router.
fn routes() -> Vec<&'static str> {
    ROUTER.split(".route(\"").skip(1).map(|rest| &rest[..rest.find('"').expect("a quoted path")]).collect()
}

/// Every string leaf of `value`, as a JSON pointer.
fn leaves(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::String(_) => out.push(at),
        Value::Array(items) => items.iter().enumerate().for_each(|(i, v)| leaves(v, format!("{at}/{i}"), out)),
        Value::Object(map) => {
            map.iter().for_each(|(k, v)| leaves(v, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out))
        }
        _ => {}
    }
}

/// The report with each string, one at a time, and each free-text field
/// a report may carry, set to the payload.
fn hostile_variants(report: &Value) -> Vec<Value> {
    let mut pointers = Vec::new();
    leaves(report, String::new(), &mut pointers);
    let mut variants = Vec::new();
    for payload in [HOSTILE, HOSTILE_PRINTABLE] {
        for pointer in &pointers {
            let mut r = report.clone();
            *r.pointer_mut(pointer).expect("leaf") = json!(payload);
            variants.push(r);
        }
        let mut r = report.clone();
        r["label"] = json!(payload);
        r["notes"] = json!([payload]);
        variants.push(r.clone());
        if r.get("device").is_some_and(Value::is_object) {
            r["device"]["notes"] = json!([payload]);
            r["device"]["hints"] = json!([{"code": payload, "message": payload}]);
            variants.push(r.clone());
        }
        r["skipped"] = json!([{"key": payload, "reason": payload}]);
        variants.push(r.clone());
        r["health"] = json!({"why": payload});
        variants.push(r);
    }
    variants
}

/// What is wrong with `html`: a tag, attribute or link target this server
/// does not write, or a title that ended early.
fn foreign_markup(html: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find('<') {
        rest = &rest[start + 1..];
        let name_end = rest.find(|c: char| c.is_whitespace() || c == '>' || c == '/').unwrap_or(rest.len());
        let closing = rest.starts_with('/');
        let name =
            if closing { &rest[1..rest[1..].find('>').map_or(rest.len(), |e| e + 1)] } else { &rest[..name_end] };
        if !TAGS.contains(&name.to_ascii_lowercase().as_str()) {
            problems.push(format!("element <{name}>"));
        }
        // Attributes up to the tag's end, quoted values skipped whole.
        let mut tag = &rest[name_end.min(rest.len())..];
        loop {
            tag = tag.trim_start_matches(|c: char| c.is_whitespace() || c == '/');
            if tag.is_empty() || tag.starts_with('>') {
                break;
            }
            let attr_end = tag.find(|c: char| c.is_whitespace() || c == '=' || c == '>').unwrap_or(tag.len());
            let attr = tag[..attr_end].to_ascii_lowercase();
            tag = &tag[attr_end..];
            let mut value = "";
            if let Some(after) = tag.strip_prefix('=') {
                let (v, left) = match after.chars().next() {
                    Some(q @ ('"' | '\'')) => {
                        let end = after[1..].find(q).map_or(after.len(), |e| e + 1);
                        (&after[1..end], &after[(end + 1).min(after.len())..])
                    }
                    _ => {
                        let end = after.find(|c: char| c.is_whitespace() || c == '>').unwrap_or(after.len());
                        (&after[..end], &after[end..])
                    }
                };
                value = v;
                tag = left;
            }
            if attr.starts_with("on") || attr == "src" || attr == "srcdoc" || attr == "formaction" {
                problems.push(format!("attribute {attr}={value:?} on <{name}>"));
            }
            if (attr == "href" || attr == "action")
                && !(value.starts_with('/') || value.starts_with("https://") || value.starts_with('#'))
            {
                problems.push(format!("link {attr}={value:?} on <{name}>"));
            }
            if value.to_ascii_lowercase().trim_start().starts_with("javascript:") {
                problems.push(format!("javascript: in {attr} on <{name}>"));
            }
        }
    }
    // An unescaped `</title>` would close more titles than were opened.
    if html.matches("</title>").count() != html.matches("<title").count() {
        problems.push("a </title> without its <title>".to_owned());
    }
    problems
}

fn fetch(server: &Leaderboard, path: &str, pages: &mut Vec<(String, u16, String)>) {
    let response = server.get(path);
    assert!(response.status < 500, "{path}: {}", response.status);
    let html = response.header("content-type").is_some_and(|t| t.starts_with("text/html"));
    pages.push((path.to_owned(), response.status, if html { response.text() } else { String::new() }));
}

fn no_page_lets_a_payload_through(backend: Backend) {
    let server = start(
        backend,
        Options { rate_limit: Some(100_000), admin_token: Some(ADMIN.to_owned()), ..Options::default() },
    );
    let mut ids = Vec::new();
    let mut cards = Vec::new();
    let mut refused = 0;
    let sources = [
        report(),
        serde_json::from_str(ENDURANCE).expect("fixture"),
        serde_json::from_str(POWER_LOSS).expect("fixture"),
    ];
    for (n, variant) in sources.iter().flat_map(hostile_variants).enumerate() {
        let from = IpAddr::from([127, 1 + (n / 250) as u8, (n % 250) as u8, 1]);
        let posted = server.post_report_from(from, &variant.to_string(), &key());
        assert!(posted.status < 500, "{}", posted.text());
        if posted.status != 201 {
            refused += 1;
            continue;
        }
        let id = posted.json()["id"].as_i64().expect("id");
        ids.push(id);
        // A run's receipt has no card key; the result's own record has.
        let card = server.get(&format!("/api/v1/results/{id}")).json()["card_key"].as_str().expect("card").to_owned();
        if !cards.contains(&card) {
            cards.push(card);
        }
    }
    assert!(ids.len() >= 10, "only {} hostile reports stored ({refused} refused)", ids.len());
    // A moderator's reasons are shown beside the result.
    for (i, id) in ids.iter().enumerate().take(4) {
        let action = ["flag", "hide", "accept", "flag"][i];
        let auth = format!("Bearer {ADMIN}");
        let body = json!({"reason": HOSTILE_PRINTABLE}).to_string();
        let headers = [("Authorization", auth.as_str()), ("Content-Type", "application/json")];
        let status =
            request(server.addr, "POST", &format!("/api/v1/results/{id}/{action}"), &headers, body.as_bytes()).status;
        assert!(status < 300, "{action} {id}: {status}");
    }

    let q = "%3Cscript%3Ealert(1)%3C%2Fscript%3E%22%3E%3Cimg%20src%3Dx%20onerror%3Dalert(2)%3E%27%3C%2Ftitle%3E%26amp%3B%01";
    let mut pages = Vec::new();
    for route in routes() {
        let paths: Vec<String> = if route.contains("{key}") {
            cards.iter().map(|c| route.replace("{key}", c)).chain([route.replace("{key}", q)]).collect()
        } else if route.contains("{id}") {
            ids.iter().map(|id| route.replace("{id}", &id.to_string())).chain([route.replace("{id}", q)]).collect()
        } else {
            vec![route.to_owned()]
        };
        for path in paths {
            fetch(&server, &path.replace("{action}", q), &mut pages);
        }
    }
    for query in ["q", "board", "class", "kind", "bus", "sort", "limit", "offset", "dir"] {
        fetch(&server, &format!("/?{query}={q}"), &mut pages);
    }
    fetch(&server, &format!("/?q={q}&board={q}&class={q}&kind={q}&bus={q}"), &mut pages);
    fetch(&server, &format!("/{q}"), &mut pages);
    fetch(&server, &format!("/cards/{q}?{q}"), &mut pages);

    let mut escaped = 0;
    for (path, status, html) in &pages {
        if html.is_empty() {
            continue;
        }
        let problems = foreign_markup(html);
        assert!(problems.is_empty(), "{path} ({status}): {problems:?}\n{html}");
        escaped += usize::from(html.contains("&lt;script&gt;alert(1)"));
    }
    // The payloads did reach pages, escaped: the search box, cards, results.
    assert!(escaped >= cards.len() + 2, "the payload is escaped on only {escaped} of {} pages", pages.len());
    eprintln!(
        "{} pages fetched, {escaped} with the payload escaped; {} reports stored, {refused} refused",
        pages.len(),
        ids.len()
    );
}

#[test]
fn no_page_lets_a_payload_through_on_sqlite() {
    no_page_lets_a_payload_through(Backend::Sqlite);
}

#[test]
fn the_checker_finds_what_it_should() {
    assert!(foreign_markup("<p><script>x</script></p>").iter().any(|p| p.contains("script")));
    assert!(foreign_markup("<p><img src=x onerror=alert(2)></p>").len() >= 2);
    assert!(foreign_markup("<a href=\"javascript:alert(1)\">x</a>").iter().any(|p| p.contains("javascript")));
    assert!(foreign_markup("<input value=\"\"><img src=x>").iter().any(|p| p.contains("img")));
    assert!(foreign_markup("<p>&lt;script&gt; onerror=x</p>").is_empty());
}
