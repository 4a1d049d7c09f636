//! What the leaderboard's API tests share: the two backends (a temp SQLite
//! file, and a throwaway PostgreSQL cluster per test binary, stopped at
//! exit), starting a server on either, counting what it stored, and
//! reports to send, for the leaderboard binary's `api`, `fair` and `spam`
//! modules (`tests/leaderboard/`).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::leaderboard::{Leaderboard, Options, Response};
use crate::postgres;
use serde_json::{Value, json};

pub const REPORT: &str = include_str!("../../../tests/fixtures/leaderboard/report.json");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The cluster shared by every PostgreSQL test of this binary (all the
/// leaderboard's modules); stopped by an exit handler, which runs however
/// the tests end.
pub fn cluster() -> &'static postgres::PgCluster {
    static CLUSTER: OnceLock<Result<postgres::PgCluster, String>> = OnceLock::new();
    extern "C" fn stop_cluster() {
        if let Some(Ok(cluster)) = CLUSTER.get() {
            // The process is exiting: stop the postmaster by its pid file.
            stop_by_dir(cluster.path());
        }
    }
    CLUSTER
        .get_or_init(|| {
            let started = postgres::PgCluster::start(false);
            if started.is_ok() {
                // SAFETY: registering a plain extern "C" fn with no captured state.
                unsafe { libc::atexit(stop_cluster) };
            }
            started
        })
        .as_ref()
        .unwrap_or_else(|e| panic!("cannot start PostgreSQL: {e}"))
}

/// Stops the postmaster whose pid file is in `dir`/data, and removes `dir`.
pub fn stop_by_dir(dir: &std::path::Path) {
    if let Ok(text) = std::fs::read_to_string(dir.join("data/postmaster.pid")) {
        if let Some(pid) = text.lines().next().and_then(|l| l.trim().parse::<i32>().ok()) {
            // SAFETY: sending a signal to a pid we started.
            unsafe { libc::kill(pid, libc::SIGINT) };
            for _ in 0..200 {
                // SAFETY: signal 0 only checks that the process exists.
                if unsafe { libc::kill(pid, 0) } != 0 {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

pub fn start(backend: Backend, mut options: Options) -> Leaderboard {
    if backend == Backend::Postgres {
        options.db = Some(cluster().new_database());
    }
    Leaderboard::start_with(options)
}

/// Rows in the results table, whatever their status.
pub fn stored_count(backend: Backend, server: &Leaderboard, db: Option<&str>) -> i64 {
    match backend {
        Backend::Sqlite => {
            let conn = rusqlite::Connection::open(server.sqlite_path.as_ref().expect("sqlite")).expect("open");
            conn.query_row("SELECT COUNT(*) FROM results", [], |r| r.get(0)).expect("count")
        }
        Backend::Postgres => {
            let db = postgres::PgCluster::database_of(db.expect("url"));
            cluster().psql(db, "SELECT COUNT(*) FROM results").expect("count").parse().expect("number")
        }
    }
}

pub fn db_url(server: &Leaderboard) -> Option<String> {
    // The server's --db is in its command line; the tests keep it instead.
    server.sqlite_path.as_ref().map(|p| format!("sqlite:{}", p.display()))
}

/// POSTs `body` as client `client` (any address, as a proxy in front
/// would name it) with a fresh idempotency key.
pub fn post_as(server: &Leaderboard, client: &str, body: &Value) -> Response {
    crate::leaderboard::request(
        server.addr,
        "POST",
        "/api/v1/results",
        &[("Idempotency-Key", &key()), ("X-Forwarded-For", client), ("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
}

pub fn key() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!("test-{}-{:06}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

pub fn report() -> Value {
    serde_json::from_str(REPORT).expect("fixture")
}

pub fn report_with(change: impl FnOnce(&mut Value)) -> String {
    let mut value = report();
    change(&mut value);
    value.to_string()
}

/// A report of another card, with the given figures scaled by `factor`.
pub fn variant(product: &str, board: &str, factor: f64) -> String {
    report_with(|r| {
        r["device"]["sd"]["cid"]["product_name"] = json!(product);
        r["system"]["board"] = json!(board);
        for (_, v) in r["measurements"].as_object_mut().unwrap() {
            *v = json!(v.as_f64().unwrap() * factor);
        }
        if factor > 1.05 {
            // Faster than a 50 MHz bus carries: the card runs at SDR104.
            r["device"]["sd"]["host"] = json!({"clock_hz": 208000000, "timing": "sd uhs sdr104", "bus_width_bits": 4});
        }
    })
}

pub fn error_of(response: &Response) -> String {
    response.json()["error"].as_str().unwrap_or_else(|| panic!("no error field: {}", response.text())).to_owned()
}

pub fn export_lines(server: &Leaderboard) -> Vec<Value> {
    let response = server.get("/export.json");
    assert_eq!(response.status, 200);
    response.text().lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect()
}

/// The --db URL of a server started by [`start`] (PostgreSQL), for counting.
pub fn server_db(server: &Leaderboard) -> Option<String> {
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", server.pid()?)).ok()?;
    let args: Vec<String> = cmdline.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    args.iter().position(|a| a == "--db").and_then(|i| args.get(i + 1).cloned())
}

pub fn count(backend: Backend, server: &Leaderboard) -> i64 {
    stored_count(backend, server, server_db(server).as_deref())
}

/// Each named `fn NAME(backend: Backend)` of the caller as two tests,
/// `sqlite::NAME` and `postgresql::NAME` (ignored: `needs postgres`).
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[test] fn $name() { super::$name($crate::lb_backends::Backend::Sqlite) })*
        }
        mod postgresql {
            $(
                #[test]
                #[ignore = "needs postgres"]
                fn $name() { super::$name($crate::lb_backends::Backend::Postgres) }
            )*
        }
    };
}

pub use crate::on_both_backends;
