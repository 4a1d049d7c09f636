//! The cycles (docs/power-loss.md#a-cycle): a writer thread writes records
//! while this thread, at a random moment, runs the power-off; then the
//! power-on, the wait for the device to come back under its identity, and
//! the check of every block written this cycle and every block kept so far.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use storage_capacity::disk::AlignedBuf;
use storage_capacity::{Disk, Watch};
use storage_scoring::power_loss::Cycle;

use crate::judge::{self, Cost, Finding, Role};
use crate::record::{self, Header, Prints, RECORD_BYTES};
use crate::writer::{self, Plan, Written};

/// The device, as the engine reaches it: a box that can cross to the
/// writer thread.
pub type Device = Box<dyn Disk + Send>;

/// What switches the card's power and finds it again.
pub trait Host {
    /// Cuts the power (`--power-off`); returns when the command has.
    fn power_off(&mut self) -> Result<(), crate::Error>;
    /// Restores it (`--power-on`).
    fn power_on(&mut self) -> Result<(), crate::Error>;
    /// One look for the device: `Ok(None)` while it is not back, an error
    /// when it is back but may not be used (the last one is reported if
    /// the wait ends on it).
    fn find(&mut self) -> Result<Option<Device>, crate::Error>;
}

/// How a run goes.
#[derive(Debug, Clone)]
pub struct Options {
    pub cycles: u32,
    /// The cut comes at a random moment between a tenth of this and this,
    /// after the cycle's first write.
    pub cut_within: Duration,
    /// How long to wait for the device after a power-on.
    pub wait: Duration,
    /// The run id the records carry (random per run).
    pub run: [u8; 16],
}

/// What a block held when last seen.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(crate) enum Content {
    /// A record of this run, at its own address.
    Record(Header),
    /// Other bytes, by their sector prints.
    Other(Prints),
}

impl Content {
    fn prints(&self) -> Prints {
        match self {
            Content::Record(h) => record::prints(&record::encode(h)),
            Content::Other(p) => *p,
        }
    }
}

/// Every block written in the run: what it held when last seen, and
/// whether that is data the card has kept through a cut (checked on every
/// return from then on).
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(crate) struct Slot {
    content: Content,
    kept: bool,
}

/// Every block written in the run, by block number.
pub(crate) type Ledger = HashMap<u64, Slot>;

/// Runs `options.cycles` cycles on `disk`; returns the cycles measured (a
/// device that did not come back ends the run: its cycle is the last).
pub fn run(
    disk: Device,
    host: &mut dyn Host,
    options: &Options,
    watch: &dyn Watch,
) -> Result<Vec<Cycle>, crate::Error> {
    let mut disk = Some(disk);
    let mut ledger = Ledger::new();
    let mut cycles = Vec::new();
    let mut sequence = 0u64;
    let seed = u64::from_le_bytes(options.run[..8].try_into().unwrap_or_default());
    let mut rng = SmallRng::seed_from_u64(seed);
    for n in 1..=options.cycles {
        if let Some(signal) = watch.stop() {
            return Err(crate::Error::Interrupted(signal));
        }
        let Some(mut device) = disk.take() else { break };
        let blocks = device.size() / RECORD_BYTES as u64;
        if blocks < 2 {
            return Err(crate::Error::TooSmall(device.size()));
        }
        let plan = Plan {
            run: options.run,
            cycle: n,
            first_sequence: sequence,
            blocks,
            seed: rng.r#gen(),
            cap: (blocks / 2).min(1 << 22) as usize,
        };
        let low = options.cut_within.as_secs_f64() / 10.0;
        let delay = Duration::from_secs_f64(rng.gen_range(low..=options.cut_within.as_secs_f64().max(low)));
        watch.stage(&format!(
            "cycle {n}/{}: writing; the power goes off in {:.2} s",
            options.cycles,
            delay.as_secs_f64()
        ));

        let stop = AtomicBool::new(false);
        let known = |b: u64| ledger.contains_key(&b);
        let (log, off) = std::thread::scope(|s| {
            let (plan, known, stop) = (&plan, &known, &stop);
            let writer = s.spawn(move || {
                let log = writer::write(device.as_mut(), plan, known, stop, &mut writer::InMemory);
                drop(device);
                // Capped before the cut: idle until it, so that nothing
                // written after the cap goes unjudged.
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                log
            });
            std::thread::sleep(delay);
            let off = host.power_off();
            stop.store(true, Ordering::SeqCst);
            (writer.join(), off)
        });
        let log = log.map_err(|_| crate::Error::Io("the writer thread panicked".to_owned()))?;
        off?;
        sequence += log.writes.len() as u64 + 1;
        let written = log.writes.len() as u64;
        let acknowledged = log.writes.iter().filter(|w| w.acknowledged).count() as u64;
        watch.stage(&format!(
            "cycle {n}: {written} records written, {acknowledged} acknowledged{}; power on",
            log.error.as_ref().map(|e| format!(", then {e}")).unwrap_or_default()
        ));

        let on_at = Instant::now();
        host.power_on()?;
        let Some(back) = wait_for(host, options.wait, on_at)? else {
            watch.stage(&format!("cycle {n}: the device did not come back within {} s", options.wait.as_secs()));
            cycles.push(Cycle { cycle: n, written, acknowledged, ..Cycle::default() });
            break;
        };
        let back_after = on_at.elapsed().as_secs_f64();
        let mut back = back;
        let mut cycle = verify(back.as_mut(), &log.writes, &mut ledger, &options.run)?;
        cycle.cycle = n;
        cycle.written = written;
        cycle.acknowledged = acknowledged;
        cycle.returned = 1;
        cycle.back_after_s = Some((back_after * 1000.0).round() / 1000.0);
        watch.stage(&format!(
            "cycle {n}: back after {back_after:.1} s; lost {}, torn {}, misplaced {}, damaged {}",
            cycle.lost, cycle.torn, cycle.misplaced, cycle.damaged
        ));
        cycles.push(cycle);
        disk = Some(back);
    }
    Ok(cycles)
}

/// Polls for the device until `wait` has passed since `since`.
fn wait_for(host: &mut dyn Host, wait: Duration, since: Instant) -> Result<Option<Device>, crate::Error> {
    loop {
        let found = host.find();
        match found {
            Ok(Some(device)) => return Ok(Some(device)),
            Ok(None) if since.elapsed() >= wait => return Ok(None),
            Err(e) if since.elapsed() >= wait => return Err(e),
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// Reads back every block written this cycle and every block kept so far,
/// counts what each costs, and brings the ledger up to date.
pub(crate) fn verify(
    disk: &mut dyn Disk,
    writes: &[Written],
    ledger: &mut Ledger,
    run: &[u8; 16],
) -> Result<Cycle, crate::Error> {
    let now: HashMap<u64, &Written> = writes.iter().map(|w| (w.block, w)).collect();
    let mut blocks: Vec<u64> =
        now.keys().copied().chain(ledger.iter().filter(|(_, s)| s.kept).map(|(b, _)| *b)).collect();
    blocks.sort_unstable();
    blocks.dedup();
    let mut cycle = Cycle::default();
    let mut buf = AlignedBuf::new(RECORD_BYTES);
    for block in blocks {
        let address = block * RECORD_BYTES as u64;
        let (role, new, old) = match now.get(&block) {
            Some(w) => {
                let old = ledger.get(&block).map(|s| s.content).or(w.before.map(Content::Other));
                let role = if w.acknowledged { Role::Acknowledged } else { Role::Unacknowledged };
                (role, Content::Record(w.header), old)
            }
            None => match ledger.get(&block) {
                Some(slot) => (Role::Kept, slot.content, None),
                None => continue,
            },
        };
        let finding = match disk.read_at(address, buf.as_mut_slice()) {
            Ok(()) => judge::judge(buf.as_slice(), address, run, &new.prints(), old.map(|o| o.prints()).as_ref()),
            // Unreadable: neither what was written nor what was there.
            Err(_) => {
                buf.as_mut_slice().fill(0);
                Finding::Foreign
            }
        };
        match judge::count(role, finding) {
            Cost::None => {}
            Cost::Lost => cycle.lost += 1,
            Cost::Torn => cycle.torn += 1,
            Cost::Misplaced => cycle.misplaced += 1,
            Cost::Damaged => cycle.damaged += 1,
        }
        let slot = match (finding, old) {
            (Finding::Intact, _) => Slot { content: new, kept: true },
            (Finding::Old, Some(old)) if role != Role::Kept => {
                Slot { content: old, kept: matches!(old, Content::Record(_)) }
            }
            _ => Slot { content: Content::Other(record::prints(buf.as_slice())), kept: false },
        };
        ledger.insert(block, slot);
    }
    Ok(cycle)
}
