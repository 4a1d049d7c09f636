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
//! - A write that makes no progress for 30 s (a client that stopped
//!   reading, say in the middle of an export) closes the connection.
//! - On SIGTERM or SIGINT: stop accepting, let the requests under way
//!   finish (up to 30 s), return.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
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

/// Serves `router` on `listener` until `stop` ends.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    max_connections: usize,
    stop: impl Future<Output = ()>,
) -> Result<(), String> {
    let slots = Arc::new(Semaphore::new(max_connections));
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
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            // Answered and closed here and now: its descriptor is free
            // before the next accept.
            refuse(stream);
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
        let connection = graceful.watch(builder.serve_connection(TokioIo::new(WriteDeadline::new(stream)), service));
        tokio::spawn(async move {
            // An error here is the client's (a reset, a timeout, bad HTTP):
            // hyper has answered what it could.
            let _ = connection.await;
            drop(slot);
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(DRAIN_TIMEOUT) => eprintln!("stopping: requests still under way after {} s are cut", DRAIN_TIMEOUT.as_secs()),
    }
    Ok(())
}

/// The answer to a connection over the cap: 503, then close. One write
/// that never waits (a new socket's send buffer takes it whole).
fn refuse(stream: TcpStream) {
    let body = "{\"error\": \"connections: the server is at its limit of open connections; try again in a moment\"}";
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
/// [`WRITE_TIMEOUT`]; reads pass through (their deadlines are the header
/// and body timeouts).
struct WriteDeadline {
    inner: TcpStream,
    stalled: Option<Pin<Box<Sleep>>>,
}

impl WriteDeadline {
    fn new(inner: TcpStream) -> WriteDeadline {
        WriteDeadline { inner, stalled: None }
    }

    /// `Pending` from the stream: start or check the deadline.
    fn pending<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let stalled = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(WRITE_TIMEOUT)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client read nothing for {} s", WRITE_TIMEOUT.as_secs()),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progress<T>(&mut self, result: io::Result<T>) -> Poll<io::Result<T>> {
        self.stalled = None;
        Poll::Ready(result)
    }
}

impl AsyncRead for WriteDeadline {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for WriteDeadline {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, buf) {
            Poll::Ready(result) => self.progress(result),
            Poll::Pending => self.pending(cx),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write_vectored(cx, bufs) {
            Poll::Ready(result) => self.progress(result),
            Poll::Pending => self.pending(cx),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.inner).poll_flush(cx) {
            Poll::Ready(result) => self.progress(result),
            Poll::Pending => self.pending(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.inner).poll_shutdown(cx) {
            Poll::Ready(result) => self.progress(result),
            Poll::Pending => self.pending(cx),
        }
    }
}
