//! The only place this crate calls the kernel through `libc` (and the
//! only `unsafe` in it): the thin wrappers over the system calls that std
//! does not offer — `FIONREAD` and `SO_RCVLOWAT` on a socket, `getifaddrs`,
//! `getrandom`, `ppoll` with a nanosecond timeout, a thread's timer
//! slack — and, in
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

/// Wakes a stream's reader only once `want` bytes are queued
/// (`SO_RCVLOWAT`), set once the socket's receive buffer is at least eight
/// times that, so the kernel never grows the buffer for it: where it does,
/// kernels before late 2025 also clamp the advertised window to the mark,
/// which would cap a long path's rate. The window clamp is read before and
/// after, and if it dropped anyway the mark and the clamp are put back.
///
/// Why: a reader that drains the socket faster than the bytes come sleeps
/// after every segment and is woken for the next, and on a virtual machine
/// each such cross-CPU wakeup is an inter-processor interrupt the sending
/// side pays for. Measured on a 2-vCPU KVM guest, a loopback TCP stream's
/// receiver slept ~55 000 times a second (69 KB a wakeup) against iperf3's
/// ~36 000 (118 KB), and the stream ran 15% slower than iperf3's. End of file,
/// a reset and the read timeout still return what is queued, so nothing
/// waits for bytes that will not come.
///
/// Only for reads of at least [`LowWater::FROM`] (256 KiB, four times the
/// 64 KiB mark): below that the mark cost more than it saved. Measured on
/// a 2-vCPU KVM guest (AMD Zen 5), loopback, one stream, interleaved with
/// the mark and without, 4 rounds, medians of GB/s against iperf3 in the
/// same rounds: 128 KiB 2.97 with it, 4.46 without, iperf3 4.17 (three
/// rounds of four 31-49% slower with it, one equal); 256 KiB 4.14 / 3.76 /
/// 3.88; 1 MiB 6.24 / 5.51 / 6.79; 64 KiB 6.24 / 5.92 / 3.19 (within the
/// rounds' spread). In every case the sender's CPU was saturated
/// (`/proc/stat`: 98-100% sys + softirq), so the rate follows how much of
/// loopback's receive processing the receiver takes off it: at 128 KiB
/// with the mark the receiver's CPU was 79% idle (17% sys), iperf3's 54%
/// (40% sys).
///
/// The buffer is looked at every [`LowWater::EVERY`] reads, for at most
/// [`LowWater::PATIENCE`]: on a path where autotuning never grows the
/// buffer that far the reader is left as it is (and pays nothing more).
pub(crate) struct LowWater {
    want: libc::c_int,
    done: bool,
    reads: u32,
    since: Option<std::time::Instant>,
}

impl LowWater {
    const EVERY: u32 = 32;
    const PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);

    /// The smallest read the mark is set for.
    pub(crate) const FROM: usize = 256 * 1024;

    /// For reads of `block` bytes: half a block, at most 64 KiB; none for
    /// reads smaller than [`Self::FROM`].
    pub(crate) fn for_block(block: usize) -> LowWater {
        let want = (block / 2).min(64 * 1024) as libc::c_int;
        LowWater {
            want,
            done: block < Self::FROM,
            reads: 0,
            since: None,
        }
    }

    /// Called after each read; does something every [`Self::EVERY`] reads
    /// until the mark is set or given up.
    pub(crate) fn tick(&mut self, sock: &impl AsRawFd) {
        if self.done {
            return;
        }
        self.reads = self.reads.wrapping_add(1);
        if !self.reads.is_multiple_of(Self::EVERY) {
            return;
        }
        let since = *self.since.get_or_insert_with(std::time::Instant::now);
        let fd = sock.as_raw_fd();
        match get_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF) {
            Some(rcvbuf) if rcvbuf / 8 >= self.want => {}
            Some(_) if since.elapsed() < Self::PATIENCE => return,
            // Left as it is: the reader still works, only wakes more often.
            _ => {
                self.done = true;
                return;
            }
        }
        self.done = true;
        let clamp = get_int(fd, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP);
        if !set_int(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT, self.want) {
            return;
        }
        let after = get_int(fd, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP);
        if let (Some(before), Some(after)) = (clamp, after)
            && after < before
        {
            set_int(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT, 1);
            set_int(fd, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, before);
        }
    }
}

/// An integer socket option, `None` if the call fails.
fn get_int(fd: std::os::fd::RawFd, level: libc::c_int, name: libc::c_int) -> Option<libc::c_int> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `fd` is an open descriptor for the call; getsockopt writes at
    // most `len` bytes (one c_int) to `v` and updates `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            &mut v as *mut libc::c_int as *mut libc::c_void,
            &mut len,
        )
    };
    (rc == 0).then_some(v)
}

/// Sets an integer socket option; false if the call fails.
fn set_int(fd: std::os::fd::RawFd, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> bool {
    // SAFETY: `fd` is an open descriptor for the call; setsockopt reads one
    // c_int from `v`.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    rc == 0
}

/// Waits until `sock` is ready for `events` (`libc::POLLIN`,
/// `libc::POLLOUT`) or `timeout` passed (`None`: no limit); returns the
/// events that happened (0 on a timeout or a signal). On Linux `ppoll`,
/// whose timeout is in nanoseconds; elsewhere `poll`, rounded up to the
/// millisecond.
pub(crate) fn wait_ready(
    sock: &impl AsRawFd,
    events: libc::c_short,
    timeout: Option<std::time::Duration>,
) -> std::io::Result<libc::c_short> {
    let mut fd = libc::pollfd {
        fd: sock.as_raw_fd(),
        events,
        revents: 0,
    };
    #[cfg(target_os = "linux")]
    let rc = {
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: t.subsec_nanos() as libc::c_long,
        });
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `fd` is one valid pollfd for the call (count 1), its
        // descriptor is open; `ts_ptr` is null or points at `ts`, which
        // outlives the call; a null signal mask leaves the mask alone.
        unsafe { libc::ppoll(&mut fd, 1, ts_ptr, std::ptr::null()) }
    };
    #[cfg(not(target_os = "linux"))]
    let rc = {
        let ms = timeout.map_or(-1, |t| {
            t.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int
        });
        // SAFETY: `fd` is one valid pollfd for the call (count 1), its
        // descriptor is open.
        unsafe { libc::poll(&mut fd, 1, ms) }
    };
    if rc < 0 {
        let e = std::io::Error::last_os_error();
        return if e.kind() == std::io::ErrorKind::Interrupted {
            Ok(0)
        } else {
            Err(e)
        };
    }
    Ok(if rc == 0 { 0 } else { fd.revents })
}

/// This thread's timer slack (`PR_SET_TIMERSLACK`) at 1 ns while it lives,
/// put back when dropped: a sleep until a deadline then wakes at the
/// deadline, not up to 50 µs (the default slack) after it. Linux only; a
/// no-op elsewhere or where the call fails.
pub(crate) struct FineTimer {
    #[cfg(target_os = "linux")]
    before: Option<libc::c_ulong>,
}

impl FineTimer {
    pub(crate) fn new() -> FineTimer {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: PR_GET_TIMERSLACK takes no pointer and returns the
            // slack (or -1).
            let before = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
            // SAFETY: PR_SET_TIMERSLACK takes the value itself, no pointer;
            // it changes only this thread.
            let set = before > 0
                && unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) }
                    == 0;
            FineTimer {
                before: set.then_some(before as libc::c_ulong),
            }
        }
        #[cfg(not(target_os = "linux"))]
        FineTimer {}
    }
}

impl Drop for FineTimer {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(v) = self.before {
            // SAFETY: as in `new`.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, v, 0, 0, 0) };
        }
    }
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

/// A TCP connection to `peer` from the local address `local` (port chosen
/// by the kernel): `bind(2)` before `connect(2)`, which std does not
/// offer. Tests use it to come from several loopback addresses (all of
/// 127/8 is this machine on Linux).
#[cfg(target_os = "linux")]
pub(crate) fn connect_from(
    local: IpAddr,
    peer: std::net::SocketAddr,
) -> std::io::Result<std::net::TcpStream> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let domain = if peer.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain socket(2); the result is checked before use.
    let fd = unsafe { libc::socket(domain, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a new descriptor that nothing else owns.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let (addr, len) = sockaddr(std::net::SocketAddr::new(local, 0));
    // SAFETY: `addr` is a sockaddr_storage holding a sockaddr of `len`
    // bytes, alive for the call.
    let rc = unsafe { libc::bind(fd, (&raw const addr).cast(), len) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let (addr, len) = sockaddr(peer);
    loop {
        // SAFETY: as for bind.
        let rc = unsafe { libc::connect(fd, (&raw const addr).cast(), len) };
        if rc == 0 {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(std::net::TcpStream::from(owned))
}

/// A socket address as the kernel takes it.
#[cfg(target_os = "linux")]
fn sockaddr(a: std::net::SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; all zeroes is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match a {
        std::net::SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*v4.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for
            // sockaddr_in.
            unsafe { std::ptr::write((&raw mut storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        std::net::SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for
            // sockaddr_in6.
            unsafe { std::ptr::write((&raw mut storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// Fills `buf` from the kernel's cryptographically secure generator
/// (`getrandom(2)` on Linux, `/dev/urandom` elsewhere): the server's
/// authentication nonces, session ids and the in-process server's one-time
/// token.
pub(crate) fn random_bytes(buf: &mut [u8]) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let mut filled = 0;
        while filled < buf.len() {
            let rest = &mut buf[filled..];
            // SAFETY: the pointer and length describe `rest`, a live,
            // writable slice; getrandom writes at most that many bytes.
            let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            filled += n as usize;
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        use std::io::Read;
        std::fs::File::open("/dev/urandom")?.read_exact(buf)
    }
}

/// This process's limit of open files (`RLIMIT_NOFILE`): (soft, hard),
/// `None` for an unlimited one, or `None` altogether where it is unknown.
#[allow(clippy::useless_conversion, reason = "rlim_t is i64 on some systems")]
pub fn open_file_limit() -> Option<(Option<u64>, Option<u64>)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one `rlimit` into the one passed, which
    // lives for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    let finite =
        |v: libc::rlim_t| (v != libc::RLIM_INFINITY).then(|| u64::try_from(v).unwrap_or(u64::MAX));
    Some((finite(lim.rlim_cur), finite(lim.rlim_max)))
}

/// Raises this process's soft limit of open files to its hard limit (no
/// privilege needed). Where the system refuses — Linux refuses an
/// unlimited soft limit (above `fs.nr_open`), macOS one above `OPEN_MAX` —
/// it tries 2^20, Linux's default `fs.nr_open`, and otherwise the soft
/// limit stays. Returns the limit then, as [`open_file_limit`] gives it.
pub fn raise_open_file_limit() -> Option<(Option<u64>, Option<u64>)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: as in `open_file_limit`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    let fallback: libc::rlim_t = 1 << 20;
    for want in [lim.rlim_max, lim.rlim_max.min(fallback)] {
        if lim.rlim_cur >= want {
            break;
        }
        let raised = libc::rlimit {
            rlim_cur: want,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads the `rlimit` passed, which lives for the
        // call; a soft limit up to the hard one needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            break;
        }
    }
    open_file_limit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    #[test]
    fn the_open_file_limit_is_read() {
        let (soft, hard) = open_file_limit().unwrap();
        if let (Some(s), Some(h)) = (soft, hard) {
            assert!(s <= h && s > 0, "{s} {h}");
        }
    }

    #[test]
    fn random_bytes_differ_each_time() {
        let (mut a, mut b) = ([0u8; 32], [0u8; 32]);
        random_bytes(&mut a).unwrap();
        random_bytes(&mut b).unwrap();
        assert_ne!(a, b);
        assert_ne!(a, [0u8; 32]);
        random_bytes(&mut []).unwrap();
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn connect_from_binds_the_source_address() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = connect_from([127, 0, 0, 7].into(), l.local_addr().unwrap()).unwrap();
        let (_, from) = l.accept().unwrap();
        assert_eq!(from.ip(), IpAddr::from([127, 0, 0, 7]));
        assert_eq!(s.local_addr().unwrap().ip(), from.ip());
    }

    /// A connected loopback pair: (the accepted end, the connecting end).
    fn tcp_pair() -> (std::net::TcpStream, std::net::TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        (l.accept().unwrap().0, c)
    }

    #[test]
    fn low_water_is_set_once_the_buffer_is_large_enough() {
        let (s, _c) = tcp_pair();
        let fd = s.as_raw_fd();
        let lowat = || get_int(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT).unwrap();
        assert_eq!(lowat(), 1);
        // A 1 MiB buffer (the kernel doubles it): 8 × 64 KiB fits.
        assert!(set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, 1 << 20));
        let mut low = LowWater::for_block(LowWater::FROM);
        for _ in 0..LowWater::EVERY - 1 {
            low.tick(&s);
        }
        assert_eq!(lowat(), 1, "looked at only every {} reads", LowWater::EVERY);
        low.tick(&s);
        assert_eq!(lowat(), 64 * 1024);
        // Nothing for reads below 256 KiB (128 KiB, the default, included).
        assert!(LowWater::for_block(LowWater::FROM - 1).done);
        assert!(LowWater::for_block(128 * 1024).done);
        assert!(!LowWater::for_block(1 << 20).done);
        assert_eq!(LowWater::for_block(1 << 20).want, 64 * 1024);
    }

    #[test]
    fn low_water_is_not_set_on_a_small_buffer() {
        let (s, _c) = tcp_pair();
        let fd = s.as_raw_fd();
        // 64 KiB asked, 128 KiB held: below 8 × the 64 KiB mark.
        assert!(set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, 64 * 1024));
        let mut low = LowWater::for_block(LowWater::FROM);
        low.since = Some(std::time::Instant::now() - LowWater::PATIENCE);
        for _ in 0..LowWater::EVERY {
            low.tick(&s);
        }
        assert!(low.done, "gave up after its patience");
        assert_eq!(get_int(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT), Some(1));
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
