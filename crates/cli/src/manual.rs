//! Man pages (clap_mangen) and shell completions (clap_complete), generated
//! from [`crate::args::Cli`], the definitions the binary parses, so a new
//! subcommand or flag appears in both without anyone editing them. The
//! binary prints them (`storage-score man`, `storage-score completions
//! SHELL`) and `cargo xtask dist` writes the same for the .deb.
//!
//! One page per command (`storage-score.1`, `storage-score-run.1`, …). The
//! top page also gets EXIT STATUS and EXAMPLES sections: the exit codes are
//! documented in docs/cli.md#exit-codes, which clap does not know.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::roff::{Roff, bold, roman};

/// The binary's name, as users type it.
pub const BIN: &str = "storage-score";

/// The shells the .deb ships completions for (where it installs each is in
/// `[package.metadata.deb]` of crates/cli/Cargo.toml).
pub const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// What [`write_all`] wrote.
#[derive(Debug, Clone)]
pub struct Generated {
    pub man_pages: Vec<PathBuf>,
    pub completions: Vec<PathBuf>,
}

const EXIT_STATUS: [(&str, &str); 9] = [
    ("0", "success"),
    ("1", "the run failed (an I/O error, an interrupted run)"),
    ("2", "bad usage or a bad target"),
    ("3", "refused for safety (a mounted device with --destructive, no confirmation)"),
    (
        "4",
        "verify-capacity found a fake (the card holds less than it claims), or batch or endurance found one among its cards",
    ),
    ("5", "batch: a card fails --require, and none is fake"),
    ("6", "endurance: a card died (turned read-only, ignores writes, or vanished)"),
    (
        "7, 9, 10",
        "power-loss: 7 acknowledged writes lost or torn, 9 data the card had kept damaged, 10 the card did not come back",
    ),
    (
        "8, 16, 32 and their sums",
        "doctor's findings, a bit mask as smartctl's: 8 health failing, 16 a warning, 32 the device could not be read",
    ),
];

const EXAMPLES: [(&str, &str); 4] = [
    ("sudo storage-score", "identify and benchmark the boot drive"),
    ("sudo storage-score identify /dev/mmcblk0", "the SD card's registers, decoded"),
    ("sudo storage-score run /dev/mmcblk0 --output card.json", "benchmark it and keep the JSON report"),
    ("storage-score score card.json", "score a saved report again"),
];

/// The top man page, `storage-score(1)`, with its EXIT STATUS, EXAMPLES
/// and SEE ALSO sections.
pub fn top_page(out: &mut dyn Write) -> io::Result<()> {
    let mut page = Vec::new();
    clap_mangen::Man::new(crate::args::Cli::command()).render(&mut page)?;
    page.extend_from_slice(top_page_sections().as_bytes());
    out.write_all(roff_ascii(&String::from_utf8_lossy(&page)).as_bytes())
}

/// The page of the subcommand `path` names (`["power-loss", "witness"]`),
/// `storage-score-power-loss-witness(1)`, as `write_all` writes it; `Err`
/// with the commands there are when no subcommand has that name.
pub fn command_page(path: &[String], out: &mut dyn Write) -> Result<io::Result<()>, String> {
    let mut cmd = crate::args::Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut page = &cmd;
    for word in path {
        page = page.find_subcommand(word).ok_or_else(|| {
            let names: Vec<&str> = page.get_subcommands().map(|s| s.get_name()).collect();
            format!("no page for `{}`: the commands are {}", path.join(" "), names.join(", "))
        })?;
    }
    let mut roff = Vec::new();
    Ok(clap_mangen::Man::new(page.clone())
        .render(&mut roff)
        .and_then(|()| out.write_all(roff_ascii(&String::from_utf8_lossy(&roff)).as_bytes())))
}

/// The page with every character outside ASCII as groff's `\[uXXXX]`
/// escape (the help texts' `…` and `×`): troff reads its input as Latin-1
/// unless told otherwise, and warns of UTF-8 bytes ("invalid input
/// character code"); the escape is read by groff and mandoc alike.
fn roff_ascii(page: &str) -> String {
    let mut out = String::with_capacity(page.len());
    for c in page.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            out.push_str(&format!("\\[u{:04X}]", u32::from(c)));
        }
    }
    out
}

/// The completion script for `shell`.
pub fn completion(shell: Shell, out: &mut dyn Write) -> io::Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut crate::args::Cli::command(), BIN, &mut script);
    if shell == Shell::Bash {
        let text = String::from_utf8_lossy(&script);
        return out.write_all(fix_bash_states(&text, BIN).as_bytes());
    }
    out.write_all(&script)
}

/// Writes every man page to `out/man/` and the completions of [`SHELLS`]
/// to `out/completions/`, replacing what an earlier run left.
pub fn write_all(out: &Path) -> io::Result<Generated> {
    let man_dir = out.join("man");
    let completions_dir = out.join("completions");
    for dir in [&man_dir, &completions_dir] {
        let _ = fs::remove_dir_all(dir);
        fs::create_dir_all(dir)?;
    }
    let cmd = crate::args::Cli::command();
    clap_mangen::generate_to(cmd.clone(), &man_dir)?;
    for page in fs::read_dir(&man_dir)?.flatten() {
        let text = fs::read_to_string(page.path())?;
        fs::write(page.path(), roff_ascii(&text))?;
    }
    // The same top page `storage-score man` prints.
    let mut top = Vec::new();
    top_page(&mut top)?;
    fs::write(man_dir.join(format!("{BIN}.1")), top)?;
    let mut man_pages: Vec<PathBuf> = fs::read_dir(&man_dir)?.flatten().map(|e| e.path()).collect();
    man_pages.sort();

    let mut completions = Vec::new();
    for shell in SHELLS {
        let path = completions_dir.join(match shell {
            Shell::Bash => format!("{BIN}.bash"),
            Shell::Zsh => format!("_{BIN}"),
            _ => format!("{BIN}.fish"),
        });
        let mut script = Vec::new();
        completion(shell, &mut script)?;
        fs::write(&path, script)?;
        completions.push(path);
    }
    Ok(Generated { man_pages, completions })
}

/// clap_complete's bash script (4.6.12) names the state of a subcommand in
/// two ways when the binary's name has a hyphen: its dispatch loop sets
/// `storage__score__subcmd__run`, but the case arm that completes it reads
/// `storage__subcmd__score__subcmd__run`, so nothing after a subcommand ever
/// completes (clap-rs/clap issue 6421, open). The arms are respelt the way
/// the loop spells them: only the binary-name prefix differs.
fn fix_bash_states(script: &str, bin: &str) -> String {
    let wrong = format!("\n        {}__subcmd__", bin.replace('-', "__subcmd__"));
    let right = format!("\n        {}__subcmd__", bin.replace('-', "__"));
    script.replace(&wrong, &right)
}

fn top_page_sections() -> String {
    let mut roff = Roff::new();
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in EXIT_STATUS {
        roff.control("TP", []).text([bold(code)]).text([roman(meaning)]);
    }
    roff.control("SH", ["EXAMPLES"]);
    for (command, what) in EXAMPLES {
        roff.control("TP", []).text([bold(command)]).text([roman(what)]);
    }
    roff.control("SH", ["SEE ALSO"]);
    roff.text([
        bold("storage-score-run"),
        roman("(1) and the page of each subcommand; /usr/share/doc/storage-score/README.md and docs/ (the user docs: commands, report, score, safety)."),
    ]);
    roff.to_roff()
}

#[cfg(test)]
mod tests {
    /// Every page `write_all` installs is one `storage-score man COMMAND…`
    /// prints, byte for byte (the top page's SEE ALSO names them all).
    #[test]
    fn man_prints_every_installed_page() {
        let tmp = tempfile::tempdir().expect("tmp");
        let generated = super::write_all(tmp.path()).expect("pages");
        let mut seen = 0;
        let cmd = crate::args::Cli::command();
        let mut paths: Vec<Vec<String>> = Vec::new();
        fn walk(cmd: &clap::Command, at: &[String], out: &mut Vec<Vec<String>>) {
            for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
                let mut path = at.to_vec();
                path.push(sub.get_name().to_owned());
                walk(sub, &path, out);
                out.push(path);
            }
        }
        walk(&cmd, &[], &mut paths);
        for path in paths {
            let file = generated.man_pages.iter().find(|p| {
                p.file_name().is_some_and(|n| n.to_string_lossy() == format!("{}-{}.1", super::BIN, path.join("-")))
            });
            let file = file.unwrap_or_else(|| panic!("no installed page for {path:?}"));
            let mut printed = Vec::new();
            super::command_page(&path, &mut printed).expect("a command").expect("rendered");
            assert_eq!(String::from_utf8_lossy(&printed), std::fs::read_to_string(file).expect("page"), "{path:?}");
            seen += 1;
        }
        assert!(seen >= 20, "{seen}");
        let mut sink = Vec::new();
        assert!(super::command_page(&["docter".to_owned()], &mut sink).is_err_and(|e| e.contains("doctor")));
    }

    use super::*;

    #[test]
    fn pages_are_ascii() {
        assert_eq!(roff_ascii("KEY[,KEY…] 4K × 8"), "KEY[,KEY\\[u2026]] 4K \\[u00D7] 8");
    }

    #[test]
    fn bash_states_are_spelt_like_the_dispatch_loop() {
        let script = "\n        storage__subcmd__score__subcmd__verify__subcmd__capacity)\n";
        assert_eq!(fix_bash_states(script, BIN), "\n        storage__score__subcmd__verify__subcmd__capacity)\n");
    }

    /// Every subcommand of the binary gets a page and appears in every
    /// completion script, whoever adds it.
    #[test]
    fn every_subcommand_has_a_page_and_completions() {
        let tmp = tempfile::tempdir().expect("tmp");
        let out = tmp.path().to_path_buf();
        let generated = write_all(&out).expect("generate");
        let cmd = crate::args::Cli::command();
        let names: Vec<String> =
            cmd.get_subcommands().filter(|s| !s.is_hide_set()).map(|s| s.get_name().to_owned()).collect();
        assert!(names.iter().any(|n| n == "identify"), "{names:?}");
        for name in &names {
            let page = out.join("man").join(format!("{BIN}-{name}.1"));
            assert!(generated.man_pages.contains(&page), "no page for {name}: {:?}", generated.man_pages);
            for path in &generated.completions {
                let script = std::fs::read_to_string(path).expect("read completion");
                assert!(script.contains(name.as_str()), "{} lacks {name}", path.display());
            }
        }
        let bash = generated.completions.iter().find(|p| p.extension().is_some_and(|e| e == "bash"));
        let bash = bash.expect("a bash completion");
        if let Some(words) = complete_in_bash(bash, &["identify", "--"]) {
            assert!(words.contains(&"--json".to_owned()), "identify -- completes to {words:?}");
        }
        // Every subcommand's own options complete, hyphenated names included.
        for name in names.iter().filter(|n| *n != "help") {
            if let Some(words) = complete_in_bash(bash, &[name, "--"]) {
                assert!(words.contains(&"--help".to_owned()), "{name} -- completes to {words:?}");
            }
        }
        let top = std::fs::read_to_string(out.join("man").join(format!("{BIN}.1"))).expect("top page");
        assert!(top.contains("EXIT STATUS") && top.contains("verify\\-capacity found a fake"), "{top}");
    }

    /// What bash offers for `storage-score WORDS…<TAB>` with this script,
    /// or `None` where there is no bash.
    fn complete_in_bash(script: &Path, words: &[&str]) -> Option<Vec<String>> {
        let line = format!("{BIN} {}", words.join(" "));
        let driver = format!(
            "source '{}'\nCOMP_WORDS=({line})\nCOMP_CWORD={}\nCOMP_LINE='{line}'\nCOMP_POINT=${{#COMP_LINE}}\n\
             _storage__score {BIN} '{}' '{}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            words.len(),
            words[words.len() - 1],
            if words.len() > 1 { words[words.len() - 2] } else { BIN },
        );
        let out = std::process::Command::new("bash").arg("-c").arg(driver).output().ok()?;
        assert!(out.status.success(), "bash: {}", String::from_utf8_lossy(&out.stderr));
        Some(String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect())
    }
}
