//! The only place this crate calls the kernel through `libc`: socket buffer
//! sizes and the interface lookup behind the link-speed peak. Each
//! `unsafe` block says why it holds.

use std::ffi::CStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::Path;

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
    /// Through this interface.
    Interface(NetIf),
    /// Could not tell (no route, no interface owns the source address).
    Unknown(String),
}

/// How the outgoing interface was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// The kernel's own routing decision (rtnetlink `RTM_GETROUTE`, what
    /// `ip route get PEER` asks): the output interface, policy routing
    /// included.
    Netlink,
    /// The source address a connected UDP socket gets, and the interface
    /// that owns it (when rtnetlink is not available). Usually the same
    /// interface; not when a route names another interface's address as
    /// its source.
    SourceAddress,
}

/// An interface and what sysfs says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NetIf {
    /// Interface name (`eth0`).
    pub name: String,
    /// The link type rtnetlink reports (`veth`, `vlan`, `bond`, `bridge`,
    /// `tun`...); `None` for an ordinary NIC driver (or when unknown).
    pub link_kind: Option<String>,
    /// `/sys/class/net/<name>/speed`, when positive (Mb/s).
    pub speed_mbps: Option<u64>,
    /// What is behind it.
    pub class: IfClass,
    /// How it was found.
    pub lookup: Lookup,
}

/// What kind of interface carries the traffic, which decides whether its
/// "speed" is a physical limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IfClass {
    /// A device (`/sys/class/net/<name>/device`) driven by a NIC driver:
    /// its speed is the negotiated line rate.
    Physical {
        /// The driver (`ixgbe`, `mlx5_core`), when sysfs names one.
        driver: Option<String>,
    },
    /// A device driven by a paravirtual driver (virtio_net, vmxnet3,
    /// hv_netvsc, xen-netfront): a hypervisor's queue, not a wire; a speed
    /// it reports is the hypervisor's setting, not a line rate.
    Paravirtual {
        /// The driver.
        driver: String,
    },
    /// No device of its own but built on other interfaces
    /// (`/sys/class/net/<name>/lower_*`): VLAN, macvlan, bond, team,
    /// bridge.
    Stacked {
        /// The interfaces it sits on, each classified in turn.
        lower: Vec<NetIf>,
    },
    /// No device and nothing below it: veth, tun/tap, dummy, wireguard...
    /// Whatever speed it reports (a veth says 10000) is made up.
    Virtual,
}

/// Drivers of paravirtual NICs: a device exists, but it is a hypervisor's
/// queue rather than a wire.
const PARAVIRTUAL_DRIVERS: &[&str] = &["virtio_net", "vmxnet3", "hv_netvsc", "xen-netfront", "vif"];

/// Stacked link types whose traffic leaves through their single lower
/// interface at its line rate.
const PASS_THROUGH_KINDS: &[&str] = &["vlan", "macvlan", "macvtap", "ipvlan", "ipvtap"];

/// Link types that spread traffic over their lower interfaces and report
/// the sum of their speeds (active-backup: the active link's).
const AGGREGATE_KINDS: &[&str] = &["bond", "team"];

impl NetIf {
    /// The line rate a byte stream through this interface cannot exceed,
    /// with the interface whose speed it is, when there is one: a physical
    /// NIC's speed; a VLAN's (or macvlan's) physical lower interface's; a
    /// bond's or team's own (the sum over its links) when every link is
    /// physical. Nothing for virtual, paravirtual, bridged or unknown
    /// paths.
    pub fn line_rate(&self) -> Option<(u64, &NetIf)> {
        match &self.class {
            IfClass::Physical { .. } => self.speed_mbps.map(|s| (s, self)),
            IfClass::Stacked { lower } => {
                let kind = self.link_kind.as_deref().unwrap_or("");
                if PASS_THROUGH_KINDS.contains(&kind) {
                    match lower.as_slice() {
                        [one] => one.line_rate(),
                        _ => None,
                    }
                } else if AGGREGATE_KINDS.contains(&kind)
                    && !lower.is_empty()
                    && lower.iter().all(|l| l.line_rate().is_some())
                {
                    self.speed_mbps.map(|s| (s, self))
                } else {
                    None
                }
            }
            IfClass::Paravirtual { .. } | IfClass::Virtual => None,
        }
    }

    /// One phrase: `eth0 (driver ixgbe, 10000 Mb/s)`, `bsb1, a virtual
    /// interface (veth)`, `eth0.7 (vlan) on eth0 (driver ixgbe, ...)`.
    pub fn describe(&self) -> String {
        let speed = |s: Option<u64>| match s {
            Some(s) => format!("{s} Mb/s"),
            None => "no link speed reported".to_string(),
        };
        match &self.class {
            IfClass::Physical { driver } => format!(
                "{} (a NIC{}, {})",
                self.name,
                driver
                    .as_deref()
                    .map(|d| format!(", driver {d}"))
                    .unwrap_or_default(),
                speed(self.speed_mbps)
            ),
            IfClass::Paravirtual { driver } => format!(
                "{}, a paravirtual NIC (driver {driver}: a hypervisor's queue, not a wire; {})",
                self.name,
                match self.speed_mbps {
                    Some(s) => format!("its reported {s} Mb/s is the hypervisor's setting"),
                    None => "no link speed reported".into(),
                }
            ),
            IfClass::Stacked { lower } => format!(
                "{} ({}) on {}",
                self.name,
                self.link_kind.as_deref().unwrap_or("stacked"),
                lower
                    .iter()
                    .map(NetIf::describe)
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
            IfClass::Virtual => format!(
                "{}, a virtual interface ({}) with no device behind it{}",
                self.name,
                self.link_kind.as_deref().unwrap_or("no NIC driver"),
                self.speed_mbps
                    .map(|s| format!("; its reported {s} Mb/s is not a physical link speed"))
                    .unwrap_or_default()
            ),
        }
    }

    /// A one-word class for machine-readable facts.
    pub fn class_name(&self) -> &'static str {
        match self.class {
            IfClass::Physical { .. } => "physical",
            IfClass::Paravirtual { .. } => "paravirtual",
            IfClass::Stacked { .. } => "stacked",
            IfClass::Virtual => "virtual",
        }
    }
}

/// The sysfs directory of network interfaces.
const SYS_CLASS_NET: &str = "/sys/class/net";

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

/// Classifies interface `name` from the sysfs tree at `sys`
/// (`/sys/class/net`, or a test's copy): a `device` link means hardware
/// (paravirtual if its driver is one of [`PARAVIRTUAL_DRIVERS`]);
/// `lower_*` links mean a stacked interface (each lower one classified in
/// turn, four levels at most); neither means a virtual one.
pub(crate) fn classify(sys: &Path, name: &str, link_kind: Option<String>, lookup: Lookup) -> NetIf {
    classify_at(sys, name, link_kind, lookup, 0)
}

fn classify_at(
    sys: &Path,
    name: &str,
    link_kind: Option<String>,
    lookup: Lookup,
    depth: u32,
) -> NetIf {
    let dir = sys.join(name);
    let speed_mbps = std::fs::read_to_string(dir.join("speed"))
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .filter(|&s| s > 0)
        .map(|s| s as u64);
    let class = if dir.join("device").exists() {
        let driver = std::fs::read_link(dir.join("device").join("driver"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
        match driver {
            Some(d) if PARAVIRTUAL_DRIVERS.contains(&d.as_str()) => {
                IfClass::Paravirtual { driver: d }
            }
            driver => IfClass::Physical { driver },
        }
    } else {
        let mut lower: Vec<String> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .filter_map(|e| {
                e.ok()?
                    .file_name()
                    .to_str()?
                    .strip_prefix("lower_")
                    .map(str::to_string)
            })
            .collect();
        lower.sort();
        if lower.is_empty() || depth >= 4 {
            IfClass::Virtual
        } else {
            IfClass::Stacked {
                lower: lower
                    .iter()
                    .map(|l| {
                        let kind = uevent_devtype(sys, l);
                        classify_at(sys, l, kind, lookup, depth + 1)
                    })
                    .collect(),
            }
        }
    };
    let link_kind = link_kind.or_else(|| uevent_devtype(sys, name));
    NetIf {
        name: name.to_string(),
        link_kind,
        speed_mbps,
        class,
        lookup,
    }
}

/// `DEVTYPE=` of `/sys/class/net/<name>/uevent` (vlan, bridge, bond...),
/// the link type where rtnetlink did not tell it.
fn uevent_devtype(sys: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(sys.join(name).join("uevent"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("DEVTYPE=").map(str::to_string))
}

/// The name of the interface that has address `ip`.
fn interface_of(ip: IpAddr) -> Option<String> {
    addresses()
        .into_iter()
        .find_map(|(name, addr)| (addr == ip).then_some(name))
}

/// Every (interface, address) pair of this machine (IPv4 and IPv6).
fn addresses() -> Vec<(String, IpAddr)> {
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

/// The two rtnetlink questions `ip route get` and `ip link show` ask: which
/// interface the kernel routes a destination through, and what that
/// interface is. Messages are built and parsed as bytes (native byte
/// order, 4-byte aligned attributes, as `linux/netlink.h` and
/// `linux/rtnetlink.h` define them); the only `unsafe` is opening the
/// socket.
#[cfg(target_os = "linux")]
mod netlink {
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
        let bad =
            |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("rtnetlink: {what}"));
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

    /// This machine's non-loopback IPv4 addresses.
    fn own_addresses() -> Vec<IpAddr> {
        addresses()
            .into_iter()
            .map(|(_, ip)| ip)
            .filter(|ip| ip.is_ipv4() && !ip.is_loopback())
            .collect()
    }

    /// A fake `/sys/class/net` in a temporary directory, removed on drop.
    struct FakeSys(std::path::PathBuf);

    impl FakeSys {
        fn new(tag: &str) -> FakeSys {
            let d = std::env::temp_dir()
                .join(format!("benchsuite-net-sys-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(d.join("drivers")).unwrap();
            FakeSys(d)
        }

        fn net(&self) -> std::path::PathBuf {
            self.0.join("class-net")
        }

        /// An interface; `driver` gives it a device driven by that driver.
        fn add(&self, name: &str, speed: i64, driver: Option<&str>, lower: &[&str]) {
            let dir = self.net().join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("speed"), format!("{speed}\n")).unwrap();
            if let Some(d) = driver {
                let target = self.0.join("drivers").join(d);
                std::fs::create_dir_all(&target).unwrap();
                std::fs::create_dir_all(dir.join("device")).unwrap();
                std::os::unix::fs::symlink(&target, dir.join("device").join("driver")).unwrap();
            }
            for l in lower {
                std::os::unix::fs::symlink(self.net().join(l), dir.join(format!("lower_{l}")))
                    .unwrap();
            }
        }

        fn classify(&self, name: &str, kind: Option<&str>) -> NetIf {
            classify(&self.net(), name, kind.map(str::to_string), Lookup::Netlink)
        }
    }

    impl Drop for FakeSys {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn only_physical_links_have_a_line_rate() {
        let sys = FakeSys::new("classes");
        sys.add("eth1", 25000, Some("mlx5_core"), &[]);
        sys.add("eth2", -1, Some("igb"), &[]);
        sys.add("ens3", 10000, Some("virtio_net"), &[]);
        sys.add("veth0", 10000, None, &[]);
        sys.add("eth1.7", 25000, None, &["eth1"]);
        // As the kernel writes it for a VLAN (read for lower interfaces).
        std::fs::write(
            sys.net().join("eth1.7/uevent"),
            "DEVTYPE=vlan\nINTERFACE=eth1.7\n",
        )
        .unwrap();
        sys.add("br0", 10000, None, &["eth1", "eth2"]);
        sys.add("bond0", 50000, None, &["eth1", "eth1.7"]);
        sys.add("bond1", 20000, None, &["veth0"]);

        let nic = sys.classify("eth1", None);
        assert_eq!(
            nic.class,
            IfClass::Physical {
                driver: Some("mlx5_core".into())
            }
        );
        assert_eq!(
            nic.line_rate().map(|(s, i)| (s, i.name.as_str())),
            Some((25000, "eth1"))
        );
        assert!(
            nic.describe().contains("driver mlx5_core, 25000 Mb/s"),
            "{}",
            nic.describe()
        );

        // A NIC with no speed (link down) has none.
        let down = sys.classify("eth2", None);
        assert_eq!((down.speed_mbps, down.line_rate()), (None, None));

        // virtio says 10000 here, but that is the hypervisor's number.
        let pv = sys.classify("ens3", None);
        assert_eq!(
            pv.class,
            IfClass::Paravirtual {
                driver: "virtio_net".into()
            }
        );
        assert_eq!(pv.speed_mbps, Some(10000));
        assert_eq!(pv.line_rate(), None);
        assert!(pv.describe().contains("paravirtual"), "{}", pv.describe());

        // A veth reports 10000 Mb/s and is still no link.
        let veth = sys.classify("veth0", Some("veth"));
        assert_eq!(veth.class, IfClass::Virtual);
        assert_eq!(veth.speed_mbps, Some(10000));
        assert_eq!(veth.line_rate(), None);
        let d = veth.describe();
        assert!(
            d.contains("veth0")
                && d.contains("virtual interface (veth)")
                && d.contains("not a physical link"),
            "{d}"
        );

        // A VLAN leaves through its NIC at the NIC's rate.
        let vlan = sys.classify("eth1.7", Some("vlan"));
        assert!(matches!(&vlan.class, IfClass::Stacked { lower } if lower.len() == 1));
        assert_eq!(
            vlan.line_rate().map(|(s, i)| (s, i.name.as_str())),
            Some((25000, "eth1"))
        );
        assert!(
            vlan.describe().starts_with("eth1.7 (vlan) on eth1"),
            "{}",
            vlan.describe()
        );
        // ...but one marked as a bridge could use either port.
        assert_eq!(sys.classify("br0", Some("bridge")).line_rate(), None);
        // A bond over physical links (here nested) has its own summed speed;
        // over a veth it has none.
        assert_eq!(
            sys.classify("bond0", Some("bond"))
                .line_rate()
                .map(|(s, _)| s),
            Some(50000)
        );
        assert_eq!(sys.classify("bond1", Some("bond")).line_rate(), None);
        // Without rtnetlink's word, uevent's DEVTYPE names the kind; with
        // neither, a stacked interface is only "stacked": no rate.
        assert_eq!(
            sys.classify("eth1.7", None).link_kind.as_deref(),
            Some("vlan")
        );
        assert_eq!(sys.classify("br0", None).line_rate(), None);
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
