//! `cargo xtask lb-bench`: the leaderboard under load, on loopback.
//!
//! 1. Throughput: `--requests` submissions (default 10 000) from
//!    `--clients` concurrent clients (default 50), each with its own
//!    idempotency key and retries on connection errors, 429 and 5xx; every
//!    one must be stored exactly once. Requests/s and p50/p99 latency, on
//!    SQLite and on PostgreSQL (a throwaway cluster with fsync on).
//! 2. Crash: the same load on SQLite with the server killed (`kill -9`) a
//!    third of the way in and restarted on the same file: SQLite's
//!    `integrity_check` is ok, every result that got a 201 is there under its
//!    key, and the clients' retries finish the rest with no duplicate.
//! 3. Pages: `--page-results` results (default 100 000) stored through the
//!    API, then the leaderboard, card, result pages and the JSON leaderboard
//!    timed (goal: under 20 ms each, docs/leaderboard.md#storage), and the
//!    server's resident memory sampled while `/export.json` streams out.
//! 4. Scale, with `--pg-scale N` (e.g. 1 000 000): N results on PostgreSQL,
//!    the home and card pages timed (goal: under 50 ms) and the export's
//!    memory again, to show it stays flat as the table grows tenfold.
//!
//! The release binary is used. Figures go to target/bench/leaderboard.json.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use leaderboard::{Http, Leaderboard, Options};
use serde_json::{Value, json};
use storage_score_test_support::lb_backends::REPORT;
use storage_score_test_support::{leaderboard, postgres};

const USAGE: &str = "usage: cargo xtask lb-bench [--requests N] [--clients N] [--page-results N] [--pg-scale N [--scale-only]] [--sqlite-only] [--server PATH]";

/// One request may take this many tries (connection refused while the
/// server restarts, 429, 5xx) before the run is declared failed.
const MAX_TRIES: u32 = 2000;
/// No phase runs longer than this, or than a 250th of a second per
/// submission when that is longer (a million on PostgreSQL).
const PHASE_LIMIT: Duration = Duration::from_secs(900);
/// The median a page must stay under with `--page-results` results.
const PAGE_GOAL_MS: f64 = 20.0;
/// The median the home and card pages must stay under with `--pg-scale`.
const SCALE_GOAL_MS: f64 = 50.0;

fn phase_limit(submissions: usize) -> Duration {
    PHASE_LIMIT.max(Duration::from_millis(submissions as u64 * 4))
}

#[derive(Debug, Clone)]
struct Settings {
    requests: usize,
    clients: usize,
    page_results: usize,
    /// Results stored on PostgreSQL for the scale phase; 0 skips it.
    pg_scale: usize,
    /// Only the scale phase (`--scale-only`).
    scale_only: bool,
    postgres: bool,
    /// A server binary to measure instead of this tree's release build.
    server: Option<PathBuf>,
}

pub fn main(args: &[String]) -> ExitCode {
    let settings = match parse(args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("xtask lb-bench: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&settings) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask lb-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn parse(args: &[String]) -> Result<Settings> {
    let mut s = Settings {
        requests: 10_000,
        clients: 50,
        page_results: 100_000,
        pg_scale: 0,
        scale_only: false,
        postgres: true,
        server: None,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut number = |name: &str| -> Result<usize> {
            it.next().and_then(|v| v.parse().ok()).with_context(|| format!("{name} takes a whole number"))
        };
        match arg.as_str() {
            "--requests" => s.requests = number("--requests")?,
            "--clients" => s.clients = number("--clients")?.max(1),
            "--page-results" => s.page_results = number("--page-results")?,
            "--pg-scale" => s.pg_scale = number("--pg-scale")?,
            "--scale-only" => s.scale_only = true,
            "--sqlite-only" => s.postgres = false,
            "--server" => s.server = Some(PathBuf::from(it.next().context("--server takes a path")?)),
            other => bail!("unknown argument {other}"),
        }
    }
    Ok(s)
}

fn run(settings: &Settings) -> Result<()> {
    let root = workspace_root();
    let binary = match &settings.server {
        Some(path) => {
            println!("lb-bench: measuring {}", path.display());
            path.clone()
        }
        None => {
            println!("lb-bench: building the release server");
            let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .args(["build", "--release", "-p", "storage-score-leaderboard"])
                .current_dir(&root)
                .status()
                .context("cargo build")?;
            ensure!(status.success(), "the release build failed");
            root.join("target/release/storage-score-leaderboard")
        }
    };
    let work = root.join("target/bench/lb-bench");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let mut summary = json!({"requests": settings.requests, "clients": settings.clients, "cores": cores()});
    let mut missed: Vec<String> = Vec::new();

    let cluster = if settings.postgres {
        match postgres::PgCluster::start(true) {
            Ok(cluster) => Some(cluster),
            Err(e) => {
                println!("lb-bench: PostgreSQL skipped: {e}");
                None
            }
        }
    } else {
        None
    };
    if !settings.scale_only {
        standard_phases(&binary, &work, settings, cluster.as_ref(), &mut summary, &mut missed)?;
    }

    // 4. Scale on PostgreSQL.
    if settings.pg_scale > 0 {
        let cluster = cluster.as_ref().context("--pg-scale needs PostgreSQL")?;
        let postgres = Options { db: Some(cluster.new_database()), ..Options::default() };
        summary["scale_postgres"] =
            pages(&binary, postgres, settings.pg_scale, settings, "PostgreSQL scale", &mut missed)?;
    }
    let out = root.join("target/bench/leaderboard.json");
    summary["missed_goals"] = json!(missed);
    std::fs::write(&out, serde_json::to_string_pretty(&summary)? + "\n")?;
    println!("lb-bench: figures in {}", out.display());
    ensure!(missed.is_empty(), "{} goal(s) missed: {}", missed.len(), missed.join("; "));
    Ok(())
}

/// Phases 1 to 3: throughput on both backends, the crash, the pages.
fn standard_phases(
    binary: &Path,
    work: &Path,
    settings: &Settings,
    cluster: Option<&postgres::PgCluster>,
    summary: &mut Value,
    missed: &mut Vec<String>,
) -> Result<()> {
    let binary = binary.to_owned();
    // 1. Throughput on SQLite.
    let server = Leaderboard::start_with(Options {
        binary: Some(binary.clone()),
        sqlite_path: Some(work.join("load.db")),
        ..Options::default()
    });
    let figures = load(&server, settings.requests, settings.clients, "load", None)?;
    let stored = sqlite_count(&work.join("load.db"))?;
    drop(server);
    ensure!(stored == settings.requests as i64, "SQLite stored {stored} results for {} submissions", settings.requests);
    print_load("SQLite", &figures, stored);
    summary["sqlite"] = figures.to_json(stored);

    // 1b. Throughput on PostgreSQL.
    if let Some(cluster) = cluster {
        let url = cluster.new_database();
        let server = Leaderboard::start_with(Options {
            binary: Some(binary.clone()),
            db: Some(url.clone()),
            ..Options::default()
        });
        let figures = load(&server, settings.requests, settings.clients, "pg", None)?;
        drop(server);
        let stored: i64 = cluster
            .psql(postgres::PgCluster::database_of(&url), "SELECT COUNT(DISTINCT idem_key) FROM results")
            .map_err(anyhow::Error::msg)?
            .parse()?;
        ensure!(
            stored == settings.requests as i64,
            "PostgreSQL stored {stored} results for {} submissions",
            settings.requests
        );
        print_load("PostgreSQL", &figures, stored);
        summary["postgres"] = figures.to_json(stored);
    }

    // 2. kill -9 mid-load on SQLite.
    summary["crash"] = crash(&binary, work, settings)?;

    // 3. Page latency with many results.
    if settings.page_results > 0 {
        let sqlite = Options { sqlite_path: Some(work.join("pages.db")), ..Options::default() };
        summary["pages_sqlite"] = pages(&binary, sqlite, settings.page_results, settings, "SQLite", missed)?;
        if let Some(cluster) = cluster {
            let postgres = Options { db: Some(cluster.new_database()), ..Options::default() };
            summary["pages_postgres"] =
                pages(&binary, postgres, settings.page_results, settings, "PostgreSQL", missed)?;
        }
    }

    Ok(())
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask is in the workspace").to_path_buf()
}

fn cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// The body of submission `i`: one of 500 cards on one of four boards, at
/// High Speed or SDR104, with figures that vary from run to run (all within
/// what the boards' SD slots are published reaching, so that every result
/// is public and counted); every tenth is one popular card (for a card page
/// with many results).
fn body(i: usize) -> String {
    let mut r: Value = serde_json::from_str(REPORT).expect("fixture");
    let product = if i % 10 == 0 { "POPLR".to_owned() } else { format!("C{:04}", i % 500) };
    let boards = [
        "Raspberry Pi 4 Model B Rev 1.4",
        "Raspberry Pi 5 Model B Rev 1.0",
        "Raspberry Pi 400 Rev 1.0",
        "Radxa ROCK 5B",
    ];
    r["device"]["sd"]["cid"]["product_name"] = json!(product);
    r["system"]["board"] = json!(boards[(i / 7) % boards.len()]);
    let fast = i % 3 == 0;
    let spread = ((i * 7919) % 1000) as f64 / 1000.0;
    let factor = if fast { 1.0 + 1.5 * spread } else { 0.6 + 0.45 * spread };
    for (_, v) in r["measurements"].as_object_mut().expect("measurements") {
        *v = json!((v.as_f64().expect("figure") * factor * 100.0).round() / 100.0);
    }
    if fast {
        r["device"]["sd"]["host"] = json!({"clock_hz": 208000000, "timing": "sd uhs sdr104", "bus_width_bits": 4});
    }
    r.to_string()
}

#[derive(Debug, Default)]
struct LoadFigures {
    seconds: f64,
    latencies_ms: Vec<f64>,
    retries: usize,
    /// (submission index, id) of every 201.
    acked: Vec<(usize, i64)>,
    failures: Vec<String>,
}

impl LoadFigures {
    fn percentile(&self, q: f64) -> f64 {
        let mut sorted = self.latencies_ms.clone();
        sorted.sort_by(f64::total_cmp);
        if sorted.is_empty() {
            return 0.0;
        }
        sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
    }

    fn rate(&self) -> f64 {
        self.acked.len() as f64 / self.seconds
    }

    fn to_json(&self, stored: i64) -> Value {
        json!({
            "submissions_per_s": (self.rate() * 10.0).round() / 10.0,
            "p50_ms": round2(self.percentile(0.5)),
            "p99_ms": round2(self.percentile(0.99)),
            "max_ms": round2(self.percentile(1.0)),
            "seconds": round2(self.seconds),
            "retries": self.retries,
            "acked": self.acked.len(),
            "stored": stored,
        })
    }
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

fn print_load(name: &str, f: &LoadFigures, stored: i64) {
    println!(
        "lb-bench: {name}: {} submissions in {:.1} s = {:.0}/s; latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; {} retries; stored {stored}",
        f.acked.len(),
        f.seconds,
        f.rate(),
        f.percentile(0.5),
        f.percentile(0.99),
        f.percentile(1.0),
        f.retries
    );
}

/// `n` submissions from `clients` threads against the address in `addr`
/// (which a crash test may change mid-run). `on_progress` sees the number
/// of 201s so far, from the main thread, every 20 ms.
fn load_at(
    addr: Arc<RwLock<std::net::SocketAddr>>,
    n: usize,
    clients: usize,
    run_id: &str,
    mut on_progress: Option<&mut dyn FnMut(usize)>,
) -> Result<LoadFigures> {
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let figures = Arc::new(Mutex::new(LoadFigures::default()));
    let started = Instant::now();
    let limit = phase_limit(n);
    let mut threads = Vec::new();
    for client in 0..clients {
        let (addr, next, done, figures, run_id) =
            (addr.clone(), next.clone(), done.clone(), figures.clone(), run_id.to_owned());
        // Each client from a network of its own (127.0.N.1), as real
        // submitters are: the server counts and rate-limits per network.
        let source = std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, (client % 250 + 1) as u8, 1));
        threads.push(std::thread::spawn(move || {
            let mut current = *addr.read().expect("lock");
            let mut http = Http::new(current).from(source);
            http.timeout = Duration::from_secs(30);
            let mut local = LoadFigures::default();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n || started.elapsed() > limit {
                    break;
                }
                let body = body(i);
                let key = format!("bench-{run_id}-{i:07}");
                let mut tries = 0;
                loop {
                    tries += 1;
                    let now = *addr.read().expect("lock");
                    if now != current {
                        current = now;
                        http = Http::new(current).from(source);
                    }
                    let t = Instant::now();
                    let reply = http.send(
                        "POST",
                        "/api/v1/results",
                        &[("Idempotency-Key", key.as_str()), ("Content-Type", "application/json")],
                        body.as_bytes(),
                    );
                    let transient = match reply {
                        Ok(r) if r.status == 201 => {
                            local.latencies_ms.push(t.elapsed().as_secs_f64() * 1000.0);
                            let id = r.json()["id"].as_i64().unwrap_or(-1);
                            local.acked.push((i, id));
                            done.fetch_add(1, Ordering::Relaxed);
                            break;
                        }
                        Ok(r) if r.status == 429 || r.status >= 500 => true,
                        Ok(r) => {
                            local.failures.push(format!("{key}: {} {}", r.status, r.text()));
                            break;
                        }
                        Err(_) => true,
                    };
                    if transient {
                        local.retries += 1;
                        if tries >= MAX_TRIES || started.elapsed() > limit {
                            local.failures.push(format!("{key}: gave up after {tries} tries"));
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(10 * u64::from(tries.min(20))));
                    }
                }
            }
            let mut all = figures.lock().expect("lock");
            all.latencies_ms.extend(local.latencies_ms);
            all.acked.extend(local.acked);
            all.retries += local.retries;
            all.failures.extend(local.failures);
        }));
    }
    while threads.iter().any(|t| !t.is_finished()) {
        if let Some(progress) = on_progress.as_deref_mut() {
            progress(done.load(Ordering::Relaxed));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for t in threads {
        t.join().map_err(|_| anyhow::anyhow!("a client thread panicked"))?;
    }
    let mut figures = std::mem::take(&mut *figures.lock().expect("lock"));
    figures.seconds = started.elapsed().as_secs_f64();
    ensure!(figures.failures.is_empty(), "{} submissions failed, e.g. {}", figures.failures.len(), figures.failures[0]);
    ensure!(figures.acked.len() == n, "{} of {n} submissions got a 201", figures.acked.len());
    Ok(figures)
}

fn load(
    server: &Leaderboard,
    n: usize,
    clients: usize,
    run_id: &str,
    progress: Option<&mut dyn FnMut(usize)>,
) -> Result<LoadFigures> {
    load_at(Arc::new(RwLock::new(server.addr)), n, clients, run_id, progress)
}

fn sqlite_count(path: &Path) -> Result<i64> {
    let conn = rusqlite::Connection::open(path)?;
    Ok(conn.query_row("SELECT COUNT(*) FROM results", [], |r| r.get(0))?)
}

fn integrity(path: &Path) -> Result<String> {
    let conn = rusqlite::Connection::open(path)?;
    Ok(conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
}

/// kill -9 a third of the way into the load, restart on the same file.
fn crash(binary: &Path, work: &Path, settings: &Settings) -> Result<Value> {
    let db = work.join("crash.db");
    let options = Options { binary: Some(binary.to_owned()), sqlite_path: Some(db.clone()), ..Options::default() };
    let server = Arc::new(Mutex::new(Leaderboard::start_with(options.clone())));
    let addr = Arc::new(RwLock::new(server.lock().expect("lock").addr));
    let kill_at = settings.requests / 3;
    let mut killed: Option<(usize, i64, String)> = None;
    let mut restart_error = None;
    let mut on_progress = |acked: usize| {
        if killed.is_none() && acked >= kill_at {
            let mut s = server.lock().expect("lock");
            s.kill9();
            // While it is down: the file as a crash left it.
            let count = sqlite_count(&db).unwrap_or(-1);
            let check = integrity(&db).unwrap_or_else(|e| e.to_string());
            killed = Some((acked, count, check));
            match std::panic::catch_unwind(|| Leaderboard::start_with(options.clone())) {
                Ok(new) => {
                    *addr.write().expect("lock") = new.addr;
                    *s = new;
                }
                Err(_) => restart_error = Some("the server did not restart"),
            }
        }
    };
    let figures = load_at(addr.clone(), settings.requests, settings.clients, "crash", Some(&mut on_progress))?;
    if let Some(e) = restart_error {
        bail!(e);
    }
    let (acked_at_kill, stored_at_kill, check_at_kill) = killed.context("the load ended before the kill")?;
    let status = server.lock().expect("lock").stop();
    ensure!(status.and_then(|s| s.code()) == Some(0), "the restarted server did not exit 0 on SIGTERM");
    let check = integrity(&db)?;
    ensure!(
        check_at_kill == "ok" && check == "ok",
        "integrity_check: {check_at_kill} after the kill, {check} at the end"
    );
    ensure!(
        stored_at_kill >= acked_at_kill as i64,
        "after kill -9: {stored_at_kill} stored, {acked_at_kill} acknowledged"
    );
    let conn = rusqlite::Connection::open(&db)?;
    let stored: HashMap<i64, String> = conn
        .prepare("SELECT id, idem_key FROM results")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let distinct: i64 = conn.query_row("SELECT COUNT(DISTINCT idem_key) FROM results", [], |r| r.get(0))?;
    ensure!(stored.len() == settings.requests, "{} stored for {} submissions", stored.len(), settings.requests);
    ensure!(distinct as usize == settings.requests, "duplicates: {distinct} distinct keys in {} rows", stored.len());
    for (i, id) in &figures.acked {
        let key = format!("bench-crash-{i:07}");
        ensure!(stored.get(id) == Some(&key), "result {id} acknowledged for {key} is missing or differs");
    }
    println!(
        "lb-bench: kill -9 after {acked_at_kill} acknowledged: {stored_at_kill} stored, integrity_check {check_at_kill}; \
         after restart and {} retries: {} stored, each key once, every 201 present, integrity_check {check}",
        figures.retries,
        stored.len()
    );
    Ok(json!({
        "acked_at_kill": acked_at_kill,
        "stored_at_kill": stored_at_kill,
        "integrity_at_kill": check_at_kill,
        "retries": figures.retries,
        "stored": stored.len(),
        "distinct_keys": distinct,
        "integrity_at_end": check,
    }))
}

/// Fills a database with `results` results through the API, then times the
/// pages and measures the server's memory while the JSON export streams.
/// A median over its goal is added to `missed`: 20 ms for every page, or,
/// at scale, 50 ms for the home and card pages.
fn pages(
    binary: &Path,
    mut options: Options,
    results: usize,
    settings: &Settings,
    name: &str,
    missed: &mut Vec<String>,
) -> Result<Value> {
    options.binary = Some(binary.to_owned());
    let scale = results != settings.page_results;
    let server = Leaderboard::start_with(options);
    let fill = load(&server, results, settings.clients, "pages", None)?;
    print_load(&format!("{name} fill"), &fill, fill.acked.len() as i64);
    // The card with the most results (every tenth submission), and another:
    // by the one sort every version of the server has.
    let rows = leaderboard::request(server.addr, "GET", "/api/v1/leaderboard?sort=samples&limit=100", &[], b"").json();
    let rows = rows["rows"].as_array().context("rows")?.clone();
    let popular = rows
        .iter()
        .find(|r| r["card"]["product_name"] == "POPLR")
        .and_then(|r| r["card_key"].as_str())
        .context("the popular card")?
        .to_owned();
    let ordinary = rows
        .iter()
        .rev()
        .find(|r| r["card"]["product_name"] != "POPLR")
        .and_then(|r| r["card_key"].as_str())
        .context("a card")?
        .to_owned();
    let groups =
        leaderboard::request(server.addr, "GET", "/api/v1/leaderboard?limit=1", &[], b"").json()["total"].as_i64();
    let last_id = fill.acked.iter().map(|(_, id)| *id).max().unwrap_or(1);
    let paths = [
        "/".to_owned(),
        "/?sort=samples&dir=desc".to_owned(),
        "/?kind=sd&class=A2&board=Raspberry+Pi+4+Model+B+Rev+1.4".to_owned(),
        "/api/v1/leaderboard".to_owned(),
        "/?q=popl".to_owned(),
        format!("/?sort={}", storage_scoring::figure::Figure::RandWriteQd64.key()),
        "/?board=Raspberry+Pi+4&offset=500".to_owned(),
        format!("/cards/{popular}"),
        format!("/cards/{ordinary}"),
        format!("/results/{last_id}"),
        "/about".to_owned(),
    ];
    let mut out = serde_json::Map::new();
    let mut http = Http::new(server.addr);
    for path in &paths {
        let mut times = Vec::new();
        let mut absent = false;
        for _ in 0..30 {
            let t = Instant::now();
            let r = http.send("GET", path, &[], b"")?;
            // A server from before /about and the per-figure sorts.
            let newer = path == "/about" || path.contains("sort=rand_write");
            if newer && matches!(r.status, 400 | 404) {
                absent = true;
                break;
            }
            ensure!(r.status == 200, "{path}: {}", r.status);
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        if absent {
            println!("lb-bench: {name}: GET {path}: absent");
            continue;
        }
        times.sort_by(f64::total_cmp);
        let (p50, max) = (times[times.len() / 2], times[times.len() - 1]);
        println!("lb-bench: {name}, {results} results: GET {path}: median {p50:.1} ms, max {max:.1} ms");
        let goal = if !scale {
            Some(PAGE_GOAL_MS)
        } else if path == "/" || path.starts_with("/cards/") {
            Some(SCALE_GOAL_MS)
        } else {
            None
        };
        if let Some(goal) = goal.filter(|goal| p50 >= *goal) {
            missed.push(format!("{name}, {results} results: GET {path} median {p50:.1} ms, goal {goal} ms"));
        }
        out.insert(path.clone(), json!({"median_ms": round2(p50), "max_ms": round2(max)}));
    }
    let pid = server.pid().context("the server's pid")?;
    let export = stream_export(server.addr, "/export.json", pid)?;
    println!(
        "lb-bench: {name}: /export.json: {} public results, {:.1} MB in {:.2} s; server resident {:.1} MiB before, \
         {:.1} MiB at most while it streamed",
        export.lines,
        export.bytes as f64 / 1e6,
        export.seconds,
        export.rss_before_kib as f64 / 1024.0,
        export.rss_peak_kib as f64 / 1024.0
    );
    // Only public results are exported: the bench's generator sends a few
    // SDR104 figures from a Pi 4, whose slot stops at DDR50, and they are
    // flagged.
    ensure!(export.lines > results / 2, "/export.json held {} lines for {results} results", export.lines);
    out.insert(
        "export_json".into(),
        json!({
            "seconds": round2(export.seconds),
            "bytes": export.bytes,
            "lines": export.lines,
            "rss_before_kib": export.rss_before_kib,
            "rss_peak_kib": export.rss_peak_kib,
        }),
    );
    out.insert("groups".into(), json!(groups));
    out.insert("fill".into(), fill.to_json(fill.acked.len() as i64));
    Ok(Value::Object(out))
}

/// What streaming an export cost the server.
struct ExportFigures {
    seconds: f64,
    bytes: u64,
    lines: usize,
    rss_before_kib: u64,
    rss_peak_kib: u64,
}

/// GETs `path` and counts its bytes and lines as they arrive (a million
/// results would not fit in this process's memory either), while a thread
/// samples the server's resident set every 2 ms.
fn stream_export(addr: std::net::SocketAddr, path: &str, pid: u32) -> Result<ExportFigures> {
    use std::io::{Read, Write};
    let rss_before_kib = resident_kib(pid)?;
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut peak = 0;
            while !done.load(Ordering::Relaxed) {
                peak = peak.max(resident_kib(pid).unwrap_or(0));
                std::thread::sleep(Duration::from_millis(2));
            }
            peak
        })
    };
    let started = Instant::now();
    let mut stream = std::net::TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(120)))?;
    // HTTP/1.0: the body comes unchunked, so its newlines are the export's.
    write!(stream, "GET {path} HTTP/1.0\r\nHost: bench\r\n\r\n")?;
    let (mut bytes, mut lines) = (0u64, 0usize);
    // The status line and headers, until their blank line has come.
    let mut head: Option<Vec<u8>> = Some(Vec::new());
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = stream.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        let body = match head.as_mut() {
            None => &buffer[..n],
            Some(head_so_far) => {
                head_so_far.extend_from_slice(&buffer[..n]);
                let Some(end) = head_so_far.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
                ensure!(head_so_far.get(9..12) == Some(b"200"), "{path}: not a 200");
                let rest = head_so_far.split_off(end + 4);
                head = None;
                bytes += rest.len() as u64;
                lines += rest.iter().filter(|b| **b == b'\n').count();
                continue;
            }
        };
        bytes += body.len() as u64;
        lines += body.iter().filter(|b| **b == b'\n').count();
    }
    let seconds = started.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    let rss_peak_kib = sampler.join().map_err(|_| anyhow::anyhow!("the memory sampler panicked"))?;
    Ok(ExportFigures { seconds, bytes, lines, rss_before_kib, rss_peak_kib })
}

/// The `VmRSS` of a process, in KiB.
fn resident_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("VmRSS in /proc/PID/status")
}
