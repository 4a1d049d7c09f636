//! Server-rendered HTML pages that work without JavaScript (docs/leaderboard.md#pages):
//! the leaderboard (`/`), a card (`/cards/{key}`), a result
//! (`/results/{id}`) and how it all works (`/about`), with one stylesheet
//! (`/style.css`: no inline style, so the Content-Security-Policy allows
//! no more than this server's own sheet). The pages are maud templates:
//! every `(expression)` in them is escaped as it is written, so a string
//! that came from a report or a visitor cannot become markup. The only
//! unescaped insertions are `PreEscaped` of this server's own fixed markup,
//! each with a comment saying why it is safe.

mod about_page;
mod card_page;
mod card_wear;
mod health;
mod leaderboard_page;
mod published;
mod result_page;

pub use about_page::about;
pub use card_page::card;
pub use leaderboard_page::leaderboard;
pub use result_page::result;

use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};
use storage_scoring::figure::Figure;

use crate::error::ApiError;

/// The one stylesheet. Narrow screens (a phone at 390 px) drop the columns
/// one can do without, so that the rank, the card and its median score are
/// on the first screen.
const STYLE: &str = "
body{font-family:system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:0 .75rem 2rem;color:#222;line-height:1.35}
header{display:flex;flex-wrap:wrap;gap:.4rem 1.2rem;align-items:baseline;border-bottom:1px solid #ccc;margin-bottom:.6rem;padding:.4rem 0}
header h1{font-size:1.25rem;margin:0}
header a{color:#0b5394;text-decoration:none}
a{color:#0b5394}
table{border-collapse:collapse;width:100%;margin:.4rem 0 1.2rem}
th,td{padding:.3rem .45rem;border-bottom:1px solid #e4e4e4;text-align:left;vertical-align:top;overflow-wrap:break-word}
th a{color:inherit}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
td.n{white-space:nowrap}
td.score{font-weight:600}
.flag{color:#a33}.pass{color:#17702d}.fail{color:#a33}.unknown{color:#876}
form.search{display:flex;gap:.4rem;margin:.3rem 0}
form.search input[type=search]{flex:1;min-width:8rem;font-size:1rem;padding:.35rem}
form.search button{font-size:1rem}
details.filters{margin:.3rem 0}
details.filters summary{cursor:pointer;color:#0b5394}
.filters .fields{display:flex;flex-wrap:wrap;gap:.6rem;align-items:end;margin:.4rem 0}
.filters label{display:flex;flex-direction:column;font-size:.85rem}
.muted,.sub{color:#666;font-size:.85rem}
.sub{display:block}
.pager{display:flex;flex-wrap:wrap;gap:1rem;align-items:baseline;margin:.3rem 0}
.scroll{overflow-x:auto}
table.facts{width:auto}
.standing{font-size:1.05rem}
svg{max-width:100%;height:auto}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f6f6;padding:.5rem}
code{overflow-wrap:anywhere}
@media (max-width:700px){
 .wide{display:none}
 th,td{padding:.25rem .25rem}
 th{font-size:.85rem}
 .sub{font-size:.78rem}
 header h1{font-size:1.05rem}
}
";

/// `GET /style.css`.
pub async fn stylesheet() -> Response {
    let mut response = STYLE.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/css; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
    response
}

/// A whole page around `body`.
pub fn layout(title: &str, body: Markup) -> Response {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · storage-score leaderboard" }
                link rel="stylesheet" href="/style.css";
            }
            body {
                header {
                    h1 { a href="/" { "storage-score leaderboard" } }
                    a href="/about" { "how it works" }
                    a.wide href="/export.csv" { "export CSV" }
                    a.wide href="/export.json" { "export JSON" }
                }
                "\n" (body) "\n"
            }
        }
    };
    Html(page.into_string()).into_response()
}

/// An HTML error page with the API error's status and message.
pub fn error_page(e: ApiError) -> Response {
    let body = html! {
        h2 { (e.status.as_u16()) }
        p { (e.message) }
        p { a href="/" { "back to the leaderboard" } }
    };
    let mut response = layout(&e.status.to_string(), body);
    *response.status_mut() = e.status;
    response
}

/// Anything else: 404, as JSON under `/api/`, as a page elsewhere.
pub async fn not_found(uri: axum::http::Uri) -> Response {
    let e = ApiError::not_found(format!("{}: no such page or endpoint; see the leaderboard at /", clip(uri.path())));
    if uri.path().starts_with("/api/") { e.into_response() } else { error_page(e) }
}

fn clip(text: &str) -> String {
    text.chars().take(80).collect()
}

/// A score, or a dash.
pub fn score_text(score: Option<i64>) -> String {
    score.map_or("–".to_owned(), |s| s.to_string())
}

/// A figure column's cell classes: numeric, and dropped on a phone unless
/// it is the leaderboard's first figure.
pub fn figure_class(figure: Figure) -> &'static str {
    if figure.board().is_some_and(|b| b.place == 1) { "n" } else { "n wide" }
}

/// A figure column's title in full, with its unit (`Random write IOPS`).
pub fn figure_title(figure: Figure) -> String {
    let title = figure.board().map_or(figure.short_label(), |b| b.title).replace('|', " ");
    format!("{title} {}", figure.unit().symbol())
}

/// A figure for a table: whole numbers from 100 up, one decimal below.
pub fn figure_text(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
        None => "–".to_owned(),
    }
}

/// The one line a public result's standing reads as.
pub fn standing_text(score: i64, standing: &crate::store::Standing) -> String {
    let on =
        if standing.family == crate::board::UNKNOWN { String::new() } else { format!(" on a {}", standing.family) };
    if standing.group_submitters <= 1 {
        return format!("score {score}: the first submitter with this card{on} (median {})", standing.median_score);
    }
    format!(
        "score {score}: better than {}% of {} submitters with this card{on} (median {})",
        standing.percentile, standing.group_submitters, standing.median_score
    )
}
