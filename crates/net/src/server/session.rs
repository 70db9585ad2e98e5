//! One test on the server (`Session`): what its start sets up, the
//! server-wide data-thread budget each of its threads reserves, and the
//! teardown that stops and joins every data thread, also on drop. The
//! `Session` type and the session table (`Shared::sessions`) are in
//! [`super::state`]; the TCP and UDP halves of a session's data path are
//! in [`super::data`] and [`super::udp`].

use std::net::{IpAddr, Shutdown};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::proto::{ErrorCode, TestSpec};

use super::guard::lock;
use super::state::{Session, Shared, SharedCount};

impl Session {
    pub(super) fn start(
        shared: &Arc<Shared>,
        spec: TestSpec,
        peer_ip: IpAddr,
        local_ip: IpAddr,
    ) -> Result<Arc<Session>, (ErrorCode, String)> {
        let mut s = Session {
            id: shared.new_session_id(),
            spec,
            peer_ip,
            shared_epoch: shared.epoch,
            last_activity: Arc::new(AtomicU64::new(shared.now_ms())),
            tcp_received: Arc::new(AtomicU64::new(0)),
            tcp_sent: Arc::new(AtomicU64::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
            tcp: Mutex::new(Vec::new()),
            tcp_attached: std::sync::atomic::AtomicU32::new(0),
            udp: Vec::new(),
            udp_ports: Vec::new(),
            data_threads: Arc::new(SharedCount {
                shared: shared.clone(),
            }),
        };
        for i in 0..s.spec.udp_streams {
            if let Err(e) = s.add_udp(shared, local_ip) {
                s.finish_blocking();
                return Err((ErrorCode::Internal, format!("UDP stream {i}: {e}")));
            }
        }
        Ok(Arc::new(s))
    }

    pub(super) fn reserve_thread(shared: &Shared) -> Result<(), String> {
        let n = shared.data_threads.fetch_add(1, Ordering::SeqCst);
        if n >= shared.cfg.max_data_threads {
            shared.data_threads.fetch_sub(1, Ordering::SeqCst);
            return Err(format!(
                "the server runs {n} data streams already, its limit is {}",
                shared.cfg.max_data_threads
            ));
        }
        Ok(())
    }

    pub(super) fn touch(&self) {
        self.last_activity.store(
            self.shared_epoch.elapsed().as_millis() as u64,
            Ordering::Relaxed,
        );
    }

    /// Stops every data thread (shutting its socket down so blocked reads
    /// return) and joins it. Idempotent.
    pub(super) fn finish_blocking(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let tcp: Vec<_> = lock(&self.tcp).drain(..).collect();
        for (sock, _) in &tcp {
            let _ = sock.shutdown(Shutdown::Both);
        }
        for (_, h) in tcp {
            let _ = h.join();
        }
        for u in &self.udp {
            if let Some(h) = lock(&u.thread).take() {
                let _ = h.join();
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.finish_blocking();
    }
}

/// Pins the calling data thread to `cpu`, if one is given. The CPU
/// was checked when the server started, so this fails only if the
/// process's affinity changed since; the thread then runs unpinned and the
/// failure is logged (by `benchsuite serve`; the in-process server is
/// quiet).
pub(super) fn pin_data_thread(shared: &Shared, cpu: Option<usize>) {
    if let Some(cpu) = cpu
        && let Err(e) = benchsuite_core::team::pin_current_thread(cpu)
    {
        shared.log(format_args!("data thread left unpinned: {e}"));
    }
}
