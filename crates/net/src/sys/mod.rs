//! The only place this crate calls the kernel through `libc` (and the
//! only `unsafe` in it): the thin wrappers over the system calls that std
//! does not offer — `FIONREAD` on a socket, `getifaddrs` — and, in
//! [`netlink`], the rtnetlink client whose one `unsafe` opens its socket.
//! The policy built on them lives elsewhere: which interface reaches a
//! peer in `route`, what that interface is and its line rate in `nic`.
//! Each `unsafe` block says why it holds.

use std::ffi::CStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::AsRawFd;

#[cfg(target_os = "linux")]
pub(crate) mod netlink;

/// Bytes waiting in a socket's receive queue (`FIONREAD`; for UDP, the
/// size of the next datagram, 0 when the queue is empty). `None` if the
/// call fails.
pub(crate) fn pending(sock: &impl AsRawFd) -> Option<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: the descriptor is open for the call; FIONREAD writes one c_int
    // to the pointer, which points at `n`.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::FIONREAD, &mut n as *mut libc::c_int) };
    (rc == 0).then_some(n.max(0) as usize)
}

/// Every (interface, address) pair of this machine (IPv4 and IPv6).
pub(crate) fn addresses() -> Vec<(String, IpAddr)> {
    let mut out = Vec::new();
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head to `head` on success; the list is
    // freed below with freeifaddrs and not used afterwards.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return out;
    }
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a non-null node of the list getifaddrs returned,
        // valid until freeifaddrs.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_addr is non-null and points at a sockaddr whose
        // sa_family says which larger struct it is.
        let family = unsafe { (*ifa.ifa_addr).sa_family } as libc::c_int;
        let addr = match family {
            libc::AF_INET => {
                // SAFETY: the family is AF_INET, so it is a sockaddr_in.
                let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)))
            }
            libc::AF_INET6 => {
                // SAFETY: the family is AF_INET6, so it is a sockaddr_in6.
                let sin6 = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
                IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr))
            }
            _ => continue,
        };
        // SAFETY: ifa_name is a non-null NUL-terminated string owned by the
        // list, copied out before the list is freed.
        let name = unsafe { CStr::from_ptr(ifa.ifa_name) };
        out.push((name.to_string_lossy().into_owned(), addr));
    }
    // SAFETY: `head` came from a successful getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    #[test]
    fn pending_counts_queued_datagrams() {
        let r = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(pending(&r), Some(0));
        let w = UdpSocket::bind("127.0.0.1:0").unwrap();
        w.send_to(&[1u8; 100], r.local_addr().unwrap()).unwrap();
        // Loopback delivers during the send; the next datagram's size shows.
        assert_eq!(pending(&r), Some(100));
    }
}
