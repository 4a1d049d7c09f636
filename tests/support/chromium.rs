//! Headless Chromium for page tests: the DOM after loading a page
//! (`--dump-dom`) and a screenshot. Each call is one short-lived browser
//! process with its own empty profile, killed if it overruns.
//!
//! The flags are the ones this machine needs (no sandbox as root, no GPU,
//! and no background connections, which the closed network would refuse).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The browser binary, if installed.
pub fn binary() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

fn run(extra: &[String], url: &str) -> Result<String, String> {
    let browser = binary().ok_or("chromium is not installed (apt-get install chromium; cargo xtask test does it)")?;
    let profile = std::env::temp_dir().join(format!(
        "ss-chromium-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    ));
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("chromium: {e}"))?;
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut text);
        text
    });
    let start = Instant::now();
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break Some(status);
        }
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = reader.join().unwrap_or_default();
    let _ = std::fs::remove_dir_all(&profile);
    match status {
        Some(s) if s.success() => Ok(text),
        Some(s) => Err(format!("chromium exited with {s}")),
        None => Err("chromium did not finish within 90 s".into()),
    }
}

/// The DOM of `url` after it loaded, serialized.
pub fn dump_dom(url: &str) -> Result<String, String> {
    run(&["--dump-dom".into()], url)
}

/// A PNG screenshot of `url`, `width`×`height` pixels.
pub fn screenshot(url: &str, path: &Path, width: u32, height: u32) -> Result<(), String> {
    run(&[format!("--screenshot={}", path.display()), format!("--window-size={width},{height}")], url)?;
    if path.exists() { Ok(()) } else { Err(format!("no screenshot at {}", path.display())) }
}
