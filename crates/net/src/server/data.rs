//! The server's TCP data path: attaching a data connection to its test
//! (checks, a reserved data thread, the switch from the async socket to a
//! blocking std one) and the loops that thread runs — `sink` (count and
//! acknowledge each batch), `source` (send each batch asked for) and
//! `echo` (the ping-pong). One blocking system call per block, no
//! executor in between.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream as StdTcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::proto::{self, ErrorCode, IO_TIMEOUT, MAGIC, Message, Role, UNBOUNDED};

use super::control::refuse;
use super::session::{Session, pin_data_thread};
use super::{Shared, lock};

pub(super) async fn attach(
    shared: &Arc<Shared>,
    mut sock: TcpStream,
    peer: SocketAddr,
    id: u64,
    role: Role,
) {
    let Some(session) = lock(&shared.sessions).get(&id).cloned() else {
        shared.log_refusal(format_args!(
            "{peer}: refused a data connection for an unknown test"
        ));
        refuse(
            sock,
            ErrorCode::BadRequest,
            "no such test (it ended, or the id is wrong)",
        )
        .await;
        return;
    };
    if peer.ip() != session.peer_ip {
        shared.log_refusal(format_args!(
            "{peer}: refused a data connection for another host's test"
        ));
        refuse(
            sock,
            ErrorCode::Auth,
            "a data connection must come from the test's own host",
        )
        .await;
        return;
    }
    // Reserve one of the test's TCP streams (atomically: attaches race).
    let taken = session.tcp_attached.fetch_add(1, Ordering::SeqCst);
    {
        if session.stop.load(Ordering::SeqCst) || taken >= session.spec.tcp_streams {
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
    }
    if let Err(why) = Session::reserve_thread(shared) {
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
    let cpu = shared.cfg.echo_cpu.filter(|_| role == Role::Echo);
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
        Ok(h) => tcp.push((handle, h)),
        Err(e) => {
            shared.log(format_args!("{peer}: spawning a data thread failed: {e}"));
            release();
        }
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

fn source(s: &mut StdTcpStream, ctx: &DataCtx) -> io::Result<()> {
    let buf = vec![0x5au8; ctx.block];
    while let Some(len) = read_header(s)? {
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
            // client's delayed ACK (see `tcp::push`).
            s.set_nodelay(true)?;
            s.set_nodelay(false)?;
        }
        ctx.touch();
    }
    Ok(())
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
