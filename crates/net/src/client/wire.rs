//! The wire as the client speaks it: the TCP connect (with a hint of what
//! to check when it fails), the hello and the server's first reply, the
//! control conversation ([`Control`]) and a test's data connections
//! ([`Dialer`]).

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use crate::NetError;
use crate::proto::{
    self, ErrorCode, IO_TIMEOUT, MAGIC, Message, PROTOCOL_VERSION, Role, TestSpec, UdpBatchStats,
};

/// How long a data read or write may block before the client gives up on
/// the server (generous: a slow link moving a large batch is not a hang).
pub const DATA_TIMEOUT: Duration = Duration::from_secs(30);

/// Opens data connections to a test.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dialer {
    addr: SocketAddr,
    session: u64,
    connect_timeout: Duration,
}

impl Dialer {
    /// A dialer for test `session` on the server at `addr`.
    pub fn new(addr: SocketAddr, session: u64, connect_timeout: Duration) -> Dialer {
        Dialer {
            addr,
            session,
            connect_timeout,
        }
    }

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
    /// Connects to `addr` and says hello; answers the server's challenge
    /// with `token` (the token itself never travels) and checks the
    /// server's proof that it knows the token too: a control connection
    /// once a server that proved it welcomed it. With a token, a server
    /// that welcomes without a challenge, or without the right proof, is
    /// refused ([`NetError::Unproven`]) before anything else is sent.
    pub fn hello(
        addr: SocketAddr,
        token: Option<&str>,
        connect_timeout: Duration,
    ) -> Result<Control, NetError> {
        let mut client_nonce = [0u8; proto::NONCE_LEN];
        crate::sys::random_bytes(&mut client_nonce)
            .map_err(|e| NetError::io("making the hello's nonce", e))?;
        let mut sock = connect(addr, connect_timeout)?;
        let software = format!("benchsuite {}", env!("CARGO_PKG_VERSION"));
        let mut hello = MAGIC.to_vec();
        hello.extend(proto::encode(&Message::Hello {
            version: PROTOCOL_VERSION,
            software: software.clone(),
            nonce: proto::to_hex(&client_nonce),
        }));
        sock.write_all(&hello)
            .map_err(|e| NetError::io(format!("sending hello to {addr}"), e))?;
        let reply = read_reply(&mut sock, addr, true)?;
        let unproven = |detail: &str| NetError::Unproven {
            peer: addr,
            detail: detail.into(),
        };
        let (reply, server_nonce) = match (reply, token) {
            (Message::Challenge { nonce }, Some(token)) => {
                let server_nonce =
                    proto::nonce_from_hex(&nonce).ok_or_else(|| NetError::Protocol {
                        peer: addr,
                        detail: format!(
                            "the challenge's nonce is not {} bytes of hex",
                            proto::NONCE_LEN
                        ),
                    })?;
                let auth = proto::answer_challenge(token, &nonce, &client_nonce, &software)
                    .unwrap_or_else(|| unreachable!("the nonce was checked"));
                proto::write_frame(&mut sock, &auth)
                    .map_err(|e| NetError::io(format!("answering the challenge of {addr}"), e))?;
                (read_reply(&mut sock, addr, false)?, Some(server_nonce))
            }
            (Message::Challenge { .. }, None) => {
                return Err(NetError::Refused {
                    peer: addr,
                    code: ErrorCode::Auth,
                    message: "this server requires a token: set BENCHSUITE_TOKEN, or give --token-file PATH (or --token)".into(),
                });
            }
            (other, _) => (other, None),
        };
        match reply {
            Message::Welcome { version, .. } if version != PROTOCOL_VERSION => {
                Err(NetError::Version {
                    peer: addr,
                    theirs: version,
                    ours: PROTOCOL_VERSION,
                })
            }
            Message::Welcome { proof, .. } => match (token, server_nonce) {
                (None, _) => Ok(Control { sock, peer: addr }),
                (Some(_), None) => Err(unproven(
                    "it welcomed this client without asking for the token (a server run with --no-auth has none to prove; to use one, run without a token)",
                )),
                (Some(token), Some(server_nonce)) => {
                    let right = proof.as_deref().is_some_and(|p| {
                        proto::proof_is_right(token, &server_nonce, &client_nonce, &software, p)
                    });
                    if right {
                        Ok(Control { sock, peer: addr })
                    } else {
                        Err(unproven(if proof.is_none() {
                            "its welcome carries no proof"
                        } else {
                            "its welcome's proof is wrong"
                        }))
                    }
                }
            },
            other => Err(unexpected(addr, "welcome", &other)),
        }
    }

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
        io::ErrorKind::InvalidData => NetError::BadFrame { peer, source: e },
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
            // A stranger's text: it reaches stderr and reports.
            message: crate::proto::untrusted(&message),
        }),
        m => Ok(m),
    }
}

fn unexpected(peer: SocketAddr, wanted: &str, got: &Message) -> NetError {
    NetError::Protocol {
        peer,
        detail: format!(
            "expected {wanted}, got {}",
            crate::proto::untrusted(&format!("{got:?}"))
        ),
    }
}
