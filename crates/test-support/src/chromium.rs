//! Headless Chromium for page tests: the DOM after loading a page
//! (`--dump-dom`) and a screenshot, each call one short-lived browser
//! process with its own empty profile, killed if it overruns; and [`Cdp`],
//! a browser driven over the DevTools protocol for layout checks at a
//! given viewport.
//!
//! The flags are the ones this machine needs (no sandbox as root, no GPU,
//! and no background connections, which the closed network would refuse).

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
    let profile = crate::temp_dir("ss-chromium");
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
        .arg(format!("--user-data-dir={}", profile.path().display()))
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
    drop(profile);
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

/// A headless Chromium driven over the DevTools protocol on a pipe
/// (`--remote-debugging-pipe`: commands on fd 3, answers on fd 4, each
/// message ended by a NUL byte), for what `--dump-dom` cannot tell: where
/// things are on the screen at a given viewport, and screenshots of a
/// phone-sized one. Killed, its profile removed, on drop.
pub struct Cdp {
    child: std::process::Child,
    to: std::fs::File,
    from: std::io::BufReader<std::fs::File>,
    next_id: u64,
    session: String,
    profile: PathBuf,
}

impl std::fmt::Debug for Cdp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cdp").finish_non_exhaustive()
    }
}

impl Cdp {
    /// A browser with one page of `width`×`height` CSS pixels (`mobile`:
    /// as a phone reports itself, with touch and the meta viewport honoured).
    pub fn launch(width: u32, height: u32, mobile: bool) -> Result<Cdp, String> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        use std::os::unix::process::CommandExt;
        let browser = binary().ok_or("chromium is not installed (apt-get install chromium)")?;
        let pipe = || -> Result<(OwnedFd, OwnedFd), String> {
            let mut fds = [0; 2];
            // SAFETY: pipe2 writes two descriptors into the array; we own them.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                return Err(format!("pipe: {}", std::io::Error::last_os_error()));
            }
            // SAFETY: both descriptors were just made and are owned here only.
            Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
        };
        let (commands_read, commands_write) = pipe()?;
        let (answers_read, answers_write) = pipe()?;
        let profile = crate::temp_dir("ss-cdp");
        let (child_in, child_out) = (commands_read.as_raw_fd(), answers_write.as_raw_fd());
        let mut command = Command::new(browser);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: between fork and exec only async-signal-safe fcntl and
        // dup2 run, putting the pipe ends at the descriptors Chromium reads
        // and writes (3 and 4). Each end is first copied above 9: a pipe end
        // that already is 3 or 4 would otherwise be clobbered by the other's
        // dup2, or keep its close-on-exec flag (dup2 onto itself changes
        // nothing), and Chromium would start without its pipe and exit.
        unsafe {
            command.pre_exec(move || {
                let (high_in, high_out) =
                    (libc::fcntl(child_in, libc::F_DUPFD, 10), libc::fcntl(child_out, libc::F_DUPFD, 10));
                if high_in < 0 || high_out < 0 || libc::dup2(high_in, 3) < 0 || libc::dup2(high_out, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().map_err(|e| format!("chromium: {e}"))?;
        drop(commands_read);
        drop(answers_write);
        let mut cdp = Cdp {
            child,
            to: std::fs::File::from(commands_write),
            from: std::io::BufReader::new(std::fs::File::from(answers_read)),
            next_id: 0,
            session: String::new(),
            // Removed by `Drop`, once the browser's helpers let go of it.
            profile: profile.keep(),
        };
        let target = cdp.call("Target.createTarget", serde_json::json!({"url": "about:blank"}), false)?;
        let target_id = target["targetId"].as_str().ok_or("no target id")?.to_owned();
        let attached =
            cdp.call("Target.attachToTarget", serde_json::json!({"targetId": target_id, "flatten": true}), false)?;
        cdp.session = attached["sessionId"].as_str().ok_or("no session id")?.to_owned();
        cdp.call("Page.enable", serde_json::json!({}), true)?;
        cdp.call(
            "Emulation.setDeviceMetricsOverride",
            serde_json::json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}),
            true,
        )?;
        Ok(cdp)
    }

    /// Sends one command and waits for its answer (events in between are
    /// skipped).
    fn call(&mut self, method: &str, params: serde_json::Value, on_page: bool) -> Result<serde_json::Value, String> {
        use std::io::{BufRead, Write};
        self.next_id += 1;
        let id = self.next_id;
        let mut message = serde_json::json!({"id": id, "method": method, "params": params});
        if on_page {
            message["sessionId"] = serde_json::json!(self.session);
        }
        let mut bytes = message.to_string().into_bytes();
        bytes.push(0);
        self.to.write_all(&bytes).map_err(|e| format!("{method}: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if Instant::now() > deadline {
                return Err(format!("{method}: no answer within 60 s"));
            }
            let mut raw = Vec::new();
            let n = self.from.read_until(0, &mut raw).map_err(|e| format!("{method}: {e}"))?;
            if n == 0 {
                return Err(format!("{method}: the browser closed the pipe"));
            }
            raw.pop();
            let answer: serde_json::Value = serde_json::from_slice(&raw).map_err(|e| format!("{method}: {e}"))?;
            if answer["id"] == id {
                if let Some(error) = answer.get("error") {
                    return Err(format!("{method}: {error}"));
                }
                return Ok(answer["result"].clone());
            }
        }
    }

    /// Loads `url` and waits until the page in the tab is that URL's,
    /// loaded.
    ///
    /// Not the first `Page.loadEventFired` after the command: on a loaded
    /// host the load event of the tab's `about:blank`, or of the page
    /// before, can arrive after `Page.navigate` was sent, and a screenshot
    /// taken then shows the wrong page. The page's own `location` and
    /// `readyState` say which page has loaded.
    pub fn navigate(&mut self, url: &str) -> Result<(), String> {
        self.call("Page.navigate", serde_json::json!({"url": url}), true)?;
        let wanted = serde_json::Value::String(url.to_owned());
        let check = format!("document.readyState === 'complete' && location.href === new URL({wanted}).href");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            // Between documents the context may be gone for a moment: an
            // error then means "not yet".
            if self.eval(&check).is_ok_and(|done| done == serde_json::Value::Bool(true)) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("{url}: not loaded within 60 s"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The value of a JavaScript expression in the page (DevTools runs it
    /// whatever the page's Content-Security-Policy says).
    pub fn eval(&mut self, expression: &str) -> Result<serde_json::Value, String> {
        let result =
            self.call("Runtime.evaluate", serde_json::json!({"expression": expression, "returnByValue": true}), true)?;
        if let Some(exception) = result.get("exceptionDetails") {
            return Err(format!("{expression}: {exception}"));
        }
        Ok(result["result"]["value"].clone())
    }

    /// A PNG of the viewport (`full`: of the whole page).
    pub fn screenshot(&mut self, path: &Path, full: bool) -> Result<(), String> {
        let shot = self.call(
            "Page.captureScreenshot",
            serde_json::json!({"format": "png", "captureBeyondViewport": full}),
            true,
        )?;
        let data = shot["data"].as_str().ok_or("no screenshot data")?;
        std::fs::write(path, base64_decode(data)?).map_err(|e| format!("{}: {e}", path.display()))
    }
}

impl Drop for Cdp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The browser's helper processes outlive it for a moment and may
        // still write into the profile: try again until it stays gone.
        for _ in 0..20 {
            let _ = std::fs::remove_dir_all(&self.profile);
            std::thread::sleep(Duration::from_millis(100));
            if !self.profile.exists() {
                break;
            }
        }
    }
}

/// Standard base64 (RFC 4648) without line breaks, as DevTools sends it.
fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let value = |c: u8| -> Result<u32, String> {
        Ok(match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err(format!("not base64: {:?}", char::from(c))),
        })
    };
    let bytes: Vec<u8> = text.bytes().filter(|b| *b != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= value(*c)? << (18 - 6 * i);
        }
        out.push((n >> 16) as u8);
        if chunk.len() > 2 {
            out.push((n >> 8) as u8);
        }
        if chunk.len() > 3 {
            out.push(n as u8);
        }
    }
    Ok(out)
}
