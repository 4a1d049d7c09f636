//! The HTTP side of an upload: a POST (or a DELETE) to the leaderboard's API
//! (docs/leaderboard.md) with timeouts and the retries of [`crate::retry`], on
//! reqwest's blocking client with rustls.

use std::io::Read;
use std::time::{Duration, SystemTime};

use reqwest::blocking::{Client as Http, RequestBuilder, Response};
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION, RETRY_AFTER};
use serde_json::Value;

use crate::retry::{Policy, StatusClass, classify, parse_retry_after};

/// The most of an answer read: a leaderboard's replies are small; anything
/// bigger is not one of them.
const MAX_ANSWER: u64 = 1 << 20;

/// What the leaderboard said when it took the report (201, or the same
/// answer again for a repeated Idempotency-Key).
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    pub id: String,
    pub url: Option<String>,
    /// `public` or `flagged`.
    pub status: String,
    pub reason: Option<String>,
    pub score: Option<u64>,
    /// Carried once, by the first 201.
    pub delete_token: Option<String>,
    /// Where the result stands among the card's submitters on its board
    /// (a public result on a leaderboard that says so).
    pub standing: Option<Standing>,
}

/// The 201's `standing`: how this score compares with the other
/// submitters' medians for the same card, board and bus mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    pub group_submitters: u64,
    /// Of the group's submitters, the share (0 to 100) whose median is below this score.
    pub percentile: u64,
    pub median_score: u64,
    /// The board's family (`Raspberry Pi 4`), or the board.
    pub board: Option<String>,
}

fn parse_standing(value: &Value) -> Option<Standing> {
    let standing = value.get("standing")?;
    let number = |key: &str| standing.get(key).and_then(Value::as_u64);
    let board = ["family", "board"]
        .iter()
        .find_map(|k| standing.get(*k).and_then(Value::as_str))
        .map(|b| one_line(b, 80))
        .filter(|b| !b.is_empty() && b != "unknown board");
    Some(Standing {
        group_submitters: number("group_submitters")?,
        percentile: number("percentile")?.min(100),
        median_score: number("median_score")?,
        board,
    })
}

/// Why nothing (or nothing known) was stored.
#[derive(Debug, Clone, PartialEq)]
pub enum SendError {
    /// No answer, or only transient failures, after every attempt.
    Unreachable { attempts: u32, last: String },
    /// The leaderboard asked to wait longer than a user should.
    Busy { wait: Duration },
    /// A final answer other than success, with the leaderboard's message.
    Refused { status: u16, message: String },
    /// An answer that is not a leaderboard's.
    Garbage { what: String },
    /// The TLS handshake failed (a certificate not accepted, say): asking
    /// again cannot change that, so it is not retried.
    Tls { what: String },
}

/// The HTTP client could not be set up (its TLS roots, say).
#[derive(Debug, thiserror::Error)]
#[error("cannot set up the HTTP client: {0}")]
pub struct SetupError(String);

/// A failure of the connection while an answer was read, in words: worth
/// another attempt.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Transient(String);

/// One HTTP answer, read.
struct Answer {
    status: u16,
    body: Vec<u8>,
    location: Option<String>,
    retry_after: Option<String>,
}

/// The leaderboard's HTTP client: its timeouts and retry policy.
#[derive(Debug)]
pub struct Client {
    http: Http,
    policy: Policy,
    timeout: Duration,
}

impl Client {
    pub fn new(timeout: Duration, policy: Policy) -> Result<Client, SetupError> {
        let http = Http::builder()
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .timeout(timeout)
            .user_agent(concat!("storage-score/", env!("CARGO_PKG_VERSION")))
            // A redirected POST may turn into a GET: say where it went instead.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| SetupError(root_cause(&e)))?;
        Ok(Client { http, policy, timeout })
    }

    /// POSTs `body` to `endpoint` with `key` as its Idempotency-Key.
    /// `notify` hears about each retry, in one line.
    pub fn submit(
        &self,
        endpoint: &str,
        key: &str,
        body: &[u8],
        notify: &mut dyn FnMut(&str),
    ) -> Result<Accepted, SendError> {
        let request = || {
            self.http
                .post(endpoint)
                .header(CONTENT_TYPE, "application/json")
                .header("Idempotency-Key", key)
                .body(body.to_vec())
        };
        let answer = self.with_retries(request, notify)?;
        match classify(answer.status) {
            StatusClass::Success => parse_accepted(&answer),
            _ => Err(refusal(&answer)),
        }
    }

    /// DELETEs the result at `endpoint` with the submitter's token. `Ok`
    /// with the status: 2xx deleted, 404 already gone.
    pub fn delete(&self, endpoint: &str, token: &str, notify: &mut dyn FnMut(&str)) -> Result<u16, SendError> {
        let answer = self.with_retries(|| self.http.delete(endpoint).bearer_auth(token), notify)?;
        match answer.status {
            200..=299 | 404 => Ok(answer.status),
            _ => Err(refusal(&answer)),
        }
    }

    /// GETs the JSON document at `url` (a leaderboard's result, for
    /// `compare`), with the same retries as a submission.
    pub fn fetch(&self, url: &str, notify: &mut dyn FnMut(&str)) -> Result<Value, SendError> {
        let answer = self.with_retries(|| self.http.get(url).header(ACCEPT, "application/json"), notify)?;
        if classify(answer.status) != StatusClass::Success {
            return Err(refusal(&answer));
        }
        serde_json::from_slice(&answer.body).map_err(|_| SendError::Garbage {
            what: format!("{}, with a body that is not JSON: {}", status_text(answer.status), preview(&answer.body)),
        })
    }

    fn with_retries(
        &self,
        request: impl Fn() -> RequestBuilder,
        notify: &mut dyn FnMut(&str),
    ) -> Result<Answer, SendError> {
        let attempts = self.policy.attempts.max(1);
        for attempt in 1..=attempts {
            let sent = request().send();
            if let Err(e) = &sent {
                if let Some(what) = tls_failure(e) {
                    return Err(SendError::Tls { what });
                }
            }
            let outcome = sent.map_err(|e| self.describe(&e)).and_then(|r| self.read_answer(r).map_err(|t| t.0));
            let (failure, retry_after) = match outcome {
                Ok(answer) if classify(answer.status) != StatusClass::Transient => return Ok(answer),
                Ok(answer) => {
                    let asked = answer.retry_after.as_deref().and_then(|v| parse_retry_after(v, SystemTime::now()));
                    (status_text(answer.status), asked)
                }
                Err(failure) => (failure, None),
            };
            if attempt == attempts {
                return Err(SendError::Unreachable { attempts, last: failure });
            }
            let wait = self
                .policy
                .wait(attempt, retry_after, rand::random::<f64>())
                .map_err(|wait| SendError::Busy { wait })?;
            notify(&format!(
                "{failure}; trying again in {:.1} s (attempt {} of {attempts})",
                wait.as_secs_f64(),
                attempt + 1
            ));
            std::thread::sleep(wait);
        }
        unreachable!("the loop returns on its last attempt")
    }

    fn read_answer(&self, response: Response) -> Result<Answer, Transient> {
        let status = response.status().as_u16();
        let header = |name| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let (location, retry_after) = (header(LOCATION), header(RETRY_AFTER));
        let mut body = Vec::new();
        // A failure while reading the body is the connection's, and retried.
        response.take(MAX_ANSWER).read_to_end(&mut body).map_err(|e| {
            Transient(match e.get_ref().and_then(|i| i.downcast_ref()) {
                Some(inner) => self.describe(inner),
                None if e.kind() == std::io::ErrorKind::TimedOut => {
                    format!("no answer within {} s", self.timeout.as_secs())
                }
                _ => format!("the connection failed: {}", root_cause(&e)),
            })
        })?;
        Ok(Answer { status, body, location, retry_after })
    }

    fn describe(&self, e: &reqwest::Error) -> String {
        if e.is_timeout() {
            format!("no answer within {} s", self.timeout.as_secs())
        } else if e.is_connect() {
            format!("cannot connect: {}", root_cause(e))
        } else {
            format!("the connection failed: {}", root_cause(e))
        }
    }
}

/// The TLS error in `e`'s chain, in words, if the failure is one: a
/// certificate that is not accepted (unknown issuer, expired, another
/// name) or a handshake that failed, which no retry changes.
fn tls_failure(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next = Some(e);
    // Bounded: an error chain is a few links long.
    for _ in 0..32 {
        let current = next?;
        if let Some(tls) = unwrapped(current).and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
            let text = one_line(&tls.to_string(), 200);
            return Some(match tls {
                rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented => {
                    format!("its certificate was not accepted ({text})")
                }
                _ => format!("the TLS handshake failed ({text})"),
            });
        }
        next = current.source();
    }
    None
}

/// The error itself, seen through the `io::Error`s that wrap it (and hide
/// it from `source()`): hyper-rustls wraps tokio-rustls's, which wraps
/// rustls's.
fn unwrapped<'a>(mut e: &'a (dyn std::error::Error + 'static)) -> Option<&'a (dyn std::error::Error + 'static)> {
    // Bounded: two layers are seen; more would be a loop.
    for _ in 0..8 {
        match e.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()) {
            Some(inner) => e = inner,
            None => return Some(e),
        }
    }
    Some(e)
}

fn status_text(status: u16) -> String {
    let reason = reqwest::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("");
    format!("it answered {status} {reason}").trim_end().to_owned()
}

fn parse_accepted(answer: &Answer) -> Result<Accepted, SendError> {
    let garbage = |what: &str| SendError::Garbage { what: format!("{}, {what}", status_text(answer.status)) };
    let value: Value = serde_json::from_slice(&answer.body)
        .map_err(|_| garbage(&format!("with a body that is not JSON: {}", preview(&answer.body))))?;
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(|s| one_line(s, 300));
    let id = match value.get("id") {
        Some(Value::String(s)) if !s.trim().is_empty() => one_line(s, 100),
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err(garbage("with no result id in it")),
    };
    let status = text("status").ok_or_else(|| garbage("with no status in it"))?;
    let reason = text("reason").or_else(|| text("flag_reason")).or_else(|| {
        value.get("reasons").and_then(Value::as_array).map(|r| {
            let parts: Vec<String> = r.iter().filter_map(Value::as_str).map(|s| one_line(s, 200)).collect();
            parts.join("; ")
        })
    });
    Ok(Accepted {
        id,
        url: text("url"),
        status,
        reason: reason.filter(|r| !r.is_empty()),
        score: value.pointer("/score/pibenchmarks").and_then(Value::as_u64),
        delete_token: value.get("delete_token").and_then(Value::as_str).map(str::to_owned),
        standing: parse_standing(&value),
    })
}

fn refusal(answer: &Answer) -> SendError {
    let message = serde_json::from_slice::<Value>(&answer.body)
        .ok()
        .and_then(|v| v.get("error").and_then(Value::as_str).map(|s| one_line(s, 300)));
    let message = match (answer.status, message) {
        (_, Some(message)) => message,
        (300..=399, None) => match &answer.location {
            Some(to) => format!("it moved to {}: give that address with --url", one_line(to, 200)),
            None => "a redirect with no address".to_owned(),
        },
        (404, None) => "no leaderboard API at this address: check --url".to_owned(),
        (_, None) => preview(&answer.body),
    };
    SendError::Refused { status: answer.status, message }
}

/// The start of an answer, printable and on one line.
fn preview(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(200)]);
    let text = one_line(&text, 80);
    if text.is_empty() { "an empty body".to_owned() } else { format!("\"{text}\"") }
}

/// Text from the network made safe for a terminal and for a one-line error:
/// control characters (escape sequences included) become spaces, runs of
/// blanks one space, and at most `max` characters are kept.
pub fn one_line(text: &str, max: usize) -> String {
    let cleaned: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let words: Vec<&str> = cleaned.split_whitespace().collect();
    let joined = words.join(" ");
    if joined.chars().count() <= max {
        joined
    } else {
        let cut: String = joined.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// The innermost cause of an error: "Connection refused (os error 111)"
/// rather than "error sending request for url (…)".
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut inner = e;
    while let Some(next) = inner.source() {
        inner = next;
    }
    one_line(&inner.to_string(), 200)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> Answer {
        Answer { status, body: body.as_bytes().to_vec(), location: None, retry_after: None }
    }

    #[test]
    fn a_leaderboard_reply_is_read_leniently_but_must_name_the_result() {
        let ok = parse_accepted(&answer(
            201,
            r#"{"id": 42, "url": "/results/42", "status": "flagged", "reason": "quick profile", "score": {"pibenchmarks": 812}, "delete_token": "t0k"}"#,
        ))
        .unwrap();
        assert_eq!(ok.id, "42");
        assert_eq!(ok.status, "flagged");
        assert_eq!(ok.reason.as_deref(), Some("quick profile"));
        assert_eq!(ok.score, Some(812));
        assert_eq!(ok.delete_token.as_deref(), Some("t0k"));
        let html = parse_accepted(&answer(200, "<html><body>Welcome to nginx!</body></html>")).unwrap_err();
        assert_eq!(
            html,
            SendError::Garbage {
                what:
                    "it answered 200 OK, with a body that is not JSON: \"<html><body>Welcome to nginx!</body></html>\""
                        .to_owned()
            }
        );
        assert!(matches!(parse_accepted(&answer(201, r#"{"status": "public"}"#)), Err(SendError::Garbage { .. })));
    }

    #[test]
    fn refusals_carry_the_servers_one_line_message() {
        let r =
            refusal(&answer(422, "{\"error\": \"measurements.seq_write_mb_s: -1 is negative;\\nsend a real figure\"}"));
        assert_eq!(
            r,
            SendError::Refused {
                status: 422,
                message: "measurements.seq_write_mb_s: -1 is negative; send a real figure".to_owned()
            }
        );
        let moved = Answer {
            status: 301,
            body: Vec::new(),
            location: Some("https://x/api/v1/results".to_owned()),
            retry_after: None,
        };
        assert!(
            matches!(refusal(&moved), SendError::Refused { status: 301, message } if message.contains("https://x"))
        );
        assert!(matches!(refusal(&answer(404, "")), SendError::Refused { message, .. } if message.contains("--url")));
    }

    #[test]
    fn network_text_cannot_reach_the_terminal_raw() {
        assert_eq!(one_line("a\x1b[2J\nb\r\n\tc", 100), "a [2J b c");
        assert_eq!(one_line(&"x".repeat(10), 4), "xxxx…");
    }
}
