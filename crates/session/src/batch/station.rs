//! What `station` (docs/batch.md#station) may touch beyond the disks
//! named, and which disks have media: a card is "new" when a disk under
//! `/sys/block` gains media. The waiting, the testing of each card and
//! the report are the command line's and [`super`]'s.

use std::collections::BTreeSet;
use std::path::Path;

use storage_platform::Roots;

/// What `station` may touch beyond the disks named: `--only-kind`,
/// `--max-size`, `--reader` (docs/batch.md#what-station-may-touch).
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// `--only-kind`.
    pub kinds: Vec<storage_scoring::schema::DeviceKind>,
    /// `--max-size`, in bytes.
    pub max_size: Option<u64>,
    /// `--reader`: a part of the reader's sysfs path.
    pub reader: Option<String>,
}

impl Filters {
    /// Whether any filter was given.
    pub fn any(&self) -> bool {
        !self.kinds.is_empty() || self.max_size.is_some() || self.reader.is_some()
    }

    /// The filters in words, for the line the station starts with.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.kinds.is_empty() {
            let kinds: Vec<&str> = self.kinds.iter().map(|k| k.as_str()).collect();
            parts.push(format!("{} disks", kinds.join(" or ")));
        }
        if let Some(max) = self.max_size {
            parts.push(format!("of at most {}", crate::scan::size_words(max)));
        }
        if let Some(reader) = &self.reader {
            parts.push(format!("in the reader at {reader}"));
        }
        parts.join(", ")
    }

    /// Why the new disk `name` is left alone, or `None` when it may be
    /// tested. What cannot be read of it (its kind, its size) leaves it
    /// alone when a filter asks for it.
    pub fn refuses(&self, name: &str, roots: &Roots) -> Option<String> {
        if !self.kinds.is_empty() {
            let kind = storage_identify::identify(&format!("/dev/{name}"), roots)
                .ok()
                .and_then(|(_, device)| device)
                .map(|d| d.kind);
            match kind {
                // By the report's word: a USB SATA drive is a `usb` disk.
                Some(kind) if self.kinds.iter().any(|k| k.as_str() == kind.as_str()) => {}
                Some(kind) => return Some(format!("a {} disk, not one --only-kind names", kind.as_str())),
                None => return Some("its kind could not be read, and --only-kind asks for one".to_owned()),
            }
        }
        if let Some(max) = self.max_size {
            let size = storage_platform::sysfs::read_u64(&Path::new(&roots.sys).join("block").join(name).join("size"))
                .map(|sectors| sectors * 512);
            match size {
                Some(bytes) if bytes <= max => {}
                Some(bytes) => {
                    return Some(format!(
                        "{} is more than --max-size {}",
                        crate::scan::size_words(bytes),
                        crate::scan::size_words(max)
                    ));
                }
                None => return Some("its size could not be read, and --max-size asks for it".to_owned()),
            }
        }
        if let Some(reader) = &self.reader {
            let path = std::fs::canonicalize(Path::new(&roots.sys).join("block").join(name)).unwrap_or_default();
            if !path.to_string_lossy().contains(reader.as_str()) {
                return Some(format!("not in the reader at {reader} (it is at {})", path.display()));
            }
        }
        None
    }
}

/// The disks under `/sys/block` with media (a size above 0).
pub fn with_media(roots: &Roots) -> BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(roots.sys.join("block")) else { return BTreeSet::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|name| {
            storage_platform::sysfs::read_u64(&Path::new(&roots.sys).join("block").join(name).join("size"))
                .is_some_and(|sectors| sectors > 0)
        })
        .collect()
}
