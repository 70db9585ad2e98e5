//! `--net-bind`, `--rendezvous-timeout`, `--rendezvous` and the token, checked; the address to serve on.

use std::fs;
use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs as _, UdpSocket};
use std::time::Duration;

use benchsuite_core::cluster::Launcher;

use super::config::{DEFAULT_TIMEOUT, PairingConfig};
use crate::FleetError;
use crate::rendezvous::{MIN_TOKEN_LEN, Rendezvous};

type Result<T, E = FleetError> = std::result::Result<T, E>;

/// `--rendezvous-timeout`, `--net-bind` and `--rendezvous`, checked.
pub(super) struct Flags {
    pub(super) timeout: Duration,
    pub(super) bind: Option<IpAddr>,
    pub(super) rendezvous: Option<Rendezvous>,
}

/// `--rendezvous-timeout`, `--net-bind` and `--rendezvous`, checked.
pub(super) fn checked_flags(args: &PairingConfig) -> Result<Flags> {
    let given = args
        .rendezvous_timeout
        .as_deref()
        .unwrap_or(DEFAULT_TIMEOUT);
    let timeout = benchsuite_core::units::parse_duration(given)
        .ok()
        .filter(|t| !t.is_zero())
        .ok_or_else(|| {
            FleetError::Usage(format!(
                "invalid value `{given}` for --rendezvous-timeout: give a positive duration, e.g. 10m or 90s"
            ))
        })?;
    if let Some(ip) = args.net_bind
        && (ip.is_unspecified() || ip.is_multicast())
    {
        usage!(
            "--net-bind {ip}: give the address of one interface that the other ranks can reach (the rank publishes it), not an unspecified or multicast address"
        );
    }
    let rendezvous = args
        .rendezvous
        .as_deref()
        .map(Rendezvous::parse)
        .transpose()
        .map_err(|e| FleetError::Usage(e.0))?;
    Ok(Flags {
        timeout,
        bind: args.net_bind,
        rendezvous,
    })
}

/// Says that `--net-bind` / `--rendezvous-timeout` given do nothing here.
pub(super) fn note_ignored(args: &PairingConfig, why: &str) {
    let given: Vec<&str> = [
        args.net_bind.is_some().then_some("--net-bind"),
        args.rendezvous_timeout
            .is_some()
            .then_some("--rendezvous-timeout"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !given.is_empty() {
        eprintln!(
            "note: {} ignored: the ranks do not pair up for network benchmarks ({why})",
            given.join(" and ")
        );
    }
}

/// The address to serve on: `--net-bind`, else the host name's first
/// non-loopback address (IPv4 first), else the source address of the
/// default route (found by connecting a UDP socket: nothing is sent),
/// else loopback.
pub(super) fn bind_address(
    given: Option<IpAddr>,
    hostname: Option<&str>,
) -> (IpAddr, &'static str) {
    if let Some(ip) = given {
        return (ip, "--net-bind");
    }
    if let Some(name) = hostname {
        let mut ips: Vec<IpAddr> = (name, 0)
            .to_socket_addrs()
            .map(|a| a.map(|s| s.ip()).collect())
            .unwrap_or_default();
        ips.retain(|ip| !ip.is_loopback() && !ip.is_unspecified());
        ips.sort_by_key(|ip| ip.is_ipv6());
        if let Some(ip) = ips.first() {
            return (*ip, "the host name's address");
        }
    }
    let routed = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).and_then(|s| {
        // TEST-NET-2: only the route lookup matters.
        s.connect((Ipv4Addr::new(198, 51, 100, 1), 9))?;
        s.local_addr()
    });
    match routed {
        Ok(a) if !a.ip().is_unspecified() && !a.ip().is_loopback() => {
            (a.ip(), "the default route's source address")
        }
        _ => (
            Ipv4Addr::LOCALHOST.into(),
            "loopback: no other address found; reachable from this host only (--net-bind ADDR)",
        ),
    }
}

/// The job's token as `--rendezvous` takes it: without the whitespace
/// around it (a secret file's last newline), the same value for the
/// meeting point, every rank's server and its clients; at least
/// [`MIN_TOKEN_LEN`] characters, since a fake meeting point can test
/// guesses offline.
pub(super) fn shared_token(given: &str) -> Result<String> {
    let token = given.trim();
    if token.chars().count() < MIN_TOKEN_LEN {
        usage!(
            "--rendezvous needs a token of at least {MIN_TOKEN_LEN} characters (this one has {}): a long random one, the same on every rank, e.g. from `openssl rand -hex 32`",
            token.chars().count()
        );
    }
    Ok(token.to_string())
}

/// Why `launcher` gave no job id: the variable that would have given one.
pub(super) fn no_job_id(launcher: Launcher) -> &'static str {
    match launcher {
        Launcher::Slurm => "SLURM_JOB_ID is not set",
        Launcher::OpenMpi | Launcher::Pmix | Launcher::Pmi => {
            "PMIX_NAMESPACE is not set (a launcher without PMIx gives none)"
        }
        Launcher::Kubernetes => {
            "a Kubernetes Indexed Job gives none (pass the Job's uid, label batch.kubernetes.io/controller-uid, from the downward API)"
        }
        Launcher::Env => "TORCHELASTIC_RUN_ID is not set, or `none` (torchrun --rdzv-id sets it)",
    }
}

/// This host's name, as the report's `host.hostname` reads it.
pub(super) fn hostname() -> Option<String> {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|f| fs::read_to_string(f).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}
