//! The client side: where the server is (`--peer`, or an in-process one on
//! loopback), the control connection, and data connections.
//!
//! This file is what the benchmarks use: the peer's syntax, `Target`
//! (where the server is, or the in-process one) and `Link` (a started
//! test, ended by `Link::finish`). The rest is split along its seams:
//!
//! - `wire`: the protocol as the client speaks it — the connect, the hello
//!   and the server's first reply, the control conversation (`Control`)
//!   and a test's data connections (`Dialer`);
//! - `path`: the note naming the path to the server and the link-speed
//!   peak it sets.

mod path;
mod wire;

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use benchsuite_core::units::parse_duration;
use benchsuite_core::{BenchError, Context, Peak};

use crate::NetError;
use crate::proto::{DEFAULT_PORT, TestSpec};
use crate::route::{Route, route_to};
use crate::server::{Server, ServerConfig};

pub(crate) use path::{link_peak, path_note};
pub use wire::DATA_TIMEOUT;
pub(crate) use wire::{Control, Dialer};

/// How long to wait for a TCP connection when `--opt connect-timeout=` is
/// not given.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

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

/// Where a case's server is, and how to reach it. Its `Debug` shows
/// `<redacted>` in place of the token.
pub(crate) struct Target {
    /// The server's control address.
    pub addr: SocketAddr,
    /// The peer's token (`--token`, `--token-file`, `BENCHSUITE_TOKEN`),
    /// or the in-process server's one-time token.
    token: Option<String>,
    connect_timeout: Duration,
    /// The in-process server, when no `--peer` was given.
    local: Option<Server>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("addr", &self.addr)
            .field(
                "token",
                &self
                    .token
                    .as_ref()
                    .map(|_| benchsuite_core::bench::REDACTED),
            )
            .field("connect_timeout", &self.connect_timeout)
            .field("local", &self.local.is_some())
            .finish()
    }
}

/// A fresh random token for an in-process server: 32 bytes from the
/// kernel's secure generator, in hex. It never leaves this process, so
/// another user of this machine cannot use that loopback server.
fn one_time_token() -> Result<String, NetError> {
    let mut b = [0u8; 32];
    crate::sys::random_bytes(&mut b)
        .map_err(|e| NetError::io("making the in-process server's token", e))?;
    Ok(crate::proto::to_hex(&b))
}

impl Target {
    /// `--peer` from the options, or a fresh in-process server on
    /// 127.0.0.1 (stopped by [`Target::shutdown`], or when dropped).
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
                            .into()
                    })
                },
            )
            .role(benchsuite_core::OptionRole::Peer),
            OptionSpec::secret(
                "token",
                "the peer's shared secret (BENCHSUITE_TOKEN, --token-file or --token); proved by challenge and response, never sent, never written to a report",
            )
            .role(benchsuite_core::OptionRole::Token),
            OptionSpec::with_check(
                "connect-timeout",
                "how long to wait for the peer (default 5s)",
                |v| {
                    parse_duration(v)
                        .ok()
                        .filter(|d| !d.is_zero())
                        .map(|_| ())
                        .ok_or_else(|| format!("`{v}` is not a positive duration such as 2s").into())
                },
            ),
        ]
    }

    /// [`Target::from_ctx`] with the in-process server's echo threads
    /// pinned to `echo_cpu` (an error with `--peer`: that server is not
    /// ours to place).
    pub fn from_ctx_pinned(ctx: &Context, echo_cpu: Option<usize>) -> Result<Target, BenchError> {
        Self::from_ctx_placed(ctx, echo_cpu, None)
    }

    /// [`Target::from_ctx_pinned`], and the in-process server's stream
    /// threads (sinks and sources) pinned to `stream_cpu`.
    pub fn from_ctx_placed(
        ctx: &Context,
        echo_cpu: Option<usize>,
        stream_cpu: Option<usize>,
    ) -> Result<Target, BenchError> {
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
            Some(_) if echo_cpu.is_some() || stream_cpu.is_some() => Err(BenchError::Other(
                "cannot pin the server's threads: with --peer the server is another process".into(),
            )),
            Some(p) => {
                // Refused before anything is sent: no server takes it, and
                // its MAC would hand whoever answers an easy offline guess.
                if let Some(why) = token.as_deref().and_then(crate::proto::token_too_short) {
                    return Err(BenchError::Other(format!("--token: {why}")));
                }
                Ok(Target {
                    addr: resolve_peer(p)?,
                    token,
                    connect_timeout,
                    local: None,
                })
            }
            None => {
                // Its own token, whatever the user gave: only this process
                // can use the server, though it listens on loopback.
                let token = Some(one_time_token()?);
                let mut cfg = ServerConfig::new(
                    SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 0),
                    token.clone(),
                );
                cfg.control_threads = 1;
                cfg.echo_cpu = echo_cpu;
                cfg.stream_cpu = stream_cpu;
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
        Dialer::new(self.addr, session, self.connect_timeout)
    }

    /// Connects and says hello: a control connection.
    pub fn control(&self) -> Result<Control, NetError> {
        Control::hello(self.addr, self.token.as_deref(), self.connect_timeout)
    }

    /// Stops the in-process server, if any, joining its threads (dropping
    /// a target does the same).
    pub fn shutdown(self) {
        if let Some(s) = self.local {
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

/// A control connection with a test started on it, and the target it
/// belongs to. [`Link::finish`] ends the test and stops a local server;
/// dropping a link instead closes the control connection (the server ends
/// the test) before it stops a local server.
pub(crate) struct Link {
    // Declared before `target`, so it is closed first when dropped.
    control: Control,
    pub target: Target,
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
        Self::open_placed(ctx, spec, echo_cpu, None)
    }

    /// [`Link::open_pinned`], and the in-process server's stream threads
    /// pinned to `stream_cpu` (see [`Target::from_ctx_placed`]).
    pub fn open_placed(
        ctx: &Context,
        spec: TestSpec,
        echo_cpu: Option<usize>,
        stream_cpu: Option<usize>,
    ) -> Result<Link, BenchError> {
        let target = Target::from_ctx_placed(ctx, echo_cpu, stream_cpu)?;
        let mut control = target.control()?;
        let (session, udp_ports) = control.start(spec)?;
        Ok(Link {
            dialer: target.dialer(session),
            target,
            control,
            udp_ports,
        })
    }

    /// The control connection.
    pub fn control(&mut self) -> &mut Control {
        &mut self.control
    }

    /// Ends the test (the server's TCP byte counts: received, sent), says
    /// bye and stops a local server.
    pub fn finish(self) -> Result<(u64, u64), BenchError> {
        let Link {
            mut control,
            target,
            ..
        } = self;
        let result = control.stop();
        control.bye();
        target.shutdown();
        result.map_err(BenchError::from)
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
    fn the_in_process_server_has_its_own_token_and_debug_hides_it() {
        let a = one_time_token().unwrap();
        let b = one_time_token().unwrap();
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        let ctx = benchsuite_core::RunConfig::quick()
            .context(std::sync::Arc::new(benchsuite_core::Host::detect()));
        let t = Target::from_ctx(&ctx).unwrap();
        let token = t.token.clone().unwrap();
        let shown = format!("{t:?}");
        assert!(!shown.contains(&token), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        // The server requires it: a client without it is turned away...
        let e = Control::hello(t.addr, None, DEFAULT_CONNECT_TIMEOUT)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("requires a token"), "{e}");
        // ...and with it is welcomed.
        t.control().unwrap().bye();
        t.shutdown();
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
}
