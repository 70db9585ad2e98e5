//! Who may start a handshake: the per-source-address policy applied at
//! accept, before the server reads a byte.
//!
//! - **Back-off after failed authentications.** Each wrong MAC from an
//!   address (or attach naming a test that does not exist) doubles how
//!   long further connections from it are refused outright: 100 ms after
//!   the first failure, 200 ms after the second... up to [`BACKOFF_MAX`]
//!   (30 s). A success from the address clears it. The back-off is
//!   checked again when a challenge is answered, so connections opened
//!   before a failure cannot each spend a guess. An address is an IPv4
//!   address or an IPv6 /64 prefix.
//!
//!   The table holds at most [`BACKOFF_TABLE`] entries: an entry is
//!   forgotten [`BACKOFF_MAX`] after its back-off ended, and when the
//!   table is full of live entries it *widens* them rather than forgets
//!   them: the entries whose last failure is oldest are merged into their
//!   covering prefixes (an IPv4 address into its /24, a /24 into its /16,
//!   a /16 into all of IPv4; an IPv6 /64 into its /48, /32, then all of
//!   IPv6), each keeping the longest back-off and the highest count of
//!   what it covers, until the table is three quarters full. So a flood of
//!   new sources cannot buy an old one a fresh start, as forgetting it
//!   would. What it costs instead: innocent neighbours of a backed-off
//!   source share its back-off, and an attacker with thousands of
//!   prefixes can in the end back off everyone for up to [`BACKOFF_MAX`]
//!   at a time (as a connection flood from that many sources could keep
//!   everyone out anyway). A connection is refused while any entry
//!   covering its address runs, and a failure counts on from the highest
//!   count among them.
//! - **Connections awaiting authentication.** Every connection counts as
//!   *pending* from its accept until the server welcomes it (control) or
//!   finds the test it attaches to (data); a refusal made during the
//!   handshake is still pending while it is answered. An address may hold
//!   at most
//!   [`ServerConfig::max_per_address`](super::ServerConfig::max_per_address)
//!   pending connections; more are refused `busy`. When the whole server is
//!   at [`ServerConfig::max_connections`](super::ServerConfig::max_connections),
//!   a new connection evicts the oldest pending one instead of being
//!   refused, so idle or trickling clients cannot keep a user out for long;
//!   a fast enough flood from many addresses can still evict a genuine
//!   client in the middle of its handshake (it then retries).
//! - **Refusal logging** is rate-limited, so a flood of hostile
//!   connections cannot flood the server's log.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::guard::lock;

/// The back-off after the first failed authentication from an address.
pub const BACKOFF_FIRST: Duration = Duration::from_millis(100);

/// The longest back-off.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// Addresses remembered for back-off at most.
pub const BACKOFF_TABLE: usize = 4096;

/// Refusal log lines per second at most; the rest are counted and the
/// count is logged with the next line allowed.
const LOG_PER_SECOND: u32 = 20;

/// The back-off after `failures` consecutive failures (≥ 1).
pub(super) fn backoff_delay(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(20);
    (BACKOFF_FIRST * (1u32 << doublings)).min(BACKOFF_MAX)
}

struct Backoff {
    failures: u32,
    /// Connections from the address are refused until then.
    until: Instant,
    /// The last failure.
    last: Instant,
}

struct Pending {
    ip: IpAddr,
    evict: Option<oneshot::Sender<()>>,
}

/// What a back-off entry covers: a network (the address with the bits
/// past `len` cleared) and its prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Prefix {
    net: IpAddr,
    len: u8,
}

/// The prefix lengths an address is backed off under, finest first; a
/// full table widens entries one step along these.
const V4_WIDTHS: [u8; 4] = [32, 24, 16, 0];
const V6_WIDTHS: [u8; 4] = [64, 48, 32, 0];

impl Prefix {
    fn new(ip: IpAddr, len: u8) -> Prefix {
        let net = match ip {
            IpAddr::V4(a) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
                IpAddr::from((u32::from(a) & mask).to_be_bytes())
            }
            IpAddr::V6(a) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
                IpAddr::from((u128::from(a) & mask).to_be_bytes())
            }
        };
        Prefix { net, len }
    }

    fn widths(&self) -> &'static [u8; 4] {
        match self.net {
            IpAddr::V4(_) => &V4_WIDTHS,
            IpAddr::V6(_) => &V6_WIDTHS,
        }
    }

    /// How many steps wider than an address this is (0: the address).
    fn step(&self) -> usize {
        self.widths()
            .iter()
            .position(|&w| w == self.len)
            .unwrap_or(0)
    }

    /// The next wider prefix covering this one, or `None` for a whole
    /// address family.
    fn wider(&self) -> Option<Prefix> {
        let len = *self.widths().get(self.step() + 1)?;
        Some(Prefix::new(self.net, len))
    }

    /// Every prefix an address is backed off under, finest first.
    fn covering(ip: IpAddr) -> [Prefix; 4] {
        let ip = key(ip);
        Prefix::new(ip, 0).widths().map(|w| Prefix::new(ip, w))
    }
}

#[derive(Default)]
struct State {
    backoff: HashMap<Prefix, Backoff>,
    /// Connections awaiting authentication, oldest first.
    pending: BTreeMap<u64, Pending>,
    per_ip: HashMap<IpAddr, usize>,
    next_id: u64,
}

struct LogLimit {
    window: Instant,
    lines: u32,
    suppressed: u64,
}

/// The address a client is counted under: an IPv4 address as is (also when
/// it arrives IPv4-mapped), an IPv6 address by its /64 prefix, the block
/// one subscriber usually holds whole, so hopping within it gains nothing.
fn key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
        v4 => v4,
    }
}

/// The per-address policy; see the module docs.
pub(super) struct Gate {
    state: Mutex<State>,
    max_per_address: usize,
    log: Mutex<LogLimit>,
}

/// Why a connection is refused at accept.
pub(super) enum Refusal {
    /// The address failed to authenticate recently.
    BackedOff(Duration),
    /// The address has its limit of pending connections.
    TooMany(usize),
}

/// What a failed authentication earned.
pub(super) struct Failure {
    /// The back-off the address now serves.
    pub(super) delay: Duration,
    /// Entries a full back-off table widened to make room (0 as a rule).
    pub(super) widened: usize,
}

/// A pending connection's place in the gate: removed when dropped (or
/// passed), and `evicted` fires if the gate evicts it.
pub(super) struct Ticket {
    pub(super) id: u64,
    pub(super) evicted: oneshot::Receiver<()>,
}

impl Gate {
    pub(super) fn new(max_per_address: usize) -> Gate {
        Gate {
            state: Mutex::new(State::default()),
            max_per_address,
            log: Mutex::new(LogLimit {
                window: Instant::now(),
                lines: 0,
                suppressed: 0,
            }),
        }
    }

    /// Whether `ip` is serving a back-off now, and for how long still:
    /// checked again when a challenge is answered, so connections opened
    /// before a failure cannot each spend a guess.
    pub(super) fn backed_off(&self, ip: IpAddr, now: Instant) -> Option<Duration> {
        Self::backoff_left(&lock(&self.state), ip, now)
    }

    /// The longest back-off still running among the entries covering `ip`.
    fn backoff_left(st: &State, ip: IpAddr, now: Instant) -> Option<Duration> {
        Prefix::covering(ip)
            .iter()
            .filter_map(|p| st.backoff.get(p))
            .filter(|b| now < b.until)
            .map(|b| b.until - now)
            .max()
    }

    /// Admits a new connection from `ip` as pending, or says why not.
    pub(super) fn admit(&self, ip: IpAddr, now: Instant) -> Result<Ticket, Refusal> {
        let mut st = lock(&self.state);
        if let Some(left) = Self::backoff_left(&st, ip, now) {
            return Err(Refusal::BackedOff(left));
        }
        let ip = key(ip);
        let held = st.per_ip.get(&ip).copied().unwrap_or(0);
        if held >= self.max_per_address {
            return Err(Refusal::TooMany(held));
        }
        *st.per_ip.entry(ip).or_insert(0) += 1;
        let id = st.next_id;
        st.next_id += 1;
        let (tx, rx) = oneshot::channel();
        st.pending.insert(
            id,
            Pending {
                ip,
                evict: Some(tx),
            },
        );
        Ok(Ticket { id, evicted: rx })
    }

    /// Evicts the oldest pending connection other than `keep`: its
    /// address, or `None` if there is none.
    pub(super) fn evict_oldest(&self, keep: u64) -> Option<IpAddr> {
        let mut st = lock(&self.state);
        let id = st.pending.keys().copied().find(|&id| id != keep)?;
        let mut p = Self::remove(&mut st, id)?;
        if let Some(tx) = p.evict.take() {
            let _ = tx.send(());
        }
        Some(p.ip)
    }

    /// The connection `id` is no longer pending (it passed the handshake,
    /// or ended).
    pub(super) fn release(&self, id: u64) {
        let mut st = lock(&self.state);
        Self::remove(&mut st, id);
    }

    fn remove(st: &mut State, id: u64) -> Option<Pending> {
        let p = st.pending.remove(&id)?;
        if let Some(n) = st.per_ip.get_mut(&p.ip) {
            *n -= 1;
            if *n == 0 {
                st.per_ip.remove(&p.ip);
            }
        }
        Some(p)
    }

    /// Connections pending now.
    pub(super) fn pending(&self) -> usize {
        lock(&self.state).pending.len()
    }

    /// Addresses in the back-off table now.
    pub(super) fn backoff_entries(&self) -> usize {
        lock(&self.state).backoff.len()
    }

    /// Records a failed authentication from `ip`: the back-off it now
    /// serves.
    pub(super) fn failed(&self, ip: IpAddr, now: Instant) -> Failure {
        let covering = Prefix::covering(ip);
        let own = covering[0];
        let mut st = lock(&self.state);
        let mut widened = 0;
        if !st.backoff.contains_key(&own) && st.backoff.len() >= BACKOFF_TABLE {
            widened = Self::make_room(&mut st, now);
        }
        // The count goes on from the highest among the entries covering
        // the address; one quiet for long after its back-off counts no more.
        let before = covering
            .iter()
            .filter_map(|p| st.backoff.get(p))
            .filter(|b| now < b.until + BACKOFF_MAX)
            .map(|b| b.failures)
            .max()
            .unwrap_or(0);
        let failures = before.saturating_add(1);
        let delay = backoff_delay(failures);
        st.backoff.insert(
            own,
            Backoff {
                failures,
                until: now + delay,
                last: now,
            },
        );
        Failure { delay, widened }
    }

    /// Makes room in a full back-off table without forgetting a back-off
    /// that may still run: forgets the entries quiet for [`BACKOFF_MAX`]
    /// after theirs ended, then, finest first and oldest last failure
    /// first, merges entries into their wider prefixes until the table is
    /// three quarters full. Each merge keeps the longest back-off and the
    /// highest count. Returns how many entries were widened.
    fn make_room(st: &mut State, now: Instant) -> usize {
        st.backoff.retain(|_, b| now < b.until + BACKOFF_MAX);
        let target = BACKOFF_TABLE * 3 / 4;
        let mut widened = 0;
        for step in 0..V4_WIDTHS.len() - 1 {
            if st.backoff.len() <= target {
                break;
            }
            let mut at: Vec<(Prefix, Instant)> = st
                .backoff
                .iter()
                .filter(|(p, _)| p.step() == step)
                .map(|(p, b)| (*p, b.last))
                .collect();
            at.sort_by_key(|&(_, last)| last);
            for (p, _) in at {
                if st.backoff.len() <= target {
                    break;
                }
                let Some(wider) = p.wider() else { continue };
                let Some(b) = st.backoff.remove(&p) else {
                    continue;
                };
                widened += 1;
                let w = st.backoff.entry(wider).or_insert(Backoff {
                    failures: 0,
                    until: b.until,
                    last: b.last,
                });
                w.failures = w.failures.max(b.failures);
                w.until = w.until.max(b.until);
                w.last = w.last.max(b.last);
            }
        }
        widened
    }

    /// Records a successful authentication from `ip`: its own back-off is
    /// cleared (not a widened one covering it: a source cannot clear its
    /// neighbours', and while one runs it cannot connect anyway).
    pub(super) fn succeeded(&self, ip: IpAddr) {
        let own = Prefix::covering(ip)[0];
        lock(&self.state).backoff.remove(&own);
    }

    /// Whether a refusal may be logged now, and how many were suppressed
    /// since the last one that was.
    pub(super) fn may_log(&self, now: Instant) -> Option<u64> {
        let mut l = lock(&self.log);
        if now.duration_since(l.window) >= Duration::from_secs(1) {
            l.window = now;
            l.lines = 0;
        }
        if l.lines >= LOG_PER_SECOND {
            l.suppressed += 1;
            return None;
        }
        l.lines += 1;
        Some(std::mem::take(&mut l.suppressed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, n])
    }

    #[test]
    fn the_backoff_doubles_to_a_cap_and_resets_on_success() {
        assert_eq!(backoff_delay(1), Duration::from_millis(100));
        assert_eq!(backoff_delay(2), Duration::from_millis(200));
        assert_eq!(backoff_delay(3), Duration::from_millis(400));
        assert_eq!(backoff_delay(9), Duration::from_millis(25_600));
        assert_eq!(backoff_delay(10), BACKOFF_MAX);
        assert_eq!(backoff_delay(u32::MAX), BACKOFF_MAX);

        let g = Gate::new(4);
        let t0 = Instant::now();
        assert!(g.admit(ip(2), t0).is_ok());
        assert_eq!(g.failed(ip(2), t0).delay, Duration::from_millis(100));
        match g.admit(ip(2), t0 + Duration::from_millis(50)) {
            Err(Refusal::BackedOff(d)) => assert_eq!(d, Duration::from_millis(50)),
            _ => panic!("not backed off"),
        }
        // Other addresses are not affected.
        assert!(g.admit(ip(1), t0).is_ok());
        let t1 = t0 + Duration::from_millis(100);
        assert!(g.admit(ip(2), t1).is_ok());
        assert_eq!(g.failed(ip(2), t1).delay, Duration::from_millis(200));
        assert!(g.admit(ip(2), t1 + Duration::from_millis(199)).is_err());
        g.succeeded(ip(2));
        assert!(g.admit(ip(2), t1).is_ok());
        assert_eq!(g.failed(ip(2), t1).delay, Duration::from_millis(100));
        // Long quiet after the back-off: the count starts afresh.
        let later = t1 + BACKOFF_MAX * 2;
        assert_eq!(g.failed(ip(2), later).delay, Duration::from_millis(100));
    }

    #[test]
    fn ipv6_clients_count_by_their_64_prefix() {
        let g = Gate::new(64);
        let now = Instant::now();
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        g.failed(a, now);
        assert!(g.backed_off(b, now).is_some(), "same /64");
        assert!(g.backed_off(other, now).is_none(), "another /64");
        let mapped: IpAddr = "::ffff:10.0.0.7".parse().unwrap();
        g.failed("10.0.0.7".parse().unwrap(), now);
        assert!(
            g.backed_off(mapped, now).is_some(),
            "IPv4-mapped is the IPv4 address"
        );
    }

    #[test]
    fn a_full_backoff_table_widens_its_entries_and_forgets_no_back_off() {
        let g = Gate::new(4);
        let t0 = Instant::now();
        let n = BACKOFF_TABLE as u32 + 100;
        let v4 = |i: u32| IpAddr::from((0x0a00_0000u32 + i).to_be_bytes());
        for i in 0..n {
            g.failed(v4(i), t0 + Duration::from_micros(u64::from(i)));
        }
        assert!(
            g.backoff_entries() <= BACKOFF_TABLE,
            "{}",
            g.backoff_entries()
        );
        // Every address that failed is still backed off, the oldest too:
        // a flood of new sources does not buy an old one a fresh start.
        let t = t0 + Duration::from_millis(50);
        for i in [0, 1, 255, 256, n / 2, n - 1] {
            assert!(
                matches!(g.admit(v4(i), t), Err(Refusal::BackedOff(_))),
                "{} admitted",
                v4(i)
            );
        }
        // An address that never failed, outside the widened prefixes, is
        // not affected.
        assert!(g.admit(IpAddr::from([192, 0, 2, 1]), t).is_ok());
        // A widened entry keeps its count: the next failure from one of its
        // addresses doubles it, it does not start again at 100 ms.
        let t1 = t0 + Duration::from_millis(150);
        assert!(g.admit(v4(0), t1).is_ok());
        assert_eq!(g.failed(v4(0), t1).delay, Duration::from_millis(200));

        // IPv6: /64s of one /48 widen to that /48, and stay backed off.
        let g = Gate::new(4);
        let v6 = |i: u32| -> IpAddr {
            std::net::Ipv6Addr::new(0x2001, 0xdb8, 7, i as u16, 0, 0, 0, 1).into()
        };
        for i in 0..n {
            g.failed(v6(i), t0 + Duration::from_micros(u64::from(i)));
        }
        assert!(g.backoff_entries() <= BACKOFF_TABLE);
        assert!(matches!(g.admit(v6(0), t), Err(Refusal::BackedOff(_))));
        let neighbour: IpAddr = "2001:db8:8::1".parse().unwrap();
        assert!(g.admit(neighbour, t).is_ok(), "another /48");
    }

    #[test]
    fn pending_connections_are_capped_per_address_and_evicted_oldest_first() {
        let g = Gate::new(2);
        let t = Instant::now();
        let a = g.admit(ip(2), t).ok().unwrap();
        let mut b = g.admit(ip(2), t).ok().unwrap();
        assert!(matches!(g.admit(ip(2), t), Err(Refusal::TooMany(2))));
        let c = g.admit(ip(3), t).ok().unwrap();
        assert_eq!(g.pending(), 3);
        // The oldest pending connection goes first, and is told.
        let mut a = a;
        assert_eq!(g.evict_oldest(c.id), Some(ip(2)));
        assert!(a.evicted.try_recv().is_ok());
        assert!(b.evicted.try_recv().is_err());
        // Its slot is free again.
        assert!(g.admit(ip(2), t).is_ok());
        g.release(b.id);
        g.release(b.id);
        g.release(a.id);
        // Never the one being admitted.
        let g2 = Gate::new(2);
        let only = g2.admit(ip(2), t).ok().unwrap();
        assert_eq!(g2.evict_oldest(only.id), None);
    }

    #[test]
    fn refusal_logging_is_rate_limited() {
        let g = Gate::new(1);
        let t = Instant::now();
        for _ in 0..LOG_PER_SECOND {
            assert_eq!(g.may_log(t), Some(0));
        }
        assert_eq!(g.may_log(t), None);
        assert_eq!(g.may_log(t), None);
        assert_eq!(g.may_log(t + Duration::from_secs(1)), Some(2));
    }
}
