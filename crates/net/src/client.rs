//! The client side: where the server is (`--peer`, or an in-process one on
//! loopback), the control connection, and data connections.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::time::{Duration, Instant};

use benchsuite_core::units::parse_duration;
use benchsuite_core::{BenchError, Context, Peak, PeakInput};

use crate::NetError;
use crate::nic::IfClass;
use crate::proto::{
    self, DEFAULT_PORT, ErrorCode, IO_TIMEOUT, MAGIC, Message, PROTOCOL_VERSION, Role, TestSpec,
    UdpBatchStats,
};
use crate::route::{Lookup, Route, route_to};
use crate::server::{Server, ServerConfig};

/// How long to wait for a TCP connection when `--opt connect-timeout=` is
/// not given.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a data read or write may block before the client gives up on
/// the server (generous: a slow link moving a large batch is not a hang).
pub const DATA_TIMEOUT: Duration = Duration::from_secs(30);

/// Parses `HOST:PORT`, `HOST` (port 5301), `[v6]:PORT` and resolves it.
pub fn resolve_peer(text: &str) -> Result<SocketAddr, NetError> {
    let with_port = peer_with_port(text)?;
    let t = text.trim();
    let mut addrs = with_port
        .to_socket_addrs()
        .map_err(|e| NetError::io(format!("--peer {t}: cannot resolve it"), e))?;
    addrs
        .next()
        .ok_or_else(|| NetError::Config(format!("--peer {t}: the name has no address")))
}

/// The syntax half of [`resolve_peer`], without a name lookup: the peer as
/// `HOST:PORT`, with the default port added to a bare host or address.
pub fn peer_with_port(text: &str) -> Result<String, NetError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(NetError::Config("--peer is empty: give HOST:PORT".into()));
    }
    let with_port = if t.parse::<IpAddr>().is_ok() {
        // A bare address (v6 ones contain colons) gets the default port.
        match t.parse::<IpAddr>() {
            Ok(IpAddr::V6(a)) => format!("[{a}]:{DEFAULT_PORT}"),
            _ => format!("{t}:{DEFAULT_PORT}"),
        }
    } else if t
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        t.to_string()
    } else if t.contains(':') && !t.starts_with('[') {
        return Err(NetError::Config(format!(
            "--peer {t}: expected HOST:PORT (e.g. 10.0.0.2:{DEFAULT_PORT}, [fe80::1]:{DEFAULT_PORT})"
        )));
    } else {
        format!("{t}:{DEFAULT_PORT}")
    };
    Ok(with_port)
}

/// Where a case's server is, and how to reach it.
pub(crate) struct Target {
    /// The server's control address.
    pub addr: SocketAddr,
    token: Option<String>,
    connect_timeout: Duration,
    /// The in-process server, when no `--peer` was given.
    local: Option<Server>,
}

impl Target {
    /// `--peer` from the options, or a fresh in-process server on
    /// 127.0.0.1 (stopped in [`Target::shutdown`]).
    pub fn from_ctx(ctx: &Context) -> Result<Target, BenchError> {
        Self::from_ctx_pinned(ctx, None)
    }

    /// The declarations of the options [`Target::from_ctx`] reads.
    pub fn option_specs() -> Vec<benchsuite_core::OptionSpec> {
        use benchsuite_core::OptionSpec;
        vec![
            OptionSpec::with_check(
                "peer",
                "a `benchsuite serve` to measure against, HOST[:PORT] (--peer)",
                |v| {
                    peer_with_port(v).map(|_| ()).map_err(|e| {
                        // The planner names the option and value already.
                        let text = e.to_string();
                        text.split_once(": ")
                            .map_or(text.clone(), |(_, why)| why.to_string())
                    })
                },
            ),
            OptionSpec::secret(
                "token",
                "the peer's shared secret (--token); never written to a report",
            ),
            OptionSpec::with_check(
                "connect-timeout",
                "how long to wait for the peer (default 5s)",
                |v| {
                    parse_duration(v)
                        .ok()
                        .filter(|d| !d.is_zero())
                        .map(|_| ())
                        .ok_or_else(|| format!("`{v}` is not a positive duration such as 2s"))
                },
            ),
        ]
    }

    /// [`Target::from_ctx`] with the in-process server's echo threads
    /// pinned to `echo_cpu` (an error with `--peer`: that server is not
    /// ours to place).
    pub fn from_ctx_pinned(ctx: &Context, echo_cpu: Option<usize>) -> Result<Target, BenchError> {
        let token = ctx.options.get("token").cloned().filter(|t| !t.is_empty());
        let connect_timeout = match ctx.options.get("connect-timeout") {
            Some(t) => parse_duration(t)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    BenchError::Other(format!(
                        "--opt connect-timeout={t}: expected a positive duration such as 2s"
                    ))
                })?,
            None => DEFAULT_CONNECT_TIMEOUT,
        };
        match ctx.options.get("peer") {
            Some(_) if echo_cpu.is_some() => Err(BenchError::Other(
                "cannot pin the server's echo thread: with --peer the server is another process"
                    .into(),
            )),
            Some(p) => Ok(Target {
                addr: resolve_peer(p)?,
                token,
                connect_timeout,
                local: None,
            }),
            None => {
                let mut cfg = ServerConfig::new(
                    SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 0),
                    token.clone(),
                );
                cfg.control_threads = 1;
                cfg.echo_cpu = echo_cpu;
                let server = Server::start(cfg)?;
                Ok(Target {
                    addr: server.local_addr(),
                    token,
                    connect_timeout,
                    local: Some(server),
                })
            }
        }
    }

    /// True when the server runs inside this process.
    pub fn is_local(&self) -> bool {
        self.local.is_some()
    }

    /// A dialer for data connections (cheap to clone into worker threads).
    pub fn dialer(&self, session: u64) -> Dialer {
        Dialer {
            addr: self.addr,
            session,
            connect_timeout: self.connect_timeout,
        }
    }

    /// Connects and says hello: a control connection.
    pub fn control(&self) -> Result<Control, NetError> {
        let mut sock = connect(self.addr, self.connect_timeout)?;
        let mut hello = MAGIC.to_vec();
        hello.extend(proto::encode(&Message::Hello {
            version: PROTOCOL_VERSION,
            token: self.token.clone(),
            software: format!("benchsuite {}", env!("CARGO_PKG_VERSION")),
        }));
        sock.write_all(&hello)
            .map_err(|e| NetError::io(format!("sending hello to {}", self.addr), e))?;
        match read_reply(&mut sock, self.addr, true)? {
            Message::Welcome { version, .. } if version == PROTOCOL_VERSION => Ok(Control {
                sock,
                peer: self.addr,
            }),
            Message::Welcome { version, .. } => Err(NetError::Version {
                peer: self.addr,
                theirs: version,
                ours: PROTOCOL_VERSION,
            }),
            other => Err(unexpected(self.addr, "welcome", &other)),
        }
    }

    /// Stops the in-process server, if any, joining its threads.
    pub fn shutdown(&mut self) {
        if let Some(s) = self.local.take() {
            s.shutdown();
        }
    }

    /// The routing decision for the server's address (sends nothing).
    pub fn route(&self) -> Route {
        route_to(self.addr.ip())
    }

    /// A note naming the path to the server: loopback, or the interface
    /// and what it is.
    pub fn path_note(&self, route: &Route) -> String {
        path_note(self.addr.ip(), route)
    }

    /// The link-speed peak for `metric` (B/s), with a note naming the path
    /// and saying why there is a peak or why not. `directions` is 2 for
    /// bidirectional tests (a full-duplex link carries its speed each way).
    pub fn peak(&self, metric: &str, directions: u32, notes: &mut Vec<String>) -> Option<Peak> {
        let route = self.route();
        let (peak, verdict) = link_peak(&route, metric, directions);
        notes.push(format!("{}; {verdict}", self.path_note(&route)));
        peak
    }
}

/// "path to PEER: ..." for a record's notes.
pub(crate) fn path_note(peer: IpAddr, route: &Route) -> String {
    match route {
        Route::Loopback => format!("path to {peer}: loopback (the server is on this machine)"),
        Route::Interface(nif) => format!(
            "path to {peer}, by {}: {}",
            match nif.lookup {
                Lookup::Netlink => "the kernel's routing decision",
                Lookup::SourceAddress => "the interface owning the source address",
            },
            nif.describe()
        ),
        Route::Unknown(why) => format!("path to {peer}: unknown ({why})"),
    }
}

/// The peak a link sets on `metric`, or none, and a clause saying which
/// and why.
pub(crate) fn link_peak(route: &Route, metric: &str, directions: u32) -> (Option<Peak>, String) {
    let nif = match route {
        Route::Loopback => {
            return (
                None,
                "no link: the limit is memory bandwidth (the kernel copies each byte from the sender's buffer to the receiver's), so no link-speed peak".into(),
            );
        }
        Route::Unknown(_) => return (None, "no link-speed peak".into()),
        Route::Interface(nif) => nif,
    };
    let Some((mbps, carrier)) = nif.line_rate() else {
        let why = match &nif.class {
            IfClass::Virtual => "no link-speed peak is claimed for a virtual interface",
            IfClass::Paravirtual { .. } => {
                "no link-speed peak is claimed: a paravirtual NIC's limit is the host's (its NIC, its rate limits), not a line rate"
            }
            IfClass::Physical { .. } => {
                "no peak: the NIC reports no link speed (link down, or the driver does not say)"
            }
            IfClass::Stacked { .. } => {
                "no link-speed peak is claimed: no single physical link bounds this path (a bridge's port depends on its forwarding table; virtual and paravirtual links have no line rate)"
            }
        };
        return (None, why.into());
    };
    let mut inputs = std::collections::BTreeMap::new();
    inputs.insert(
        "link_speed".to_string(),
        PeakInput {
            value: mbps as f64,
            unit: "Mb/s".into(),
            source: format!("sysfs /sys/class/net/{}/speed", carrier.name),
        },
    );
    inputs.insert(
        "directions".to_string(),
        PeakInput {
            value: f64::from(directions),
            unit: "".into(),
            source: "test".into(),
        },
    );
    let whose = if carrier.name == nif.name {
        carrier.name.clone()
    } else {
        format!("{} (under {})", carrier.name, nif.name)
    };
    let peak = Peak {
        metric: metric.into(),
        value: mbps as f64 * 1e6 / 8.0 * f64::from(directions),
        unit: "B/s".into(),
        formula: format!(
            "link speed of {whose} × 10^6 / 8 × directions (line rate; Ethernet, IP and TCP/UDP headers leave ~94-97% of it for payload)"
        ),
        inputs,
        efficiency: None,
    };
    let aggregate = if carrier.name == nif.name && matches!(nif.class, IfClass::Stacked { .. }) {
        " (the sum over its links; one stream travels one link)"
    } else {
        ""
    };
    (
        Some(peak),
        format!("the peak is {whose}'s line rate of {mbps} Mb/s{aggregate}"),
    )
}

impl Drop for Target {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Opens data connections to a test.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dialer {
    addr: SocketAddr,
    session: u64,
    connect_timeout: Duration,
}

impl Dialer {
    /// A data connection in `role`, ready for raw bytes.
    pub fn attach(&self, role: Role, nodelay: bool) -> Result<TcpStream, NetError> {
        let mut sock = connect(self.addr, self.connect_timeout)?;
        let mut f = MAGIC.to_vec();
        f.extend(proto::encode(&Message::Attach {
            session: self.session,
            role,
        }));
        sock.write_all(&f).map_err(|e| {
            NetError::io(format!("attaching a data connection to {}", self.addr), e)
        })?;
        match read_reply(&mut sock, self.addr, true)? {
            Message::Attached => {}
            other => return Err(unexpected(self.addr, "attached", &other)),
        }
        let setup = || -> io::Result<()> {
            sock.set_nodelay(nodelay)?;
            sock.set_read_timeout(Some(DATA_TIMEOUT))?;
            sock.set_write_timeout(Some(DATA_TIMEOUT))
        };
        setup().map_err(|e| NetError::io("setting up a data connection", e))?;
        Ok(sock)
    }

    /// A UDP socket connected to the test's UDP `port` on the server.
    pub fn udp(&self, port: u16) -> Result<UdpSocket, NetError> {
        let server = SocketAddr::new(self.addr.ip(), port);
        let any: IpAddr = if server.is_ipv4() {
            Ipv4Addr::UNSPECIFIED.into()
        } else {
            std::net::Ipv6Addr::UNSPECIFIED.into()
        };
        let s = UdpSocket::bind(SocketAddr::new(any, 0))
            .and_then(|s| {
                s.connect(server)?;
                s.set_read_timeout(Some(DATA_TIMEOUT))?;
                Ok(s)
            })
            .map_err(|e| NetError::io(format!("UDP socket to {server}"), e))?;
        Ok(s)
    }
}

/// An authenticated control connection.
pub(crate) struct Control {
    sock: TcpStream,
    peer: SocketAddr,
}

impl Control {
    fn request(&mut self, msg: &Message) -> Result<Message, NetError> {
        proto::write_frame(&mut self.sock, msg)
            .map_err(|e| NetError::io(format!("control connection to {}", self.peer), e))?;
        read_reply(&mut self.sock, self.peer, false)
    }

    /// Sets up a test: the session id and the UDP ports.
    pub fn start(&mut self, spec: TestSpec) -> Result<(u64, Vec<u16>), NetError> {
        match self.request(&Message::Start { spec })? {
            Message::Ready { session, udp_ports } => Ok((session, udp_ports)),
            other => Err(unexpected(self.peer, "ready", &other)),
        }
    }

    /// What the server's UDP sinks received in the batch that ended at
    /// `end_seq` (per stream).
    pub fn udp_batch(&mut self, end_seq: Vec<u64>) -> Result<Vec<UdpBatchStats>, NetError> {
        let n = end_seq.len();
        match self.request(&Message::UdpBatch { end_seq })? {
            Message::UdpStats { streams } if streams.len() == n => Ok(streams),
            other => Err(unexpected(self.peer, "udp_stats", &other)),
        }
    }

    /// Ends the test: the server's TCP byte counts (received, sent).
    pub fn stop(&mut self) -> Result<(u64, u64), NetError> {
        match self.request(&Message::Stop)? {
            Message::Stopped {
                tcp_received,
                tcp_sent,
            } => Ok((tcp_received, tcp_sent)),
            other => Err(unexpected(self.peer, "stopped", &other)),
        }
    }

    /// Says goodbye and closes (best effort: the server also handles a
    /// plain close).
    pub fn bye(mut self) {
        let _ = proto::write_frame(&mut self.sock, &Message::Bye);
    }
}

fn connect(addr: SocketAddr, timeout: Duration) -> Result<TcpStream, NetError> {
    let sock = TcpStream::connect_timeout(&addr, timeout).map_err(|e| {
        let hint = match e.kind() {
            io::ErrorKind::TimedOut => format!(
                "no answer within {:.1} s (host down, or a firewall dropping packets?)",
                timeout.as_secs_f64()
            ),
            io::ErrorKind::ConnectionRefused => {
                "connection refused: is `benchsuite serve` running there, on that port?".into()
            }
            _ => "is the address right and reachable?".into(),
        };
        NetError::Connect {
            peer: addr,
            hint,
            source: e,
        }
    })?;
    let setup = || -> io::Result<()> {
        sock.set_nodelay(true)?;
        sock.set_read_timeout(Some(IO_TIMEOUT))?;
        sock.set_write_timeout(Some(IO_TIMEOUT))
    };
    setup().map_err(|e| NetError::io(format!("setting up the connection to {addr}"), e))?;
    Ok(sock)
}

/// Reads the server's reply: on a fresh connection first its magic. An
/// `Error` reply becomes the matching [`NetError`].
fn read_reply(sock: &mut TcpStream, peer: SocketAddr, first: bool) -> Result<Message, NetError> {
    let deadline = Instant::now() + IO_TIMEOUT;
    let proto_err = |detail: String| NetError::Protocol { peer, detail };
    if first {
        let mut magic = [0u8; 4];
        if let Err(e) = proto::read_exact_by(sock, &mut magic, deadline) {
            return Err(match e.kind() {
                io::ErrorKind::UnexpectedEof => NetError::NotBenchsuite {
                    peer,
                    detail: "it closed the connection without answering".into(),
                },
                // A peer that closes with our hello unread sends a reset
                // instead of an end of file: the same refusal.
                io::ErrorKind::ConnectionReset => NetError::NotBenchsuite {
                    peer,
                    detail: "it closed the connection without answering (a reset)".into(),
                },
                io::ErrorKind::TimedOut => NetError::NotBenchsuite {
                    peer,
                    detail: format!("it did not answer within {} s", IO_TIMEOUT.as_secs()),
                },
                _ => NetError::io(format!("reading from {peer}"), e),
            });
        }
        if magic != MAGIC {
            // Show a little more of what it said, if it is quick about it.
            let mut more = [0u8; 60];
            let _ = sock.set_read_timeout(Some(Duration::from_millis(100)));
            let n = sock.read(&mut more).unwrap_or(0);
            let mut said = magic.to_vec();
            said.extend_from_slice(&more[..n]);
            let text: String = String::from_utf8_lossy(&said)
                .chars()
                .take_while(|c| *c != '\r' && *c != '\n')
                .collect();
            let shown = if text.len() >= 4 && text.chars().all(|c| !c.is_control()) {
                format!("{text:?}")
            } else {
                proto::describe_bytes(&magic)
            };
            return Err(NetError::NotBenchsuite {
                peer,
                detail: format!("it answered {shown} instead of the benchsuite greeting"),
            });
        }
    }
    let msg = proto::read_frame_blocking(sock, deadline).map_err(|e| match e.kind() {
        io::ErrorKind::InvalidData => proto_err(e.to_string()),
        io::ErrorKind::UnexpectedEof => proto_err("the server closed the connection".into()),
        io::ErrorKind::TimedOut => {
            proto_err(format!("no answer within {} s", IO_TIMEOUT.as_secs()))
        }
        _ => NetError::io(format!("reading from {peer}"), e),
    })?;
    match msg {
        Message::Error {
            code: ErrorCode::Version,
            version,
            ..
        } => Err(NetError::Version {
            peer,
            theirs: version,
            ours: PROTOCOL_VERSION,
        }),
        Message::Error { code, message, .. } => Err(NetError::Refused {
            peer,
            code,
            message,
        }),
        m => Ok(m),
    }
}

fn unexpected(peer: SocketAddr, wanted: &str, got: &Message) -> NetError {
    NetError::Protocol {
        peer,
        detail: format!("expected {wanted}, got {got:?}"),
    }
}

/// A control connection with a test started on it, and the target it
/// belongs to. [`Link::finish`] ends the test and stops a local server.
pub(crate) struct Link {
    pub target: Target,
    control: Option<Control>,
    /// The test's data-connection dialer.
    pub dialer: Dialer,
    /// The test's UDP ports.
    pub udp_ports: Vec<u16>,
}

impl Link {
    /// Finds the server (or starts one) and starts a test.
    pub fn open(ctx: &Context, spec: TestSpec) -> Result<Link, BenchError> {
        Self::open_pinned(ctx, spec, None)
    }

    /// [`Link::open`] with the in-process server's echo threads pinned to
    /// `echo_cpu` (see [`Target::from_ctx_pinned`]).
    pub fn open_pinned(
        ctx: &Context,
        spec: TestSpec,
        echo_cpu: Option<usize>,
    ) -> Result<Link, BenchError> {
        let target = Target::from_ctx_pinned(ctx, echo_cpu)?;
        let mut control = target.control()?;
        let (session, udp_ports) = control.start(spec)?;
        Ok(Link {
            dialer: target.dialer(session),
            target,
            control: Some(control),
            udp_ports,
        })
    }

    /// The control connection.
    pub fn control(&mut self) -> Result<&mut Control, BenchError> {
        self.control
            .as_mut()
            .ok_or_else(|| BenchError::Other("the test has ended already".into()))
    }

    /// Ends the test (the server's byte counts, if it answered), says bye
    /// and stops a local server. Idempotent.
    pub fn finish(&mut self) -> Result<Option<(u64, u64)>, BenchError> {
        let result = match self.control.take() {
            Some(mut c) => {
                let r = c.stop();
                c.bye();
                r.map(Some).map_err(BenchError::from)
            }
            None => Ok(None),
        };
        self.target.shutdown();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peer_option_check_accepts_what_resolve_peer_does() {
        let peer = Target::option_specs()
            .into_iter()
            .find(|o| o.name == "peer")
            .unwrap();
        for ok in [
            "10.0.0.2",
            "10.0.0.2:5301",
            "[::1]:5301",
            "::1",
            "host.example",
        ] {
            assert!((peer.check)(ok).is_ok(), "{ok}");
        }
        let e = (peer.check)("fe80::1:x").unwrap_err();
        assert!(e.contains("HOST:PORT"), "{e}");
        let token = Target::option_specs()
            .into_iter()
            .find(|o| o.name == "token")
            .unwrap();
        assert!(token.secret);
    }

    #[test]
    fn peers_parse_with_and_without_ports() {
        assert_eq!(
            resolve_peer("127.0.0.1:9").unwrap(),
            "127.0.0.1:9".parse().unwrap()
        );
        assert_eq!(
            resolve_peer("127.0.0.1").unwrap(),
            SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT))
        );
        assert_eq!(resolve_peer("[::1]:7").unwrap(), "[::1]:7".parse().unwrap());
        assert_eq!(resolve_peer("::1").unwrap().port(), DEFAULT_PORT);
        assert_eq!(resolve_peer("localhost:80").unwrap().port(), 80);
        assert!(resolve_peer("").unwrap_err().to_string().contains("empty"));
        assert!(resolve_peer("a:b:c").is_err());
    }

    fn nif(
        name: &str,
        class: IfClass,
        kind: Option<&str>,
        speed: Option<u64>,
    ) -> crate::nic::NetIf {
        crate::nic::NetIf {
            name: name.into(),
            link_kind: kind.map(str::to_string),
            speed_mbps: speed,
            class,
            lookup: Lookup::Netlink,
        }
    }

    #[test]
    fn a_peak_only_from_a_physical_line_rate() {
        let nic = Route::Interface(nif(
            "eth1",
            IfClass::Physical {
                driver: Some("ixgbe".into()),
            },
            None,
            Some(10000),
        ));
        let (peak, why) = link_peak(&nic, "throughput", 2);
        let peak = peak.expect("a NIC with a speed has a peak");
        assert_eq!(peak.value, 10000e6 / 8.0 * 2.0);
        assert_eq!(peak.inputs["link_speed"].value, 10000.0);
        assert!(
            peak.inputs["link_speed"]
                .source
                .contains("/sys/class/net/eth1/speed")
        );
        assert!(why.contains("eth1's line rate of 10000 Mb/s"), "{why}");

        let vlan = Route::Interface(nif(
            "eth1.7",
            IfClass::Stacked {
                lower: vec![nif(
                    "eth1",
                    IfClass::Physical { driver: None },
                    None,
                    Some(1000),
                )],
            },
            Some("vlan"),
            Some(1000),
        ));
        let (peak, why) = link_peak(&vlan, "received", 1);
        assert_eq!(peak.map(|p| p.value), Some(1000e6 / 8.0));
        assert!(why.contains("eth1 (under eth1.7)"), "{why}");

        let veth = Route::Interface(nif("vb1", IfClass::Virtual, Some("veth"), Some(10000)));
        let (peak, why) = link_peak(&veth, "throughput", 1);
        assert!(peak.is_none());
        assert!(
            why.contains("no link-speed peak") && why.contains("virtual interface"),
            "{why}"
        );
        let note = path_note("10.0.0.1".parse().unwrap(), &veth);
        assert!(
            note.contains("vb1")
                && note.contains("virtual interface (veth)")
                && note.contains("routing decision"),
            "{note}"
        );

        let pv = Route::Interface(nif(
            "eth0",
            IfClass::Paravirtual {
                driver: "virtio_net".into(),
            },
            None,
            Some(10000),
        ));
        assert!(link_peak(&pv, "throughput", 1).0.is_none());

        let (peak, why) = link_peak(&Route::Loopback, "throughput", 1);
        assert!(peak.is_none() && why.contains("memory bandwidth"), "{why}");
    }
}
