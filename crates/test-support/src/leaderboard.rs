//! The real `storage-score-leaderboard` binary for tests: started on
//! 127.0.0.1 port 0 with its own temporary SQLite file (or a database URL),
//! its `listening on http://HOST:PORT` line parsed, its stderr kept in a log
//! file, and stopped on drop (SIGTERM, then SIGKILL) on every path.
//!
//! A small HTTP/1.1 client included, so that any test binary can use it:
//! the leaderboard's own tests, the CLI's end-to-end `submit` and
//! `compare` tests, and `cargo xtask lb-bench`.
//!
//! ```no_run
//! use storage_score_test_support::lb_backends::REPORT;
//! use storage_score_test_support::leaderboard::Leaderboard;
//!
//! let server = Leaderboard::start();
//! let reply = server.post_report(REPORT, "key-0001");
//! assert_eq!(reply.status, 201);
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The server binary: `$STORAGE_SCORE_LEADERBOARD_BIN`, cargo's path for
/// the leaderboard's own tests (`$CARGO_BIN_EXE_storage-score-leaderboard`,
/// which cargo sets when it runs them), or the one beside this test binary. In the
/// last case cargo builds it first, once per test process, even when a file
/// is there: a test of another package (the CLI's end-to-end `submit`) would
/// otherwise run a stale server, or none on a fresh clone, since cargo
/// builds only the binaries of the package under test.
pub fn server_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("STORAGE_SCORE_LEADERBOARD_BIN") {
        return PathBuf::from(path);
    }
    if let Some(path) = std::env::var_os("CARGO_BIN_EXE_storage-score-leaderboard") {
        return PathBuf::from(path);
    }
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("test binary path");
            // target/<profile>/deps/<test> → target/<profile>/storage-score-leaderboard
            let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut build = Command::new(cargo);
            build.args(["build", "--quiet", "-p", "storage-score-leaderboard", "--bin", "storage-score-leaderboard"]);
            if profile_dir.file_name().is_some_and(|n| n == "release") {
                build.arg("--release");
            }
            let status = build.status().expect("cargo build");
            assert!(status.success(), "cannot build storage-score-leaderboard");
            profile_dir.join("storage-score-leaderboard")
        })
        .clone()
}

/// How to start a server.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--db`; a fresh SQLite file in the server's temp dir when `None`.
    pub db: Option<String>,
    /// `--rate-limit`; 0 (off) when `None`.
    pub rate_limit: Option<u32>,
    pub admin_token: Option<String>,
    pub binary: Option<PathBuf>,
    /// Keep this SQLite file instead of a fresh one (restart after a crash).
    pub sqlite_path: Option<PathBuf>,
    /// `--listen`; `127.0.0.1:0` (a free port) when `None`. A restart on
    /// the port of a stopped server keeps the URL a client was told.
    pub listen: Option<String>,
    /// More arguments (`--trusted-proxy CIDR`, `--max-connections N`).
    pub args: Vec<String>,
    /// `--quota-mib` (through its variable, which servers that predate it
    /// ignore); 0 (off) when `None`, as most tests send many results from
    /// one network.
    pub quota_mib: Option<u32>,
    /// The server's clock: a [`TestClock`]'s file, whose time the server
    /// stamps results with instead of the system's.
    pub clock: Option<PathBuf>,
}

/// A clock a test moves: a file holding Unix seconds, which a server
/// started with it in [`Options::clock`] reads as its time.
#[derive(Debug)]
pub struct TestClock {
    pub path: PathBuf,
    now: std::cell::Cell<i64>,
    _dir: tempfile::TempDir,
}

impl TestClock {
    /// A clock at `start` (Unix seconds).
    pub fn at(start: i64) -> TestClock {
        let dir = crate::temp_dir("lb-clock");
        let clock = TestClock { path: dir.path().join("now"), now: std::cell::Cell::new(start), _dir: dir };
        clock.set(start);
        clock
    }

    pub fn now(&self) -> i64 {
        self.now.get()
    }

    /// Moves the clock to `unix` (written whole, then renamed into place,
    /// so the server never reads half a number).
    pub fn set(&self, unix: i64) {
        let tmp = self.path.with_extension("tmp");
        std::fs::write(&tmp, unix.to_string()).expect("write the clock");
        std::fs::rename(&tmp, &self.path).expect("set the clock");
        self.now.set(unix);
    }

    pub fn advance(&self, seconds: i64) {
        self.set(self.now() + seconds);
    }
}

/// A running server, stopped on drop.
#[derive(Debug)]
pub struct Leaderboard {
    pub addr: SocketAddr,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The SQLite file, when the server uses one.
    pub sqlite_path: Option<PathBuf>,
    /// Everything the server wrote to stderr.
    pub log_path: PathBuf,
    child: Option<Child>,
    /// The temp dir of the log and the SQLite file; `None` once kept.
    dir: Option<tempfile::TempDir>,
    kept: Option<PathBuf>,
}

impl Leaderboard {
    /// A server on a fresh SQLite file, rate limit off, no admin token.
    pub fn start() -> Leaderboard {
        Leaderboard::start_with(Options::default())
    }

    pub fn start_with(options: Options) -> Leaderboard {
        let binary = options.binary.clone().unwrap_or_else(server_binary);
        let dir = crate::temp_dir("lb-server");
        let (db, sqlite_path) = match (&options.db, &options.sqlite_path) {
            (Some(db), _) => (db.clone(), None),
            (None, Some(path)) => (format!("sqlite:{}", path.display()), Some(path.clone())),
            (None, None) => {
                let path = dir.path().join("leaderboard.db");
                (format!("sqlite:{}", path.display()), Some(path))
            }
        };
        let log_path = dir.path().join("server.log");
        let mut command = Command::new(&binary);
        command
            .args(["--listen", options.listen.as_deref().unwrap_or("127.0.0.1:0"), "--db", &db])
            .args(["--rate-limit", &options.rate_limit.unwrap_or(0).to_string()])
            .args(&options.args)
            .env_remove("STORAGE_SCORE_LEADERBOARD_DB")
            .env_remove("STORAGE_SCORE_LEADERBOARD_ADMIN_TOKEN")
            .env("STORAGE_SCORE_LEADERBOARD_QUOTA_MIB", options.quota_mib.unwrap_or(0).to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        command.env_remove("STORAGE_SCORE_LEADERBOARD_TEST_CLOCK");
        if let Some(clock) = &options.clock {
            command.env("STORAGE_SCORE_LEADERBOARD_TEST_CLOCK", clock);
        }
        if let Some(token) = &options.admin_token {
            command.env("STORAGE_SCORE_LEADERBOARD_ADMIN_TOKEN", token);
        }
        let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel();
        let log_file = std::fs::File::create(&log_path).expect("server log");
        // Copies the server's stderr to the log file for as long as it runs,
        // and hands over the `listening on` line.
        std::thread::spawn(move || {
            let mut log = log_file;
            let mut sent = false;
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let _ = writeln!(log, "{line}");
                if !sent {
                    if let Some(url) = line.strip_prefix("listening on ") {
                        let _ = tx.send(url.to_owned());
                        sent = true;
                    }
                }
            }
        });
        let mut server = Leaderboard {
            addr: "127.0.0.1:1".parse().unwrap(),
            url: String::new(),
            sqlite_path,
            log_path,
            child: Some(child),
            dir: Some(dir),
            kept: None,
        };
        let url = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(url) => url,
            Err(_) => {
                let log = std::fs::read_to_string(&server.log_path).unwrap_or_default();
                panic!("the leaderboard did not print `listening on` within 30 s; its log:\n{log}");
            }
        };
        server.addr =
            url.strip_prefix("http://").and_then(|a| a.parse().ok()).unwrap_or_else(|| panic!("bad line: {url}"));
        server.url = url;
        server
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGTERM, and the exit status (within 30 s).
    pub fn stop(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        terminate(child.id());
        wait_timeout(&mut child, Duration::from_secs(30)).or_else(|| {
            let _ = child.kill();
            child.wait().ok()
        })
    }

    /// SIGKILL, as a crash would.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Keeps the temp dir (and the SQLite file in it) after drop.
    pub fn keep_files(&mut self) -> PathBuf {
        if let Some(dir) = self.dir.take() {
            self.kept = Some(dir.keep());
        }
        self.kept.clone().expect("the server's directory")
    }

    pub fn get(&self, path: &str) -> Response {
        request(self.addr, "GET", path, &[], b"")
    }

    /// POSTs a report with an idempotency key.
    pub fn post_report(&self, body: &str, key: &str) -> Response {
        request(
            self.addr,
            "POST",
            "/api/v1/results",
            &[("Idempotency-Key", key), ("Content-Type", "application/json")],
            body.as_bytes(),
        )
    }

    /// POSTs a report from another loopback address (127.0.1.1, 127.0.2.1,
    /// …: Linux routes all of 127.0.0.0/8 to this machine), as another
    /// client would.
    pub fn post_report_from(&self, source: IpAddr, body: &str, key: &str) -> Response {
        let mut conn = Http::new(self.addr).from(source);
        conn.keep_alive = false;
        conn.send(
            "POST",
            "/api/v1/results",
            &[("Idempotency-Key", key), ("Content-Type", "application/json")],
            body.as_bytes(),
        )
        .unwrap_or_else(|e| panic!("POST from {source}: {e}"))
    }
}

impl Drop for Leaderboard {
    fn drop(&mut self) {
        // Stopped first, then its directory (if not kept) goes with `dir`.
        self.stop();
    }
}

fn terminate(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        // SAFETY: kill(2) on the pid of a child we started and have not reaped.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
}

fn wait_timeout(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// An HTTP response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// One request on a new connection (`Connection: close`).
pub fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
    let mut conn = Http::new(addr);
    conn.keep_alive = false;
    conn.send(method, path, headers, body).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// An HTTP/1.1 connection, kept alive between requests.
#[derive(Debug)]
pub struct Http {
    addr: SocketAddr,
    source: Option<IpAddr>,
    stream: Option<BufReader<TcpStream>>,
    pub keep_alive: bool,
    pub timeout: Duration,
}

impl Http {
    pub fn new(addr: SocketAddr) -> Http {
        Http { addr, source: None, stream: None, keep_alive: true, timeout: Duration::from_secs(60) }
    }

    /// Connects from `source` (a local address, e.g. 127.0.3.1).
    pub fn from(mut self, source: IpAddr) -> Http {
        self.source = Some(source);
        self
    }

    fn connect(&mut self) -> std::io::Result<&mut BufReader<TcpStream>> {
        if self.stream.is_none() {
            let stream = match self.source {
                Some(source) => connect_from(source, self.addr)?,
                None => TcpStream::connect_timeout(&self.addr, self.timeout)?,
            };
            stream.set_read_timeout(Some(self.timeout))?;
            stream.set_write_timeout(Some(self.timeout))?;
            stream.set_nodelay(true)?;
            self.stream = Some(BufReader::new(stream));
        }
        Ok(self.stream.as_mut().expect("just connected"))
    }

    /// Sends a request and reads the answer. With `Expect: 100-continue` in
    /// `headers`, the body goes only after the server's 100.
    pub fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<Response> {
        let result = self.exchange(method, path, headers, body);
        if result.is_err() || !self.keep_alive {
            self.stream = None;
        }
        result
    }

    fn exchange(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<Response> {
        let keep_alive = self.keep_alive;
        let addr = self.addr;
        let stream = self.connect()?;
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\n");
        if !keep_alive {
            head.push_str("Connection: close\r\n");
        }
        let expect =
            headers.iter().any(|(n, v)| n.eq_ignore_ascii_case("expect") && v.eq_ignore_ascii_case("100-continue"));
        if !body.is_empty() || method == "POST" || method == "PUT" {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.get_mut().write_all(head.as_bytes())?;
        if expect {
            let first = read_response(stream, method)?;
            if first.status != 100 {
                self.stream = None;
                return Ok(first);
            }
            let stream = self.stream.as_mut().expect("connected");
            stream.get_mut().write_all(body)?;
            return read_response(stream, method);
        }
        stream.get_mut().write_all(body)?;
        let response = read_response(stream, method)?;
        if response.header("connection").is_some_and(|c| c.eq_ignore_ascii_case("close")) {
            self.stream = None;
        }
        Ok(response)
    }
}

/// A TCP connection to `addr` from the local address `source` (std binds
/// only listeners, so the socket is made with libc).
pub fn connect_from(source: IpAddr, addr: SocketAddr) -> std::io::Result<TcpStream> {
    use std::os::fd::FromRawFd;
    let (IpAddr::V4(source), SocketAddr::V4(addr)) = (source, addr) else {
        return Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "IPv4 loopback only"));
    };
    let sockaddr = |ip: std::net::Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(ip).to_be() },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a new socket; its descriptor is owned by the TcpStream below
    // (or closed here on failure).
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is ours, open, and owned from here on by the stream.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    let local = sockaddr(source, 0);
    let remote = sockaddr(*addr.ip(), addr.port());
    // SAFETY: bind and connect read one sockaddr_in of `len` bytes from locals.
    if unsafe { libc::bind(fd, (&local as *const libc::sockaddr_in).cast(), len) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::connect(fd, (&remote as *const libc::sockaddr_in).cast(), len) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(stream)
}

fn read_response(stream: &mut BufReader<TcpStream>, method: &str) -> std::io::Result<Response> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    let mut line = String::new();
    if stream.read_line(&mut line)? == 0 {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "connection closed before a response"));
    }
    let status: u16 = line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| bad(&line))?;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        stream.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').ok_or_else(|| bad(line))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let mut response = Response { status, headers, body: Vec::new() };
    if status == 100 || status == 204 || status == 304 || method == "HEAD" {
        return Ok(response);
    }
    if response.header("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            stream.read_line(&mut size)?;
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| bad("chunk size"))?;
            let mut chunk = vec![0; size + 2];
            stream.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
            response.body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = response.header("content-length").and_then(|l| l.parse::<usize>().ok()) {
        let mut body = vec![0; length];
        stream.read_exact(&mut body)?;
        response.body = body;
    } else {
        stream.read_to_end(&mut response.body)?;
    }
    Ok(response)
}
