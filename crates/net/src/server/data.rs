//! The server's TCP data path: attaching a data connection to its test
//! (checks, a reserved data thread, the switch from the async socket to a
//! blocking std one) and the loops that thread runs — `sink` (count and
//! acknowledge each batch, or a continuous stream with count reports),
//! `source` (send each batch asked for, or a continuous stream until the
//! client's stop byte) and `echo` (the ping-pong). One blocking system
//! call per block, no executor in between.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream as StdTcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::proto::{
    self, ErrorCode, IO_TIMEOUT, MAGIC, Message, REPORT_INTERVAL, Role, STREAM, UNBOUNDED,
};

use super::guard::lock;
use super::refuse::refuse;
use super::session::pin_data_thread;
use super::state::{Session, Shared};

/// Attaches a data connection to `session` (found, and its host's: see
/// `control::find_test`) and starts its thread.
pub(super) async fn attach(
    shared: &Arc<Shared>,
    mut sock: TcpStream,
    peer: SocketAddr,
    session: Arc<Session>,
    role: Role,
) {
    // Reserve one of the test's TCP streams (atomically: attaches race);
    // given back unless the connection ends up attached, so a client that
    // retries a refused attach finds its stream still there.
    let stream = StreamSlot::take(&session);
    if session.stop.load(Ordering::SeqCst) || stream.index >= session.spec.tcp_streams {
        drop(stream);
        refuse(
            sock,
            ErrorCode::Limit,
            &format!(
                "this test has all its {} TCP streams attached",
                session.spec.tcp_streams
            ),
        )
        .await;
        return;
    }
    if let Err(why) = Session::reserve_thread(shared) {
        drop(stream);
        refuse(sock, ErrorCode::Busy, &why).await;
        return;
    }
    let release = || shared.data_threads.fetch_sub(1, Ordering::SeqCst);
    let mut ok = MAGIC.to_vec();
    ok.extend(proto::encode(&Message::Attached));
    if tokio::time::timeout(IO_TIMEOUT, sock.write_all(&ok))
        .await
        .is_err()
    {
        release();
        return;
    }
    let std_sock = match sock.into_std().and_then(|s| {
        s.set_nonblocking(false)?;
        s.set_read_timeout(Some(shared.cfg.data_idle))?;
        s.set_write_timeout(Some(shared.cfg.data_idle))?;
        s.set_nodelay(session.spec.nodelay)?;
        Ok(s)
    }) {
        Ok(s) => s,
        Err(e) => {
            shared.log(format_args!("{peer}: data connection setup failed: {e}"));
            release();
            return;
        }
    };
    let handle = match std_sock.try_clone() {
        Ok(h) => h,
        Err(e) => {
            shared.log(format_args!("{peer}: data connection setup failed: {e}"));
            release();
            return;
        }
    };
    let mut tcp = lock(&session.tcp);
    if session.stop.load(Ordering::SeqCst) {
        release();
        return;
    }
    let ctx = DataCtx {
        block: session.spec.block as usize,
        nodelay: session.spec.nodelay,
        activity: session.last_activity.clone(),
        epoch: session.shared_epoch,
        received: session.tcp_received.clone(),
        sent: session.tcp_sent.clone(),
    };
    let count = session.data_threads.clone();
    let cpu = match role {
        Role::Echo => shared.cfg.echo_cpu,
        Role::Sink | Role::Source => shared.cfg.stream_cpu,
    };
    let sh = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("benchsuite-net-data".into())
        .spawn(move || {
            pin_data_thread(&sh, cpu);
            let mut s = std_sock;
            // Errors end the connection; the client sees it closed and
            // reports that. A reset or timeout here is not the server's
            // problem to log for every stream.
            let _ = match role {
                Role::Sink => sink(&mut s, &ctx),
                Role::Source => source(&mut s, &ctx),
                Role::Echo => echo(&mut s, &ctx),
            };
            count.release();
        });
    match spawned {
        Ok(h) => {
            tcp.push((handle, h));
            stream.keep();
        }
        Err(e) => {
            shared.log(format_args!("{peer}: spawning a data thread failed: {e}"));
            release();
        }
    }
}

/// One of a test's TCP streams, reserved by an attach in progress: given
/// back when dropped, unless [`StreamSlot::keep`] says the connection
/// attached.
struct StreamSlot<'a> {
    session: &'a Session,
    /// How many were reserved before this one.
    index: u32,
}

impl<'a> StreamSlot<'a> {
    fn take(session: &'a Session) -> StreamSlot<'a> {
        let index = session.tcp_attached.fetch_add(1, Ordering::SeqCst);
        StreamSlot { session, index }
    }

    /// The stream is attached for good.
    fn keep(self) {
        std::mem::forget(self);
    }
}

impl Drop for StreamSlot<'_> {
    fn drop(&mut self) {
        self.session.tcp_attached.fetch_sub(1, Ordering::SeqCst);
    }
}

struct DataCtx {
    block: usize,
    nodelay: bool,
    activity: Arc<AtomicU64>,
    epoch: Instant,
    received: Arc<AtomicU64>,
    sent: Arc<AtomicU64>,
}

impl DataCtx {
    fn touch(&self) {
        self.activity
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }
}

/// Reads an 8-byte batch header; `Ok(None)` at a clean end of stream.
fn read_header(s: &mut StdTcpStream) -> io::Result<Option<u64>> {
    let mut h = [0u8; 8];
    let mut got = 0;
    while got < 8 {
        match s.read(&mut h[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some(u64::from_be_bytes(h)))
}

fn sink(s: &mut StdTcpStream, ctx: &DataCtx) -> io::Result<()> {
    let mut buf = vec![0u8; ctx.block];
    while let Some(len) = read_header(s)? {
        if len == STREAM {
            return sink_stream(s, ctx, &mut buf);
        }
        let mut left = len;
        let mut reads: u32 = 0;
        while left > 0 {
            let want = left.min(buf.len() as u64) as usize;
            match s.read(&mut buf[..want]) {
                Ok(0) if len == UNBOUNDED => return Ok(()),
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    left -= n as u64;
                    if len == UNBOUNDED {
                        ctx.received.fetch_add(n as u64, Ordering::Relaxed);
                        reads = reads.wrapping_add(1);
                        if reads.is_multiple_of(1024) {
                            ctx.touch();
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        ctx.received.fetch_add(len, Ordering::Relaxed);
        s.write_all(&len.to_be_bytes())?;
        ctx.touch();
    }
    Ok(())
}

/// A continuous sink ([`STREAM`]): counts what arrives, reports the count
/// with its time at most every [`REPORT_INTERVAL`], and at the end of file
/// reports the total and shuts its write side down.
fn sink_stream(s: &mut StdTcpStream, ctx: &DataCtx, buf: &mut [u8]) -> io::Result<()> {
    // Only reports travel this way: each goes out at once. With Nagle on,
    // every report would wait for the previous one's ACK (a round trip),
    // and the client would see them in clumps an RTT apart.
    s.set_nodelay(true)?;
    let t0 = Instant::now();
    let mut last = t0;
    let mut total: u64 = 0;
    // Each report's time is later than the one before (the client rejects
    // a clock that does not advance), even where the clock's reading is not.
    let mut last_ns: u64 = 0;
    let mut report = |s: &mut StdTcpStream, total: u64, at: Instant| {
        last_ns = (at.duration_since(t0).as_nanos() as u64).max(last_ns + 1);
        s.write_all(&proto::encode_report(total, last_ns))
    };
    let mut low = crate::sys::LowWater::for_block(buf.len());
    loop {
        let n = match s.read(buf) {
            Ok(0) => break,
            Ok(n) => n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        low.tick(s);
        // The time is read after the read returned: the report's bytes
        // had all arrived by then.
        let now = Instant::now();
        total += n;
        ctx.received.fetch_add(n, Ordering::Relaxed);
        if now.duration_since(last) >= REPORT_INTERVAL {
            report(s, total, now)?;
            last = now;
            ctx.touch();
        }
    }
    report(s, total, Instant::now())?;
    ctx.touch();
    s.shutdown(Shutdown::Write)
}

fn source(s: &mut StdTcpStream, ctx: &DataCtx) -> io::Result<()> {
    let buf = vec![0x5au8; ctx.block];
    while let Some(len) = read_header(s)? {
        if len == STREAM {
            return source_stream(s, ctx, &buf);
        }
        let mut left = len;
        let mut writes: u32 = 0;
        while left > 0 {
            let n = left.min(buf.len() as u64) as usize;
            if let Err(e) = s.write_all(&buf[..n]) {
                // An unbounded stream ends when the client closes it.
                return if len == UNBOUNDED { Ok(()) } else { Err(e) };
            }
            left -= n as u64;
            ctx.sent.fetch_add(n as u64, Ordering::Relaxed);
            writes = writes.wrapping_add(1);
            if writes.is_multiple_of(1024) {
                ctx.touch();
            }
        }
        if !ctx.nodelay {
            // Push the batch's last short segment now instead of after the
            // client's delayed ACK (Nagle would hold it until then): an
            // artefact of batching, not of the stream.
            s.set_nodelay(true)?;
            s.set_nodelay(false)?;
        }
        ctx.touch();
    }
    Ok(())
}

/// A continuous source ([`STREAM`]): sends until the client sends a byte
/// (looked for every [`REPORT_INTERVAL`]), then shuts its write side down;
/// the client reads to the end of file, so both count the same bytes.
fn source_stream(s: &mut StdTcpStream, ctx: &DataCtx, buf: &[u8]) -> io::Result<()> {
    // The connection's idle limit stays the bound on a write that makes no
    // progress; the socket's own timeout becomes the retry interval.
    let idle = s.write_timeout()?.unwrap_or(proto::DATA_IDLE);
    s.set_write_timeout(Some(proto::SEND_WAIT))?;
    let mut last = Instant::now();
    loop {
        proto::write_all_retrying(s, buf, idle)?;
        ctx.sent.fetch_add(buf.len() as u64, Ordering::Relaxed);
        let now = Instant::now();
        if now.duration_since(last) >= REPORT_INTERVAL {
            last = now;
            ctx.touch();
            if crate::sys::pending(s).is_some_and(|n| n > 0) {
                // Consumed (it is there, so this does not block), so the
                // final close does not reset the connection over it.
                let _ = s.read(&mut [0u8; 64]);
                break;
            }
        }
    }
    s.shutdown(Shutdown::Write)
}

fn echo(s: &mut StdTcpStream, ctx: &DataCtx) -> io::Result<()> {
    let mut buf = vec![0u8; ctx.block];
    let mut n: u32 = 0;
    loop {
        // A clean close between messages ends the test.
        let mut got = 0;
        while got < buf.len() {
            match s.read(&mut buf[got..]) {
                Ok(0) if got == 0 => return Ok(()),
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(k) => got += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        s.write_all(&buf)?;
        n = n.wrapping_add(1);
        if n.is_multiple_of(1024) {
            ctx.touch();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;

    fn ctx(block: usize) -> DataCtx {
        DataCtx {
            block,
            nodelay: false,
            activity: Arc::new(AtomicU64::new(0)),
            epoch: Instant::now(),
            received: Arc::new(AtomicU64::new(0)),
            sent: Arc::new(AtomicU64::new(0)),
        }
    }

    /// A connected pair on loopback: (client, server).
    fn pair() -> (StdTcpStream, StdTcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = StdTcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (c, s)
    }

    #[test]
    fn a_sink_stream_reports_its_count_and_ends_with_the_total() {
        let (mut c, mut s) = pair();
        let ctx = ctx(1000);
        let received = ctx.received.clone();
        let server = std::thread::spawn(move || sink(&mut s, &ctx));
        c.write_all(&STREAM.to_be_bytes()).unwrap();
        let chunk = vec![7u8; 4096];
        let mut sent = 0u64;
        for i in 0..200 {
            c.write_all(&chunk).unwrap();
            sent += chunk.len() as u64;
            if i % 50 == 0 {
                // Pauses longer than the report interval: reports come.
                std::thread::sleep(REPORT_INTERVAL * 3);
            }
        }
        c.shutdown(Shutdown::Write).unwrap();
        let mut reports = Vec::new();
        let mut r = [0u8; proto::REPORT_LEN];
        while proto::read_exact_by(&mut c, &mut r, Instant::now() + IO_TIMEOUT).is_ok() {
            reports.push(proto::decode_report(&r));
        }
        server.join().unwrap().unwrap();
        assert!(reports.len() >= 2, "{reports:?}");
        assert!(
            reports
                .windows(2)
                .all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1),
            "counts must not go back and times must advance: {reports:?}"
        );
        assert!(reports[0].1 > 0, "{reports:?}");
        assert_eq!(reports.last().unwrap().0, sent);
        assert_eq!(received.load(Ordering::SeqCst), sent);
    }

    #[test]
    fn a_source_stream_stops_at_the_clients_byte_and_both_count_the_same() {
        let (mut c, mut s) = pair();
        let ctx = ctx(64 * 1024);
        let sent = ctx.sent.clone();
        let server = std::thread::spawn(move || source(&mut s, &ctx));
        c.write_all(&STREAM.to_be_bytes()).unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        let mut got = 0u64;
        while got < 1 << 20 {
            got += c.read(&mut buf).unwrap() as u64;
        }
        c.write_all(&[1]).unwrap();
        loop {
            match c.read(&mut buf).unwrap() {
                0 => break,
                n => got += n as u64,
            }
        }
        server.join().unwrap().unwrap();
        assert_eq!(sent.load(Ordering::SeqCst), got);
    }
}
