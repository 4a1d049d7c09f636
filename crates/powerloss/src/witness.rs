//! The witness (docs/power-loss.md#whole-machine-cuts): when the whole
//! machine loses its power, nothing it remembers survives, so another
//! machine keeps the account, as diskchecker.pl's server does. The writer
//! tells the witness of every record before it is issued and of every
//! flush that returned; after the power comes back, the checker fetches
//! that account, judges the card by it, and commits the run's new state.
//!
//! The protocol is one JSON object per line over TCP ([`Request`], and a
//! [`Reply`] to every request but `intent`, `ack` and `alive`). The witness
//! keeps each run in memory, keyed by the card's fingerprint; the run's
//! state (its cycles and the ledger of what each block holds) is the
//! checker's to write and is stored as it was given.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::record::Prints;

/// The longest line a witness reads: a run's state holds a ledger entry
/// for every block ever written (about 200 bytes each).
pub const MAX_LINE: usize = 256 << 20;
/// Most records one cycle may announce.
const MAX_INTENTS: usize = 1 << 24;
/// Most runs (cards) one witness keeps.
const MAX_RUNS: usize = 1024;
/// Most connections at once.
const MAX_CONNECTIONS: usize = 64;
/// A connection silent this long is dropped: the writer of a machine whose
/// power was cut never closes its side.
pub const IDLE: Duration = Duration::from_secs(120);

/// One record the writer is about to write.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Intent {
    pub block: u64,
    pub sequence: u64,
    /// What the block held before, on its first write in the run.
    pub before: Option<Prints>,
}

/// What a client asks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Request {
    /// What does the witness hold for this card?
    Hello { device: String },
    /// A writer begins a cycle of this run (`new` replaces a run not
    /// checked yet); the connection is its writer from now on.
    Open { device: String, state: serde_json::Value, new: bool },
    /// Records about to be written (no reply).
    Intent { records: Vec<Intent> },
    /// A flush returned: every record with a lower sequence is kept (no
    /// reply).
    Ack { through: u64 },
    /// The writer is still there (no reply).
    Alive,
    /// The checker takes the account of the cycle; writers of this run
    /// that are still connected are not heard any more.
    Fetch { device: String },
    /// The checker's new state of the run, for the account of `generation`.
    Commit { device: String, generation: u64, state: serde_json::Value },
}

/// The witness's answer.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Reply {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The run's state as last committed (or opened); null for no run.
    #[serde(default)]
    pub state: Option<serde_json::Value>,
    /// A cycle was opened and not checked yet.
    #[serde(default)]
    pub unchecked: bool,
    #[serde(default)]
    pub generation: u64,
    /// Fetch: the records announced this cycle.
    #[serde(default)]
    pub intents: Vec<Intent>,
    /// Fetch: every record below this sequence is acknowledged.
    #[serde(default)]
    pub acked_through: u64,
}

impl Reply {
    fn refuse(why: impl Into<String>) -> Reply {
        Reply { ok: false, error: Some(why.into()), ..Reply::default() }
    }
}

/// One card's run, as the witness holds it.
#[derive(Debug, Default)]
struct Run {
    state: Option<serde_json::Value>,
    unchecked: bool,
    /// Bumped by every open and fetch: a writer's records count only
    /// while its generation is current.
    generation: u64,
    intents: Vec<Intent>,
    acked_through: u64,
}

/// Every run this witness holds.
#[derive(Debug, Default)]
pub struct Witness {
    runs: Mutex<HashMap<String, Run>>,
}

/// The run a connection writes for, once it has opened one.
#[derive(Debug)]
struct Writer {
    device: String,
    generation: u64,
}

/// What the witness knows of one connection.
#[derive(Debug, Default)]
pub struct Session {
    writer: Option<Writer>,
}

impl Witness {
    /// Serves `listener` until `stop()` says so (polled every 100 ms).
    pub fn serve(self: &Arc<Self>, listener: &TcpListener, stop: &dyn Fn() -> bool) -> io::Result<()> {
        listener.set_nonblocking(true)?;
        let open = Arc::new(AtomicUsize::new(0));
        while !stop() {
            match listener.accept() {
                Ok((stream, _)) => {
                    stream.set_nonblocking(false)?;
                    if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                        open.fetch_sub(1, Ordering::SeqCst);
                        let mut stream = stream;
                        let _ = send(&mut stream, &Reply::refuse("too many connections; try again later"));
                        continue;
                    }
                    let (witness, open) = (Arc::clone(self), Arc::clone(&open));
                    std::thread::spawn(move || {
                        let _ = witness.connection(stream);
                        open.fetch_sub(1, Ordering::SeqCst);
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(100)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// One client, line by line, until it closes, errs or falls silent.
    fn connection(&self, stream: TcpStream) -> io::Result<()> {
        stream.set_read_timeout(Some(IDLE))?;
        stream.set_nodelay(true)?;
        let mut out = stream.try_clone()?;
        let mut lines = BufReader::new(stream);
        let mut session = Session::default();
        while let Some(line) = read_line(&mut lines, MAX_LINE)? {
            let (reply, go_on) = self.take_line(&line, &mut session);
            if let Some(reply) = reply {
                send(&mut out, &reply)?;
            }
            if !go_on {
                break;
            }
        }
        Ok(())
    }

    /// One line of a connection: the reply, if it gets one, and whether
    /// the connection goes on (not after a line that is no request).
    pub fn take_line(&self, line: &[u8], session: &mut Session) -> (Option<Reply>, bool) {
        match serde_json::from_slice::<Request>(line) {
            Ok(request) => (self.handle(request, &mut session.writer), true),
            Err(e) => (Some(Reply::refuse(format!("not a power-loss witness request: {e}"))), false),
        }
    }

    /// Does what `request` asks; the reply, for the requests that get one.
    fn handle(&self, request: Request, writer: &mut Option<Writer>) -> Option<Reply> {
        let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        match request {
            Request::Hello { device } => Some(match runs.get(&device) {
                Some(run) => Reply {
                    ok: true,
                    state: run.state.clone(),
                    unchecked: run.unchecked,
                    generation: run.generation,
                    ..Reply::default()
                },
                None => Reply { ok: true, ..Reply::default() },
            }),
            Request::Open { device, state, new } => {
                if !runs.contains_key(&device) && runs.len() >= MAX_RUNS {
                    return Some(Reply::refuse(format!("this witness holds {MAX_RUNS} runs already; restart it")));
                }
                let run = runs.entry(device.clone()).or_default();
                if run.unchecked && !new {
                    return Some(Reply::refuse(
                        "the last cycle on this card was written and not checked yet: run power-loss check first (or write --new to start over)",
                    ));
                }
                run.generation += 1;
                run.state = Some(state);
                run.unchecked = true;
                run.intents.clear();
                run.acked_through = 0;
                *writer = Some(Writer { device, generation: run.generation });
                Some(Reply { ok: true, generation: run.generation, ..Reply::default() })
            }
            Request::Intent { records } => {
                if let Some(run) = current(&mut runs, writer) {
                    let room = MAX_INTENTS.saturating_sub(run.intents.len());
                    run.intents.extend(records.into_iter().take(room));
                }
                None
            }
            Request::Ack { through } => {
                if let Some(run) = current(&mut runs, writer) {
                    run.acked_through = run.acked_through.max(through);
                }
                None
            }
            Request::Alive => None,
            Request::Fetch { device } => Some(match runs.get_mut(&device) {
                Some(run) => {
                    run.generation += 1;
                    Reply {
                        ok: true,
                        state: run.state.clone(),
                        unchecked: run.unchecked,
                        generation: run.generation,
                        intents: run.intents.clone(),
                        acked_through: run.acked_through,
                        ..Reply::default()
                    }
                }
                None => Reply { ok: true, ..Reply::default() },
            }),
            Request::Commit { device, generation, state } => Some(match runs.get_mut(&device) {
                Some(run) if run.generation == generation => {
                    run.state = Some(state);
                    run.unchecked = false;
                    run.intents = Vec::new();
                    run.acked_through = 0;
                    Reply { ok: true, generation, ..Reply::default() }
                }
                _ => Reply::refuse("a writer opened this card's run while it was being checked; check again"),
            }),
        }
    }
}

/// The run `writer` writes for, while its generation is current.
fn current<'a>(runs: &'a mut HashMap<String, Run>, writer: &Option<Writer>) -> Option<&'a mut Run> {
    let writer = writer.as_ref()?;
    runs.get_mut(&writer.device).filter(|run| run.generation == writer.generation)
}

/// One line without its newline; `None` at the end of the stream (a
/// half-written last line is dropped: the power went while it was sent).
pub fn read_line(from: &mut impl BufRead, max: usize) -> io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    from.by_ref().take(max as u64 + 1).read_until(b'\n', &mut line)?;
    match line.last() {
        Some(b'\n') => {
            line.pop();
            Ok(Some(line))
        }
        _ if line.len() > max => {
            Err(io::Error::new(io::ErrorKind::InvalidData, format!("a line longer than {max} bytes")))
        }
        _ => Ok(None),
    }
}

/// `value` as one line.
pub fn send(to: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    let mut line = serde_json::to_vec(value).map_err(io::Error::other)?;
    line.push(b'\n');
    to.write_all(&line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    fn open(w: &Witness, device: &str, new: bool, writer: &mut Option<Writer>) -> Reply {
        let state = serde_json::json!({"cycles": []});
        w.handle(Request::Open { device: device.into(), state, new }, writer).expect("a reply")
    }

    #[test]
    fn a_writer_cut_off_by_a_check_is_not_heard_any_more() {
        let w = Witness::default();
        let mut writer = None;
        assert!(open(&w, "card", false, &mut writer).ok);
        let intent = |sequence| Intent { block: sequence, sequence, before: None };
        w.handle(Request::Intent { records: vec![intent(0), intent(1)] }, &mut writer);
        w.handle(Request::Ack { through: 1 }, &mut writer);
        let fetched = w.handle(Request::Fetch { device: "card".into() }, &mut None).expect("a reply");
        assert_eq!((fetched.intents.len(), fetched.acked_through, fetched.unchecked), (2, 1, true));
        // The old connection, half open since the cut, says more: ignored.
        w.handle(Request::Intent { records: vec![intent(2)] }, &mut writer);
        w.handle(Request::Ack { through: 3 }, &mut writer);
        let again = w.handle(Request::Fetch { device: "card".into() }, &mut None).expect("a reply");
        assert_eq!((again.intents.len(), again.acked_through), (2, 1));
        // The commit of the older fetch is refused; the newer one's taken.
        let state = serde_json::json!({"checked": 1});
        let stale = Request::Commit { device: "card".into(), generation: fetched.generation, state: state.clone() };
        assert!(!w.handle(stale, &mut None).expect("a reply").ok);
        let fresh = Request::Commit { device: "card".into(), generation: again.generation, state };
        assert!(w.handle(fresh, &mut None).expect("a reply").ok);
        let hello = w.handle(Request::Hello { device: "card".into() }, &mut None).expect("a reply");
        assert_eq!((hello.unchecked, hello.state), (false, Some(serde_json::json!({"checked": 1}))));
    }

    #[test]
    fn a_cycle_not_checked_refuses_the_next_writer_unless_new() {
        let w = Witness::default();
        assert!(open(&w, "card", false, &mut None).ok);
        let refused = open(&w, "card", false, &mut None);
        assert!(!refused.ok && refused.error.is_some_and(|e| e.contains("power-loss check")));
        assert!(open(&w, "card", true, &mut None).ok);
        assert!(open(&w, "other card", false, &mut None).ok);
    }

    #[test]
    fn lines_are_capped_and_a_torn_last_line_is_dropped() {
        let mut two = io::Cursor::new(b"{\"op\":\"alive\"}\n{\"op\":\"al".to_vec());
        assert_eq!(read_line(&mut two, 64).expect("read").as_deref(), Some(&b"{\"op\":\"alive\"}"[..]));
        assert_eq!(read_line(&mut two, 64).expect("read"), None);
        let mut long = io::Cursor::new(vec![b'x'; 100]);
        assert!(read_line(&mut long, 64).is_err());
    }

    proptest::proptest! {
        /// Any lines, JSON-shaped or not: never a panic, and a line that
        /// is no request ends the connection with a refusal.
        #[test]
        fn any_lines_are_answered_or_refused(lines in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::collection::vec(proptest::num::u8::ANY, 0..64),
                "\\{\"op\":\"(hello|open|intent|ack|alive|fetch|commit)\"[ -~]{0,60}\\}".prop_map(String::into_bytes),
            ],
            0..12,
        )) {
            let (w, mut session) = (Witness::default(), Session::default());
            for line in lines {
                let (reply, go_on) = w.take_line(&line, &mut session);
                if !go_on {
                    proptest::prop_assert!(reply.is_some_and(|r| !r.ok));
                    break;
                }
            }
        }
    }

    #[test]
    fn hostile_lines_are_refused_not_panicked_on() {
        for line in [&b"\xff\xfe"[..], b"[]", b"{\"op\":\"intent\",\"records\":[{\"block\":-1}]}", b"{\"op\":\"nope\"}"]
        {
            assert!(serde_json::from_slice::<Request>(line).is_err(), "{line:?}");
        }
    }
}
