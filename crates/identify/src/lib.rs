//! storage-identify: what is the device under test, really?
//!
//! Target resolution (path → filesystem → partition → disk), device
//! identification from sysfs/debugfs, and pure decoders for the SD and eMMC
//! registers.
