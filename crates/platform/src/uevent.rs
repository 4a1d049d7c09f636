//! The kernel's word that a block device changed: a `NETLINK_KOBJECT_UEVENT`
//! socket bound to the kernel's multicast group. A card put into a reader,
//! a loop device attached or a disk resized each send an `add` or `change`
//! message for `SUBSYSTEM=block`; `station` lists the disks again when one
//! comes, instead of waiting for its next poll (docs/batch.md#station).
//!
//! Only the kernel's group (1) is joined, not udev's (2): the kernel's
//! messages come whether or not a udev daemon runs (a Pi without systemd,
//! a container), and they carry all `station` needs. Each message is
//! `ACTION@DEVPATH` then `KEY=VALUE` fields, NUL-separated
//! (Documentation/ABI/testing/sysfs-uevent; lib/kobject_uevent.c).

use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{self, AddressFamily, NetlinkAddr, SockFlag, SockProtocol, SockType};

/// The kernel's multicast group on `NETLINK_KOBJECT_UEVENT` (udev
/// rebroadcasts on group 2).
const KERNEL_GROUP: u32 = 1;

/// A listening socket for the kernel's uevents.
#[derive(Debug)]
pub struct Uevents {
    socket: OwnedFd,
}

/// What one wait ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woken {
    /// At least one block-device message came.
    Block,
    /// The time ran out (or only other subsystems' messages came).
    Timeout,
}

impl Uevents {
    /// Joins the kernel's group. `Err` where netlink is not allowed (some
    /// sandboxes, an old kernel): the caller polls instead.
    pub fn open() -> std::io::Result<Self> {
        let socket = socket::socket(
            AddressFamily::Netlink,
            SockType::Datagram,
            SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
            SockProtocol::NetlinkKObjectUEvent,
        )?;
        socket::bind(std::os::fd::AsRawFd::as_raw_fd(&socket), &NetlinkAddr::new(0, KERNEL_GROUP))?;
        Ok(Self { socket })
    }

    /// Waits up to `timeout` for a block-device message, then reads every
    /// message already queued, so that one burst (a reader's disk and its
    /// partitions) wakes the caller once.
    pub fn wait(&self, timeout: Duration) -> Woken {
        let millis = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
        let mut fds = [PollFd::new(self.socket.as_fd(), PollFlags::POLLIN)];
        // An interrupted or failed poll is a timeout: the caller lists the
        // disks anyway.
        if !matches!(nix::poll::poll(&mut fds, PollTimeout::from(millis)), Ok(n) if n > 0) {
            return Woken::Timeout;
        }
        let mut woken = Woken::Timeout;
        let mut buffer = vec![0u8; 8192];
        while let Ok(len) =
            socket::recv(std::os::fd::AsRawFd::as_raw_fd(&self.socket), &mut buffer, socket::MsgFlags::MSG_DONTWAIT)
        {
            if len == 0 {
                break;
            }
            if is_block_event(&buffer[..len]) {
                woken = Woken::Block;
            }
        }
        woken
    }
}

/// Whether one message is the kernel's about a block device: a header
/// `ACTION@DEVPATH` and a `SUBSYSTEM=block` field. udev's own messages
/// (which start `libudev`) and anything malformed are not.
pub fn is_block_event(message: &[u8]) -> bool {
    let mut fields = message.split(|&b| b == 0);
    let Some(header) = fields.next() else { return false };
    if !header.contains(&b'@') || header.starts_with(b"libudev") {
        return false;
    }
    fields.any(|field| field == b"SUBSYSTEM=block")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_devices_change_is_a_block_event() {
        let message = b"change@/devices/virtual/block/loop3\0ACTION=change\0DEVPATH=/devices/virtual/block/loop3\0SUBSYSTEM=block\0RESIZE=1\0DEVNAME=loop3\0DEVTYPE=disk\0SEQNUM=4711\0MAJOR=7\0MINOR=3\0";
        assert!(is_block_event(message));
    }

    #[test]
    fn other_subsystems_udev_and_garbage_are_not() {
        assert!(!is_block_event(b"add@/devices/pci0000:00/usb1\0ACTION=add\0SUBSYSTEM=usb\0"));
        assert!(!is_block_event(b"libudev\0\xfe\xed\xca\xfeSUBSYSTEM=block\0"));
        assert!(!is_block_event(b""));
        assert!(!is_block_event(b"SUBSYSTEM=block\0"));
        assert!(!is_block_event(b"\xff\xff@\0SUBSYSTEM=blockx\0"));
    }
}
