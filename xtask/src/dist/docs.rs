//! Man pages and shell completions for the .deb: the generation lives in
//! the binary's own library (`storage_score::manual`), so `storage-score
//! man` and `storage-score completions SHELL` print exactly what the
//! package installs; this only writes them where the staging expects them.

use std::path::Path;

use anyhow::{Context, Result};
pub use storage_score::manual::Generated;

/// Writes the man pages to `out/man/` and the completions to
/// `out/completions/`, replacing what an earlier run left.
pub fn generate(out: &Path) -> Result<Generated> {
    storage_score::manual::write_all(out)
        .with_context(|| format!("cannot write the man pages and completions in {}", out.display()))
}

#[cfg(test)]
mod tests {
    use std::fs;

    use clap::CommandFactory;

    use storage_score::manual::BIN;

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
}
