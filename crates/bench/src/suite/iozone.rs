//! The iozone-like tests, as Storage.sh runs them: `iozone -a -e -I -i 0
//! -i 1 -i 2 -s 80M -r 4k`, one new 80 MiB file, O_DIRECT (`-I`), 4 KiB
//! records, one at a time, and the `fsync` inside the timing (`-e`).
//!
//! iozone's order on that file (iozone.c 3.471: `write_perf_test`,
//! `read_perf_test`, `random_perf_test`), each pass of which is reproduced:
//!
//! | pass | file state it meets | figure |
//! |---|---|---|
//! | write | new and empty (truncated, unlinked, created, fsynced): each write extends it and allocates blocks | `seq_write_4k_qd1_kib_s` |
//! | rewrite | written once | (not scored) |
//! | read | written twice, in order | `seq_read_4k_qd1_kib_s` |
//! | reread | the same | (not scored) |
//! | random read | the same; every record once, in a shuffled order | `rand_read_4k_qd1_kib_s` |
//! | random write | the same; the same order | `rand_write_4k_qd1_kib_s` |
//!
//! Passes run up to the last selected figure (a random read needs the file
//! that write, rewrite and read left behind); the others are not timed.
//! KiB/s truncate as iozone prints them ([`super::iozone_kib_s`]).

use std::fs::File;
use std::os::fd::AsFd;
use storage_scoring::figure::Figure;

use super::fio::shuffled;
use super::{Eta, Measured, Runner, Watched, Window, cycled, detail, iozone_kib_s};
use crate::devstat::{DevStat, Direction};
use crate::engine::{self, Data, EngineError, Workload};
use crate::{filestate, scratch};

const BLOCK: u64 = 4096;

/// One pass of iozone's sequence.
struct Pass {
    figure: Option<Figure>,
    write: bool,
    random: bool,
}

/// The reread pass's place in [`PASSES`].
const REREAD: usize = 3;

const PASSES: [Pass; 6] = [
    Pass { figure: Some(Figure::SeqWrite4kQd1), write: true, random: false },
    Pass { figure: None, write: true, random: false },
    Pass { figure: Some(Figure::SeqRead4kQd1), write: false, random: false },
    Pass { figure: None, write: false, random: false },
    Pass { figure: Some(Figure::RandRead4kQd1), write: false, random: true },
    Pass { figure: Some(Figure::RandWrite4kQd1), write: true, random: true },
];

pub(super) fn run(
    runner: &mut Runner<'_>,
    file: &File,
    base: u64,
    stat: Option<&DevStat>,
) -> Result<(), crate::suite::RunError> {
    let setup = |source| crate::suite::RunError::Engine { key: "iozone setup".to_owned(), source };
    let raw = base > 0;
    // iozone fsyncs the new, empty file before its timer starts.
    file.sync_all().map_err(|source| setup(EngineError::Call { op: "fsync", source }))?;
    scratch::set_direct(file, true).map_err(|source| setup(EngineError::Call { op: "fcntl(O_DIRECT)", source }))?;
    let steady = runner.sizes.steady.is_some();
    // Records in the file: all of it in compat; in quick, the write pass
    // ends when its figure settles, and the file is what it wrote.
    let mut records = runner.sizes.test_file_bytes / BLOCK;
    let last = PASSES.iter().rposition(|p| p.figure.is_some_and(|f| runner.plan.wants(f))).unwrap_or(0);
    for (i, pass) in PASSES.iter().enumerate().take(last + 1) {
        let timed = pass.figure.filter(|&f| runner.plan.wants(f));
        if runner.time_is_up() {
            return Ok(());
        }
        // The reread changes nothing an O_DIRECT read meets, so the quick
        // profile spares its time.
        if steady && i == REREAD {
            continue;
        }
        let sequential = || (0..records).map(|b| base + b * BLOCK).collect::<Vec<u64>>();
        let offsets = match (i, pass.random) {
            // The write pass makes the file; it cannot go round it.
            (0, _) => sequential(),
            (_, false) if timed.is_some() => cycled(sequential(), steady),
            (_, false) => sequential(),
            (_, true) => cycled(shuffled(base, records * BLOCK), steady),
        };
        let offsets = &offsets;
        let ctx = runner.ctx();
        let key = timed.map_or("iozone (untimed pass)", Figure::key);
        if timed.is_some() {
            ctx.observer.started(key, offsets.len() as u64);
        }
        let mut work =
            Workload::new(file.as_fd(), offsets, BLOCK as usize, pass.write, Data::Random(0x5eed_0003 + i as u64));
        work.deadline = ctx.deadline;
        let eta = Eta::new(key, ctx.observer, offsets.len() as u64, "4 KiB records");
        let mut state = if raw { None } else { filestate::observe(file, i == 0) };
        let window = Window::open(stat);
        let watched = if timed.is_some() { Watched::start(ctx.sizes.steady) } else { None };
        work.enough = watched.as_ref().map(|w| &w.enough);
        work.ramp = watched.as_ref().map_or(std::time::Duration::ZERO, Watched::ramp);
        let measured = engine::run_sync(&work, &|n| {
            if timed.is_some() {
                ctx.observer.progress(n);
                match &watched {
                    Some(watched) => watched.progress(n),
                    None => eta.update(n),
                }
            }
        })
        .and_then(|done| {
            let mut elapsed = done.elapsed;
            if pass.write {
                // -e: the fsync after the writes is inside the timing.
                let t = std::time::Instant::now();
                file.sync_all().map_err(|source| EngineError::Call { op: "fsync", source })?;
                elapsed += t.elapsed();
            }
            let mut detail = detail(&done, elapsed);
            window.close(&mut detail, if pass.write { Direction::Write } else { Direction::Read });
            if let Some(watched) = &watched {
                watched.judge(&mut detail);
            }
            filestate::finish(&mut state, file);
            detail.file_state = state;
            Ok(Measured { value: iozone_kib_s(done.recorder.bytes, elapsed), detail })
        });
        if i == 0 {
            if let Ok(m) = &measured {
                records = m.detail.ios.max(1);
            }
        }
        match timed {
            Some(figure) => runner.record(figure, measured)?,
            None => {
                let done = measured.map_err(|source| crate::suite::RunError::Engine { key: key.to_owned(), source })?;
                if done.detail.partial {
                    runner.time_is_up();
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}
