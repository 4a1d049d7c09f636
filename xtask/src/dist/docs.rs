//! Man pages (clap_mangen) and shell completions (clap_complete), generated
//! from `storage_score::args::Cli`, the definitions the binary parses, so a
//! new subcommand or flag appears in both without anyone editing them.
//!
//! One page per command (`storage-score.1`, `storage-score-run.1`, …). The
//! top page also gets EXIT STATUS and EXAMPLES sections: the exit codes are
//! documented in docs/cli.md#exit-codes, which clap does not know.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::roff::{Roff, bold, roman};

/// The binary's name, as users type it.
pub const BIN: &str = "storage-score";

/// The shells we ship completions for (where the .deb installs each is in
/// `[package.metadata.deb]` of crates/cli/Cargo.toml).
pub const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// What was generated.
#[derive(Debug, Clone)]
pub struct Generated {
    pub man_pages: Vec<PathBuf>,
    pub completions: Vec<PathBuf>,
}

const EXIT_STATUS: [(&str, &str); 7] = [
    ("0", "success"),
    ("1", "the run failed (an I/O error, an interrupted run)"),
    ("2", "bad usage or a bad target"),
    ("3", "refused for safety (a mounted device with --destructive, no confirmation)"),
    ("4", "verify-capacity found a fake (the card holds less than it claims), or batch found one among its cards"),
    ("5", "batch: a card fails --require, and none is fake"),
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

/// Writes the man pages to `out/man/` and the completions to
/// `out/completions/`, replacing what an earlier run left.
pub fn generate(out: &Path) -> Result<Generated> {
    let man_dir = out.join("man");
    let completions_dir = out.join("completions");
    for dir in [&man_dir, &completions_dir] {
        let _ = fs::remove_dir_all(dir);
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }

    let cmd = storage_score::args::Cli::command();
    clap_mangen::generate_to(cmd.clone(), &man_dir).context("cannot write the man pages")?;
    append_top_page_sections(&man_dir.join(format!("{BIN}.1")))?;
    let mut man_pages: Vec<PathBuf> = fs::read_dir(&man_dir)?.flatten().map(|e| e.path()).collect();
    man_pages.sort();

    let mut completions = Vec::new();
    for shell in SHELLS {
        let mut cmd = cmd.clone();
        let path = clap_complete::generate_to(shell, &mut cmd, BIN, &completions_dir)
            .with_context(|| format!("cannot write the {shell} completion"))?;
        if shell == Shell::Bash {
            let script = fs::read_to_string(&path)?;
            fs::write(&path, fix_bash_states(&script, BIN))?;
        }
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

fn append_top_page_sections(page: &Path) -> Result<()> {
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
    let mut file =
        fs::OpenOptions::new().append(true).open(page).with_context(|| format!("cannot open {}", page.display()))?;
    file.write_all(roff.to_roff().as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subcommand of the binary gets a page and appears in every
    /// completion script, whoever adds it.
    #[test]
    fn every_subcommand_has_a_page_and_completions() {
        let out = std::env::temp_dir().join(format!("xtask-docs-test-{}", std::process::id()));
        let generated = generate(&out).expect("generate");
        let cmd = storage_score::args::Cli::command();
        let names: Vec<String> =
            cmd.get_subcommands().filter(|s| !s.is_hide_set()).map(|s| s.get_name().to_owned()).collect();
        assert!(names.iter().any(|n| n == "identify"), "{names:?}");
        for name in &names {
            let page = out.join("man").join(format!("{BIN}-{name}.1"));
            assert!(generated.man_pages.contains(&page), "no page for {name}: {:?}", generated.man_pages);
            for path in &generated.completions {
                let script = fs::read_to_string(path).expect("read completion");
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
        let top = fs::read_to_string(out.join("man").join(format!("{BIN}.1"))).expect("top page");
        assert!(top.contains("EXIT STATUS") && top.contains("verify\\-capacity found a fake"), "{top}");
        let _ = fs::remove_dir_all(&out);
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

    #[test]
    fn bash_states_are_spelt_like_the_dispatch_loop() {
        let script = "\n        storage__subcmd__score__subcmd__verify__subcmd__capacity)\n";
        assert_eq!(fix_bash_states(script, BIN), "\n        storage__score__subcmd__verify__subcmd__capacity)\n");
    }
}
