//! Accepting connections so that the server is hard to knock over: a cap on
//! open connections, a deadline for each request's headers and for every
//! write, and a graceful stop.
//!
//! - At most `--max-connections` (default 1024) connections are served at
//!   once; one more is answered 503 with `Retry-After: 1` and closed, so
//!   that idle sockets can never use up the open-file limit. On start, the
//!   soft open-file limit is raised to the hard one, and if it is still too
//!   low for the cap, the cap is lowered, with one line saying so.
//! - A connection has 30 s to send each request's headers, between requests
//!   too: an idle or trickling socket is closed then (hyper's header read
//!   timeout). The body has 30 s as well ([`crate::api::BODY_TIMEOUT`]).
//! - One network (an IPv4 /24, an IPv6 /48: [`crate::peer::Networks`]) holds
//!   at most `--max-connections-per-network` (default 32) of them, and never
//!   more than a quarter of the cap, so that
//!   idle sockets from one place cannot take the slots of everyone else;
//!   trusted proxies are not capped (their clients are many networks).
//! - A write that makes no progress for 30 s (a client that stopped
//!   reading, say in the middle of an export) closes the connection, and
//!   so does a response still being sent `--response-deadline` (default
//!   300 s) after its first byte: a slow reader that takes a byte now and
//!   then is cut off, not kept alive by each byte it takes.
//! - On SIGTERM or SIGINT: stop accepting, let the requests under way
//!   finish (up to 30 s), return.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Sleep;
use tower::Service;

/// How long a client has to send a request's headers.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a write may wait for the client to read.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stop waits for the requests under way.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// Files the server needs besides its connections: the database's files
/// and connections, the listener, standard streams.
const OTHER_FILES: usize = 64;

/// How long a response may take to send, from its first byte, by default.
pub const RESPONSE_DEADLINE: Duration = Duration::from_secs(300);

/// The connection caps.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections served at once, in all.
    pub total: usize,
    /// Connections one network may hold.
    pub per_network: usize,
    pub networks: crate::peer::Networks,
    /// Peers not capped per network.
    pub trusted_proxies: Vec<crate::peer::Cidr>,
    /// How long a response may take to send.
    pub response_deadline: Duration,
}

/// Open connections per network, each released when its connection ends.
#[derive(Debug, Default)]
struct PerNetwork {
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// A network's share of the connections, given back on drop.
struct NetworkSlot {
    table: Arc<PerNetwork>,
    network: IpAddr,
}

impl PerNetwork {
    fn take(table: &Arc<PerNetwork>, network: IpAddr, cap: usize) -> Option<NetworkSlot> {
        let mut open = table.open.lock().unwrap_or_else(|p| p.into_inner());
        let count = open.entry(network).or_insert(0);
        if *count >= cap {
            return None;
        }
        *count += 1;
        Some(NetworkSlot { table: Arc::clone(table), network })
    }
}

impl Drop for NetworkSlot {
    fn drop(&mut self) {
        let mut open = self.table.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = open.get_mut(&self.network) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.network);
            }
        }
    }
}

/// Serves `router` on `listener` until `stop` ends.
pub async fn serve(listener: TcpListener, router: Router, limits: Limits, stop: impl Future<Output = ()>) {
    let slots = Arc::new(Semaphore::new(limits.total));
    let per_network = Arc::new(PerNetwork::default());
    let graceful = GracefulShutdown::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of files or memory (or a connection reset before
                    // it was taken): wait a little rather than spin.
                    if !matches!(e.kind(), io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset) {
                        eprintln!("cannot accept a connection: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let peer = remote.ip();
        let network_slot = if limits.trusted_proxies.iter().any(|c| c.contains(peer)) {
            None
        } else {
            match PerNetwork::take(&per_network, limits.networks.network_of(peer), limits.per_network) {
                Some(slot) => Some(slot),
                None => {
                    refuse(stream, NETWORK_FULL);
                    continue;
                }
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            // Answered and closed here and now: its descriptor is free
            // before the next accept.
            refuse(stream, SERVER_FULL);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let mut request = request.map(axum::body::Body::new);
            request.extensions_mut().insert(ConnectInfo(remote));
            let mut router = router.clone();
            async move { router.call(request).await }
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT).keep_alive(true);
        let stream = WriteDeadline::new(stream, limits.response_deadline);
        let connection = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            // An error here is the client's (a reset, a timeout, bad HTTP):
            // hyper has answered what it could.
            let _ = connection.await;
            drop(slot);
            drop(network_slot);
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(DRAIN_TIMEOUT) => eprintln!("stopping: requests still under way after {} s are cut", DRAIN_TIMEOUT.as_secs()),
    }
}

const SERVER_FULL: &str =
    "{\"error\": \"connections: the server is at its limit of open connections; try again in a moment\"}";
const NETWORK_FULL: &str = "{\"error\": \"connections: your network holds as many open connections as one network may; close some, or try again in a moment\"}";

/// The answer to a connection over a cap: 503, then close. One write
/// that never waits (a new socket's send buffer takes it whole).
fn refuse(stream: TcpStream, body: &str) {
    let reply = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.try_write(reply.as_bytes());
}

/// The connection cap the open-file limit allows: the soft limit is raised
/// to the hard one first. Returns the cap, and a warning when it is lower
/// than asked.
pub fn connection_cap(wanted: usize) -> (usize, Option<String>) {
    let limit = raise_file_limit();
    match limit {
        Some(limit) if limit < wanted + OTHER_FILES => {
            let cap = limit.saturating_sub(OTHER_FILES).max(16);
            let warning = format!(
                "the open-file limit is {limit}: serving at most {cap} connections at once, not the {wanted} of --max-connections; raise the limit (LimitNOFILE in the unit, ulimit -n) or lower --max-connections"
            );
            (cap, Some(warning))
        }
        _ => (wanted, None),
    }
}

/// Raises the soft open-file limit to the hard one; the soft limit after.
fn raise_file_limit() -> Option<usize> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit through a valid pointer to a local.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
        // SAFETY: setrlimit reads one rlimit through a valid pointer to a local.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    usize::try_from(limit.rlim_cur).ok()
}

/// A stream whose writes fail once they make no progress for
/// [`WRITE_TIMEOUT`], or once the response they belong to has been sending
/// for longer than its total deadline; reads pass through (their deadlines
/// are the header and body timeouts). A response starts at the first write
/// after the client last sent something.
struct WriteDeadline {
    inner: TcpStream,
    stalled: Option<Pin<Box<Sleep>>>,
    total: Duration,
    response: Option<Pin<Box<Sleep>>>,
}

impl WriteDeadline {
    fn new(inner: TcpStream, total: Duration) -> WriteDeadline {
        WriteDeadline { inner, stalled: None, total, response: None }
    }

    fn cut<T>(&self, why: String) -> Poll<io::Result<T>> {
        Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, why)))
    }

    /// Whether the response's total deadline has passed (and, if not, a
    /// wake-up registered for it).
    fn past_total(&mut self, cx: &mut Context<'_>) -> bool {
        let total = self.total;
        let response = self.response.get_or_insert_with(|| Box::pin(tokio::time::sleep(total)));
        response.as_mut().poll(cx).is_ready()
    }

    /// `Pending` from the stream: start or check the deadlines.
    fn pending<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        if self.past_total(cx) {
            return self.cut(format!("the response took longer than {} s to send", self.total.as_secs()));
        }
        let stalled = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(WRITE_TIMEOUT)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => self.cut(format!("the client read nothing for {} s", WRITE_TIMEOUT.as_secs())),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progress<T>(&mut self, cx: &mut Context<'_>, result: io::Result<T>) -> Poll<io::Result<T>> {
        self.stalled = None;
        if self.past_total(cx) {
            return self.cut(format!("the response took longer than {} s to send", self.total.as_secs()));
        }
        Poll::Ready(result)
    }
}

impl AsyncRead for WriteDeadline {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            // The client sent something: the next write answers a new request.
            self.response = None;
        }
        polled
    }
}

impl AsyncWrite for WriteDeadline {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, buf) {
            Poll::Ready(result) => self.progress(cx, result),
            Poll::Pending => self.pending(cx),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write_vectored(cx, bufs) {
            Poll::Ready(result) => self.progress(cx, result),
            Poll::Pending => self.pending(cx),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.inner).poll_flush(cx) {
            Poll::Ready(result) => self.progress(cx, result),
            Poll::Pending => self.pending(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.inner).poll_shutdown(cx) {
            Poll::Ready(result) => self.progress(cx, result),
            Poll::Pending => self.pending(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::time::Instant;

    /// A client that reads a little now and then makes progress at every
    /// write, so only the total deadline cuts it off.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slow_reader_is_cut_off_at_the_response_deadline() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop = Arc::clone(&done);
        let reader = std::thread::spawn(move || {
            let mut client = std::net::TcpStream::connect(addr).unwrap();
            let mut got = 0usize;
            let mut buf = [0u8; 512];
            // A byte or so now and then: far from the 30 s of no progress.
            while let (false, Ok(n @ 1..)) = (stop.load(std::sync::atomic::Ordering::Relaxed), client.read(&mut buf)) {
                got += n;
                std::thread::sleep(Duration::from_millis(10));
            }
            got
        });
        let (stream, _) = listener.accept().await.unwrap();
        let mut stream = WriteDeadline::new(stream, Duration::from_millis(800));
        let chunk = vec![b'x'; 64 * 1024];
        let started = Instant::now();
        let error = loop {
            match std::future::poll_fn(|cx| Pin::new(&mut stream).poll_write(cx, &chunk)).await {
                Ok(_) => assert!(started.elapsed() < Duration::from_secs(20), "never cut off"),
                Err(e) => break e,
            }
        };
        let cut = started.elapsed();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        drop(stream);
        let got = reader.join().unwrap();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut, "{error}");
        assert!(error.to_string().contains("took longer"), "{error}");
        assert!(cut >= Duration::from_millis(700) && cut < Duration::from_secs(5), "{cut:?}");
        assert!(got > 0, "the client was reading all along");
    }
}
