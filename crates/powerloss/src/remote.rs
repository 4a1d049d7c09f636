//! The two halves of a whole-machine cut (docs/power-loss.md#whole-machine-cuts),
//! as the machine with the card runs them: [`write`] one cycle, telling
//! the [`witness`](crate::witness) of every record and every flush, until
//! the power goes; after it is back, [`check`] what the card kept against
//! the witness's account, and commit the run's new state there.

use std::collections::HashMap;
use std::io::{self, BufReader};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use storage_capacity::{Disk, Watch};
use storage_scoring::power_loss::Cycle;

use crate::Error;
use crate::engine::{self, Ledger, Slot};
use crate::record::RECORD_BYTES;
use crate::witness::{self, Intent, Reply, Request};
use crate::writer::{self, Journal, Plan, Written};

/// A run as the witness keeps it between cycles: written by the checker,
/// read by the writer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunState {
    pub run: [u8; 16],
    /// The first sequence number of the next cycle.
    pub next_sequence: u64,
    /// Every cycle checked so far.
    pub cycles: Vec<Cycle>,
    /// What each block written in the run held when last seen.
    ledger: Vec<(u64, Slot)>,
}

/// A connection to the witness.
#[derive(Debug)]
pub struct Link {
    address: String,
    lines: BufReader<TcpStream>,
    out: TcpStream,
    last_sent: Instant,
}

impl Link {
    /// Connects to `address` (HOST:PORT), within 10 s.
    pub fn connect(address: &str) -> Result<Link, Error> {
        let unreachable = |e: io::Error| {
            Error::Witness(format!(
                "cannot reach the witness at {address}: {e}; start `storage-score power-loss witness --listen ADDR` on the other machine and give its address"
            ))
        };
        let target = address
            .to_socket_addrs()
            .map_err(unreachable)?
            .next()
            .ok_or_else(|| unreachable(io::Error::new(io::ErrorKind::NotFound, "the name has no address")))?;
        let stream = TcpStream::connect_timeout(&target, Duration::from_secs(10)).map_err(unreachable)?;
        stream.set_nodelay(true).map_err(unreachable)?;
        stream.set_read_timeout(Some(Duration::from_secs(60))).map_err(unreachable)?;
        let out = stream.try_clone().map_err(unreachable)?;
        Ok(Link { address: address.to_owned(), lines: BufReader::new(stream), out, last_sent: Instant::now() })
    }

    fn send(&mut self, request: &Request) -> io::Result<()> {
        self.last_sent = Instant::now();
        witness::send(&mut self.out, request)
    }

    /// A request that gets a reply; a refusal is the witness's own words.
    fn call(&mut self, request: &Request) -> Result<Reply, Error> {
        let address = self.address.clone();
        let lost = |e: io::Error| Error::Witness(format!("the witness at {address} stopped answering: {e}"));
        self.send(request).map_err(lost)?;
        let line = witness::read_line(&mut self.lines, witness::MAX_LINE)
            .map_err(lost)?
            .ok_or_else(|| lost(io::Error::new(io::ErrorKind::UnexpectedEof, "it closed the connection")))?;
        let reply: Reply = serde_json::from_slice(&line)
            .map_err(|e| Error::Witness(format!("{} is not a power-loss witness: {e}", self.address)))?;
        match reply.ok {
            true => Ok(reply),
            false => Err(Error::Witness(format!(
                "the witness at {} refused: {}",
                self.address,
                reply.error.as_deref().unwrap_or("no reason given")
            ))),
        }
    }
}

impl Journal for Link {
    fn about_to_write(&mut self, writes: &[Written]) -> io::Result<()> {
        let records =
            writes.iter().map(|w| Intent { block: w.block, sequence: w.header.sequence, before: w.before }).collect();
        self.send(&Request::Intent { records })
    }

    fn acknowledged(&mut self, through: u64) -> io::Result<()> {
        self.send(&Request::Ack { through })
    }
}

/// The witness's journal that also heeds Ctrl-C: a stop asked for fails
/// the next write before it is issued.
struct Heeding<'a> {
    link: &'a mut Link,
    watch: &'a dyn Watch,
}

impl Journal for Heeding<'_> {
    fn about_to_write(&mut self, writes: &[Written]) -> io::Result<()> {
        match self.watch.stop() {
            Some(signal) => Err(io::Error::new(io::ErrorKind::Interrupted, signal)),
            None => self.link.about_to_write(writes),
        }
    }

    fn acknowledged(&mut self, through: u64) -> io::Result<()> {
        self.link.acknowledged(through)
    }
}

/// Writes one cycle on `disk` (the card `device`, by its fingerprint) for
/// the witness behind `link`, and waits for the power to go. It returns
/// only when it cannot go on (an I/O error: the power is going; the
/// witness lost) or `watch` asks it to stop.
pub fn write(disk: &mut dyn Disk, link: &mut Link, device: &str, new: bool, watch: &dyn Watch) -> Result<(), Error> {
    let hello = link.call(&Request::Hello { device: device.to_owned() })?;
    let state = match (&hello.state, new) {
        (Some(state), false) => Some(decode(state)?),
        _ => None,
    };
    if hello.unchecked && !new {
        return Err(Error::Refused(format!(
            "the witness at {} holds a cycle on this card that was not checked: after the power cut, run `storage-score power-loss check DEV --witness {}` (or write --new to start a new run)",
            link.address, link.address
        )));
    }
    let state = state.unwrap_or_else(|| RunState {
        run: crate::fresh_run_id(),
        next_sequence: 0,
        cycles: Vec::new(),
        ledger: Vec::new(),
    });
    let encoded = serde_json::to_value(&state).map_err(|e| Error::Io(format!("cannot encode the run: {e}")))?;
    link.call(&Request::Open { device: device.to_owned(), state: encoded, new })?;
    let blocks = disk.size() / RECORD_BYTES as u64;
    if blocks < 2 {
        return Err(Error::TooSmall(disk.size()));
    }
    let cycle = state.cycles.len() as u32 + 1;
    let plan = Plan {
        run: state.run,
        cycle,
        first_sequence: state.next_sequence,
        blocks,
        seed: storage_capacity::stamp::fresh_nonce(),
        cap: (blocks / 2).min(1 << 22) as usize,
    };
    let known: HashMap<u64, ()> = state.ledger.iter().map(|(block, _)| (*block, ())).collect();
    watch.stage(&format!("cycle {cycle}: writing; cut the power of the whole machine whenever you like"));
    // The power cut ends this writer; Ctrl-C ends it through the journal.
    let never = AtomicBool::new(false);
    let mut journal = Heeding { link: &mut *link, watch };
    let log = writer::write(disk, &plan, &|b| known.contains_key(&b), &never, &mut journal);
    if let Some(signal) = watch.stop() {
        return Err(Error::Interrupted(signal));
    }
    if let Some(error) = log.error {
        return Err(Error::Io(format!("cycle {cycle}: {error}")));
    }
    let acknowledged = log.writes.iter().filter(|w| w.acknowledged).count();
    watch.stage(&format!(
        "cycle {cycle}: all {} records written ({acknowledged} acknowledged); waiting for the power cut",
        log.writes.len()
    ));
    loop {
        if let Some(signal) = watch.stop() {
            return Err(Error::Interrupted(signal));
        }
        if link.last_sent.elapsed() >= witness::IDLE / 4 {
            link.send(&Request::Alive)
                .map_err(|e| Error::Witness(format!("the witness at {} went away: {e}", link.address)))?;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Checks the card after the power came back against the witness's
/// account of the last cycle, commits the run's new state there, and
/// returns every cycle of the run so far.
pub fn check(disk: &mut dyn Disk, link: &mut Link, device: &str) -> Result<Vec<Cycle>, Error> {
    let fetched = link.call(&Request::Fetch { device: device.to_owned() })?;
    let Some(state) = &fetched.state else {
        return Err(Error::Usage(format!(
            "the witness at {} holds no run for this card: run `storage-score power-loss write DEV --witness {}` first, then cut the power",
            link.address, link.address
        )));
    };
    let mut state = decode(state)?;
    if !fetched.unchecked {
        return Err(Error::Usage(format!(
            "nothing was written on this card since its last check (cycle {}): run power-loss write again, then cut the power",
            state.cycles.len()
        )));
    }
    let cycle_no = state.cycles.len() as u32 + 1;
    let writes: Vec<Written> = fetched
        .intents
        .iter()
        .filter(|i| i.block < disk.size() / RECORD_BYTES as u64)
        .map(|i| Written {
            block: i.block,
            header: crate::record::Header {
                run: state.run,
                cycle: cycle_no,
                sequence: i.sequence,
                address: i.block * RECORD_BYTES as u64,
            },
            acknowledged: i.sequence < fetched.acked_through,
            before: i.before,
        })
        .collect();
    let mut ledger: Ledger = std::mem::take(&mut state.ledger).into_iter().collect();
    let mut cycle = engine::verify(disk, &writes, &mut ledger, &state.run)?;
    cycle.cycle = cycle_no;
    cycle.written = writes.len() as u64;
    cycle.acknowledged = writes.iter().filter(|w| w.acknowledged).count() as u64;
    cycle.returned = 1;
    state.next_sequence =
        writes.iter().map(|w| w.header.sequence.saturating_add(1)).max().unwrap_or(state.next_sequence);
    state.cycles.push(cycle);
    state.ledger = ledger.into_iter().collect();
    let encoded = serde_json::to_value(&state).map_err(|e| Error::Io(format!("cannot encode the run: {e}")))?;
    link.call(&Request::Commit { device: device.to_owned(), generation: fetched.generation, state: encoded })?;
    Ok(state.cycles)
}

fn decode(state: &serde_json::Value) -> Result<RunState, Error> {
    RunState::deserialize(state)
        .map_err(|e| Error::Witness(format!("the witness holds a run this tool cannot read: {e}")))
}
