//! Who is asking: the client's address, its network, and the submitter id
//! a result is counted under.
//!
//! - The address is the TCP peer's. Only when the peer is a proxy named by
//!   `--trusted-proxy CIDR` is `X-Forwarded-For` read: from its right end,
//!   the first address that is not itself a trusted proxy is the client
//!   (the left part is whatever the client wrote, and proves nothing).
//!   Without the option, forwarding headers are ignored.
//! - A submitter is a network, not an address: a /24 for IPv4, a /48 for
//!   IPv6 (`--v6-prefix`, [`DEFAULT_V6_PREFIX`]). A home or an office is
//!   handed a /48 or a /56 by its provider, and any of the 65 536 /64s in
//!   it is the same person's (RFC 6177 and RIPE-690 recommend /48 to /56
//!   per site); counting per /64 let one home be many submitters. An
//!   IPv4-mapped IPv6 address counts as IPv4.
//! - The server stores no address: a submitter id is a keyed hash of the
//!   network under a secret salt that the database keeps, so ids compare
//!   within one leaderboard and mean nothing outside it (a bare hash of a
//!   /24 could be reversed by trying all 2^24).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use axum::http::HeaderMap;
use sha2::{Digest, Sha256};

/// A network in CIDR notation (`10.0.0.0/8`, `fd00::/8`, or one address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.network, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => mask_v4(ip, self.prefix) == net,
            (IpAddr::V6(net), IpAddr::V6(ip)) => mask_v6(ip, self.prefix) == net,
            _ => false,
        }
    }
}

/// A `--trusted-proxy` that is no network.
#[derive(Debug, thiserror::Error)]
#[error("{text:?}: {why}; give a network such as 127.0.0.1/32 or 10.0.0.0/8")]
pub struct CidrError {
    text: String,
    why: &'static str,
}

impl FromStr for Cidr {
    type Err = CidrError;

    fn from_str(text: &str) -> Result<Cidr, CidrError> {
        let bad = |why: &'static str| CidrError { text: text.to_owned(), why };
        let (address, prefix) = match text.trim().split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text.trim(), None),
        };
        let ip = canonical(address.parse::<IpAddr>().map_err(|_| bad("not an IP address"))?);
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => {
                p.parse::<u8>().ok().filter(|p| *p <= max).ok_or_else(|| bad("the prefix length is out of range"))?
            }
            None => max,
        };
        let network = match ip {
            IpAddr::V4(v4) => IpAddr::V4(mask_v4(v4, prefix)),
            IpAddr::V6(v6) => IpAddr::V6(mask_v6(v6, prefix)),
        };
        Ok(Cidr { network, prefix })
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// An IPv4-mapped IPv6 address as IPv4; anything else as it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn mask_v4(ip: Ipv4Addr, prefix: u8) -> Ipv4Addr {
    let bits = u32::from(ip);
    let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(prefix.min(32))) };
    Ipv4Addr::from(bits & mask)
}

fn mask_v6(ip: Ipv6Addr, prefix: u8) -> Ipv6Addr {
    let bits = u128::from(ip);
    let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - u32::from(prefix.min(128))) };
    Ipv6Addr::from(bits & mask)
}

/// The client of a request: the peer, or what trusted proxies forwarded.
pub fn client_address(peer: IpAddr, headers: &HeaderMap, trusted: &[Cidr]) -> IpAddr {
    let peer = canonical(peer);
    if !trusted.iter().any(|c| c.contains(peer)) {
        return peer;
    }
    // Every X-Forwarded-For header, in order, as one list.
    let hops: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|hop| parse_hop(hop.trim()))
        .collect();
    // From the right: the first hop not a trusted proxy. When every hop is
    // one (or the list is empty or unreadable), the nearest one is it.
    hops.iter()
        .rev()
        .copied()
        .map(canonical)
        .find(|ip| !trusted.iter().any(|c| c.contains(*ip)))
        .unwrap_or(hops.first().copied().map(canonical).unwrap_or(peer))
}

/// An address as proxies write it: `1.2.3.4`, `1.2.3.4:5678`, `[::1]:80`, `::1`.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(addr) = hop.parse::<std::net::SocketAddr>() {
        return Some(addr.ip());
    }
    None
}

/// The IPv6 prefix a network is counted by unless `--v6-prefix` says otherwise.
pub const DEFAULT_V6_PREFIX: u8 = 48;

/// The IPv4 prefix a network is counted by.
pub const V4_PREFIX: u8 = 24;

/// How addresses group into networks: a /24 for IPv4, a configurable
/// prefix for IPv6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Networks {
    pub v6_prefix: u8,
}

impl Default for Networks {
    fn default() -> Self {
        Networks { v6_prefix: DEFAULT_V6_PREFIX }
    }
}

impl Networks {
    /// The network an address is counted as, as an address, and its prefix.
    pub fn of(&self, ip: IpAddr) -> (IpAddr, u8) {
        match canonical(ip) {
            IpAddr::V4(v4) => (IpAddr::V4(mask_v4(v4, V4_PREFIX)), V4_PREFIX),
            IpAddr::V6(v6) => (IpAddr::V6(mask_v6(v6, self.v6_prefix)), self.v6_prefix),
        }
    }

    /// The network an address is counted as.
    pub fn network_of(&self, ip: IpAddr) -> IpAddr {
        self.of(ip).0
    }

    /// The submitter id of a client: 32 hex digits of SHA-256 over the
    /// salt and its network.
    pub fn submitter_id(&self, salt: &[u8], ip: IpAddr) -> String {
        submitter_id_of(salt, self.of(ip))
    }
}

fn submitter_id_of(salt: &[u8], (network, prefix): (IpAddr, u8)) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"storage-score submitter v1\0");
    hasher.update(salt);
    hasher.update(b"\0");
    hasher.update(format!("{network}/{prefix}").as_bytes());
    crate::auth::hex(&hasher.finalize()[..16])
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn forwarded(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append("x-forwarded-for", HeaderValue::from_str(v).unwrap());
        }
        headers
    }

    #[test]
    fn networks_per_24_and_48() {
        let salt = b"salt";
        let nets = Networks::default();
        let id = |text: &str| nets.submitter_id(salt, ip(text));
        assert_eq!(id("127.0.1.1"), id("127.0.1.200"));
        assert_ne!(id("127.0.1.1"), id("127.0.2.1"));
        assert_eq!(id("2001:db8:1:2::1"), id("2001:db8:1:2:ffff::9"));
        // Two /64s of one /48: one home, one submitter.
        assert_eq!(id("2001:db8:1:2::1"), id("2001:db8:1:3::1"));
        assert_eq!(id("2001:db8:1:2::1"), id("2001:db8:1:ffff::1"));
        assert_ne!(id("2001:db8:1:2::1"), id("2001:db8:2:2::1"));
        assert_eq!(id("::ffff:10.1.2.3"), id("10.1.2.99"));
        assert_ne!(nets.submitter_id(b"other", ip("10.1.2.3")), id("10.1.2.3"));
        assert_eq!(id("10.1.2.3").len(), 32);
        // --v6-prefix 64 counts each /64 apart.
        let per_64 = Networks { v6_prefix: 64 };
        assert_ne!(per_64.submitter_id(salt, ip("2001:db8:1:2::1")), per_64.submitter_id(salt, ip("2001:db8:1:3::1")));
        assert_eq!(nets.network_of(ip("2001:db8:1:2::1")), ip("2001:db8:1::"));
    }

    #[test]
    fn forwarding_is_read_only_from_trusted_proxies() {
        let proxy: Vec<Cidr> = vec!["127.0.0.1/32".parse().unwrap(), "10.0.0.0/8".parse().unwrap()];
        let headers = forwarded(&["203.0.113.9"]);
        assert_eq!(client_address(ip("198.51.100.7"), &headers, &proxy), ip("198.51.100.7"), "not a proxy");
        assert_eq!(client_address(ip("127.0.0.1"), &headers, &[]), ip("127.0.0.1"), "no option, no trust");
        assert_eq!(client_address(ip("127.0.0.1"), &headers, &proxy), ip("203.0.113.9"));
        // The client wrote its own header first; the proxy appended the truth.
        let spoofed = forwarded(&["1.1.1.1, 203.0.113.9"]);
        assert_eq!(client_address(ip("127.0.0.1"), &spoofed, &proxy), ip("203.0.113.9"));
        // Two proxies: the chain ends at the first untrusted hop.
        let chain = forwarded(&["203.0.113.9", "10.1.1.1"]);
        assert_eq!(client_address(ip("127.0.0.1"), &chain, &proxy), ip("203.0.113.9"));
        assert_eq!(
            client_address(ip("127.0.0.1"), &forwarded(&["garbage, [2001:db8::1]:443"]), &proxy),
            ip("2001:db8::1")
        );
        assert_eq!(client_address(ip("127.0.0.1"), &HeaderMap::new(), &proxy), ip("127.0.0.1"));
    }

    #[test]
    fn cidrs() {
        let c: Cidr = "10.1.2.3/8".parse().unwrap();
        assert_eq!(c.to_string(), "10.0.0.0/8");
        assert!(c.contains(ip("10.200.0.1")) && !c.contains(ip("11.0.0.1")));
        assert!("::1".parse::<Cidr>().unwrap().contains(ip("::1")));
        assert!("10.0.0.0/33".parse::<Cidr>().unwrap_err().to_string().contains("prefix length"));
        assert!("example.org".parse::<Cidr>().is_err());
        assert!("0.0.0.0/0".parse::<Cidr>().unwrap().contains(ip("8.8.8.8")));
    }
}
