//! Page-aligned I/O buffers for O_DIRECT.
//!
//! O_DIRECT needs the buffer address, length and file offset aligned to the
//! device's logical block size. `Vec<u8>` gives no alignment guarantee, so
//! this is the one place that allocates by hand.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;

use rand::RngCore;
use rand::SeedableRng;
use rand::rngs::SmallRng;

/// Alignment of every buffer: the largest logical block size in use (4 KiB
/// sectors), and a page on every architecture we build for.
pub const ALIGN: usize = 4096;

/// An owned, zero-initialised, `ALIGN`-aligned byte buffer.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf").field("len", &self.len).finish()
    }
}

// SAFETY: AlignedBuf owns its allocation exclusively, like Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared references only allow reads of plain bytes.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes (rounded up to a whole `ALIGN`).
    pub fn zeroed(len: usize) -> Self {
        let len = len.max(ALIGN).next_multiple_of(ALIGN);
        let layout = Self::layout(len);
        // SAFETY: layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, len }
    }

    /// A buffer of incompressible pseudo-random bytes, so that a device that
    /// compresses or deduplicates cannot flatter itself.
    pub fn random(len: usize, seed: u64) -> Self {
        let mut buf = Self::zeroed(len);
        SmallRng::seed_from_u64(seed).fill_bytes(buf.as_mut_slice());
        buf
    }

    fn layout(len: usize) -> Layout {
        // ALIGN is a power of two and len is a multiple of it: never fails.
        Layout::from_size_align(len, ALIGN).unwrap_or_else(|_| unreachable!("ALIGN is a power of two"))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialised bytes for the life of self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Raw pointer to `chunk` bytes at `offset`, for io_uring SQEs.
    pub fn ptr_at(&mut self, offset: usize) -> *mut u8 {
        assert!(offset <= self.len, "offset past the buffer");
        // SAFETY: offset is within the allocation (checked above).
        unsafe { self.ptr.as_ptr().add(offset) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with exactly this layout.
        unsafe { dealloc(self.ptr.as_ptr(), Self::layout(self.len)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_rounded() {
        let buf = AlignedBuf::zeroed(100);
        assert_eq!(buf.len(), ALIGN);
        assert_eq!(buf.as_slice().as_ptr() as usize % ALIGN, 0);
        assert!(buf.as_slice().iter().all(|&b| b == 0));
    }

    #[test]
    fn random_is_not_compressible_trivially() {
        let buf = AlignedBuf::random(8192, 1);
        let zeros = buf.as_slice().iter().filter(|&&b| b == 0).count();
        assert!(zeros < 200, "{zeros} zero bytes in 8 KiB of random data");
    }
}
