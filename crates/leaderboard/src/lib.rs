//! storage-score-leaderboard: the self-hostable results server of docs/leaderboard.md.
//!
//! - [`intake`]: what a submitted report must pass, what is stripped, and
//!   the server's own score and verdict; [`identity`] (one card, one name),
//!   [`ceilings`] (what its bus and host can carry);
//! - [`card`] and [`board`]: the grouping key (card × board × bus × formula);
//! - [`peer`]: who counts: the client's network, trusted proxies, the
//!   submitter id;
//! - [`store`]: the [`store::Storage`] interface over SQLite and PostgreSQL,
//!   with submitter samples and leaderboard rows kept up to date on every
//!   write, and older databases upgraded on start;
//! - [`api`] (JSON), [`export`] (JSON lines, CSV) and [`pages`] (HTML that
//!   works without JavaScript), all over one [`App`];
//! - [`clock`]: the time results are stamped with (a test may set it);
//! - [`config`]: the command line; [`serve`]: binding, the `listening on`
//!   line; [`server`]: the connection cap, timeouts and a graceful stop on
//!   SIGTERM; [`security`]: headers on every answer and the catch-panic layer.
//!
//! Depends on `storage-scoring` and `storage-report` only (ARCHITECTURE.md).

pub mod api;
pub mod auth;
pub mod board;
pub mod card;
pub mod ceilings;
pub mod clock;
pub mod config;
pub mod error;
pub mod export;
pub mod identity;
pub mod intake;
pub mod pages;
pub mod peer;
pub mod ratelimit;
pub mod security;
pub mod server;
pub mod store;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{ConnectInfo, Request};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{get, post};

use crate::config::{Config, Database};
use crate::ratelimit::RateLimiter;
use crate::store::Storage;
use crate::store::postgres::PgStore;
use crate::store::sqlite::SqliteStore;

/// The server's shared state.
#[derive(Debug)]
pub struct App<S> {
    pub store: S,
    /// `STORAGE_SCORE_LEADERBOARD_ADMIN_TOKEN`; moderation is off without it.
    pub admin_token: Option<String>,
    pub limiter: Option<RateLimiter>,
    /// `--trusted-proxy`: peers whose `X-Forwarded-For` names the client.
    pub trusted_proxies: Vec<peer::Cidr>,
    /// How client addresses group into networks (`--v6-prefix`).
    pub networks: peer::Networks,
    /// Failed admin tokens per network: a few a minute, then 429.
    pub admin_failures: RateLimiter,
    /// `--quota-mib`: bytes of reports a network may store per day (0: any).
    pub quota_bytes: i64,
    /// `--reference`: the published results shown apart ("published
    /// elsewhere"), read from the set storage-score ships; empty without it.
    pub reference: Vec<storage_scoring::reference::Published>,
}

impl<S> App<S> {
    fn new(store: S, config: &Config, limiter: Option<RateLimiter>) -> App<S> {
        App {
            store,
            admin_token: config.admin_token.clone(),
            limiter,
            trusted_proxies: config.trusted_proxies.clone(),
            networks: config.networks,
            admin_failures: RateLimiter::new(ADMIN_FAILURES_PER_MINUTE),
            quota_bytes: config.quota_bytes,
            reference: if config.reference { storage_scoring::reference::set().results } else { Vec::new() },
        }
    }
}

/// Every route of docs/leaderboard.md#api.
pub fn router<S: Storage>(app: Arc<App<S>>) -> Router {
    Router::new()
        .route("/api/v1/results", post(api::submit::<S>))
        .route("/api/v1/results/{id}", get(api::get_result::<S>).delete(api::delete_result::<S>))
        .route("/api/v1/results/{id}/{action}", post(api::moderate::<S>))
        .route("/api/v1/results/{id}/network/{action}", post(api::moderate_network::<S>))
        .route("/api/v1/leaderboard", get(api::leaderboard::<S>))
        .route("/api/v1/cards/{key}/wear", get(api::wear::card::<S>))
        .route("/export.json", get(export::json::<S>))
        .route("/export.csv", get(export::csv::<S>))
        .route("/", get(pages::leaderboard::<S>))
        .route("/cards/{key}", get(pages::card::<S>))
        .route("/results/{id}", get(pages::result::<S>))
        .route("/about", get(pages::about))
        .route("/style.css", get(pages::stylesheet))
        .fallback(pages::not_found)
        .layer(axum::middleware::from_fn(log_request))
        .layer(axum::middleware::from_fn(security::harden))
        .with_state(app)
}

/// One line per request on stderr: client, method, path, status, time.
/// The query string is left out (it may hold whatever a visitor typed).
async fn log_request(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let client = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip().to_string());
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    eprintln!(
        "{} {method} {path} {} {:.1}ms",
        client.as_deref().unwrap_or("-"),
        response.status().as_u16(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    response
}

/// Binds, opens (or upgrades) the database, prints `listening on
/// http://HOST:PORT` and serves until SIGTERM or SIGINT; then finishes the
/// requests under way and the queued writes, and returns.
pub async fn serve(config: Config) -> Result<(), ServeError> {
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServeError::Listen { address: config.listen, source })?;
    let address = listener.local_addr().map_err(ServeError::BoundAddress)?;
    let limiter = (config.rate_limit > 0).then(|| RateLimiter::new(config.rate_limit));
    let (cap, warning) = server::connection_cap(config.max_connections);
    if let Some(warning) = warning {
        eprintln!("storage-score-leaderboard: warning: {warning}");
    }
    let limits = server::Limits {
        total: cap,
        // Never more than a quarter of all: one network cannot starve the rest.
        per_network: config.max_connections_per_network.min((cap / 4).max(1)),
        networks: config.networks,
        trusted_proxies: config.trusted_proxies.clone(),
        response_deadline: config.response_deadline,
    };
    match &config.database {
        Database::Sqlite(path) => {
            let store = SqliteStore::open(path).map_err(ServeError::Sqlite)?;
            run(listener, address, limits, App::new(store, &config, limiter)).await
        }
        Database::Postgres(url) => {
            let store = PgStore::open(url).await.map_err(ServeError::Postgres)?;
            run(listener, address, limits, App::new(store, &config, limiter)).await
        }
    }
}

/// Why the server could not start (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {address}: {source}; pick another address with --listen")]
    Listen { address: SocketAddr, source: std::io::Error },
    #[error("cannot read the bound address: {0}")]
    BoundAddress(std::io::Error),
    #[error("{0}; check --db")]
    Sqlite(store::StoreError),
    #[error("{0}; check --db and that the server runs")]
    Postgres(store::StoreError),
    #[error("cannot handle {signal}: {source}")]
    Signal { signal: &'static str, source: std::io::Error },
}

/// Wrong admin tokens a network may send per minute before it is answered
/// 429 (docs/leaderboard.md#moderation).
pub const ADMIN_FAILURES_PER_MINUTE: u32 = 5;

async fn run<S: Storage>(
    listener: tokio::net::TcpListener,
    address: SocketAddr,
    limits: server::Limits,
    app: App<S>,
) -> Result<(), ServeError> {
    let app = Arc::new(app);
    // The handlers are in place before the line that says we are ready: a
    // SIGTERM sent right after it must drain and exit 0, not kill.
    let stop = stop_signal()?;
    eprintln!("listening on http://{address}");
    server::serve(listener, router(Arc::clone(&app)), limits, stop).await;
    app.store.close().await;
    eprintln!("stopped");
    Ok(())
}

/// Registers the SIGTERM and SIGINT handlers now; the future ends at the
/// first of them.
fn stop_signal() -> Result<impl std::future::Future<Output = ()>, ServeError> {
    use tokio::signal::unix::{SignalKind, signal};
    let handle = |kind, signal_name| signal(kind).map_err(|source| ServeError::Signal { signal: signal_name, source });
    let mut term = handle(SignalKind::terminate(), "SIGTERM")?;
    let mut int = handle(SignalKind::interrupt(), "SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        eprintln!("stopping: finishing the requests under way");
    })
}
