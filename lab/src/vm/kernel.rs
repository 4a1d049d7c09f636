//! The guest kernel: the one Debian kernel package that `linux-image-amd64`
//! (or, for the emulated Raspberry Pi, trixie's `linux-image-arm64`, fetched
//! by the apt of the trixie chroot, which knows arm64) depends on (never a
//! wildcard, which would fetch every kernel in the archive), downloaded once
//! into `target/vm/kernel/` (or `target/vm/raspi/kernel/`).
//!
//! From the package we keep only what the guest needs, in
//! `target/vm/kernel/<package>/`: `vmlinuz`, the device trees asked for, and
//! the requested modules plus the modules they depend on, decompressed (busybox `insmod` may not read
//! `.ko.xz`) and listed in load order in `manifest`. A package carries no
//! `modules.dep` (depmod makes it at install time), so dependencies come from
//! each module's own `.modinfo` section (`depends=a,b`), as modinfo prints them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::host::{apt_errors, apt_get, is_root, last_lines, which};
use super::{Paths, skip};
use xtask::cross::Chroot;

/// Which apt fetches the packages.
#[derive(Debug, Clone, Copy)]
pub enum Apt<'a> {
    /// This machine's.
    Host,
    /// The trixie chroot's, which has arm64 packages (the host's apt may not
    /// know that architecture, and we do not add it there).
    Chroot(&'a Chroot),
}

/// Where a kernel comes from.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The meta-package whose single `linux-image-<version>` dependency we
    /// boot, with its architecture when it is not the host's.
    pub meta_package: &'static str,
    pub apt: Apt<'a>,
    /// Device trees to keep, relative to `usr/lib/linux-image-<release>/`.
    pub dtbs: &'static [&'static str],
}

/// The PC kernel of `vm-identify`.
pub const AMD64: Source<'static> = Source { meta_package: "linux-image-amd64", apt: Apt::Host, dtbs: &[] };

impl Source<'_> {
    /// `:arm64` for a foreign architecture, empty for the host's.
    fn arch_suffix(&self) -> &'static str {
        self.meta_package.find(':').map_or("", |i| &self.meta_package[i..])
    }
}

/// A kernel ready to boot.
#[derive(Debug, Clone)]
pub struct Kernel {
    /// e.g. `linux-image-6.1.0-57-amd64`.
    pub package: String,
    /// `uname -r`, e.g. `6.1.0-57-amd64`.
    pub release: String,
    pub vmlinuz: PathBuf,
    /// The device trees asked for, in the order of [`Source::dtbs`].
    pub dtbs: Vec<PathBuf>,
    /// Uncompressed `.ko` files in the order to insmod them.
    pub modules: Vec<PathBuf>,
}

impl Kernel {
    /// Module names (file stems) in load order.
    pub fn module_names(&self) -> Vec<String> {
        self.modules.iter().map(|p| module_name(p)).collect()
    }
}

/// Returns the kernel, downloading and preparing it on first use.
pub fn prepare(paths: &Paths, source: &Source<'_>, wanted: &[&str]) -> Result<Kernel> {
    fs::create_dir_all(&paths.kernel).with_context(|| format!("cannot create {}", paths.kernel.display()))?;
    let package = kernel_package(paths, source)?;
    let prepared = paths.kernel.join(&package);
    if let Some(kernel) = load_prepared(&package, &prepared, wanted, source.dtbs) {
        return Ok(kernel);
    }
    let deb = download(paths, source, &package)?;
    super::step(&format!("extracting {}", deb.display()));
    let kernel = extract(paths, &package, &deb, wanted, source.dtbs)?;
    remove_other_kernels(paths, &package);
    Ok(kernel)
}

/// The name of the kernel package `linux-image-amd64` depends on, from
/// `apt-cache depends` (running `apt-get update` once if apt knows nothing
/// yet), or from the cached download when apt cannot say.
fn kernel_package(paths: &Paths, source: &Source<'_>) -> Result<String> {
    if let Apt::Chroot(chroot) = source.apt {
        let text = chroot.output(&format!("apt-cache depends {}", source.meta_package), &[])?;
        return parse_depends(&text)
            .with_context(|| format!("apt-cache depends {} names no linux-image-<version>", source.meta_package));
    }
    let meta = source.meta_package;
    if let Some(name) = apt_cache_kernel(meta) {
        return Ok(name);
    }
    if let Some(name) = cached_package(paths) {
        return Ok(name);
    }
    if which("apt-cache").is_none() {
        return Err(skip("no apt-cache to find the Debian kernel package (not a Debian machine?)"));
    }
    if !is_root() {
        return Err(skip(format!("apt-cache does not know {meta}; run `apt-get update` as root")));
    }
    apt_get(&["update"])?;
    apt_cache_kernel(meta).with_context(|| {
        format!("after apt-get update, apt-cache depends {meta} names no linux-image-<version> package")
    })
}

/// `apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2}'`.
fn apt_cache_kernel(meta: &str) -> Option<String> {
    let out = Command::new("apt-cache").args(["depends", meta]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    parse_depends(&String::from_utf8_lossy(&out.stdout))
}

/// The versioned kernel package, without the `:arm64` that apt adds to a
/// foreign architecture's names.
fn parse_depends(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let name = line.trim().strip_prefix("Depends: ")?.trim();
        let name = name.split(':').next().unwrap_or(name);
        let version = name.strip_prefix("linux-image-")?;
        version.starts_with(|c: char| c.is_ascii_digit()).then(|| name.to_owned())
    })
}

/// The package name of a kernel `.deb` already in the cache.
fn cached_package(paths: &Paths) -> Option<String> {
    let entries = fs::read_dir(&paths.kernel).ok()?;
    entries.flatten().find_map(|e| {
        let file = e.file_name().into_string().ok()?;
        let stem = file.strip_suffix(".deb")?;
        let (name, _) = stem.split_once('_')?;
        name.starts_with("linux-image-").then(|| name.to_owned())
    })
}

/// The package's `.deb` in the cache (`paths.kernel`), fetched with
/// `apt-get download` if absent. A failed download (no network, no mirror)
/// is a failure: the run cannot test what it came to test.
pub fn download(paths: &Paths, source: &Source<'_>, package: &str) -> Result<PathBuf> {
    if let Some(deb) = find_deb(&paths.kernel, package) {
        return Ok(deb);
    }
    let tmp = paths.kernel.join("download.tmp");
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp)?;
    // apt downloads as the unprivileged `_apt` user when it can write here.
    let _ = fs::set_permissions(&tmp, fs::Permissions::from_mode(0o777));
    let qualified = format!("{package}{}", source.arch_suffix());
    super::step(&format!("downloading {qualified} with apt-get download"));
    let out = match source.apt {
        Apt::Host => Command::new("apt-get")
            .args(["-q", "download", &qualified])
            .current_dir(&tmp)
            .output()
            .context("cannot run apt-get")?,
        Apt::Chroot(chroot) => {
            let inside = chroot.inside(&tmp).context("the kernel cache is outside the workspace")?;
            chroot.command(&format!("cd '{inside}'\napt-get -q download {qualified}"), &[]).output()?
        }
    };
    let fetched = find_deb(&tmp, package);
    let result = match (out.status.success(), fetched) {
        (true, Some(deb)) => {
            let dest = paths.kernel.join(deb.file_name().expect("a .deb has a file name"));
            fs::rename(&deb, &dest).map(|()| dest).map_err(anyhow::Error::from)
        }
        _ => Err(anyhow::anyhow!(
            "`apt-get download {package}` failed ({}): {}",
            out.status,
            apt_errors(&String::from_utf8_lossy(&out.stderr))
        )),
    };
    let _ = fs::remove_dir_all(&tmp);
    result
}

fn find_deb(dir: &Path, package: &str) -> Option<PathBuf> {
    let prefix = format!("{package}_");
    fs::read_dir(dir).ok()?.flatten().map(|e| e.path()).find(|p| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        name.starts_with(&prefix) && name.ends_with(".deb")
    })
}

/// Unpacks the `.deb` with `dpkg-deb -x` into a scratch directory, copies out
/// `vmlinuz` and the modules, and removes the scratch directory.
fn extract(paths: &Paths, package: &str, deb: &Path, wanted: &[&str], dtbs: &[&str]) -> Result<Kernel> {
    let scratch = paths.kernel.join("extract.tmp");
    let staging = paths.kernel.join(format!("{package}.tmp"));
    for dir in [&scratch, &staging] {
        let _ = fs::remove_dir_all(dir);
    }
    let result = extract_into(deb, &scratch, &staging, wanted, dtbs);
    let _ = fs::remove_dir_all(&scratch);
    if let Err(e) = result {
        let _ = fs::remove_dir_all(&staging);
        return Err(e);
    }
    let prepared = paths.kernel.join(package);
    let _ = fs::remove_dir_all(&prepared);
    fs::rename(&staging, &prepared)?;
    load_prepared(package, &prepared, wanted, dtbs).context("the kernel just prepared does not load")
}

fn extract_into(deb: &Path, scratch: &Path, staging: &Path, wanted: &[&str], dtbs: &[&str]) -> Result<()> {
    run_ok(Command::new("dpkg-deb").arg("-x").arg(deb).arg(scratch))?;
    let modules_root = find_modules_root(scratch)?;
    let release = file_name(&modules_root);
    let vmlinuz = scratch.join("boot").join(format!("vmlinuz-{release}"));
    if !vmlinuz.is_file() {
        bail!("{} holds no boot/vmlinuz-{release}", deb.display());
    }
    let order = resolve_load_order(&modules_root, wanted)?;

    fs::create_dir_all(staging.join("modules"))?;
    fs::create_dir_all(staging.join("dtbs"))?;
    fs::copy(&vmlinuz, staging.join("vmlinuz"))?;
    for dtb in dtbs {
        let from = scratch.join("usr/lib").join(format!("linux-image-{release}")).join(dtb);
        fs::copy(&from, staging.join("dtbs").join(file_name(&from)))
            .with_context(|| format!("the kernel package holds no {}", from.display()))?;
    }
    let mut names = Vec::new();
    for module in &order {
        let name = module_name(module);
        fs::write(staging.join("modules").join(format!("{name}.ko")), read_module(module)?)?;
        names.push(name);
    }
    let manifest = format!(
        "wanted: {}\ndtbs: {}\nrelease: {release}\nload: {}\n",
        wanted.join(" "),
        dtbs.join(" "),
        names.join(" ")
    );
    fs::write(staging.join("manifest"), manifest)?;
    Ok(())
}

/// `lib/modules/<release>` (or `usr/lib/modules/<release>` on merged-/usr
/// packages) inside the unpacked package.
fn find_modules_root(scratch: &Path) -> Result<PathBuf> {
    for base in ["lib/modules", "usr/lib/modules"] {
        let Ok(entries) = fs::read_dir(scratch.join(base)) else {
            continue;
        };
        let dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
        if let [one] = dirs.as_slice() {
            return Ok(one.clone());
        }
    }
    bail!("the kernel package holds no single lib/modules/<release> directory")
}

/// The wanted modules with their dependencies first, each once. Modules
/// built into the kernel (listed in `modules.builtin`) need no loading.
fn resolve_load_order(modules_root: &Path, wanted: &[&str]) -> Result<Vec<PathBuf>> {
    let index = index_modules(&modules_root.join("kernel"))?;
    let builtin = builtin_modules(modules_root);
    let mut order = Vec::new();
    let mut seen = BTreeSet::new();
    for name in wanted {
        visit(&normalize(name), &index, &builtin, &mut seen, &mut order, 0)?;
    }
    Ok(order)
}

fn visit(
    name: &str,
    index: &BTreeMap<String, PathBuf>,
    builtin: &BTreeSet<String>,
    seen: &mut BTreeSet<String>,
    order: &mut Vec<PathBuf>,
    depth: usize,
) -> Result<()> {
    if depth > 32 {
        bail!("module dependencies loop through {name}");
    }
    if seen.contains(name) || builtin.contains(name) {
        return Ok(());
    }
    let path = index.get(name).with_context(|| format!("module {name} is neither in the package nor built in"))?;
    for dep in module_depends(&read_module(path)?) {
        visit(&normalize(&dep), index, builtin, seen, order, depth + 1)?;
    }
    seen.insert(name.to_owned());
    order.push(path.clone());
    Ok(())
}

/// Every module file under `dir`, by normalized name.
fn index_modules(dir: &Path) -> Result<BTreeMap<String, PathBuf>> {
    let mut index = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("cannot read {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if compression(&path).is_some() {
                index.insert(normalize(&module_name(&path)), path);
            }
        }
    }
    Ok(index)
}

fn builtin_modules(modules_root: &Path) -> BTreeSet<String> {
    let text = fs::read_to_string(modules_root.join("modules.builtin")).unwrap_or_default();
    text.lines().map(|l| normalize(&module_name(Path::new(l.trim())))).collect()
}

/// The `depends=` entry of a module's `.modinfo` section: NUL-separated
/// `key=value` strings.
fn module_depends(ko: &[u8]) -> Vec<String> {
    const KEY: &[u8] = b"\0depends=";
    let Some(start) = ko.windows(KEY.len()).position(|w| w == KEY) else {
        return Vec::new();
    };
    let value = &ko[start + KEY.len()..];
    let end = value.iter().position(|&b| b == 0).unwrap_or(value.len());
    String::from_utf8_lossy(&value[..end]).split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

/// A module's bytes, decompressed.
fn read_module(path: &Path) -> Result<Vec<u8>> {
    let tool = match compression(path) {
        Some(None) => {
            return fs::read(path).with_context(|| format!("cannot read {}", path.display()));
        }
        Some(Some(tool)) => tool,
        None => bail!("{} is not a kernel module", path.display()),
    };
    let out = Command::new(tool)
        .arg("-dc")
        .arg(path)
        .output()
        .with_context(|| format!("cannot run {tool} to decompress {}", path.display()))?;
    if !out.status.success() {
        bail!("{tool} -dc {} failed: {}", path.display(), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(out.stdout)
}

/// `Some(None)` for a plain `.ko`, `Some(Some(tool))` for a compressed one,
/// `None` for anything else.
fn compression(path: &Path) -> Option<Option<&'static str>> {
    let name = path.file_name()?.to_str()?;
    [(".ko", None), (".ko.xz", Some("xz")), (".ko.zst", Some("zstd")), (".ko.gz", Some("gzip"))]
        .into_iter()
        .find(|(ext, _)| name.ends_with(ext))
        .map(|(_, tool)| tool)
}

/// `sdhci-pci` from `…/sdhci-pci.ko.xz`.
fn module_name(path: &Path) -> String {
    let name = file_name(path);
    name.split(".ko").next().unwrap_or(&name).to_owned()
}

/// The kernel treats `-` and `_` in module names alike.
fn normalize(name: &str) -> String {
    name.replace('-', "_")
}

/// A prepared kernel, if its manifest was made for the same module list
/// and device trees.
fn load_prepared(package: &str, dir: &Path, wanted: &[&str], dtbs: &[&str]) -> Option<Kernel> {
    let manifest = fs::read_to_string(dir.join("manifest")).ok()?;
    let field = |key: &str| manifest.lines().find_map(|l| l.strip_prefix(key)).map(str::trim);
    if field("wanted:")? != wanted.join(" ") || field("dtbs:")? != dtbs.join(" ") {
        return None;
    }
    let dtbs: Vec<PathBuf> = dtbs.iter().map(|d| dir.join("dtbs").join(file_name(Path::new(d)))).collect();
    let modules: Vec<PathBuf> =
        field("load:")?.split_whitespace().map(|n| dir.join("modules").join(format!("{n}.ko"))).collect();
    let vmlinuz = dir.join("vmlinuz");
    if !vmlinuz.is_file() || !modules.iter().chain(&dtbs).all(|m| m.is_file()) {
        return None;
    }
    Some(Kernel { package: package.to_owned(), release: field("release:")?.to_owned(), vmlinuz, dtbs, modules })
}

/// Drops downloads and prepared trees of kernels other than `package`, so the
/// cache holds one kernel.
fn remove_other_kernels(paths: &Paths, package: &str) {
    let Ok(entries) = fs::read_dir(&paths.kernel) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let ours = name == package || name.starts_with(&format!("{package}_"));
        if name.starts_with("linux-image-") && !ours {
            let path = entry.path();
            let _ = if path.is_dir() { fs::remove_dir_all(&path) } else { fs::remove_file(&path) };
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

fn run_ok(cmd: &mut Command) -> Result<()> {
    let out = cmd.output().with_context(|| format!("cannot run {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed ({}): {}", out.status, last_lines(&String::from_utf8_lossy(&out.stderr), 3));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_versioned_kernel_from_apt_cache_depends() {
        let text = "linux-image-amd64\n  Depends: linux-image-6.1.0-57-amd64\n";
        assert_eq!(parse_depends(text).as_deref(), Some("linux-image-6.1.0-57-amd64"));
        assert_eq!(parse_depends("linux-image-amd64\n  Depends: linux-image-amd64-signed\n"), None);
        let foreign = "linux-image-arm64:arm64\n  Depends: linux-image-6.12.117+deb13-arm64:arm64\n";
        assert_eq!(parse_depends(foreign).as_deref(), Some("linux-image-6.12.117+deb13-arm64"));
    }

    #[test]
    fn reads_depends_from_modinfo() {
        let ko = b"\x7fELF...\0license=GPL\0depends=sdhci,mmc_core,cqhci\0vermagic=6.1\0";
        assert_eq!(module_depends(ko), ["sdhci", "mmc_core", "cqhci"]);
        assert!(module_depends(b"\0depends=\0name=mmc_core\0").is_empty());
    }

    #[test]
    fn names_modules_like_the_kernel() {
        assert_eq!(module_name(Path::new("/x/sdhci-pci.ko.xz")), "sdhci-pci");
        assert_eq!(normalize("sdhci-pci"), "sdhci_pci");
        assert_eq!(compression(Path::new("a.ko.zst")), Some(Some("zstd")));
        assert_eq!(compression(Path::new("modules.dep")), None);
    }
}
