//! The scratch directory swapped mid-run, tried as a local attacker would
//! (docs/safety.md#scratch-files; docs/testing.md#as-an-attacker-would).
//!
//! A user owns the directory that root's `run` or `verify-capacity --files`
//! writes its scratch files in, and the directory above it. Once the card
//! has taken some of the writes, the user renames the directory and leaves
//! a link in its place to a root-only directory on another filesystem. The
//! old build looked the directory up again by path for every file, so the
//! later files, and their writes, went to that other filesystem, past the
//! free-space check. Each test measures what the other filesystem's device
//! was sent (its own I/O counters) and the most of it that was in use
//! during the run, and prints both figures.
//!
//! Each runs with `fs.protected_symlinks` at 0 and at 1: the link is in the
//! user's own directory, which the kernel's protection does not cover.

use storage_score_test_support as support;

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use support::attack::{ProtectedSymlinks, TestUser, command, expect_foiled, expect_vulnerable};
use support::*;

/// The card the run is pointed at, the other filesystem, and the user's
/// directory on the card.
struct Scene {
    card: Ext4,
    other: Ext4,
    /// `CARD/home` (the user's) and `CARD/home/work`, where root writes.
    home: PathBuf,
    work: PathBuf,
    /// `OTHER/secret`, root's own (0700).
    secret: PathBuf,
}

impl Scene {
    fn new(attacker: &TestUser, card_mib: u64, other_mib: u64) -> Scene {
        let card = Ext4::on(LoopDev::in_memory(card_mib), "rw");
        let other = Ext4::on(LoopDev::in_memory(other_mib), "rw");
        let home = Path::new(card.mount_point()).join("home");
        std::fs::create_dir(&home).expect("mkdir");
        nix::unistd::chown(&home, Some(attacker.uid.into()), Some(attacker.gid.into())).expect("chown");
        let work = home.join("work");
        let made = attacker.run("mkdir", &[work.to_str().expect("utf8")]);
        assert!(made.status.success(), "mkdir as the user");
        let secret = Path::new(other.mount_point()).join("secret");
        std::fs::create_dir(&secret).expect("mkdir");
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        // Nothing is pending on either filesystem before the counters are read.
        nix::unistd::sync();
        Scene { card, other, home, work, secret }
    }

    /// Bytes in use on the other filesystem.
    fn other_used(&self) -> u64 {
        let st = nix::sys::statvfs::statvfs(self.other.dir.path()).expect("statvfs");
        (st.blocks() - st.blocks_free()) as u64 * st.fragment_size() as u64
    }

    /// Bytes the other filesystem's device has been sent.
    fn other_written(&self) -> u64 {
        self.other.dev.sectors().1 * 512
    }
}

/// What the attack did to the other filesystem.
struct Figures {
    out: Output,
    /// Bytes its device was sent from the swap to the run's end (after a sync).
    written: u64,
    /// The most of it in use during the run, above what was in use before.
    peak_used: u64,
}

/// Starts `args`, waits for the card to take `after` bytes, swaps the
/// user's directory for a link to the other filesystem, and measures.
fn swap_mid_run(scene: &Scene, attacker: &TestUser, args: &[&str], after: u64) -> Figures {
    let (written_before, used_before) = (scene.other_written(), scene.other_used());
    let mut child: Child =
        command(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start storage-score");
    // Drained as it runs: a full pipe would stop it (profile's progress).
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        let mut pipe = pipe.expect("pipe");
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    scene.card.dev.wait_for_writes(after, &mut child, Duration::from_secs(120));
    let moved = scene.home.join("work.old");
    let renamed = attacker.run("mv", &["-T", scene.work.to_str().expect("utf8"), moved.to_str().expect("utf8")]);
    assert!(renamed.status.success(), "mv as the user: {}", String::from_utf8_lossy(&renamed.stderr));
    attacker.symlink(&scene.secret, &scene.work);
    let mut peak = used_before;
    let deadline = Instant::now() + Duration::from_secs(300);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the run did not end in 300 s");
        }
        peak = peak.max(scene.other_used());
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = Output { status, stdout: stdout.join().expect("stdout"), stderr: stderr.join().expect("stderr") };
    nix::unistd::sync();
    let figures =
        Figures { written: scene.other_written() - written_before, peak_used: peak.saturating_sub(used_before), out };
    eprintln!(
        "{}: exit {:?}; the other filesystem was sent {} KiB, and at most {} KiB more of it was in use\n--- stderr:\n{}",
        args.join(" "),
        figures.out.status.code(),
        figures.written >> 10,
        figures.peak_used >> 10,
        String::from_utf8_lossy(&figures.out.stderr)
    );
    figures
}

/// Less than this reaching the other filesystem is its own housekeeping
/// (a journal commit), not a test's writes, which come in MiB.
const NOISE: u64 = 1 << 20;

#[test]
#[ignore = "needs root: users, loop, ext4"]
fn run_sent_its_test_writes_to_a_directory_swapped_in_mid_run() {
    let _lock = device_lock();
    let attacker = TestUser::new("attacker");
    for protected in [0, 1] {
        let _sysctl = ProtectedSymlinks::set(protected);
        let scene = Scene::new(&attacker, 512, 256);
        let work = scene.work.to_str().expect("utf8").to_owned();
        let only = "seq_write_mb_s,rand_write_4k_qd64_iops,rand_read_4k_qd64_iops";
        let args = ["run", &work, "--profile", "quick", "--only", only, "--json"];
        let figures = swap_mid_run(&scene, &attacker, &args, 4 << 20);
        expect_foiled(
            figures.written > NOISE || figures.peak_used > NOISE,
            &format!(
                "run's test files went to the other filesystem: {} KiB sent, {} KiB in use (protected_symlinks={protected})",
                figures.written >> 10,
                figures.peak_used >> 10
            ),
        );
        if !expect_vulnerable() {
            assert_eq!(figures.out.status.code(), Some(0), "the run goes on in the directory it opened");
            let report = stdout_json(&figures.out);
            for key in only.split(',') {
                assert!(report["measurements"][key].is_number(), "{key} measured: {report}");
            }
            let left: Vec<_> = std::fs::read_dir(scene.home.join("work.old")).expect("list").collect();
            assert!(left.is_empty(), "nothing left behind in the directory");
        }
    }
}

#[test]
#[ignore = "needs root: users, loop, ext4"]
fn verify_capacity_files_filled_a_directory_swapped_in_mid_run() {
    let _lock = device_lock();
    let attacker = TestUser::new("attacker");
    for protected in [0, 1] {
        let _sysctl = ProtectedSymlinks::set(protected);
        // More than one 1 GiB scratch file's worth of free space, so that a
        // second file is made after the swap.
        let scene = Scene::new(&attacker, 1400, 192);
        let work = scene.work.to_str().expect("utf8").to_owned();
        let args = ["verify-capacity", &work, "--files", "--json"];
        let figures = swap_mid_run(&scene, &attacker, &args, 64 << 20);
        expect_foiled(
            figures.written > NOISE || figures.peak_used > NOISE,
            &format!(
                "verify-capacity --files filled the other filesystem: {} KiB sent, {} KiB in use (protected_symlinks={protected})",
                figures.written >> 10,
                figures.peak_used >> 10
            ),
        );
        if !expect_vulnerable() {
            assert_eq!(figures.out.status.code(), Some(0), "the check goes on in the directory it opened");
            let report = stdout_json(&figures.out);
            assert_eq!(report["verdict"], "genuine", "{report}");
            // All the card's free space but the reserve was tested, on the card.
            let tested = report["tested_bytes"].as_u64().expect("tested_bytes");
            assert!(tested > 1 << 30, "more than the first 1 GiB file was tested: {report}");
        }
    }
}
