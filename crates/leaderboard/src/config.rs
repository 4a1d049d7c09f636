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
}

/// Where results are stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Database {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Database {
    pub fn parse(url: &str) -> Result<Database, String> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Database::Postgres(url.to_owned()));
        }
        let path = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"));
        match path {
            Some(path) if !path.is_empty() => Ok(Database::Sqlite(PathBuf::from(path))),
            _ => Err(format!(
                "--db {url:?}: expected sqlite:PATH (e.g. sqlite:./leaderboard.db) or postgres://USER@HOST/DATABASE"
            )),
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
    pub admin_token: Option<String>,
}

impl Config {
    pub fn from_args(args: Args) -> Result<Config, String> {
        let admin_token = std::env::var(ADMIN_TOKEN_ENV).ok().filter(|t| !t.trim().is_empty());
        if admin_token.as_deref().is_some_and(|t| t.len() < 16) {
            return Err(format!("{ADMIN_TOKEN_ENV}: at least 16 characters are needed; make a longer token"));
        }
        Ok(Config {
            listen: args.listen,
            database: Database::parse(&args.db)?,
            rate_limit: args.rate_limit,
            trusted_proxies: args.trusted_proxy,
            max_connections: args.max_connections as usize,
            admin_token,
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
        assert!(Database::parse("mysql://x").unwrap_err().starts_with("--db \"mysql://x\": expected"));
        assert!(Database::parse("sqlite:").is_err());
    }
}
