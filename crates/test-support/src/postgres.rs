//! A throwaway PostgreSQL cluster for tests and benchmarks: `initdb` in a
//! temp dir, `postgres` on a private port of 127.0.0.1 with its socket in
//! that dir, run as the `postgres` user when we are root (initdb refuses
//! root), stopped and removed on drop.
//!
//! Debian's `postgresql` package puts the server binaries in
//! `/usr/lib/postgresql/VERSION/bin`; the newest version found is used.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The directory holding `initdb` and `postgres`, if PostgreSQL is installed.
pub fn bin_dir() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse::<u32>().ok()?, e.path().join("bin"))))
        .filter(|(_, bin)| bin.join("initdb").exists() && bin.join("postgres").exists())
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// Why PostgreSQL tests cannot run here, if they cannot.
pub fn unavailable() -> Option<String> {
    if bin_dir().is_none() {
        return Some("PostgreSQL is not installed (apt-get install postgresql; cargo xtask test does it)".into());
    }
    if crate::is_root() && user_ids("postgres").is_none() {
        return Some("running as root and there is no `postgres` user to run the server as".into());
    }
    None
}

/// The uid and gid of a user, from /etc/passwd.
fn user_ids(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.first() == Some(&name)).then(|| Some((fields.get(2)?.parse().ok()?, fields.get(3)?.parse().ok()?)))?
    })
}

/// A running cluster.
#[derive(Debug)]
pub struct PgCluster {
    pub port: u16,
    pub dir: PathBuf,
    bin: PathBuf,
    child: Option<Child>,
    databases: std::sync::atomic::AtomicU32,
}

impl PgCluster {
    /// initdb + start; `durable` keeps fsync on (benchmarks), off for tests.
    pub fn start(durable: bool) -> Result<PgCluster, String> {
        if let Some(why) = unavailable() {
            return Err(why);
        }
        let bin = bin_dir().expect("checked");
        let ids = if crate::is_root() { user_ids("postgres") } else { None };
        // Kept: the cluster removes it when it stops, however it stops
        // (`stop`, or `lb_backends`' exit handler by its path).
        let dir = crate::temp_dir("ss-pg").keep();
        // Readable by all, as a directory made by hand would be (tempfile's is 0700).
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .map_err(|e| format!("chmod {}: {e}", dir.display()))?;
        let data = dir.join("data");
        if let Some((uid, gid)) = ids {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).map_err(|e| format!("chown: {e}"))?;
        }
        let mut initdb = Command::new(bin.join("initdb"));
        initdb.args([
            "-D",
            data.to_str().unwrap(),
            "-U",
            "postgres",
            "-A",
            "trust",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        ]);
        as_user(&mut initdb, ids);
        let out = initdb.output().map_err(|e| format!("initdb: {e}"))?;
        if !out.status.success() {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(format!("initdb failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        let port = free_port();
        let mut postgres = Command::new(bin.join("postgres"));
        postgres
            .args(["-D", data.to_str().unwrap(), "-p", &port.to_string(), "-k", dir.to_str().unwrap()])
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200"])
            .args(["-c", &format!("fsync={}", if durable { "on" } else { "off" })])
            .args(["-c", &format!("synchronous_commit={}", if durable { "on" } else { "off" })])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(dir.join("postgres.log")).map_err(|e| e.to_string())?));
        as_user(&mut postgres, ids);
        let child = postgres.spawn().map_err(|e| format!("postgres: {e}"))?;
        let mut cluster =
            PgCluster { port, dir, bin, child: Some(child), databases: std::sync::atomic::AtomicU32::new(0) };
        let start = Instant::now();
        loop {
            if cluster.psql("postgres", "SELECT 1").is_ok() {
                return Ok(cluster);
            }
            if start.elapsed() > Duration::from_secs(30) {
                let log = std::fs::read_to_string(cluster.dir.join("postgres.log")).unwrap_or_default();
                cluster.stop();
                return Err(format!("PostgreSQL did not start within 30 s: {log}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Runs SQL through psql on the cluster's socket.
    pub fn psql(&self, database: &str, sql: &str) -> Result<String, String> {
        let out = Command::new("psql")
            .args(["-h", self.dir.to_str().unwrap(), "-p", &self.port.to_string(), "-U", "postgres", "-d", database])
            .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .map_err(|e| format!("psql: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// Runs an SQL file (a `pg_dump`, say) through psql on the cluster's socket.
    pub fn psql_file(&self, database: &str, file: &Path) -> Result<String, String> {
        let out = Command::new("psql")
            .args(["-h", self.dir.to_str().unwrap(), "-p", &self.port.to_string(), "-U", "postgres", "-d", database])
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-f"])
            .arg(file)
            .output()
            .map_err(|e| format!("psql: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// A new empty database, and its URL for `--db`.
    pub fn new_database(&self) -> String {
        let n = self.databases.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("lb_{}_{n}", std::process::id());
        self.psql("postgres", &format!("CREATE DATABASE {name}")).expect("CREATE DATABASE");
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// The database's name from a URL made by [`new_database`].
    pub fn database_of(url: &str) -> &str {
        url.rsplit('/').next().unwrap_or("postgres")
    }

    /// `pg_dump` of a database, as text.
    pub fn dump(&self, database: &str) -> String {
        let out = Command::new(self.bin.join("pg_dump"))
            .args(["-h", self.dir.to_str().unwrap(), "-p", &self.port.to_string(), "-U", "postgres", database])
            .output()
            .expect("pg_dump");
        assert!(out.status.success(), "pg_dump: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Stops the server (fast shutdown) and removes its files.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGINT: PostgreSQL's fast shutdown.
            if let Ok(pid) = i32::try_from(child.id()) {
                // SAFETY: kill(2) on the pid of a child we started and have not reaped.
                unsafe { libc::kill(pid, libc::SIGINT) };
            }
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(20) {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

fn as_user(command: &mut Command, ids: Option<(u32, u32)>) {
    if let Some((uid, gid)) = ids {
        command.uid(uid).gid(gid);
        command.env("HOME", "/tmp");
    }
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}
