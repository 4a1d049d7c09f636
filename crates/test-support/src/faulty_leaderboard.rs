//! A leaderboard that misbehaves on purpose: a real HTTP listener on
//! 127.0.0.1 that answers each request from a script of faults (503, 429
//! with Retry-After, bytes that are not HTTP, a stall past the client's
//! timeout) and records the raw bytes of every request it received.
//!
//! This is a named fault model (docs/testing.md#fuse-fakes): faults the real server
//! (`crates/leaderboard`) should never produce on demand. It knows nothing
//! of reports, scores or idempotency; the end-to-end test against the real
//! server is the main test of the client.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the listener does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// An HTTP answer (`Connection: close`).
    Http { status: u16, headers: Vec<(String, String)>, body: String },
    /// Reads the request, then says nothing for this long and hangs up.
    Stall(Duration),
    /// Reads the request, answers these bytes (not HTTP) and hangs up.
    Garbage(Vec<u8>),
}

impl Reply {
    pub fn status(status: u16, body: &str) -> Reply {
        Reply::Http { status, headers: Vec::new(), body: body.to_owned() }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Http { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    /// The 201 a leaderboard gives (docs/leaderboard.md), with a delete token.
    pub fn created(id: u64, status: &str) -> Reply {
        Reply::status(
            201,
            &format!(
                r#"{{"id": {id}, "url": "/results/{id}", "status": "{status}", "score": {{"pibenchmarks": 1164}}, "delete_token": "dt-{id}-secret"}}"#
            ),
        )
        .with_header("Content-Type", "application/json")
    }
}

/// One request as it arrived on the wire.
#[derive(Debug, Clone)]
pub struct Received {
    /// Everything read: request line, headers and body.
    pub raw: Vec<u8>,
    pub request_line: String,
    pub body: Vec<u8>,
    pub at: Instant,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<String> {
        let text = String::from_utf8_lossy(&self.raw);
        let head = text.split("\r\n\r\n").next().unwrap_or_default().to_owned();
        head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
        })
    }
}

/// The listener. Requests take the script's replies in order; the last
/// reply repeats once the script runs out. Stopped and joined on drop.
#[derive(Debug)]
pub struct FaultyLeaderboard {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl FaultyLeaderboard {
    pub fn start(script: Vec<Reply>) -> FaultyLeaderboard {
        FaultyLeaderboard::start_at("127.0.0.1:0", script)
    }

    /// On a given address, e.g. one a client failed to reach before.
    pub fn start_at(addr: &str, script: Vec<Reply>) -> FaultyLeaderboard {
        assert!(!script.is_empty(), "a script needs at least one reply");
        let listener = TcpListener::bind(addr).unwrap_or_else(|e| panic!("bind {addr}: {e}"));
        let addr = listener.local_addr().expect("local addr");
        let received = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let next = Arc::new(AtomicUsize::new(0));
        let script = Arc::new(script);
        let acceptor = {
            let (received, stop) = (received.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (received, stop, next, script) = (received.clone(), stop.clone(), next.clone(), script.clone());
                    // One thread per connection, so a stall does not hold
                    // up the client's next attempt. Each ends by itself.
                    std::thread::spawn(move || serve(stream, &script, &next, &received, &stop));
                }
            })
        };
        FaultyLeaderboard { addr, received, stop, acceptor: Some(acceptor) }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for FaultyLeaderboard {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept so the thread sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn serve(
    mut stream: TcpStream,
    script: &[Reply],
    next: &AtomicUsize,
    received: &Mutex<Vec<Received>>,
    stop: &AtomicBool,
) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let Some(request) = read_request(&mut stream) else { return };
    if stop.load(Ordering::SeqCst) {
        return;
    }
    received.lock().unwrap_or_else(|p| p.into_inner()).push(request);
    let index = next.fetch_add(1, Ordering::SeqCst).min(script.len() - 1);
    match &script[index] {
        Reply::Http { status, headers, body } => {
            let mut head =
                format!("HTTP/1.1 {status} Fault Model\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes()));
        }
        Reply::Stall(duration) => {
            let until = Instant::now() + *duration;
            while Instant::now() < until && !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Reply::Garbage(bytes) => {
            let _ = stream.write_all(bytes);
        }
    }
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Both);
}

/// Reads one request: the head up to the blank line, then Content-Length
/// bytes of body.
fn read_request(stream: &mut TcpStream) -> Option<Received> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut buf).ok().filter(|&n| n > 0)?;
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.trim().eq_ignore_ascii_case("content-length")))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    while raw.len() < head_end + length {
        let n = stream.read(&mut buf).ok().filter(|&n| n > 0)?;
        raw.extend_from_slice(&buf[..n]);
    }
    Some(Received {
        request_line: head.lines().next().unwrap_or_default().to_owned(),
        body: raw[head_end..head_end + length].to_vec(),
        raw,
        at: Instant::now(),
    })
}

/// An address where nothing listens: a port just bound and released.
pub fn refused_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    format!("http://{addr}")
}
