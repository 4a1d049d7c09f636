//! `cargo xtask reference [--write]`: the reference set (scoring/reference/,
//! docs/reference.md#the-reference-set) re-read from its sources by the
//! importer. Without `--write` it checks that `set.json` is what the sources
//! give, row by row (exit 1 and each difference when not); with it, writes it.

use std::path::Path;
use std::process::ExitCode;

use storage_scoring::reference::{self, ReferenceSet};

pub fn main(args: &[String]) -> ExitCode {
    let write = match args {
        [] => false,
        [flag] if flag == "--write" => true,
        [flag, dir] if flag == "--against" => return against(Path::new(dir)),
        _ => {
            eprintln!("xtask reference: usage: cargo xtask reference [--write | --against MIRRORS]");
            return ExitCode::from(2);
        }
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scoring/reference");
    let sources = match read_sources(&root.join("sources")) {
        Ok(sources) => sources,
        Err(e) => {
            eprintln!("xtask reference: {e}");
            return ExitCode::FAILURE;
        }
    };
    let set = match reference::build(&sources) {
        Ok(set) => set,
        Err(e) => {
            eprintln!("xtask reference: {e}");
            return ExitCode::FAILURE;
        }
    };
    let path = root.join("set.json");
    if write {
        if let Err(e) = std::fs::write(&path, reference::to_json(&set)) {
            eprintln!("xtask reference: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("reference: wrote {} results from {} sources", set.results.len(), set.source_count());
        return ExitCode::SUCCESS;
    }
    let shipped: ReferenceSet =
        std::fs::read_to_string(&path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    let mut differences = 0;
    for row in &set.results {
        match shipped.results.iter().find(|r| r.id == row.id) {
            Some(r) if r == row => {}
            Some(_) => {
                differences += 1;
                println!("{}: set.json differs from its source", row.id);
            }
            None => {
                differences += 1;
                println!("{}: in the sources, not in set.json", row.id);
            }
        }
    }
    for row in shipped.results.iter().filter(|r| !set.results.iter().any(|s| s.id == r.id)) {
        differences += 1;
        println!("{}: in set.json, with no source", row.id);
    }
    println!(
        "reference: {} results from {} sources re-read, each to its printed score; {differences} differences",
        set.results.len(),
        set.source_count()
    );
    if differences == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// Every `*.txt` under `dir`, as (name without `.txt`, text).
pub fn read_sources(dir: &Path) -> Result<Vec<(String, String)>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut sources = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(".txt") else { continue };
        let bytes = std::fs::read(entry.path()).map_err(|e| format!("cannot read {name}: {e}"))?;
        sources.push((id.to_owned(), String::from_utf8_lossy(&bytes).into_owned()));
    }
    Ok(sources)
}

/// `--against MIRRORS`: every source published in a GitHub repository
/// (`https://github.com/OWNER/REPO/blob/COMMIT/PATH`) compared, byte for
/// byte after its header, with that file at that commit in a local git
/// copy of the repository (`MIRRORS/OWNER+REPO/repo`, as a snapshot tool
/// lays them out, or `MIRRORS/OWNER/REPO`). Sources from elsewhere (issue
/// comments, web pages) are listed as not checkable here.
fn against(mirrors: &Path) -> ExitCode {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scoring/reference/sources");
    let sources = match read_sources(&dir) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("xtask reference: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (mut same, mut differ, mut unchecked) = (0, 0, 0);
    for (id, text) in &sources {
        let (header, body) = text.split_once("\n\n").unwrap_or((text, ""));
        let source = header.lines().find_map(|l| l.strip_prefix("source:")).map(str::trim).unwrap_or("");
        let Some((repo, commit, path)) = github_blob(source) else {
            unchecked += 1;
            println!("{id}: {source}: not a repository file; not checkable here");
            continue;
        };
        let git_dirs = [mirrors.join(repo.replace('/', "+")).join("repo"), mirrors.join(&repo)];
        let Some(git_dir) = git_dirs.iter().find(|d| d.exists()) else {
            unchecked += 1;
            println!("{id}: no copy of {repo} under {}", mirrors.display());
            continue;
        };
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(git_dir)
            .args(["show", &format!("{commit}:{path}")])
            .output();
        match out {
            Ok(o) if o.status.success() && String::from_utf8_lossy(&o.stdout) == *body => same += 1,
            Ok(o) if o.status.success() => {
                differ += 1;
                println!("{id}: differs from {repo} {commit} {path}");
            }
            _ => {
                unchecked += 1;
                println!("{id}: {commit}:{path} not found in {}", git_dir.display());
            }
        }
    }
    println!(
        "reference: {same} sources identical to their published file, {differ} differ, {unchecked} not checkable here"
    );
    if differ == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// `https://github.com/OWNER/REPO/blob/COMMIT/PATH` as (OWNER/REPO, COMMIT, PATH).
fn github_blob(url: &str) -> Option<(String, &str, &str)> {
    let rest = url.strip_prefix("https://github.com/")?;
    let mut parts = rest.splitn(5, '/');
    let (owner, repo, blob, commit, path) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    (blob == "blob" && commit.len() == 40).then(|| (format!("{owner}/{repo}"), commit, path))
}
