//! The three ioctls that ask a device about its health, and nothing else:
//! the NVMe admin pass-through (`NVME_IOCTL_ADMIN_CMD`), SCSI generic
//! (`SG_IO`, for ATA PASS-THROUGH) and the MMC block ioctl (`MMC_IOC_CMD`,
//! for SD CMD56). Every command sent through them only reads.
//!
//! The structs are the kernel's ABI, `#[repr(C)]` field for field:
//! - `struct nvme_passthru_cmd`, include/uapi/linux/nvme_ioctl.h (72 bytes
//!   on every architecture: its u64 fields sit at offsets 16 and 24);
//! - `struct sg_io_hdr`, include/scsi/sg.h (pointer-sized fields, so its
//!   size follows the architecture, as the kernel's does);
//! - `struct mmc_ioc_cmd`, include/uapi/linux/mmc/ioctl.h (72 bytes).
//!
//! The request numbers come from nix's macros: `_IOWR('N', 0x41, …)`,
//! `_IOWR(MMC_BLOCK_MAJOR = 179, 0, …)`, and `SG_IO` = 0x2285, which the
//! kernel defines as a plain number (hence the `_bad` macro).

use std::fs::File;
use std::os::fd::AsRawFd;

/// `struct nvme_passthru_cmd` (`nvme_admin_cmd`).
#[repr(C)]
#[derive(Debug, Default)]
pub struct NvmePassthruCmd {
    pub opcode: u8,
    pub flags: u8,
    pub rsvd1: u16,
    pub nsid: u32,
    pub cdw2: u32,
    pub cdw3: u32,
    pub metadata: u64,
    pub addr: u64,
    pub metadata_len: u32,
    pub data_len: u32,
    pub cdw10: u32,
    pub cdw11: u32,
    pub cdw12: u32,
    pub cdw13: u32,
    pub cdw14: u32,
    pub cdw15: u32,
    pub timeout_ms: u32,
    pub result: u32,
}

/// `struct sg_io_hdr`.
#[repr(C)]
#[derive(Debug)]
struct SgIoHdr {
    interface_id: libc::c_int,
    dxfer_direction: libc::c_int,
    cmd_len: libc::c_uchar,
    mx_sb_len: libc::c_uchar,
    iovec_count: libc::c_ushort,
    dxfer_len: libc::c_uint,
    dxferp: *mut libc::c_void,
    cmdp: *const libc::c_uchar,
    sbp: *mut libc::c_uchar,
    timeout: libc::c_uint,
    flags: libc::c_uint,
    pack_id: libc::c_int,
    usr_ptr: *mut libc::c_void,
    status: libc::c_uchar,
    masked_status: libc::c_uchar,
    msg_status: libc::c_uchar,
    sb_len_wr: libc::c_uchar,
    host_status: libc::c_ushort,
    driver_status: libc::c_ushort,
    resid: libc::c_int,
    duration: libc::c_uint,
    info: libc::c_uint,
}

/// `struct mmc_ioc_cmd`.
#[repr(C)]
#[derive(Debug, Default)]
struct MmcIocCmd {
    write_flag: libc::c_int,
    is_acmd: libc::c_int,
    opcode: u32,
    arg: u32,
    response: [u32; 4],
    flags: libc::c_uint,
    blksz: libc::c_uint,
    blocks: libc::c_uint,
    postsleep_min_us: libc::c_uint,
    postsleep_max_us: libc::c_uint,
    data_timeout_ns: libc::c_uint,
    cmd_timeout_ms: libc::c_uint,
    pad: u32,
    data_ptr: u64,
}

nix::ioctl_readwrite!(nvme_admin_cmd, b'N', 0x41, NvmePassthruCmd);
nix::ioctl_readwrite_bad!(sg_io_ioctl, 0x2285, SgIoHdr);
nix::ioctl_readwrite!(mmc_ioc_cmd, 179, 0, MmcIocCmd);

/// How an NVMe admin command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvmeOutcome {
    Done,
    /// The controller answered with this NVMe status (non-zero).
    Status(i32),
}

/// Runs one admin command that reads into `buf` (its address and length
/// are filled in here, so no caller can get them wrong).
pub fn nvme_admin_read(file: &File, cmd: &mut NvmePassthruCmd, buf: &mut [u8]) -> nix::Result<NvmeOutcome> {
    cmd.addr = buf.as_mut_ptr() as usize as u64;
    cmd.data_len = u32::try_from(buf.len()).map_err(|_| nix::errno::Errno::EINVAL)?;
    // SAFETY: `cmd` is a live, exclusively borrowed `nvme_passthru_cmd` of
    // the kernel's layout; `addr`/`data_len` describe `buf`, which is
    // borrowed mutably for the whole call, so the kernel writes at most
    // `buf.len()` bytes into memory we own; no metadata buffer is given
    // (`metadata_len` stays 0).
    let status = unsafe { nvme_admin_cmd(file.as_raw_fd(), cmd) }?;
    Ok(if status == 0 { NvmeOutcome::Done } else { NvmeOutcome::Status(status) })
}

/// What an SG_IO command returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SgOutcome {
    /// SCSI status: 0 GOOD, 2 CHECK CONDITION.
    pub status: u8,
    pub host_status: u16,
    pub driver_status: u16,
    /// The sense data the device returned.
    pub sense: Vec<u8>,
    /// Bytes asked for but not transferred.
    pub resid: i32,
}

impl SgOutcome {
    /// The command went through with GOOD status and no transport error.
    pub fn good(&self) -> bool {
        self.status == 0 && self.host_status == 0 && self.driver_status & 0x0f == 0
    }

    /// The sense key (0x05 ILLEGAL REQUEST: the command is not supported).
    pub fn sense_key(&self) -> Option<u8> {
        let code = self.sense.first()? & 0x7f;
        match code {
            0x72 | 0x73 => self.sense.get(1).map(|k| k & 0x0f),
            0x70 | 0x71 => self.sense.get(2).map(|k| k & 0x0f),
            _ => None,
        }
    }
}

/// `SG_DXFER_NONE` and `SG_DXFER_FROM_DEV` (include/scsi/sg.h).
const SG_DXFER_NONE: libc::c_int = -1;
const SG_DXFER_FROM_DEV: libc::c_int = -3;

/// Sends a SCSI command block that reads into `data` (or transfers
/// nothing when `data` is empty).
pub fn sg_io(file: &File, cdb: &[u8], data: &mut [u8], timeout_ms: u32) -> nix::Result<SgOutcome> {
    let mut sense = [0u8; 64];
    let cmd_len = u8::try_from(cdb.len()).map_err(|_| nix::errno::Errno::EINVAL)?;
    let dxfer_len = libc::c_uint::try_from(data.len()).map_err(|_| nix::errno::Errno::EINVAL)?;
    let mut hdr = SgIoHdr {
        interface_id: libc::c_int::from(b'S'),
        dxfer_direction: if data.is_empty() { SG_DXFER_NONE } else { SG_DXFER_FROM_DEV },
        cmd_len,
        mx_sb_len: sense.len() as u8,
        iovec_count: 0,
        dxfer_len,
        dxferp: if data.is_empty() { std::ptr::null_mut() } else { data.as_mut_ptr().cast() },
        cmdp: cdb.as_ptr(),
        sbp: sense.as_mut_ptr(),
        timeout: timeout_ms,
        flags: 0,
        pack_id: 0,
        usr_ptr: std::ptr::null_mut(),
        status: 0,
        masked_status: 0,
        msg_status: 0,
        sb_len_wr: 0,
        host_status: 0,
        driver_status: 0,
        resid: 0,
        duration: 0,
        info: 0,
    };
    // SAFETY: `hdr` has the kernel's `sg_io_hdr` layout and lives across the
    // call; `cmdp` points at `cdb` (`cmd_len` bytes, read only), `dxferp` at
    // `data` (`dxfer_len` bytes, borrowed mutably, direction from-device or
    // none) and `sbp` at `sense` (`mx_sb_len` bytes); SG_IO is synchronous,
    // so no pointer outlives the borrow it came from.
    unsafe { sg_io_ioctl(file.as_raw_fd(), &mut hdr) }?;
    let written = usize::from(hdr.sb_len_wr).min(sense.len());
    Ok(SgOutcome {
        status: hdr.status,
        host_status: hdr.host_status,
        driver_status: hdr.driver_status,
        sense: sense[..written].to_vec(),
        resid: hdr.resid,
    })
}

/// Response and command-type flags of include/linux/mmc/core.h: an R1
/// response (present, CRC, opcode), a data transfer command (ADTC), and the
/// SPI R1 for hosts in SPI mode.
const MMC_RSP_PRESENT: u32 = 1 << 0;
const MMC_RSP_CRC: u32 = 1 << 2;
const MMC_RSP_OPCODE: u32 = 1 << 4;
const MMC_CMD_ADTC: u32 = 1 << 5;
const MMC_RSP_SPI_S1: u32 = 1 << 7;
const CMD56_READ_FLAGS: u32 = MMC_RSP_SPI_S1 | MMC_RSP_PRESENT | MMC_RSP_CRC | MMC_RSP_OPCODE | MMC_CMD_ADTC;

/// SD GEN_CMD.
const SD_GEN_CMD: u32 = 56;

/// Sends CMD56 in read mode (`write_flag` 0) with `arg`, one 512-byte block
/// back into `block`.
pub fn cmd56_read(file: &File, arg: u32, block: &mut [u8; 512]) -> nix::Result<()> {
    let mut cmd = MmcIocCmd {
        write_flag: 0,
        opcode: SD_GEN_CMD,
        arg,
        flags: CMD56_READ_FLAGS,
        blksz: 512,
        blocks: 1,
        data_ptr: block.as_mut_ptr() as usize as u64,
        ..MmcIocCmd::default()
    };
    // SAFETY: `cmd` has the kernel's `mmc_ioc_cmd` layout; `data_ptr` points
    // at `block`, exactly `blksz × blocks` = 512 bytes, borrowed mutably for
    // the call; `write_flag` 0 makes it a read into that block only.
    unsafe { mmc_ioc_cmd(file.as_raw_fd(), &mut cmd) }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_abi_sizes() {
        assert_eq!(std::mem::size_of::<NvmePassthruCmd>(), 72);
        assert_eq!(std::mem::size_of::<MmcIocCmd>(), 72);
        // sg_io_hdr: 88 bytes on 64-bit, 64 on 32-bit (include/scsi/sg.h).
        let expected = if cfg!(target_pointer_width = "64") { 88 } else { 64 };
        assert_eq!(std::mem::size_of::<SgIoHdr>(), expected);
        // The request numbers the kernel's headers give (sdmon prints
        // MMC_IOC_CMD as 0xc048b300).
        assert_eq!(nix::request_code_readwrite!(179, 0, std::mem::size_of::<MmcIocCmd>()), 0xc048_b300);
        assert_eq!(nix::request_code_readwrite!(b'N', 0x41, 72), 0xc048_4e41);
    }

    #[test]
    fn sense_keys_from_both_formats() {
        let outcome = |sense: Vec<u8>| SgOutcome { status: 2, host_status: 0, driver_status: 8, sense, resid: 0 };
        assert_eq!(outcome(vec![0x72, 0x05, 0x20, 0x00]).sense_key(), Some(5));
        assert_eq!(outcome(vec![0x70, 0x00, 0x05]).sense_key(), Some(5));
        assert_eq!(outcome(vec![]).sense_key(), None);
        assert!(!outcome(vec![]).good());
    }
}
