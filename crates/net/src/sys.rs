//! The only place this crate calls the kernel through `libc`: socket buffer
//! sizes and the interface lookup behind the link-speed peak. Each
//! `unsafe` block says why it holds.

use std::ffi::CStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

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

/// How traffic to a peer leaves this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// The peer is this machine (loopback, or one of its own addresses).
    Loopback,
    /// Through this interface; its link speed in Mb/s when sysfs says.
    Interface {
        /// Interface name (`eth0`).
        name: String,
        /// `/sys/class/net/<name>/speed`, when positive.
        speed_mbps: Option<u64>,
        /// No device behind it (`/sys/class/net/<name>/device` absent):
        /// veth, bridge, tun, bond... whose "speed" is a made-up number.
        virtual_if: bool,
    },
    /// Could not tell (no route, no interface owns the source address).
    Unknown(String),
}

/// Finds the interface the kernel would use to reach `peer`: a connected
/// UDP socket (which sends nothing) tells the source address the routing
/// table picks, and the interface owning that address is the way out.
pub(crate) fn route_to(peer: IpAddr) -> Route {
    if peer.is_loopback() {
        return Route::Loopback;
    }
    let any: IpAddr = match peer {
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let local = UdpSocket::bind(SocketAddr::new(any, 0))
        .and_then(|s| {
            s.connect(SocketAddr::new(peer, 9))?;
            s.local_addr()
        })
        .map(|a| a.ip());
    let local = match local {
        Ok(ip) => ip,
        Err(e) => return Route::Unknown(format!("no route to {peer}: {e}")),
    };
    if local.is_loopback() || local == peer {
        return Route::Loopback;
    }
    match interface_of(local) {
        Some(name) if name == "lo" => Route::Loopback,
        Some(name) => {
            let speed_mbps = std::fs::read_to_string(format!("/sys/class/net/{name}/speed"))
                .ok()
                .and_then(|s| s.trim().parse::<i64>().ok())
                .filter(|&s| s > 0)
                .map(|s| s as u64);
            let virtual_if =
                !std::path::Path::new(&format!("/sys/class/net/{name}/device")).exists();
            Route::Interface {
                name,
                speed_mbps,
                virtual_if,
            }
        }
        None => Route::Unknown(format!("no interface owns the source address {local}")),
    }
}

/// The name of the interface that has address `ip`.
fn interface_of(ip: IpAddr) -> Option<String> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head to `head` on success; the list is
    // freed below with freeifaddrs and not used afterwards.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return None;
    }
    let mut found = None;
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
        if addr == ip {
            // SAFETY: ifa_name is a non-null NUL-terminated string owned by
            // the list, copied out before the list is freed.
            let name = unsafe { CStr::from_ptr(ifa.ifa_name) };
            found = Some(name.to_string_lossy().into_owned());
            break;
        }
    }
    // SAFETY: `head` came from a successful getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_recognised() {
        assert_eq!(route_to("127.0.0.1".parse().unwrap()), Route::Loopback);
        assert_eq!(route_to("::1".parse().unwrap()), Route::Loopback);
        assert_eq!(
            interface_of("127.0.0.1".parse().unwrap()).as_deref(),
            Some("lo")
        );
    }

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
