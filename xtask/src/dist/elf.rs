//! Is an ELF executable static? It is when it names no program interpreter
//! (no `PT_INTERP` program header): the kernel then runs it without the
//! dynamic loader, so it needs no library of the system it runs on. A
//! static-pie binary has a `PT_DYNAMIC` but no `PT_INTERP`, and is static.
//!
//! Layout from the System V gABI (ELF header and program header table),
//! little-endian only, which every target we ship is.

/// How an executable is linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Linkage {
    Static,
    Dynamic,
}

const PT_INTERP: u32 = 3;

/// `None` when `bytes` is not a little-endian ELF file.
pub fn linkage(bytes: &[u8]) -> Option<Linkage> {
    if bytes.get(..4)? != b"\x7fELF" || *bytes.get(5)? != 1 {
        return None;
    }
    let is_64 = match bytes.get(4)? {
        1 => false,
        2 => true,
        _ => return None,
    };
    let u16_at = |at: usize| bytes.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize);
    let u32_at = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let u64_at = |at: usize| bytes.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    // e_phoff, e_phentsize, e_phnum
    let (phoff, phentsize, phnum) = if is_64 {
        (usize::try_from(u64_at(0x20)?).ok()?, u16_at(0x36)?, u16_at(0x38)?)
    } else {
        (u32_at(0x1c)? as usize, u16_at(0x2a)?, u16_at(0x2c)?)
    };
    for i in 0..phnum {
        // p_type is the first word of every program header.
        if u32_at(phoff.checked_add(i.checked_mul(phentsize)?)?)? == PT_INTERP {
            return Some(Linkage::Dynamic);
        }
    }
    Some(Linkage::Static)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal 64-bit ELF header with one program header of type `p_type`.
    fn elf64(p_type: u32) -> Vec<u8> {
        let mut b = vec![0u8; 0x40 + 0x38];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[0x20..0x28].copy_from_slice(&0x40u64.to_le_bytes());
        b[0x36..0x38].copy_from_slice(&0x38u16.to_le_bytes());
        b[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        b[0x40..0x44].copy_from_slice(&p_type.to_le_bytes());
        b
    }

    #[test]
    fn an_interpreter_makes_it_dynamic() {
        assert_eq!(linkage(&elf64(PT_INTERP)), Some(Linkage::Dynamic));
        assert_eq!(linkage(&elf64(1)), Some(Linkage::Static));
        assert_eq!(linkage(b"#!/bin/sh\n"), None);
        assert_eq!(linkage(&elf64(1)[..0x42]), None, "a truncated table is not an answer");
    }

    #[test]
    fn reads_this_machine_s_own_binaries() {
        // The test binary itself is dynamic on every host we build on.
        let me = std::fs::read(std::env::current_exe().expect("exe")).expect("read");
        assert_eq!(linkage(&me), Some(Linkage::Dynamic));
    }
}
