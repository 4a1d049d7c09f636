//! Ctrl-C and SIGTERM: ask the running test to stop.
//!
//! The handler only stores the signal number. It is installed without
//! `SA_RESTART`, so a blocked `pread` or `io_uring_enter` returns EINTR and
//! the engine notices within one I/O.

use std::sync::atomic::{AtomicI32, Ordering};

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

static REQUESTED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    REQUESTED.store(signal, Ordering::SeqCst);
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP.
pub fn install() -> nix::Result<()> {
    let action = SigAction::new(SigHandler::Handler(on_signal), SaFlags::empty(), SigSet::empty());
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler is async-signal-safe (one atomic store).
        unsafe { sigaction(signal, &action) }?;
    }
    Ok(())
}

/// The signal that asked us to stop, if any.
pub fn requested() -> Option<&'static str> {
    match REQUESTED.load(Ordering::SeqCst) {
        0 => None,
        libc::SIGINT => Some("SIGINT (Ctrl-C)"),
        libc::SIGTERM => Some("SIGTERM"),
        libc::SIGHUP => Some("SIGHUP"),
        _ => Some("a signal"),
    }
}
