//! The command line (docs/leaderboard.md#options): `--listen`, `--db`, `--rate-limit`,
//! `--trusted-proxy`, `--max-connections`, and the admin token from the
//! environment (never a flag, so that it stays out of `ps`).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

use crate::peer::Cidr;

/// The environment variable holding the moderators' token.
pub const ADMIN_TOKEN_ENV: &str = "STORAGE_SCORE_LEADERBOARD_ADMIN_TOKEN";

#[derive(Debug, Parser)]
#[command(
    name = "storage-score-leaderboard",
    version,
    about = "The storage-score leaderboard: accepts submitted reports, ranks cards, serves the pages",
    after_help = "Moderation (flag, hide, restore) is on when STORAGE_SCORE_LEADERBOARD_ADMIN_TOKEN is set."
)]
pub struct Args {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Database: sqlite:PATH (a file, made if missing) or postgres://USER@HOST/DB.
    #[arg(long, value_name = "URL", env = "STORAGE_SCORE_LEADERBOARD_DB", default_value = "sqlite:./leaderboard.db")]
    pub db: String,
    /// Submissions per minute per client network (/24 or /64; bursts up to N); 0 turns the limit off.
    #[arg(long, value_name = "N", default_value_t = 60)]
    pub rate_limit: u32,
    /// A reverse proxy whose X-Forwarded-For names the client (repeat it, or
    /// separate with commas); without it, forwarding headers are ignored.
    #[arg(long, value_name = "CIDR", env = "STORAGE_SCORE_LEADERBOARD_TRUSTED_PROXY", value_delimiter = ',')]
    pub trusted_proxy: Vec<Cidr>,
    /// Open connections served at once; more are answered 503 and closed.
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections: u32,
    /// Open connections one client network (/24, or --v6-prefix) may hold,
    /// and never more than a quarter of --max-connections; more are
    /// answered 503 and closed. Trusted proxies are not capped.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections_per_network: u32,
    /// The IPv6 prefix that makes one network (one submitter, one rate
    /// limit, one quota): 48 counts a home's whole /48 once.
    #[arg(long, value_name = "BITS", default_value_t = crate::peer::DEFAULT_V6_PREFIX, value_parser = clap::value_parser!(u8).range(16..=128))]
    pub v6_prefix: u8,
    /// Seconds a response may take to send, from its first byte; a client
    /// reading slower is cut off.
    #[arg(long, value_name = "SECS", default_value_t = crate::server::RESPONSE_DEADLINE.as_secs(), value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub response_deadline: u64,
    /// MiB of reports one network may store per day (24 hours); beyond it a
    /// submission is answered 429 with Retry-After. 0 turns the quota off.
    #[arg(long, value_name = "MIB", env = "STORAGE_SCORE_LEADERBOARD_QUOTA_MIB", default_value_t = 4)]
    pub quota_mib: u32,
    /// Show the published Storage.sh results shipped with storage-score
    /// (docs/reference.md) on the home and card pages, as "published
    /// elsewhere": apart from submissions, never in medians, standings or
    /// ranks.
    #[arg(long)]
    pub reference: bool,
}

/// The shortest admin token accepted: 32 characters, 128 bits or more of a
/// random hex or base64 string, beyond guessing at any request rate.
pub const MIN_ADMIN_TOKEN: usize = 32;

/// A setting the server cannot start with (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("--db {0:?}: expected sqlite:PATH (e.g. sqlite:./leaderboard.db) or postgres://USER@HOST/DATABASE")]
    Database(String),
    #[error(
        "{ADMIN_TOKEN_ENV}: at least {MIN_ADMIN_TOKEN} characters are needed; make one with `openssl rand -hex 32`"
    )]
    ShortAdminToken,
}

/// Where results are stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Database {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Database {
    pub fn parse(url: &str) -> Result<Database, ConfigError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Database::Postgres(url.to_owned()));
        }
        let path = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"));
        match path {
            Some(path) if !path.is_empty() => Ok(Database::Sqlite(PathBuf::from(path))),
            _ => Err(ConfigError::Database(url.to_owned())),
        }
    }
}

/// Everything the server needs to start.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub database: Database,
    pub rate_limit: u32,
    pub trusted_proxies: Vec<Cidr>,
    pub max_connections: usize,
    pub max_connections_per_network: usize,
    pub networks: crate::peer::Networks,
    pub response_deadline: std::time::Duration,
    /// Bytes of reports one network may store per day; 0: no quota.
    pub quota_bytes: i64,
    pub admin_token: Option<String>,
    /// `--reference`: show the published results.
    pub reference: bool,
}

impl Config {
    pub fn from_args(args: Args) -> Result<Config, ConfigError> {
        let admin_token = std::env::var(ADMIN_TOKEN_ENV).ok().filter(|t| !t.trim().is_empty());
        if admin_token.as_deref().is_some_and(|t| t.trim().len() < MIN_ADMIN_TOKEN) {
            return Err(ConfigError::ShortAdminToken);
        }
        Ok(Config {
            listen: args.listen,
            database: Database::parse(&args.db)?,
            rate_limit: args.rate_limit,
            trusted_proxies: args.trusted_proxy,
            max_connections: args.max_connections as usize,
            max_connections_per_network: args.max_connections_per_network as usize,
            networks: crate::peer::Networks { v6_prefix: args.v6_prefix },
            response_deadline: std::time::Duration::from_secs(args.response_deadline),
            quota_bytes: i64::from(args.quota_mib) * 1024 * 1024,
            admin_token,
            reference: args.reference,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_urls() {
        assert_eq!(Database::parse("sqlite:./x.db").unwrap(), Database::Sqlite("./x.db".into()));
        assert_eq!(Database::parse("sqlite:///tmp/x.db").unwrap(), Database::Sqlite("/tmp/x.db".into()));
        assert!(matches!(Database::parse("postgres://u@h/db").unwrap(), Database::Postgres(_)));
        assert!(Database::parse("mysql://x").unwrap_err().to_string().starts_with("--db \"mysql://x\": expected"));
        assert!(Database::parse("sqlite:").is_err());
    }
}
