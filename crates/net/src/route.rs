//! The path to the peer: whether traffic to it stays on this machine
//! (loopback) or leaves through an interface, and which one — the
//! kernel's own routing decision over rtnetlink, else the interface that
//! owns the source address a connected UDP socket gets. What that
//! interface is (NIC, paravirtual, stacked, virtual) and whether it has a
//! line rate is [`crate::nic`]'s question; the system calls are in
//! [`crate::sys`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::Path;

pub(crate) use crate::nic::Lookup;
use crate::nic::{NetIf, SYS_CLASS_NET, classify, uevent_devtype};
use crate::sys::addresses;
#[cfg(target_os = "linux")]
use crate::sys::netlink;

/// How traffic to a peer leaves this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// The peer is this machine (loopback, or one of its own addresses).
    Loopback,
    /// Through this interface.
    Interface(NetIf),
    /// Could not tell (no route, no interface owns the source address).
    Unknown(String),
}

/// Finds the interface the kernel would use to reach `peer` (sending
/// nothing) and classifies it from sysfs. rtnetlink gives the routing
/// decision itself; where it is not available, the source address a
/// connected UDP socket gets names the interface that owns it.
pub(crate) fn route_to(peer: IpAddr) -> Route {
    if peer.is_loopback() {
        return Route::Loopback;
    }
    let sys = Path::new(SYS_CLASS_NET);
    #[cfg(target_os = "linux")]
    if let Ok(r) = netlink::route(peer) {
        if r.local {
            return Route::Loopback;
        }
        if let Some(index) = r.oif
            && let Ok(link) = netlink::link(index)
        {
            if link.name == "lo" {
                return Route::Loopback;
            }
            return Route::Interface(classify(sys, &link.name, link.kind, Lookup::Netlink));
        }
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
            let kind = uevent_devtype(sys, &name);
            Route::Interface(classify(sys, &name, kind, Lookup::SourceAddress))
        }
        None => Route::Unknown(format!("no interface owns the source address {local}")),
    }
}

/// The name of the interface that has address `ip`.
fn interface_of(ip: IpAddr) -> Option<String> {
    addresses()
        .into_iter()
        .find_map(|(name, addr)| (addr == ip).then_some(name))
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
    #[cfg(target_os = "linux")]
    fn the_kernel_routes_loopback_and_own_addresses_locally() {
        let r = netlink::route("127.0.0.1".parse().unwrap()).expect("rtnetlink answers");
        assert!(r.local, "{r:?}");
        let lo = netlink::link(r.oif.expect("an output interface")).unwrap();
        assert_eq!(lo.name, "lo");
        // Each of this machine's own addresses is local too, whatever
        // interface carries it: the peer "is this machine".
        for ip in own_addresses() {
            assert_eq!(route_to(ip), Route::Loopback, "{ip}");
        }
    }

    /// This machine's non-loopback IPv4 addresses.
    fn own_addresses() -> Vec<IpAddr> {
        addresses()
            .into_iter()
            .map(|(_, ip)| ip)
            .filter(|ip| ip.is_ipv4() && !ip.is_loopback())
            .collect()
    }
}
