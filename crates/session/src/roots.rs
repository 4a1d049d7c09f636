//! The trees every kernel read goes to (docs/cli.md#settings-are-checked):
//! a `--sysfs-root` or `--machine-root` (or its variable) that cannot be
//! what it claims is an error naming it, never an empty tree read as
//! "nothing found".

use std::path::Path;

use storage_platform::Roots;

use crate::Failure;

/// [`roots`], and a tree someone named read as the user behind sudo,
/// never with root's rights (docs/safety.md#what-is-read).
pub fn settings(sysfs_root: Option<&Path>, machine_root: Option<&Path>) -> Result<Roots, Failure> {
    let roots = roots(sysfs_root, machine_root)?;
    if let Some(user) = storage_platform::sudo::sudo_user() {
        for tree in [sysfs_root, machine_root].into_iter().flatten() {
            storage_platform::sysfs::read_tree_as(tree, user);
        }
    }
    Ok(roots)
}

/// The roots every kernel read goes through, from the two options: the
/// live system when neither is given.
pub fn roots(sysfs_root: Option<&Path>, machine_root: Option<&Path>) -> Result<Roots, Failure> {
    match (sysfs_root, machine_root) {
        (_, Some(dir)) => {
            let bad = |what: &str| bad_root("--machine-root (STORAGE_SCORE_MACHINE_ROOT)", dir, what);
            must_be_dir(dir, &bad)?;
            // What `Roots::machine` reads: DIR/sys and DIR/proc.
            for part in ["sys", "proc"] {
                if !dir.join(part).is_dir() {
                    return Err(bad(&format!(
                        "holds no {part}/; give a captured machine (a directory with sys/, proc/ and etc/), or unset the variable"
                    )));
                }
            }
            Ok(Roots::machine(dir))
        }
        (Some(dir), None) => {
            let bad = |what: &str| bad_root("--sysfs-root (STORAGE_SCORE_SYSFS_ROOT)", dir, what);
            must_be_dir(dir, &bad)?;
            // A sysfs tree has its disks under block/ (or class/block/).
            if !dir.join("block").is_dir() && !dir.join("class/block").is_dir() {
                return Err(bad(
                    "holds no block/ or class/block/; give a captured sysfs tree (a copy of /sys), or unset the variable",
                ));
            }
            Ok(Roots::captured(dir))
        }
        (None, None) => Ok(Roots::live()),
    }
}

fn bad_root(option: &str, dir: &Path, what: &str) -> Failure {
    Failure::Usage(format!("{option} {}: {what}", dir.display()))
}

fn must_be_dir(dir: &Path, bad: &dyn Fn(&str) -> Failure) -> Result<(), Failure> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(bad("is not a directory; give a captured tree's directory, or unset the variable")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(bad("does not exist; give a captured tree's directory, or unset the variable"))
        }
        Err(e) => Err(bad(&format!("cannot be read ({e}); give a captured tree's directory, or unset the variable"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(sysfs: Option<&Path>, machine: Option<&Path>) -> String {
        roots(sysfs, machine).map(|_| "ok".to_owned()).unwrap_or_else(|f| f.to_string())
    }

    #[test]
    fn a_sysfs_tree_has_its_disks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tree = dir.path();
        let shown = tree.display();
        assert_eq!(
            said(Some(tree), None),
            format!(
                "--sysfs-root (STORAGE_SCORE_SYSFS_ROOT) {shown}: holds no block/ or class/block/; give a captured sysfs tree (a copy of /sys), or unset the variable"
            )
        );
        std::fs::create_dir_all(tree.join("class/block")).expect("mkdir");
        assert_eq!(said(Some(tree), None), "ok");
        let captured = roots(Some(tree), None).expect("roots");
        assert_eq!(captured.sys, tree);
        let missing = tree.join("missing");
        assert!(
            said(Some(&missing), None)
                .ends_with(": does not exist; give a captured tree's directory, or unset the variable")
        );
        let file = tree.join("file");
        std::fs::write(&file, b"").expect("write");
        assert!(
            said(Some(&file), None)
                .ends_with(": is not a directory; give a captured tree's directory, or unset the variable")
        );
    }

    #[test]
    fn a_machine_has_sys_and_proc_and_wins_over_a_sysfs_tree() {
        let dir = tempfile::tempdir().expect("tempdir");
        let machine = dir.path();
        std::fs::create_dir_all(machine.join("sys")).expect("mkdir");
        let line = said(Some(Path::new("/nonexistent")), Some(machine));
        assert!(line.starts_with("--machine-root (STORAGE_SCORE_MACHINE_ROOT) "), "{line}");
        assert!(line.contains(": holds no proc/; give a captured machine"), "{line}");
        std::fs::create_dir_all(machine.join("proc")).expect("mkdir");
        assert_eq!(said(Some(Path::new("/nonexistent")), Some(machine)), "ok");
        assert_eq!(said(None, None), "ok");
    }
}
