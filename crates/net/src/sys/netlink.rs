//! The two rtnetlink questions `ip route get` and `ip link show` ask: which
//! interface the kernel routes a destination through, and what that
//! interface is. Messages are built and parsed as bytes (native byte
//! order, 4-byte aligned attributes, as `linux/netlink.h` and
//! `linux/rtnetlink.h` define them); the only `unsafe` is opening the
//! socket.
//!
//! Linux only; [`crate::route`] asks it first and falls back to the
//! source address where it fails.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::IpAddr;
use std::os::fd::{FromRawFd, OwnedFd};

const NLMSG_HDRLEN: usize = 16;
const NLM_F_REQUEST: u16 = 1;
const NLMSG_ERROR: u16 = 2;
const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const RTM_NEWROUTE: u16 = 24;
const RTM_GETROUTE: u16 = 26;
/// `struct rtmsg`.
const RTMSG_LEN: usize = 12;
/// `struct ifinfomsg`.
const IFINFOMSG_LEN: usize = 16;
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTN_LOCAL: u8 = 2;
const IFLA_IFNAME: u16 = 3;
const IFLA_LINKINFO: u16 = 18;
const IFLA_INFO_KIND: u16 = 1;
/// Attribute type bits (without NLA_F_NESTED and NLA_F_NET_BYTEORDER).
const NLA_TYPE_MASK: u16 = 0x3fff;

/// The routing decision for one destination.
#[derive(Debug)]
pub(crate) struct RouteAnswer {
    /// The destination is one of this machine's addresses.
    pub local: bool,
    /// The output interface's index.
    pub oif: Option<u32>,
}

/// An interface's name and link type.
#[derive(Debug)]
pub(crate) struct LinkAnswer {
    pub name: String,
    pub kind: Option<String>,
}

/// `ip route get DST`: the kernel's route to `dst` (policy routing
/// included); sends nothing to `dst`.
pub(crate) fn route(dst: IpAddr) -> io::Result<RouteAnswer> {
    let (family, addr): (u8, Vec<u8>) = match dst {
        IpAddr::V4(a) => (libc::AF_INET as u8, a.octets().to_vec()),
        IpAddr::V6(a) => (libc::AF_INET6 as u8, a.octets().to_vec()),
    };
    let mut body = vec![0u8; RTMSG_LEN];
    body[0] = family;
    body[1] = (addr.len() * 8) as u8; // rtm_dst_len
    push_attr(&mut body, RTA_DST, &addr);
    let (head, attrs) = ask(RTM_GETROUTE, RTM_NEWROUTE, &body, RTMSG_LEN)?;
    let oif = find_attr(&attrs, RTA_OIF)
        .and_then(|v| v.get(..4))
        .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
    Ok(RouteAnswer {
        local: head[7] == RTN_LOCAL, // rtm_type
        oif,
    })
}

/// `ip -d link show` for one interface index: its name and link type.
pub(crate) fn link(index: u32) -> io::Result<LinkAnswer> {
    let mut body = vec![0u8; IFINFOMSG_LEN];
    body[0] = libc::AF_UNSPEC as u8;
    body[4..8].copy_from_slice(&(index as i32).to_ne_bytes()); // ifi_index
    let (_, attrs) = ask(RTM_GETLINK, RTM_NEWLINK, &body, IFINFOMSG_LEN)?;
    let name = find_attr(&attrs, IFLA_IFNAME)
        .map(c_string)
        .ok_or_else(|| io::Error::other("rtnetlink: no interface name in the answer"))?;
    let kind = find_attr(&attrs, IFLA_LINKINFO)
        .and_then(|info| find_attr(info, IFLA_INFO_KIND))
        .map(c_string)
        .filter(|k| !k.is_empty());
    Ok(LinkAnswer { name, kind })
}

/// Sends one request and returns the answer's fixed header and its
/// attributes.
fn ask(request: u16, answer: u16, body: &[u8], fixed: usize) -> io::Result<(Vec<u8>, Vec<u8>)> {
    // SAFETY: socket() takes no pointers; a non-negative result is a new
    // descriptor that nothing else owns, so OwnedFd may close it.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            libc::NETLINK_ROUTE,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket() and is owned by no one else.
    let mut sock = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    const SEQ: u32 = 1;
    let mut msg = Vec::with_capacity(NLMSG_HDRLEN + body.len());
    msg.extend_from_slice(&((NLMSG_HDRLEN + body.len()) as u32).to_ne_bytes());
    msg.extend_from_slice(&request.to_ne_bytes());
    msg.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    msg.extend_from_slice(&SEQ.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes()); // to the kernel
    msg.extend_from_slice(body);
    // An unbound, unconnected netlink socket writes to the kernel, which
    // answers within the write: the reply is queued when it returns (so
    // the non-blocking read cannot miss it).
    sock.write_all(&msg)?;
    let mut buf = vec![0u8; 64 << 10];
    let n = sock.read(&mut buf)?;
    parse_answer(&buf[..n], answer, SEQ, fixed)
}

/// Finds the answer of type `answer` with sequence number `seq` in a
/// netlink datagram; an `NLMSG_ERROR` becomes its errno.
pub(super) fn parse_answer(
    mut buf: &[u8],
    answer: u16,
    seq: u32,
    fixed: usize,
) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("rtnetlink: {what}"));
    while buf.len() >= NLMSG_HDRLEN {
        let len = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        let kind = u16::from_ne_bytes([buf[4], buf[5]]);
        let their_seq = u32::from_ne_bytes([buf[8], buf[9], buf[10], buf[11]]);
        if len < NLMSG_HDRLEN || len > buf.len() {
            return Err(bad("a message overruns the datagram"));
        }
        let payload = &buf[NLMSG_HDRLEN..len];
        if their_seq == seq {
            if kind == NLMSG_ERROR {
                let code = payload
                    .get(..4)
                    .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
                    .ok_or_else(|| bad("a short error message"))?;
                return Err(if code < 0 {
                    io::Error::from_raw_os_error(-code)
                } else {
                    bad("an acknowledgement instead of an answer")
                });
            }
            if kind == answer {
                if payload.len() < fixed {
                    return Err(bad("a short answer"));
                }
                return Ok((payload[..fixed].to_vec(), payload[fixed..].to_vec()));
            }
        }
        buf = &buf[align(len).min(buf.len())..];
    }
    Err(bad("no answer to the request"))
}

fn align(n: usize) -> usize {
    (n + 3) & !3
}

pub(super) fn push_attr(buf: &mut Vec<u8>, kind: u16, value: &[u8]) {
    buf.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(value);
    buf.resize(align(buf.len()), 0);
}

/// The value of the first attribute of type `kind` in a run of
/// attributes.
pub(super) fn find_attr(mut attrs: &[u8], kind: u16) -> Option<&[u8]> {
    while attrs.len() >= 4 {
        let len = u16::from_ne_bytes([attrs[0], attrs[1]]) as usize;
        let t = u16::from_ne_bytes([attrs[2], attrs[3]]) & NLA_TYPE_MASK;
        if len < 4 || len > attrs.len() {
            return None;
        }
        if t == kind {
            return Some(&attrs[4..len]);
        }
        attrs = &attrs[align(len).min(attrs.len())..];
    }
    None
}

/// A NUL-terminated (or not) attribute string.
fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use crate::sys::netlink;

    #[test]
    #[cfg(target_os = "linux")]
    fn netlink_errors_and_attributes_parse() {
        // An NLMSG_ERROR answer to our sequence number carries -errno.
        let mut m = Vec::new();
        m.extend_from_slice(&36u32.to_ne_bytes());
        m.extend_from_slice(&2u16.to_ne_bytes());
        m.extend_from_slice(&0u16.to_ne_bytes());
        m.extend_from_slice(&7u32.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(&(-libc::ENETUNREACH).to_ne_bytes());
        m.resize(36, 0);
        let e = netlink::parse_answer(&m, 24, 7, 12).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENETUNREACH));
        // Another sequence number is not our answer.
        assert!(netlink::parse_answer(&m, 24, 8, 12).is_err());
        // A length past the end is rejected, not read.
        let mut short = m.clone();
        short[0..4].copy_from_slice(&100u32.to_ne_bytes());
        assert!(netlink::parse_answer(&short, 24, 7, 12).is_err());
        let mut attrs = Vec::new();
        netlink::push_attr(&mut attrs, 3, b"eth0\0");
        netlink::push_attr(&mut attrs, 4, &5u32.to_ne_bytes());
        assert_eq!(attrs.len(), 8 + 4 + 8);
        assert_eq!(netlink::find_attr(&attrs, 4), Some(&5u32.to_ne_bytes()[..]));
        assert_eq!(netlink::find_attr(&attrs, 3), Some(&b"eth0\0"[..]));
        assert_eq!(netlink::find_attr(&attrs, 9), None);
        assert_eq!(netlink::find_attr(&attrs[..6], 4), None);
    }
}
