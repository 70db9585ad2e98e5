//! # benchsuite-net
//!
//! Network benchmarks in the manner of iperf3 (bulk TCP and UDP) and
//! sockperf (ping-pong latency), with their own server, client and control
//! protocol, so `benchsuite run net` works alone (an in-process server on
//! loopback) and across two machines (`benchsuite serve` on one,
//! `benchsuite run net --peer HOST:PORT` on the other).
//!
//! | id | one operation | headline | compare with |
//! |----|---------------|----------|--------------|
//! | `net.tcp_throughput` | one `block`-sized write per stream | `throughput` (B/s, receiver-counted) | `iperf3 -c HOST -l BLOCK` (`-R` down, `--bidir`); N streams: N iperf3 processes of one stream each, summed (iperf3 before 3.16 runs every `-P` stream in one thread) |
//! | `net.udp_throughput` | one datagram per stream | `received` (B/s), `loss`, `jitter` | `iperf3 -c HOST -u -b RATE -l BLOCK` |
//! | `net.latency` | one round trip (`rate=N`: one request of an open loop) | `rtt` (s, HDR percentiles) | `sockperf ping-pong -m BLOCK --full-rtt` (`rate=N`: `sockperf under-load --mps=N --reply-every=1 --full-rtt`) |
//! | `net.connect` | connect + hello + close | `connect` (s, HDR percentiles) | the classic "connection latency" experiment |
//!
//! ## Where the server is
//!
//! `--peer HOST:PORT` (option `peer`; port 5301 when left out) names a
//! `benchsuite serve`; its token (option `token`: `BENCHSUITE_TOKEN`,
//! `--token-file PATH` or `--token T`; at least 16 characters) answers the
//! server's challenge, and the server proves it knows the token too — an
//! HMAC-SHA256 each way over fresh nonces of both sides, so the token
//! itself never crosses the network (see [`proto`]). Without `--peer`, each record
//! starts an in-process server on `127.0.0.1:0` in `prepare`, with a
//! random one-time token only this process knows (another user of the
//! machine cannot use it), and stops it in `finish` (every thread joined,
//! every socket closed). `--opt connect-timeout=2s` bounds each TCP
//! connect (default 5 s). Server and client then share this machine's CPUs,
//! as iperf3 and sockperf do on loopback.
//!
//! ## `net.tcp_throughput` — `block`, `threads`, `direction`, `nodelay`, `cpus`
//!
//! `threads` (the `--threads` flag) is the number of parallel streams,
//! each a TCP connection with its own client and server threads (iperf3
//! `-P`). The streams run continuously from setup to teardown, as
//! iperf3's do, writing `block`-sized `write()`s; the receiver `read()`s
//! in `block`-sized pieces too, as iperf3 `-l` does on both ends. A sample
//! is an interval of that flow (no round trip between samples, so a long
//! path is not idle for an RTT per sample): it lasts until the receivers
//! have counted `n × block` more bytes per stream, and counts **the
//! receiver's** bytes, so no socket buffer full of unsent data is mistaken
//! for throughput: for `down` this host counts what it reads; for `up` the
//! server reports its count with its own timestamp every millisecond and a
//! stream's rate is the server's bytes over the server's time between the
//! reports that bracket the sample (protocol version 3, see
//! [`proto::STREAM`]). Metrics: `throughput` (total, B/s; the headline),
//! `throughput_bits` (the same in bit/s, as iperf3 prints it),
//! `stream_min` / `stream_max` (the slowest and fastest stream's
//! receiver-side rate in the sample). At the end each stream stops cleanly
//! (the sender shuts its side down; a `down` stream is told with a byte),
//! and the server's totals must equal the client's to the byte, or the
//! record fails verification.
//!
//! A receiver asks to be woken only once half a block (at most 64 KiB) is
//! queued (`SO_RCVLOWAT`, once the receive buffer has grown to eight times
//! that; see `sys::LowWater`): a reader that drains faster than bytes come
//! otherwise sleeps after every segment, and on a virtual machine each
//! wakeup on another CPU is an interrupt the sender pays for.
//!
//! `cpus` places a stream's two ends: `split` runs this host's stream
//! thread on the first CPU the process may use and the in-process server's
//! on the second (iperf3 `-A 0,1`; `benchsuite reference` runs iperf3's
//! client and server under `taskset` the same way, so both sides are
//! measured with the same placement); `any` leaves them to the scheduler,
//! which may put both on one CPU or move them during the run; `auto`, the
//! default, is `split` with the in-process
//! server, one stream and two CPUs or more, else `any`. `split` with
//! `--peer` or `threads` > 1 is a usage error; on one CPU the record is
//! skipped, saying so.
//!
//! ## `net.udp_throughput` — `block`, `threads`, `rate`
//!
//! Each datagram starts with a 64-bit sequence number and the sender's
//! monotonic timestamp (so `block` ≥ 16, and ≤ 65507, the IPv4 maximum:
//! anything else is a usage error). `rate=max` sends as fast as the sender
//! can (iperf3 `-b 0`); `rate=500M` paces the streams to 500 Mbit/s in
//! total. After each batch the client asks the server over the control
//! connection what arrived (the server waits until each stream's last
//! datagram arrived or it was quiet for 2 ms). Metrics:
//!
//! - `received` — the receiver's rate on **the receiver's clock**: the
//!   payload bytes after the batch's first datagram ÷ the time from the
//!   first to the last datagram the server took from its socket (the
//!   batch's elapsed time). Datagrams still queued when the sender stops
//!   count when the receiver takes them, so a deep socket buffer cannot
//!   inflate the rate; iperf3's receiver line is the same ratio over its
//!   whole test;
//! - `loss` — (sent − received) ÷ sent, in % (iperf3 "Lost/Total"); a
//!   datagram arriving after its batch was counted is reported lost there
//!   and ignored later; duplicates count as received;
//! - `jitter` — RFC 3550 interarrival jitter (seconds) at the batch's end,
//!   mean over streams (iperf3's jitter column);
//! - `out_of_order` — datagrams that arrived after a higher sequence
//!   number, in % of those received;
//! - `offered` — bytes sent ÷ the sender's own send interval;
//!   `datagrams` — datagrams received per second (receiver's clock).
//!
//! The server's UDP sockets keep the system's default receive buffer
//! (`net.core.rmem_default`), as iperf3 does: a deeper buffer loses less
//! in bursts but, at overload, hands the receiver cache-cold data.
//!
//! ## `net.latency` — `proto`, `block`, `load`, `cpus`, `rate`
//!
//! One iteration is one round trip: write `block` bytes, read them back
//! from the server's echo; each round trip's time goes into an HDR
//! histogram, so the record has p50/p90/p99/p99.9/max of `rtt`. TCP runs
//! with `TCP_NODELAY` on both ends (sockperf's default too), both ends
//! doing blocking `send`/`recv` as `sockperf sr -i` and `ping-pong` do.
//! Note that **sockperf reports half the round trip** as "latency" unless
//! given `--full-rtt`; `rtt` here is the full round trip. A UDP ping
//! unanswered within 200 ms is resent and reported in a caveat (it adds
//! no sample). `load=tcp` runs a bulk TCP stream to the same server
//! throughout (latency under load). On loopback in a virtual machine that
//! load can *lower* the round trip: busy vCPUs never halt, so no wake-up
//! goes through the hypervisor — a real effect, not an error, and a reason
//! to compare like with like.
//!
//! `cpus` places the two threads of the ping-pong (in-process server
//! only): `any` (the default) leaves them to the scheduler, as a plain
//! sockperf run does; `same` pins this client thread and the server's
//! echo thread to one CPU (each round trip is two context switches);
//! `different` pins them to two CPUs (each wake-up is an interrupt to the
//! other CPU, as between two hosts). On loopback this is the largest
//! factor there is: on a 2-vCPU KVM guest a TCP or UDP round trip took
//! 5-7 µs on one CPU and 15-18 µs across two (a wake-up of a halted vCPU
//! goes through the hypervisor), for sockperf under `taskset` and for a
//! 30-line C ping-pong alike; with `any` a run lands in either mode, and
//! even a pinned run on one CPU sometimes settled ~40% slower (all three
//! tools). So compare with a reference tool only under the same placement,
//! in interleaved rounds. With `--peer` the server is another process:
//! `cpus` must stay `any`; pin the server's echo threads with `benchsuite serve
//! --echo-cpu N` and the client with `taskset`. The in-process
//! server shares this process's address space, so on one CPU its switches
//! skip the address-space change that two processes (sockperf and its
//! server, or `--peer` to a local `benchsuite serve`) pay.
//!
//! ### Open loop (`rate`)
//!
//! `rate=off` (the default) is the ping-pong above: a closed loop, whose
//! next round trip waits for the last, so a stall of the server costs one
//! slow sample however long it lasts. `rate=N` (`5000`, `50k`) is an open
//! loop at N requests per second, as wrk2 measures: a batch of `n`
//! requests has intended starts `k / N` after the batch's first, each
//! batch continuing the schedule of the last (so a stall that holds up one
//! batch's end makes the next batch's first requests late, and they count
//! it; the schedule pauses between batches, while the runner has the
//! thread), each request is sent when its start is
//! due (late, never dropped, when a full socket buffer holds it up), and
//! its latency runs **from its intended start** to the arrival of its
//! whole answer, so every request that should have started during a stall
//! counts the stall (no coordinated omission; see
//! [`benchsuite_core::openloop`]). As many requests are outstanding as the
//! rate and the round trip make, with no limit; the batch returns once all
//! are answered (nothing carries over). The runner records the offered and
//! achieved rates (`load`) and marks a point that fell more than 5% short
//! as saturated. One thread drives one connection (TCP: requests
//! pipelined, the echo's `k`-th `block` bytes answer request `k`; UDP:
//! each datagram's first 8 bytes are its sequence number, so `block` ≥ 8,
//! and one unanswered 200 ms after it was sent is lost: no sample, not
//! resent, a caveat). Between sends the client sleeps in `ppoll` with a
//! 1 ns timer slack, it does not spin: a send leaves a wake-up after its
//! intended start (tens of µs on an idle virtual machine), which counts in
//! the latency; the record's note gives the mean and largest lateness and
//! the most requests outstanding. `rate=auto` is a ladder of rates up to
//! saturation run by the capacity search (`--slo`). The reference at a rate
//! is `sockperf under-load --mps=N --reply-every=1`, which times each
//! message from its actual send and busy-waits between sends.
//!
//! ## `net.connect`
//!
//! One trial: TCP connect, the hello, the server's challenge, the
//! client's answer (an HMAC-SHA256), the server's welcome and the check of
//! its proof (another HMAC-SHA256; so
//! authentication is included: two round trips, as with every
//! `benchsuite serve` that has a token; one against `--no-auth`), a bye
//! and close — the classic "connection setup + authentication + teardown"
//! experiment. Each trial
//! goes into the histogram (`connect`: mean per sample, percentiles over
//! all trials); `trial_stddev` is the standard deviation of the trials
//! within each sample. The default sampling records several hundred
//! trials; for exactly the classic 100 trials with mean and stddev over
//! them, use `--runs 100 --min-sample-time 1ns --warmup 0s`, which makes
//! each sample one trial.
//!
//! ## Peak, and the path to the server
//!
//! Every record has a note naming the path (`path to 10.0.0.2, by the
//! kernel's routing decision: eth1 (a NIC, driver ixgbe, 10000 Mb/s)`),
//! and the report's `host.extra.net` the same as data (`server`,
//! `address`, `path`, and for an interface `interface`, `class`,
//! `link_kind`, `driver`, `speed_mbps`, `line_rate_mbps`, `lower`,
//! `lookup`). The interface is the kernel's own answer to "which
//! interface reaches the peer" (rtnetlink `RTM_GETROUTE`, what
//! `ip route get PEER` asks; nothing is sent to the peer), or, where
//! rtnetlink is unavailable, the one owning the source address a connected
//! UDP socket gets. What it is comes from sysfs:
//!
//! - a **NIC** (`/sys/class/net/IF/device`, not a paravirtual driver):
//!   the peak of the headline throughput is its `/sys/class/net/IF/speed`
//!   in bytes/s (× 2 for `bidir`: full duplex carries it each way);
//! - a **VLAN, macvlan or ipvlan** on a NIC: that NIC's speed; a **bond or
//!   team** whose links are all NICs: its own speed (the kernel's sum over
//!   its links — one stream travels one link);
//! - a **virtual** interface (no device, nothing under it: veth, tun,
//!   dummy, wireguard...), a **paravirtual** NIC (virtio_net, vmxnet3,
//!   hv_netvsc, xen-netfront) or a **bridge**: no peak. A veth reports
//!   10000 Mb/s and virtio may report what the hypervisor was told; neither
//!   is a line rate, and the note says so;
//! - **loopback** (also the machine's own addresses): no link; the note
//!   says the limit is memory bandwidth.
//!
//! ## The server
//!
//! See [`server`] (limits, threads, per-address back-off and caps) and
//! [`proto`] (the wire format and the challenge-response). `benchsuite
//! serve` binds 127.0.0.1:5301 by default and requires a token even there
//! (another user of the machine could use it otherwise) unless given
//! `--no-auth`, which only a loopback address accepts. The token
//! authenticates; it does not encrypt: the measurement traffic and the
//! results are readable and alterable by anyone on the path, so across an
//! untrusted network run it inside a VPN or an SSH tunnel
//! (`docs/security.md` has the threat model).

pub mod client;
mod connect;
mod error;
mod facts;
mod latency;
mod nic;
mod params;
pub mod proto;
mod reference;
mod route;
pub mod server;
mod sys;
mod tcp;
pub mod token;
mod udp;

use benchsuite_core::Benchmark;

pub use connect::Connect;
pub use error::NetError;
pub use latency::Latency;
pub use params::parse_rate;
pub use proto::{DEFAULT_PORT, MIN_TOKEN_LEN, PROTOCOL_VERSION};
pub use server::{Server, ServerConfig, serve};
pub use sys::{open_file_limit, raise_open_file_limit};
pub use tcp::TcpThroughput;
pub use udp::UdpThroughput;

/// Helpers for tests of this crate and of the `benchsuite` binary; not a
/// stable interface.
#[doc(hidden)]
pub mod test_support {
    /// A TCP connection to `peer` from the local address `local` (bind
    /// before connect), e.g. from 127.0.0.2 to a server on 127.0.0.1, so
    /// per-address limits can be tested from one machine.
    #[cfg(target_os = "linux")]
    pub fn connect_from(
        local: std::net::IpAddr,
        peer: std::net::SocketAddr,
    ) -> std::io::Result<std::net::TcpStream> {
        crate::sys::connect_from(local, peer)
    }
}

/// Module name: benchmark ids start with `net.`.
pub const MODULE: &str = "net";

/// One-line description of the module.
pub const DESCRIPTION: &str = "network: TCP/UDP throughput (iperf3-style), ping-pong latency (sockperf-style), connection setup; against --peer or an in-process loopback server";

/// The benchmarks of this module, in the order they run.
pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    vec![
        Box::new(TcpThroughput),
        Box::new(UdpThroughput),
        Box::new(Latency),
        Box::new(Connect),
    ]
}
