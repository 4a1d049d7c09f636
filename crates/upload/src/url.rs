//! A leaderboard's address as the user gives it (`--url`, or the
//! environment), reduced to its base, and the addresses the client makes
//! from it (docs/leaderboard.md).

use crate::client::one_line;

/// The environment variable naming the leaderboard when no URL is given.
pub const URL_VARIABLE: &str = "STORAGE_SCORE_LEADERBOARD";

/// A leaderboard address that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Neither `--url` nor [`URL_VARIABLE`].
    #[error("no leaderboard to send to: give --url URL or set {URL_VARIABLE} (there is no default public server)")]
    Missing,
    /// Not an http(s) URL of a host, with why.
    #[error("\"{shown}\" is not a leaderboard URL ({why}): give one like https://scores.example.org")]
    Bad {
        /// The address as given, on one line and shortened.
        shown: String,
        why: String,
    },
}

/// Checks a leaderboard URL and reduces it to its base: `http(s)://host[:port][/prefix]`,
/// accepting the API endpoint itself too.
pub fn leaderboard_base(url: Option<&str>) -> Result<String, UrlError> {
    let Some(raw) = url.map(str::trim).filter(|u| !u.is_empty()) else {
        return Err(UrlError::Missing);
    };
    let bad = |why: &str| UrlError::Bad { shown: one_line(raw, 100), why: why.to_owned() };
    let parsed = reqwest::Url::parse(raw).map_err(|e| bad(&e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("it must start with http:// or https://"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(bad("it names no host"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(bad("a query or fragment has no place in it"));
    }
    let text = parsed.as_str().trim_end_matches('/');
    let base = text.strip_suffix("/api/v1/results").unwrap_or(text);
    Ok(base.trim_end_matches('/').to_owned())
}

/// The result's page as an absolute URL: the server may answer a path.
pub fn absolute_url(base: &str, url: Option<&str>, id: &str) -> String {
    match url.map(str::trim).filter(|u| !u.is_empty()) {
        Some(u) if u.starts_with("http://") || u.starts_with("https://") => u.to_owned(),
        Some(u) => match reqwest::Url::parse(&format!("{base}/")).and_then(|b| b.join(u)) {
            Ok(joined) => joined.to_string(),
            Err(_) => format!("{base}/{}", u.trim_start_matches('/')),
        },
        None => format!("{base}/results/{id}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_reduce_to_the_leaderboards_base() {
        let base = |u: &str| leaderboard_base(Some(u)).map_err(|e| e.to_string());
        assert_eq!(base("http://127.0.0.1:8080").unwrap(), "http://127.0.0.1:8080");
        assert_eq!(base("https://scores.example.org/").unwrap(), "https://scores.example.org");
        assert_eq!(base("https://example.org/lb/api/v1/results").unwrap(), "https://example.org/lb");
        for bad in ["ftp://x", "/dev/sda", "localhost:8080", "http://x/?a=1", "http://"] {
            assert!(base(bad).is_err(), "{bad}");
        }
        let none = leaderboard_base(None).unwrap_err();
        assert_eq!(none, UrlError::Missing);
        assert!(none.to_string().contains(URL_VARIABLE));
    }

    #[test]
    fn result_urls_are_made_absolute() {
        assert_eq!(absolute_url("http://h:1/lb", Some("/results/7"), "7"), "http://h:1/results/7");
        assert_eq!(absolute_url("http://h:1", Some("https://o/r/7"), "7"), "https://o/r/7");
        assert_eq!(absolute_url("http://h:1", None, "7"), "http://h:1/results/7");
    }
}
