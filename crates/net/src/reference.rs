//! The reference tools of the network benchmarks, for `benchsuite
//! reference`: iperf3 for TCP and UDP throughput, sockperf for ping-pong
//! latency. Only the in-process loopback case (no `--peer`): each tool
//! runs its own server on 127.0.0.1.

use benchsuite_core::reference::{REFERENCE_SECS, Reference, WINDOW_SAMPLE, argv, number_after};
use benchsuite_core::{Context, Point, Value};

/// A TCP port free on loopback now (the kernel's pick), for the tool's
/// server.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(5399)
}

/// `n` TCP ports free on loopback now, distinct (held together while
/// chosen).
fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<std::net::TcpListener> = (0..n)
        .filter_map(|_| std::net::TcpListener::bind("127.0.0.1:0").ok())
        .collect();
    let mut ports: Vec<u16> = held
        .iter()
        .filter_map(|l| l.local_addr().ok().map(|a| a.port()))
        .collect();
    // Only where binding failed: consecutive ports from the fallback.
    while ports.len() < n {
        ports.push(5399 + ports.len() as u16);
    }
    ports
}

/// iperf3 against its own server on `ports[0]`, with `client`'s arguments
/// (`-P N` among them). With more than one stream, iperf3 before 3.16
/// runs every stream in one thread, so `-P N` on loopback makes one CPU
/// carry N streams while ours uses N threads: then it runs as N
/// processes of one stream each, on `ports` (one server each), their
/// throughputs summed, as ESnet advises for those versions. That form is
/// used whatever the installed version, so a comparison does not change
/// meaning with the package, and the note says which ran.
fn iperf3(
    ports: &[u16],
    mut client: Vec<String>,
    streams: u64,
    metric: &'static str,
    parse: benchsuite_core::reference::ParseFn,
) -> Reference {
    let mut r = if streams > 1 && ports.len() as u64 >= streams {
        if let Some(i) = client.iter().position(|a| a == "-P") {
            client[i + 1] = "1".into();
        }
        let ports = &ports[..streams as usize];
        // Typed parameters only (sizes, counts, flags), quoted anyway so
        // that no value can become shell syntax.
        let args: Vec<String> = client.iter().map(|a| sh_quote(a)).collect();
        let args = args.join(" ");
        let clients: Vec<String> = ports
            .iter()
            .enumerate()
            .map(|(k, p)| {
                format!(
                    "iperf3 -c 127.0.0.1 -p {p} {args} -J -t {REFERENCE_SECS} > stream{k}.json &"
                )
            })
            .collect();
        let script = format!("{} wait; cat stream*.json", clients.join(" "));
        let servers: Vec<String> = ports
            .iter()
            .map(|p| format!("iperf3 -s -1 -p {p} &"))
            .collect();
        let mut r = Reference::new(
            "iperf3",
            "iperf3",
            argv(["sh", "-c", &script]),
            metric,
            parse,
        );
        r.server_argv = Some(argv(["sh", "-c", &format!("{} wait", servers.join(" "))]));
        r.note = Some(format!(
            "{STREAM_NOTE}; iperf3 ran as {streams} processes of one stream each (ports {}..{}, one server each), their throughputs summed: iperf3 before 3.16 runs every -P stream in one thread, which would make one CPU carry all of them while ours uses {streams} threads",
            ports[0],
            ports[ports.len() - 1]
        ));
        r
    } else {
        let port = ports[0].to_string();
        let mut a = argv(["iperf3", "-c", "127.0.0.1", "-p", port.as_str()]);
        a.append(&mut client);
        a.extend(argv(["-J", "-t"]));
        a.push(REFERENCE_SECS.to_string());
        let mut r = Reference::new("iperf3", "iperf3", a, metric, parse);
        r.server_argv = Some(argv(["iperf3", "-s", "-1", "-p", port.as_str()]));
        r.note = Some(STREAM_NOTE.to_string());
        r
    };
    r.sample_time = Some(WINDOW_SAMPLE);
    r
}

/// `a` as one word of a POSIX shell's command line.
fn sh_quote(a: &str) -> String {
    if !a.is_empty()
        && a.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.,:/=+".contains(&b))
    {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

/// Said at every iperf3 point.
const STREAM_NOTE: &str = "benchsuite's samples last 0.8 s here, so that a round of five spans iperf3's 4 s: loopback streams pass through states (10 ms samples of 1.2 GB/s between others of 2-3 GB/s in one round), which five 10 ms samples can fall inside while iperf3 averages over them (128 KiB, 3 interleaved rounds: 0.89 (0.46-0.95) with 10 ms samples, 0.92 (0.91-0.99) with 0.8 s)";

/// `net.tcp_throughput` → `iperf3 -c 127.0.0.1 -p PORT -l BLOCK -P THREADS
/// [-R | --bidir] [-N] -J -t SECS` against `iperf3 -s -1 -p PORT`, each
/// under `taskset -c` on the CPU of its side where ours splits them
/// (`cpus=split`, or `auto` resolved to it).
pub fn tcp(ctx: &Context, point: &Point) -> Option<Reference> {
    let streams = point.get("threads").and_then(Value::as_u64).unwrap_or(1);
    tcp_on(ctx, point, &free_ports(streams as usize), &allowed_cpus())
}

fn tcp_on(ctx: &Context, point: &Point, ports: &[u16], cpus: &[usize]) -> Option<Reference> {
    if ctx.options.contains_key("peer") {
        return None;
    }
    let block = point.get("block")?.as_u64()?;
    let threads = point.get("threads")?.as_u64()?;
    let split = match point.get("cpus").and_then(Value::as_str) {
        Some(c) => crate::params::split_cpus(
            <crate::params::StreamCpus as benchsuite_core::Choice>::from_name(c)?,
            true,
            threads,
            cpus,
        )
        .ok()?,
        None => None,
    };
    let mut a = argv(["-l", &block.to_string(), "-P", &threads.to_string()]);
    let mut parse: benchsuite_core::reference::ParseFn = parse_tcp;
    match point.get("direction")?.as_str()? {
        "up" => {}
        "down" => a.push("-R".into()),
        "bidir" => {
            a.push("--bidir".into());
            parse = parse_tcp_bidir;
        }
        _ => return None,
    }
    if point.get("nodelay").and_then(Value::as_bool) == Some(true) {
        a.push("-N".into());
    }
    let mut r = iperf3(ports, a, threads, "throughput", parse);
    let mut notes: Vec<String> = r.note.take().into_iter().collect();
    if let Some((here, server)) = split {
        r.argv = taskset(here, std::mem::take(&mut r.argv));
        r.server_argv = r.server_argv.take().map(|s| taskset(server, s));
        notes.push(format!(
            "both sides split alike: iperf3's client on CPU {here}, its server on CPU {server} (taskset), as ours"
        ));
    }
    if block <= SMALL_MESSAGE {
        notes.push(SMALL_MESSAGE_NOTE.to_string());
    } else if threads > 1 {
        notes.push(STREAMS_NOTE.to_string());
    } else if block < BELOW_DEFAULT {
        notes.push(BELOW_DEFAULT_NOTE.to_string());
    }
    r.note = (!notes.is_empty()).then(|| notes.join("; "));
    Some(r)
}

/// Messages up to this size: the receiver's cost per message, not the
/// copy, sets the rate, and iperf3's receiver pays more per message.
const SMALL_MESSAGE: u64 = 16 << 10;

/// What was measured about equal work at small messages.
const SMALL_MESSAGE_NOTE: &str = "same work per byte, different cost per message: both send each message with one write of `block` bytes and receive it with one read of `block` bytes (measured with perf stat -e syscalls:* over 4 s on loopback, 1 KiB: ours 2.38M sendto and 2.38M recvfrom for 2.4 GB; iperf3 1.39M write and 1.39M read for 1.42 GB), but iperf3's server calls pselect6 before every read (1.39M) and its client before every tenth write, so on a 2-vCPU guest, where the receiver's CPU is the limit, iperf3 spends about twice the system calls per message that ours does. By 8 KiB the receiver keeps up and the sending vCPU is the limit: a receiver that has caught up sleeps, and waking a sleeping vCPU is paid by the sender's (sched_switch traces, 8 KiB: ours' receiver slept about 0.08 times per message, iperf3's, slower per message, 0.06), so there iperf3's extra calls cost it nothing and its fewer wake-ups win it up to a fifth, by the host's state (ratios 0.77-1.07 in one afternoon); ours with a receiver that spins 50 µs before sleeping read 1.17-1.30x iperf3 in the same rounds: the receiver's waiting, not the work per byte";

/// Blocks above [`SMALL_MESSAGE`] and below this (iperf3's default,
/// 128 KiB): iperf3 reads less than a block per call there and is slower
/// than at its default.
const BELOW_DEFAULT: u64 = 128 << 10;

/// What was measured about equal work between small messages and 128 KiB.
const BELOW_DEFAULT_NOTE: &str = "same work per byte: both copy every byte once into the socket and once out of it (perf stat -a -e syscalls:*,sched:* on loopback, 64 KiB, 2-vCPU Zen 5 guest: ours 690k sendto of 64 KiB and 690k recvfrom of 64 KiB for 45 GB; iperf3 200k write of 61 KB, 247k read of 49 KB and 229k pselect6 for 12.2 GB), and the sending CPU is saturated in both (/proc/stat: 98-100% sys + softirq); iperf3's rate at 64 KiB is below its own at 128 KiB (3.2 against 4.2 GB/s in the same rounds) because its event loop calls pselect6 before each read and write and its receiver, reading what is there, sleeps twice as often per byte (sched_switch 9.7k per GB against ours 4.6k), each wake-up paid by the sending CPU";

/// What was measured about equal work with several streams.
const STREAMS_NOTE: &str = "same work per byte: both write and read whole blocks, every byte copied once into the socket and once out (perf stat -a -e syscalls:*,sched:* on loopback, 128 KiB, 2 streams, 2-vCPU Zen 5 guest, twice: ours 355-366k sendto and 353-367k recvfrom of 128 KiB for 47-48 GB; iperf3's two processes 171-178k write and 172-180k read of 130 KB and 197-201k pselect6 for 22-23 GB), with both CPUs saturated on both sides (/proc/stat: 0% idle); iperf3's event loop adds a pselect6 for about every two reads and writes (24k system calls per GB against ours 15k) and switches tasks 1.4 times as often per byte (2.2-2.7k per GB against 1.5-2.0k), which on saturated CPUs comes out of its rate (ours 6.5-7.6 GB/s against 5.6-5.8 in those runs)";

/// `argv` run under `taskset -c CPU`.
fn taskset(cpu: usize, mut argv_: Vec<String>) -> Vec<String> {
    let mut a = argv(["taskset", "-c", &cpu.to_string()]);
    a.append(&mut argv_);
    a
}

/// `net.udp_throughput` → `iperf3 -c 127.0.0.1 -p PORT -u -b RATE -l
/// BLOCK -P THREADS -J -t SECS` (`-b 0` for `rate=max`; iperf3's `-b` is
/// per stream, so a given rate is divided among the streams).
pub fn udp(ctx: &Context, point: &Point) -> Option<Reference> {
    let streams = point.get("threads").and_then(Value::as_u64).unwrap_or(1);
    udp_on(ctx, point, &free_ports(streams.max(1) as usize))
}

fn udp_on(ctx: &Context, point: &Point, ports: &[u16]) -> Option<Reference> {
    if ctx.options.contains_key("peer") {
        return None;
    }
    let block = point.get("block")?.as_u64()?;
    let threads = point.get("threads")?.as_u64()?.max(1);
    let rate = match point.get("rate")?.as_str()? {
        "max" => "0".to_string(),
        r => {
            let bits = crate::params::parse_rate(r).ok()??;
            format!("{}", (bits / threads as f64).round() as u64)
        }
    };
    let a = argv([
        "-u",
        "-b",
        rate.as_str(),
        "-l",
        &block.to_string(),
        "-P",
        &threads.to_string(),
    ]);
    Some(iperf3(ports, a, threads, "received", parse_udp))
}

/// `net.latency` → `sockperf ping-pong --tcp -i 127.0.0.1 -p PORT -m BLOCK
/// --full-rtt -t SECS` against `sockperf sr --tcp -i 127.0.0.1 -p PORT`,
/// with `taskset -c` on both ends for `cpus=same|different`; at `rate=N`,
/// `sockperf under-load ... --mps=N --reply-every=1` instead (every message
/// answered, as ours are). None under `load=tcp` (sockperf has no
/// background stream) or `rate=auto` (a ladder, not one rate).
pub fn latency(ctx: &Context, point: &Point) -> Option<Reference> {
    let cpus = allowed_cpus();
    latency_on(ctx, point, free_port(), &cpus)
}

/// The CPUs this process may run on (sched_getaffinity), lowest first.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `set` is a plain bitmask the call fills; the size passed is its own.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return vec![0];
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

fn latency_on(ctx: &Context, point: &Point, port: u16, cpus: &[usize]) -> Option<Reference> {
    if ctx.options.contains_key("peer") || point.get("load")?.as_str()? != "none" {
        return None;
    }
    let block = point.get("block")?.as_u64()?;
    let proto = point.get("proto")?.as_str()?;
    let rate = match point.get("rate") {
        None => None,
        Some(Value::Int(n)) => Some(*n),
        Some(Value::Str(s)) if s == benchsuite_core::param::RATE_OFF => None,
        Some(_) => return None,
    };
    let port = port.to_string();
    let (client_cpu, server_cpu) = match (point.get("cpus")?.as_str()?, cpus) {
        ("any", _) => (None, None),
        // auto is the benchmark's: any for an open loop, else same (the
        // reference runs on loopback only, never with --peer).
        ("auto", _) if rate.is_some() => (None, None),
        ("same" | "auto", [a, ..]) => (Some(*a), Some(*a)),
        ("different", [a, b, ..]) => (Some(*a), Some(*b)),
        _ => return None,
    };
    let pin = |cpu: Option<usize>, rest: Vec<String>| match cpu {
        Some(c) => taskset(c, rest),
        None => rest,
    };
    // sockperf's smallest message is 14 bytes (its header).
    let m = block.max(14);
    let mode = if rate.is_some() {
        "under-load"
    } else {
        "ping-pong"
    };
    let mut client = argv(["sockperf", mode]);
    let mut server = argv(["sockperf", "sr"]);
    if proto == "tcp" {
        client.push("--tcp".into());
        server.push("--tcp".into());
    }
    client.extend(argv(["-i", "127.0.0.1", "-p", port.as_str(), "-m"]));
    client.push(m.to_string());
    if let Some(n) = rate {
        client.push(format!("--mps={n}"));
        client.push("--reply-every=1".into());
    }
    client.extend(argv(["--full-rtt", "-t"]));
    client.push(REFERENCE_SECS.to_string());
    server.extend(argv(["-i", "127.0.0.1", "-p", port.as_str()]));
    // Open loop: the tail is what an operator sizes by, so both sides'
    // p99 (ours: the median of each round's own p99).
    let (metric, parse): (&'static str, benchsuite_core::reference::ParseFn) = if rate.is_some() {
        ("rtt.p99", |out| parse_sockperf_percentile(out, 99.0))
    } else {
        ("rtt", parse_sockperf)
    };
    let mut r = Reference::new(
        "sockperf",
        "sockperf",
        pin(client_cpu, client),
        metric,
        parse,
    );
    r.server_argv = Some(pin(server_cpu, server));
    let mut notes = Vec::new();
    if m != block {
        notes.push(format!(
            "sockperf's smallest message is 14 bytes; ours sends {block}"
        ));
    }
    if let Some(n) = rate {
        notes.push(format!(
            "open loop at {n}/s, both compared by their p99 round trip: sockperf under-load times each message from when it was actually sent, ours from its intended start (a late send or a stall of the sender counts with us, not with sockperf); sockperf busy-waits between sends, ours sleeps until the next one (so on an idle machine ours pays a wake-up per request); sockperf leaves out its first 400 ms (warm-up), and without --reply-every=1 it would answer and time only every 100th message"
        ));
    }
    r.note = (!notes.is_empty()).then(|| notes.join("; "));
    Some(r)
}

/// Every iperf3 JSON document in `out` (one per process: several when the
/// streams ran as processes of their own), each checked for iperf3's
/// `error`.
fn json_docs(out: &str) -> Result<Vec<serde_json::Value>, String> {
    let start = out.find('{').ok_or("no JSON in iperf3's output")?;
    let mut docs = Vec::new();
    for v in serde_json::Deserializer::from_str(&out[start..]).into_iter::<serde_json::Value>() {
        let v = v.map_err(|e| format!("iperf3's JSON: {e}"))?;
        if let Some(e) = v["error"].as_str() {
            return Err(format!("iperf3: {e}"));
        }
        docs.push(v);
    }
    Ok(docs)
}

/// `f` of each document in `out`, summed.
fn sum_docs(
    out: &str,
    f: impl Fn(&serde_json::Value) -> Result<f64, String>,
) -> Result<f64, String> {
    json_docs(out)?.iter().map(f).sum()
}

fn bits(v: &serde_json::Value, sum: &str) -> Result<f64, String> {
    v["end"][sum]["bits_per_second"]
        .as_f64()
        .ok_or_else(|| format!("no end.{sum}.bits_per_second in iperf3's JSON"))
}

/// Bytes per second the receiver counted: `end.sum_received.bits_per_second / 8`.
/// Summed over the processes where streams ran as processes of their own.
pub fn parse_tcp(out: &str) -> Result<f64, benchsuite_core::ValueError> {
    parse_tcp_text(out).map_err(Into::into)
}

fn parse_tcp_text(out: &str) -> Result<f64, String> {
    sum_docs(out, |v| Ok(bits(v, "sum_received")? / 8.0))
}

/// Both directions of `--bidir` together, bytes per second.
pub fn parse_tcp_bidir(out: &str) -> Result<f64, benchsuite_core::ValueError> {
    parse_tcp_bidir_text(out).map_err(Into::into)
}

fn parse_tcp_bidir_text(out: &str) -> Result<f64, String> {
    sum_docs(out, |v| {
        Ok((bits(v, "sum_received")? + bits(v, "sum_received_bidir_reverse")?) / 8.0)
    })
}

/// UDP bytes per second received: `end.sum_received` where iperf3 has it,
/// else the sender's rate less the lost share; summed over processes.
pub fn parse_udp(out: &str) -> Result<f64, benchsuite_core::ValueError> {
    parse_udp_text(out).map_err(Into::into)
}

fn parse_udp_text(out: &str) -> Result<f64, String> {
    sum_docs(out, |v| {
        if let Ok(b) = bits(v, "sum_received") {
            return Ok(b / 8.0);
        }
        let sent = bits(v, "sum")?;
        let lost = v["end"]["sum"]["lost_percent"].as_f64().unwrap_or(0.0);
        Ok(sent * (1.0 - lost / 100.0) / 8.0)
    })
}

/// sockperf's average round trip (`Round trip is X usec`), in seconds.
pub fn parse_sockperf(out: &str) -> Result<f64, benchsuite_core::ValueError> {
    parse_sockperf_text(out).map_err(Into::into)
}

fn parse_sockperf_text(out: &str) -> Result<f64, String> {
    Ok(number_after(out, "Round trip is")? * 1e-6)
}

/// A percentile of sockperf's round trip (`---> percentile 99.000 =
/// 84.494`, in µs), in seconds: with `--full-rtt` the full round trip,
/// as ours.
pub fn parse_sockperf_percentile(out: &str, pct: f64) -> Result<f64, benchsuite_core::ValueError> {
    parse_sockperf_percentile_text(out, pct).map_err(Into::into)
}

fn parse_sockperf_percentile_text(out: &str, pct: f64) -> Result<f64, String> {
    for line in out.lines() {
        let Some(rest) = line.split("---> percentile").nth(1) else {
            continue;
        };
        let Some((p, v)) = rest.split_once('=') else {
            continue;
        };
        if p.trim()
            .parse::<f64>()
            .is_ok_and(|p| (p - pct).abs() < 1e-9)
        {
            return v
                .trim()
                .parse::<f64>()
                .map(|us| us * 1e-6)
                .map_err(|_| format!("no number in: {}", line.trim()));
        }
    }
    Err(format!(
        "no `percentile {pct:.3}` line in sockperf's output"
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use benchsuite_core::{Benchmark, Host};

    use super::*;

    fn ctx() -> Context {
        Context::new(Arc::new(Host::default()))
    }

    fn point(b: &dyn Benchmark, over: &[(&str, Value)]) -> Point {
        let mut p = Point::default();
        for s in b.meta().params {
            p.set(&s.name, s.default.clone());
        }
        for (k, v) in over {
            p.set(k, v.clone());
        }
        p
    }

    fn s(v: &str) -> Value {
        Value::Str(v.into())
    }

    #[test]
    fn a_shell_word_cannot_become_syntax() {
        assert_eq!(sh_quote("-l"), "-l");
        assert_eq!(sh_quote("131072"), "131072");
        assert_eq!(sh_quote(""), "''");
        assert_eq!(sh_quote("a b;rm -rf /"), "'a b;rm -rf /'");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
        assert_eq!(sh_quote("$(x)\n`y`"), "'$(x)\n`y`'");
    }

    #[test]
    fn iperf3_tcp_command_lines() {
        let b = crate::tcp::TcpThroughput;
        // One CPU: `auto` cannot split, nothing is pinned.
        let r = tcp_on(&ctx(), &point(&b, &[]), &[5400], &[0]).unwrap();
        assert_eq!(
            r.command(),
            "iperf3 -c 127.0.0.1 -p 5400 -l 131072 -P 1 -J -t 4"
        );
        assert_eq!(
            r.server_argv.as_deref(),
            Some(&argv(["iperf3", "-s", "-1", "-p", "5400"])[..])
        );
        assert_eq!(r.metric, "throughput");
        // Five samples of ours span iperf3's window.
        assert_eq!(
            r.sample_time.map(|t| t * 5),
            Some(std::time::Duration::from_secs(4))
        );
        // Two CPUs: `auto` splits one stream, iperf3 the same way.
        let r = tcp_on(&ctx(), &point(&b, &[]), &[5400], &[2, 5]).unwrap();
        assert_eq!(
            r.command(),
            "taskset -c 2 iperf3 -c 127.0.0.1 -p 5400 -l 131072 -P 1 -J -t 4"
        );
        assert_eq!(
            r.server_argv.as_deref(),
            Some(&argv(["taskset", "-c", "5", "iperf3", "-s", "-1", "-p", "5400"])[..])
        );
        let any = point(&b, &[("cpus", s("any"))]);
        let r = tcp_on(&ctx(), &any, &[5400], &[2, 5]).unwrap();
        assert!(r.command().starts_with("iperf3 "), "{}", r.command());
        let p = point(
            &b,
            &[
                ("direction", s("down")),
                ("threads", Value::Int(4)),
                ("block", Value::Int(8192)),
                ("nodelay", Value::Bool(true)),
            ],
        );
        // Four streams: not split, and four iperf3 processes of one stream
        // each (iperf3 before 3.16 runs every -P stream in one thread).
        let r = tcp_on(&ctx(), &p, &[5401, 5402, 5403, 5404], &[0, 1]).unwrap();
        let one = |port: u16, k: usize| {
            format!("iperf3 -c 127.0.0.1 -p {port} -l 8192 -P 1 -R -N -J -t 4 > stream{k}.json &")
        };
        assert_eq!(
            r.argv,
            argv([
                "sh",
                "-c",
                &format!(
                    "{} {} {} {} wait; cat stream*.json",
                    one(5401, 0),
                    one(5402, 1),
                    one(5403, 2),
                    one(5404, 3)
                )
            ])
        );
        assert_eq!(
            r.server_argv.as_deref(),
            Some(
                &argv([
                    "sh",
                    "-c",
                    "iperf3 -s -1 -p 5401 & iperf3 -s -1 -p 5402 & iperf3 -s -1 -p 5403 & iperf3 -s -1 -p 5404 & wait"
                ])[..]
            )
        );
        assert_eq!(r.tool, "iperf3");
        let note = r.note.as_deref().unwrap();
        assert!(
            note.contains("4 processes of one stream each (ports 5401..5404"),
            "{note}"
        );
        // Small messages: the note says what was measured about equal work.
        assert!(note.contains("pselect6"));
        let two = point(&b, &[("threads", Value::Int(2))]);
        let two = tcp_on(&ctx(), &two, &[5400, 5401], &[0]).unwrap();
        assert!(two.note.as_deref().unwrap().contains("2 streams, 2-vCPU"));
        let big = tcp_on(&ctx(), &point(&b, &[]), &[5400], &[0]).unwrap();
        assert_eq!(big.note.as_deref(), Some(STREAM_NOTE));
        // Between small messages and iperf3's default: what equal work was measured.
        let mid = point(&b, &[("block", Value::Int(64 << 10))]);
        let mid = tcp_on(&ctx(), &mid, &[5400], &[0]).unwrap();
        assert!(
            mid.note
                .as_deref()
                .unwrap()
                .contains("same work per byte: both copy every byte once")
        );
        let r = tcp_on(
            &ctx(),
            &point(&b, &[("direction", s("bidir"))]),
            &[5402],
            &[0],
        )
        .unwrap();
        assert!(r.command().contains("-P 1 --bidir -J"));
        let mut peer = ctx();
        peer.options.insert("peer".into(), "h:5301".into());
        assert!(tcp_on(&peer, &point(&b, &[]), &[5400], &[0, 1]).is_none());
    }

    #[test]
    fn iperf3_udp_command_lines() {
        let b = crate::udp::UdpThroughput;
        let r = udp_on(&ctx(), &point(&b, &[]), &[5400, 5401]).unwrap();
        assert_eq!(
            r.command(),
            "iperf3 -c 127.0.0.1 -p 5400 -u -b 0 -l 1472 -P 1 -J -t 4"
        );
        assert_eq!(r.metric, "received");
        assert_eq!(r.sample_time, Some(WINDOW_SAMPLE));
        let p = point(&b, &[("rate", s("1G")), ("threads", Value::Int(2))]);
        let r = udp_on(&ctx(), &p, &[5400, 5401]).unwrap();
        assert!(
            r.command()
                .contains("-p 5400 -u -b 500000000 -l 1472 -P 1 -J -t 4 > stream0.json &")
                && r.command()
                    .contains("-p 5401 -u -b 500000000 -l 1472 -P 1 -J -t 4 > stream1.json &"),
            "{}",
            r.command()
        );
    }

    #[test]
    fn sockperf_command_lines_and_placement() {
        let b = crate::latency::Latency;
        let r = latency_on(
            &ctx(),
            &point(&b, &[("block", Value::Int(64))]),
            11111,
            &[2, 3],
        )
        .unwrap();
        // The default, cpus=auto: both ends on the first CPU, as ours.
        assert_eq!(
            r.command(),
            "taskset -c 2 sockperf ping-pong --tcp -i 127.0.0.1 -p 11111 -m 64 --full-rtt -t 4"
        );
        assert_eq!(
            r.server_argv.unwrap(),
            argv([
                "taskset",
                "-c",
                "2",
                "sockperf",
                "sr",
                "--tcp",
                "-i",
                "127.0.0.1",
                "-p",
                "11111"
            ])
        );
        assert_eq!(r.note, None);
        let any = point(&b, &[("block", Value::Int(64)), ("cpus", s("any"))]);
        let r = latency_on(&ctx(), &any, 11111, &[2, 3]).unwrap();
        assert_eq!(
            r.command(),
            "sockperf ping-pong --tcp -i 127.0.0.1 -p 11111 -m 64 --full-rtt -t 4"
        );
        let p = point(&b, &[("cpus", s("different")), ("proto", s("udp"))]);
        let r = latency_on(&ctx(), &p, 11111, &[2, 3]).unwrap();
        assert_eq!(
            r.command(),
            "taskset -c 2 sockperf ping-pong -i 127.0.0.1 -p 11111 -m 14 --full-rtt -t 4"
        );
        assert_eq!(
            r.server_argv.unwrap(),
            argv([
                "taskset",
                "-c",
                "3",
                "sockperf",
                "sr",
                "-i",
                "127.0.0.1",
                "-p",
                "11111"
            ])
        );
        assert!(r.note.unwrap().contains("14 bytes"));
        let p = point(&b, &[("cpus", s("same"))]);
        let r = latency_on(&ctx(), &p, 1, &[5]).unwrap();
        assert!(r.command().starts_with("taskset -c 5 sockperf"));
        assert!(latency_on(&ctx(), &point(&b, &[("cpus", s("different"))]), 1, &[0]).is_none());
        assert!(latency_on(&ctx(), &point(&b, &[("load", s("tcp"))]), 1, &[0]).is_none());
        // Open loop: under-load at the same rate, every message answered.
        let p = point(&b, &[("rate", Value::Int(5000)), ("block", Value::Int(64))]);
        let r = latency_on(&ctx(), &p, 11111, &[2, 3]).unwrap();
        assert_eq!(
            r.command(),
            "sockperf under-load --tcp -i 127.0.0.1 -p 11111 -m 64 --mps=5000 --reply-every=1 --full-rtt -t 4"
        );
        assert_eq!(
            r.server_argv.unwrap(),
            argv(["sockperf", "sr", "--tcp", "-i", "127.0.0.1", "-p", "11111"])
        );
        assert_eq!(r.metric, "rtt.p99");
        let note = r.note.unwrap();
        assert!(
            note.contains("intended start") && note.contains("actually sent"),
            "{note}"
        );
        let p = point(
            &b,
            &[
                ("rate", Value::Int(2000)),
                ("proto", s("udp")),
                ("cpus", s("same")),
            ],
        );
        let r = latency_on(&ctx(), &p, 1, &[5]).unwrap();
        assert_eq!(
            r.command(),
            "taskset -c 5 sockperf under-load -i 127.0.0.1 -p 1 -m 14 --mps=2000 --reply-every=1 --full-rtt -t 4"
        );
        assert!(
            r.note
                .unwrap()
                .contains("14 bytes; ours sends 1; open loop at 2000/s")
        );
        let auto = point(&b, &[("rate", s("auto"))]);
        assert!(latency_on(&ctx(), &auto, 1, &[0]).is_none());
    }

    #[test]
    fn parses_tool_output() {
        let tcp = r#"{"start": {}, "end": {"sum_sent": {"bits_per_second": 9e9},
            "sum_received": {"bits_per_second": 8e9},
            "sum_received_bidir_reverse": {"bits_per_second": 4e9}}}"#;
        assert_eq!(parse_tcp(tcp), Ok(1e9));
        assert_eq!(parse_tcp_bidir(tcp), Ok(1.5e9));
        assert!(parse_tcp(r#"{"error": "unable to connect"}"#).is_err());
        // One document per process: summed; one process's error fails all.
        assert_eq!(parse_tcp(&format!("{tcp}\n{tcp}")), Ok(2e9));
        assert!(parse_tcp(&format!("{tcp}\n{{\"error\": \"refused\"}}")).is_err());
        let udp_old = r#"{"end": {"sum": {"bits_per_second": 8e6, "lost_percent": 50}}}"#;
        assert_eq!(parse_udp(udp_old), Ok(5e5));
        let sp = "sockperf: Summary: Round trip is 19.372 usec\n";
        assert!((parse_sockperf(sp).unwrap() - 19.372e-6).abs() < 1e-12);
        // sockperf 3.7 under-load --full-rtt, as it prints it.
        let ul = "sockperf: Summary: Round trip is 77.398 usec
sockperf: \x1b[2;35mTotal 3098 observations\x1b[0m; each percentile contains 30.98 observations
sockperf: ---> <MAX> observation = 5266.249
sockperf: ---> percentile 99.999 = 5266.249
sockperf: ---> percentile 99.900 = 3849.479
sockperf: ---> percentile 99.000 = 2335.635
sockperf: ---> percentile 90.000 =   19.388
sockperf: ---> percentile 50.000 =   15.773
";
        assert!((parse_sockperf(ul).unwrap() - 77.398e-6).abs() < 1e-12);
        let p99 = parse_sockperf_percentile(ul, 99.0).unwrap();
        assert!((p99 - 2335.635e-6).abs() < 1e-12, "{p99}");
        let p50 = parse_sockperf_percentile(ul, 50.0).unwrap();
        assert!((p50 - 15.773e-6).abs() < 1e-12, "{p50}");
        assert!(parse_sockperf_percentile(ul, 75.0).is_err());
    }
}
