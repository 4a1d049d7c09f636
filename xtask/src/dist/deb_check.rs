//! `cargo xtask deb-check`: the .deb packages of `target/dist` for this
//! machine's architecture, installed, used and removed on this machine.
//!
//! - `storage-score`: `dpkg -i`; the installed binary's `--version`; `man
//!   storage-score` shows the generated page (with its EXIT STATUS section);
//!   bash, with Debian's bash-completion, loads the completion on demand and
//!   completes a subcommand's options; the zsh and fish files are in place.
//! - `storage-score-leaderboard` (when it was built): `dpkg -i`; the unit
//!   and the defaults file (mode 600) are installed. Where systemd runs, the
//!   service must be active and answer. Without systemd (a container), the
//!   unit's own `ExecStart` runs as systemd would run it: its `Environment=`
//!   and `EnvironmentFile=`, `${VAR}` and `%S` expanded, in its
//!   `WorkingDirectory`, as an unprivileged uid from systemd's DynamicUser
//!   range that owns `/var/lib/<StateDirectory>`, under `setpriv`. Two
//!   differences: the port is 0, so that it cannot collide with a server
//!   already on 8080; and the directory is not behind systemd's
//!   `/var/lib/private` (that needs the unit's own mount namespace). It must print `listening on`, serve `/`, accept a
//!   report (201), keep its SQLite file in the state directory and exit 0
//!   on SIGTERM.
//! - Both are purged at the end, on every path, and must leave no file of
//!   theirs behind (the leaderboard's state directory, user data, is kept by
//!   the package and removed here only because this run made it).

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use xtask::check::Check;
use xtask::host::{apt_get, is_root, which, workspace_and_target};

const CLI: &str = "storage-score";
const SERVER: &str = "storage-score-leaderboard";
/// The first uid of systemd's DynamicUser range (61184–65519).
const DYNAMIC_UID: u32 = 61184;

pub fn main(args: &[String]) -> ExitCode {
    if let Some(arg) = args.first() {
        eprintln!("xtask deb-check: unknown argument {arg}; it takes none");
        return ExitCode::from(2);
    }
    let mut checks = Vec::new();
    let mut skipped = 0;
    let result = run(&mut checks, &mut skipped);
    for check in &checks {
        println!("{check}");
    }
    let failed = checks.iter().filter(|c| !c.passed).count();
    match result {
        Ok(()) => {
            println!("deb-check: {} passed, {failed} failed, {skipped} skipped", checks.len() - failed);
            if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
        Err(e) => {
            println!("FAIL deb-check stopped: {e:#}");
            println!("deb-check: {} passed, {} failed, {skipped} skipped", checks.len() - failed, failed + 1);
            ExitCode::FAILURE
        }
    }
}

/// Purges the packages it holds when dropped, whatever happened before.
#[derive(Debug, Default)]
struct Installed(Vec<&'static str>);

impl Drop for Installed {
    fn drop(&mut self) {
        if !self.0.is_empty() {
            let _ = Command::new("dpkg").arg("--purge").args(&self.0).stdout(Stdio::null()).status();
        }
    }
}

fn run(checks: &mut Vec<Check>, skipped: &mut usize) -> Result<()> {
    if !is_root() {
        bail!("deb-check installs packages: run it as root");
    }
    let (_, target_dir) = workspace_and_target()?;
    let dist = target_dir.join("dist");
    let arch = command_stdout(Command::new("dpkg").arg("--print-architecture"))?;
    let cli_deb = find_deb(&dist, CLI, &arch)
        .with_context(|| format!("no {CLI}_*_{arch}.deb in {}: run `cargo xtask dist` first", dist.display()))?;
    let server_deb = find_deb(&dist, SERVER, &arch);
    for package in [CLI, SERVER] {
        if is_installed(package) {
            bail!("{package} is already installed here; remove it first (`dpkg --purge {package}`)");
        }
    }
    ensure_tools()?;

    let mut installed = Installed::default();
    installed.0.push(CLI);
    let out = Command::new("dpkg").arg("-i").arg(&cli_deb).output()?;
    checks.push(Check::new(format!("dpkg -i {}", file_name(&cli_deb)), out.status.success(), last_line(&out.stdout)));
    if !out.status.success() {
        bail!("dpkg -i failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    cli_checks(checks)?;
    let cli_files = package_files(CLI)?;

    let mut server_files = Vec::new();
    let mut state_dir = None;
    if let Some(deb) = &server_deb {
        installed.0.push(SERVER);
        let out = Command::new("dpkg").arg("-i").arg(deb).output()?;
        checks.push(Check::new(format!("dpkg -i {}", file_name(deb)), out.status.success(), last_line(&out.stdout)));
        if !out.status.success() {
            bail!("dpkg -i failed: {}", String::from_utf8_lossy(&out.stderr).trim());
        }
        server_files = package_files(SERVER)?;
        state_dir = server_checks(checks)?;
    } else {
        *skipped += 1;
        println!("deb-check: skipped {SERVER}: no .deb (the workspace has no {SERVER} package yet)");
    }

    let purge = Command::new("dpkg").arg("--purge").args(&installed.0).output()?;
    installed.0.clear();
    let left: Vec<String> = cli_files
        .iter()
        .chain(&server_files)
        .filter(|p| p.is_file() || p.is_symlink())
        .map(|p| p.display().to_string())
        .collect();
    checks.push(Check::new(
        "dpkg --purge leaves none of the packages' files",
        purge.status.success() && left.is_empty() && !is_installed(CLI) && !is_installed(SERVER),
        if left.is_empty() {
            format!("{} files gone", cli_files.len() + server_files.len())
        } else {
            format!("left behind: {}", left.join(" "))
        },
    ));
    if let Some(dir) = state_dir {
        let _ = fs::remove_dir_all(dir);
    }
    Ok(())
}

/// man-db and bash-completion, which a fresh machine may lack.
fn ensure_tools() -> Result<()> {
    let mut missing = Vec::new();
    if which("man").is_none() {
        missing.push("man-db");
    }
    if !Path::new("/usr/share/bash-completion/bash_completion").is_file() {
        missing.push("bash-completion");
    }
    if which("setpriv").is_none() {
        missing.push("util-linux");
    }
    if !missing.is_empty() {
        eprintln!("xtask: installing {} with apt-get", missing.join(" "));
        apt_get(&["update"])?;
        let mut args = vec!["install", "-y", "--no-install-recommends"];
        args.extend(&missing);
        apt_get(&args)?;
    }
    Ok(())
}

fn cli_checks(checks: &mut Vec<Check>) -> Result<()> {
    let version = command_stdout(Command::new("/usr/bin/storage-score").arg("--version"))?;
    checks.push(Check::new("/usr/bin/storage-score --version", version.starts_with("storage-score "), &version));

    let page = command_stdout(Command::new("man").arg("-w").arg(CLI))?;
    let text = command_stdout(Command::new("man").arg(CLI).env("MANPAGER", "cat").env("MANWIDTH", "80"))?;
    checks.push(Check::new(
        "man storage-score",
        page.ends_with("storage-score.1.gz") && text.contains("EXIT STATUS") && text.contains("storage-score-identify"),
        format!("{page}: {} lines", text.lines().count()),
    ));
    for sub in ["run", "identify", "score"] {
        let page = command_stdout(Command::new("man").arg("-w").arg(format!("{CLI}-{sub}")));
        checks.push(Check::new(format!("man {CLI}-{sub}"), page.is_ok(), page.unwrap_or_else(|e| e.to_string())));
    }

    // bash-completion loads /usr/share/bash-completion/completions/storage-score
    // the first time the command is completed; then complete `identify --`.
    let script = r#"source /usr/share/bash-completion/bash_completion
_completion_loader storage-score
fn=$(complete -p storage-score | sed -E 's/.* -F ([^ ]+) .*/\1/')
COMP_WORDS=(storage-score identify --); COMP_CWORD=2
COMP_LINE='storage-score identify --'; COMP_POINT=${#COMP_LINE}
"$fn" storage-score -- identify
echo "loaded: $(complete -p storage-score)"
echo "offers: ${COMPREPLY[*]}""#;
    let out = command_stdout(Command::new("bash").arg("-c").arg(script))?;
    let offers = out.lines().find_map(|l| l.strip_prefix("offers: ")).unwrap_or("");
    checks.push(Check::new(
        "bash completes `storage-score identify --`",
        offers.split_whitespace().any(|w| w == "--json"),
        out.replace('\n', "; "),
    ));
    for path in [
        "/usr/share/zsh/vendor-completions/_storage-score",
        "/usr/share/fish/vendor_completions.d/storage-score.fish",
        // The user docs beside the README, whose links point into docs/.
        "/usr/share/doc/storage-score/docs/cli.md",
        "/usr/share/doc/storage-score/docs/safety.md",
        "/usr/share/doc/storage-score/docs/grafana-dashboard.json",
        // The daily doctor snapshot, shipped disabled.
        "/usr/lib/systemd/system/storage-score-doctor.service",
        "/usr/lib/systemd/system/storage-score-doctor.timer",
    ] {
        checks.push(Check::new(format!("{path} installed"), Path::new(path).is_file(), ""));
    }
    let enabled = Path::new("/etc/systemd/system/timers.target.wants/storage-score-doctor.timer").exists();
    checks.push(Check::new("storage-score-doctor.timer is not enabled", !enabled, ""));
    Ok(())
}

/// The unit as installed, and the service started as its unit says.
/// Returns the state directory it made, if any.
fn server_checks(checks: &mut Vec<Check>) -> Result<Option<PathBuf>> {
    let unit_path = Path::new("/usr/lib/systemd/system").join(format!("{SERVER}.service"));
    let unit =
        fs::read_to_string(&unit_path).with_context(|| format!("the package installed no {}", unit_path.display()))?;
    let unit = Unit::parse(&unit);
    checks.push(Check::new(
        "unit: DynamicUser, StateDirectory, localhost",
        unit.get("DynamicUser") == Some("yes")
            && unit.get("StateDirectory").is_some()
            && unit.env().iter().any(|(k, v)| k.ends_with("_LISTEN") && v.starts_with("127.0.0.1:")),
        unit_path.display().to_string(),
    ));
    let defaults = Path::new("/etc/default").join(SERVER);
    let mode = fs::metadata(&defaults).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
    checks.push(Check::new(format!("{} mode 600", defaults.display()), mode == 0o600, format!("{mode:o}")));

    if Path::new("/run/systemd/system").is_dir() {
        let active = command_stdout(Command::new("systemctl").args(["is-active", SERVER])).unwrap_or_default();
        checks.push(Check::new("systemd started the service", active == "active", active));
        return Ok(None);
    }
    let state = unit.get("StateDirectory").context("the unit has no StateDirectory")?.to_owned();
    let dir = Path::new("/var/lib").join(&state);
    if dir.exists() {
        bail!("{} exists already (data of an earlier install?); move it away first", dir.display());
    }
    fs::create_dir_all(&dir)?;
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o750))?;
    std::os::unix::fs::chown(&dir, Some(DYNAMIC_UID), Some(DYNAMIC_UID))?;
    run_like_systemd(&unit, &dir, checks).map(|()| Some(dir.clone())).inspect_err(|_| {
        let _ = fs::remove_dir_all(&dir);
    })
}

/// `ExecStart` as systemd would run it, but on port 0.
fn run_like_systemd(unit: &Unit, state: &Path, checks: &mut Vec<Check>) -> Result<()> {
    let mut env = unit.env();
    if let Some(file) = unit.get("EnvironmentFile") {
        let file = file.trim_start_matches('-');
        for line in fs::read_to_string(file).unwrap_or_default().lines().map(str::trim) {
            if let Some((k, v)) = line.split_once('=').filter(|_| !line.starts_with('#')) {
                env.retain(|(key, _)| key != k);
                env.push((k.to_owned(), v.to_owned()));
            }
        }
    }
    for (k, v) in env.iter_mut() {
        if k.ends_with("_LISTEN") {
            *v = "127.0.0.1:0".to_owned();
        }
    }
    let exec = unit.get("ExecStart").context("the unit has no ExecStart")?;
    let argv: Vec<String> = exec.split_whitespace().map(|w| expand(w, &env)).collect();
    let workdir = expand(unit.get("WorkingDirectory").unwrap_or("/"), &env);
    let id = DYNAMIC_UID.to_string();
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid", &id, "--regid", &id, "--clear-groups", "--no-new-privs", "--"])
        .args(&argv)
        .current_dir(&workdir)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    eprintln!("xtask: deb-check: running the unit's ExecStart as uid {id}: {}", argv.join(" "));
    let mut child = cmd.spawn().context("cannot run setpriv")?;
    let stderr = child.stderr.take().context("stderr is piped")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let listening = rx
        .recv_timeout(Duration::from_secs(20))
        .ok()
        .and_then(|line| line.strip_prefix("listening on http://").map(str::to_owned));
    let result = (|| -> Result<()> {
        let addr = listening.clone().context("the server printed no `listening on http://…` line in 20 s")?;
        checks.push(Check::new("the unit's ExecStart starts the server", true, format!("listening on {addr}")));
        let (status, _) = http(&addr, "GET", "/", &[], b"")?;
        checks.push(Check::new("GET /", status == 200, format!("HTTP {status}")));
        let report = fs::read(crate_root().join("tests/fixtures/reports/raspi3b-qemu-quick.json"))?;
        let (status, body) = http(&addr, "POST", "/api/v1/results", &[("Idempotency-Key", "deb-check-0001")], &report)?;
        checks.push(Check::new("POST /api/v1/results", status == 201, format!("HTTP {status} {}", body.trim())));
        let db = state.join("leaderboard.db");
        let owner = fs::metadata(&db).map(|m| m.uid()).ok();
        checks.push(Check::new(
            "the SQLite file is in the state directory, owned by the service's uid",
            owner == Some(DYNAMIC_UID),
            format!("{}: uid {owner:?}", db.display()),
        ));
        Ok(())
    })();
    // SIGTERM, as `systemctl stop` sends; it must drain and exit 0.
    let pid = child.id().to_string();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    checks.push(Check::new(
        "SIGTERM stops it with exit 0",
        status.is_some_and(|s| s.success()),
        status.map_or("still running after 30 s (killed)".to_owned(), |s| s.to_string()),
    ));
    result
}

/// `[Service]` settings of a unit file, in order (repeated keys kept).
#[derive(Debug)]
struct Unit(Vec<(String, String)>);

impl Unit {
    fn parse(text: &str) -> Unit {
        let mut section = String::new();
        let mut settings = Vec::new();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            if line.starts_with('[') {
                section = line.to_owned();
            } else if let Some((k, v)) = line.split_once('=').filter(|_| section == "[Service]") {
                settings.push((k.trim().to_owned(), v.trim().to_owned()));
            }
        }
        Unit(settings)
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// `Environment=K=V` settings, `%S` expanded.
    fn env(&self) -> Vec<(String, String)> {
        self.0
            .iter()
            .filter(|(k, _)| k == "Environment")
            .filter_map(|(_, v)| v.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.replace("%S", "/var/lib")))
            .collect()
    }
}

/// systemd's `%S` (the state root) and `${VAR}` in a command line word.
fn expand(word: &str, env: &[(String, String)]) -> String {
    let mut out = word.replace("%S", "/var/lib");
    for (k, v) in env {
        out = out.replace(&format!("${{{k}}}"), v);
    }
    out
}

/// One HTTP/1.1 request on a fresh connection; the status and the body.
fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr).with_context(|| format!("cannot connect to {addr}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(20)))?;
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() {
        request.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes())?;
    stream.write_all(body)?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let text = String::from_utf8_lossy(&response);
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).context("no HTTP status line")?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    Ok((status, body))
}

fn crate_root() -> PathBuf {
    workspace_and_target().map(|(ws, _)| ws).unwrap_or_else(|_| PathBuf::from("."))
}

fn find_deb(dir: &Path, package: &str, arch: &str) -> Option<PathBuf> {
    let prefix = format!("{package}_");
    let suffix = format!("_{arch}.deb");
    fs::read_dir(dir).ok()?.flatten().map(|e| e.path()).find(|p| {
        let name = file_name(p);
        name.starts_with(&prefix) && name.ends_with(&suffix)
    })
}

fn is_installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f", "${Status}", package])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("ok installed"))
}

/// The files (not directories) a package installed, from `dpkg -L`.
fn package_files(package: &str) -> Result<Vec<PathBuf>> {
    let list = command_stdout(Command::new("dpkg").arg("-L").arg(package))?;
    Ok(list.lines().map(PathBuf::from).filter(|p| p.is_file()).collect())
}

fn command_stdout(cmd: &mut Command) -> Result<String> {
    let out = cmd.output().with_context(|| format!("cannot run {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn last_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).lines().last().unwrap_or("").to_owned()
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_service_section_and_expands_like_systemd() {
        let unit = Unit::parse(
            "[Unit]\nDescription=x\n[Service]\nDynamicUser=yes\nEnvironment=A_LISTEN=127.0.0.1:8080\n\
             Environment=DB=sqlite:%S/s/db\nExecStart=/usr/bin/s --listen ${A_LISTEN}\n[Install]\nWantedBy=m\n",
        );
        assert_eq!(unit.get("DynamicUser"), Some("yes"));
        assert_eq!(unit.get("WantedBy"), None);
        let env = unit.env();
        assert_eq!(env[1], ("DB".to_owned(), "sqlite:/var/lib/s/db".to_owned()));
        assert_eq!(expand("${A_LISTEN}", &env), "127.0.0.1:8080");
    }

    /// The unit that ships, read the way this check reads it.
    #[test]
    fn the_shipped_unit_runs_as_a_dynamic_user_on_localhost() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../crates/leaderboard/debian")
            .join(format!("{SERVER}.service"));
        let unit = Unit::parse(&fs::read_to_string(path).expect("unit file"));
        assert_eq!(unit.get("DynamicUser"), Some("yes"));
        assert_eq!(unit.get("StateDirectory"), Some(SERVER));
        let env = unit.env();
        let argv: Vec<String> = unit.get("ExecStart").unwrap().split_whitespace().map(|w| expand(w, &env)).collect();
        assert_eq!(argv, ["/usr/bin/storage-score-leaderboard", "--listen", "127.0.0.1:8080"]);
        let db = env.iter().find(|(k, _)| k == "STORAGE_SCORE_LEADERBOARD_DB").map(|(_, v)| v.as_str());
        assert_eq!(db, Some("sqlite:/var/lib/storage-score-leaderboard/leaderboard.db"));
    }
}
