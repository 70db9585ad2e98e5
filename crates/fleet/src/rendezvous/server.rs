//! The meeting point that rank 0 serves.

use super::*;

/// One stored text.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) text: String,
    pub(crate) at: Instant,
}

/// The store's contents.
#[derive(Debug, Default)]
pub(crate) struct Table {
    pub(crate) map: BTreeMap<String, Entry>,
    /// Bytes of names and texts.
    pub(crate) bytes: usize,
    /// Changes when a name comes or goes.
    pub(crate) version: u64,
}

impl Table {
    /// An empty table whose first version is random, so that a rank's
    /// cached version never matches another meeting point's.
    pub(crate) fn new() -> Table {
        let version = random_bytes(8)
            .ok()
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes);
        Table {
            version,
            ..Table::default()
        }
    }
}

/// The store's contents and the meeting point's state.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) table: Mutex<Table>,
    pub(crate) key: [u8; 32],
    pub(crate) stop: AtomicBool,
    pub(crate) started: Instant,
    /// The last refused connection: when, from where, why.
    pub(crate) refused: Mutex<Option<(Instant, SocketAddr, String)>>,
    /// The connections awaiting authentication, oldest first.
    pub(crate) pending: Mutex<std::collections::VecDeque<(u64, IpAddr, TcpStream)>>,
    pub(crate) given: String,
    /// The job it serves.
    pub(crate) job: Job,
    /// Random per meeting point (in the `welcome`).
    pub(crate) instance: String,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    /// Applies a request to the store.
    pub(crate) fn apply(&self, msg: Msg) -> Msg {
        let mut t = lock(&self.table);
        match msg {
            Msg::Put { name, text } => {
                if !valid_name(&name) {
                    return error(format!(
                        "invalid name ({} bytes): 1 to {MAX_NAME} bytes of A-Z a-z 0-9 . _ -, not starting with a dot",
                        name.len()
                    ));
                }
                if text.len() > MAX_VALUE {
                    return error(format!(
                        "{name}: {} bytes is above the limit of {MAX_VALUE}",
                        text.len()
                    ));
                }
                let old = t.map.get(&name).map(|e| name.len() + e.text.len());
                if old.is_none() && t.map.len() >= MAX_ENTRIES {
                    return error(format!("the store is full ({MAX_ENTRIES} names)"));
                }
                let bytes = t.bytes - old.unwrap_or(0) + name.len() + text.len();
                if bytes > MAX_BYTES {
                    return error(format!("the store is full ({MAX_BYTES} bytes)"));
                }
                t.bytes = bytes;
                if old.is_none() {
                    t.version = t.version.wrapping_add(1);
                }
                t.map.insert(
                    name,
                    Entry {
                        text,
                        at: Instant::now(),
                    },
                );
                Msg::Ok
            }
            Msg::Get { name } => Msg::Value {
                text: t.map.get(&name).map(|e| e.text.clone()),
            },
            Msg::Remove { name } => {
                if let Some(e) = t.map.remove(&name) {
                    t.bytes -= name.len() + e.text.len();
                    t.version = t.version.wrapping_add(1);
                }
                Msg::Ok
            }
            Msg::List { since } => Msg::Names {
                version: t.version,
                names: (since != Some(t.version)).then(|| t.map.keys().cloned().collect()),
            },
            other => error(format!("unexpected {} request", op_name(&other))),
        }
    }

    pub(crate) fn refuse(&self, peer: SocketAddr, why: &str) {
        *lock(&self.refused) = Some((Instant::now(), peer, why.to_string()));
    }
}

pub(crate) fn error(message: String) -> Msg {
    Msg::Error { message }
}

pub(crate) fn op_name(m: &Msg) -> &'static str {
    match m {
        Msg::Hello { .. } => "hello",
        Msg::Challenge { .. } => "challenge",
        Msg::Auth { .. } => "auth",
        Msg::Welcome { .. } => "welcome",
        Msg::Put { .. } => "put",
        Msg::Get { .. } => "get",
        Msg::Remove { .. } => "remove",
        Msg::List { .. } => "list",
        Msg::Ok => "ok",
        Msg::Value { .. } => "value",
        Msg::Names { .. } => "names",
        Msg::Error { .. } => "error",
    }
}

/// Decrements a counter when dropped.
pub(crate) struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Takes a place below `max` in `count`, or `None`.
pub(crate) fn take_slot(count: &Arc<AtomicUsize>, max: usize) -> Option<Slot> {
    count
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < max).then_some(n + 1)
        })
        .ok()
        .map(|_| Slot(count.clone()))
}

/// Rank 0's meeting point: serves the store on HOST:PORT until
/// [`MeetingPoint::close`].
pub struct MeetingPoint {
    pub(crate) shared: Arc<Shared>,
    pub(crate) addr: SocketAddr,
    pub(crate) accept: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for MeetingPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeetingPoint")
            .field("addr", &self.addr)
            .finish()
    }
}

impl MeetingPoint {
    /// Binds HOST:PORT (an address of this host) and serves the ranks of
    /// `job`. A HOST that does not resolve yet (a DNS record that comes
    /// with the pod) is looked up again until `wait`.
    pub fn start(
        rdv: &Rendezvous,
        token: &str,
        job: &Job,
        wait: Duration,
    ) -> Result<MeetingPoint, super::StartError> {
        Self::start_text(rdv, token, job, wait).map_err(Into::into)
    }

    fn start_text(
        rdv: &Rendezvous,
        token: &str,
        job: &Job,
        wait: Duration,
    ) -> Result<MeetingPoint, String> {
        let given = &rdv.given;
        check_world(given, job.world)?;
        check_fd_limit(given, job.world)?;
        let until = Instant::now() + wait;
        let mut noted = false;
        let mut addrs = loop {
            match rdv.resolve() {
                Ok(a) if !a.is_empty() => break a,
                r => {
                    let why = r.err().map_or("no address".to_string(), |e| e.to_string());
                    if Instant::now() >= until {
                        return Err(format!(
                            "--rendezvous {given}: cannot resolve {}: {why}",
                            rdv.host
                        ));
                    }
                    if !noted {
                        eprintln!(
                            "note: --rendezvous {given}: cannot resolve {} yet ({why}); trying again until --rendezvous-timeout",
                            rdv.host
                        );
                        noted = true;
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        };
        // An address the other hosts can reach first; a host name that
        // resolves to loopback only (Debian's /etc/hosts maps the host's
        // own name to 127.0.1.1) serves this host alone.
        addrs.sort_by_key(|a| a.ip().is_loopback());
        if job.world > 1
            && rdv.host.parse::<IpAddr>().is_err()
            && addrs.iter().all(|a| a.ip().is_loopback())
        {
            eprintln!(
                "warning: --rendezvous {given}: {} resolves to loopback only ({}): ranks on other hosts cannot reach the meeting point; give an address (or a name) of this host that they reach",
                rdv.host,
                addrs[0].ip()
            );
        }
        let mut first_err = None;
        let mut listener = None;
        for a in &addrs {
            check_ip(given, a.ip())?;
            match TcpListener::bind(a) {
                Ok(l) => {
                    listener = Some(l);
                    break;
                }
                Err(e) => {
                    first_err.get_or_insert((*a, e));
                }
            }
        }
        let listener = match (listener, first_err) {
            (Some(l), _) => l,
            (None, Some((a, e))) => {
                return Err(match e.kind() {
                    io::ErrorKind::AddrNotAvailable => format!(
                        "--rendezvous {given}: {} is not an address of this host; rank 0 serves the meeting point, so HOST must name rank 0's own host (e.g. its pod's name under a headless Service)",
                        a.ip()
                    ),
                    io::ErrorKind::AddrInUse => format!(
                        "--rendezvous {given}: port {} on {} is in use (another run?); give another PORT",
                        a.port(),
                        a.ip()
                    ),
                    _ => format!("--rendezvous {given}: cannot listen on {a}: {e}"),
                });
            }
            (None, None) => return Err(format!("--rendezvous {given}: no address")),
        };
        let addr = listener
            .local_addr()
            .map_err(|e| format!("--rendezvous {given}: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("--rendezvous {given}: {e}"))?;
        let shared = Arc::new(Shared {
            table: Mutex::new(Table::new()),
            key: derive_key(token),
            stop: AtomicBool::new(false),
            started: Instant::now(),
            refused: Mutex::new(None),
            pending: Mutex::new(std::collections::VecDeque::new()),
            given: given.clone(),
            job: job.clone(),
            instance: random_bytes(8)
                .map(|b| to_hex(&b))
                .map_err(|e| format!("--rendezvous {given}: cannot read random bytes: {e}"))?,
        });
        let s = shared.clone();
        let accept = std::thread::Builder::new()
            .name("rendezvous-accept".into())
            .spawn(move || accept_loop(&listener, &s))
            .map_err(|e| format!("--rendezvous {given}: cannot start a thread: {e}"))?;
        Ok(MeetingPoint {
            shared,
            addr,
            accept: Some(accept),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The store, as this rank (rank 0) uses it: directly, in memory.
    pub fn store(&self) -> Arc<dyn Store> {
        Arc::new(Served {
            shared: self.shared.clone(),
        })
    }

    /// Serves until every rank of the job but `me` has left
    /// (`rQ-NONCE.left`, NONCE that of its heartbeat `rQ.alive` or its
    /// `rQ.json`: another run's marker does not count), or its heartbeat
    /// has been silent for `timeout` (or `cancel`), then stops. After this
    /// rank `failed`, a rank that failed too (`rQ.failed`: it learnt of
    /// it) counts as gone, and a rank never seen (no heartbeat) is waited
    /// for [`LINGER`] at most: a rank whose heartbeat beats learns of the
    /// failure when it reaches its network phase, however long its other
    /// benchmarks take.
    pub fn close(self, me: u64, timeout: Duration, cancel: &AtomicBool, failed: bool) {
        self.close_within(me, timeout, cancel, failed, LINGER);
    }

    /// [`MeetingPoint::close`], waiting `linger` for a rank never seen.
    pub(crate) fn close_within(
        mut self,
        me: u64,
        timeout: Duration,
        cancel: &AtomicBool,
        failed: bool,
        linger: Duration,
    ) {
        let mut said = false;
        let since = Instant::now();
        loop {
            let mut pending = self.awaited(me, timeout, failed);
            if failed && since.elapsed() >= linger {
                pending.retain(|&(_, seen)| seen);
            }
            if pending.is_empty() || cancel.load(Ordering::SeqCst) {
                break;
            }
            if !said && (failed || since.elapsed() >= Duration::from_secs(2)) {
                let list = |which: &dyn Fn(bool) -> bool| {
                    let l: Vec<String> = pending
                        .iter()
                        .filter(|p| which(p.1))
                        .map(|p| p.0.to_string())
                        .collect();
                    l.join(", ")
                };
                let all = list(&|_| true);
                if failed {
                    let unseen = list(&|seen| !seen);
                    let unseen = if unseen.is_empty() {
                        String::new()
                    } else {
                        format!(
                            "; rank(s) {unseen} not seen yet: {} s at most, unless a heartbeat comes",
                            linger.as_secs()
                        )
                    };
                    eprintln!(
                        "rank {me}: keeping the meeting point {} up so that rank(s) {all} learn of this failure: while a rank's heartbeat goes on (until it leaves, or is silent for --rendezvous-timeout){unseen}",
                        self.shared.given
                    );
                } else {
                    eprintln!(
                        "rank {me}: keeping the meeting point {} until rank(s) {all} leave (or are silent for --rendezvous-timeout)",
                        self.shared.given
                    );
                }
                said = true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.stop();
    }

    /// The ranks [`MeetingPoint::close`] still waits for, and whether
    /// each was seen (its heartbeat is there).
    pub(crate) fn awaited(&self, me: u64, timeout: Duration, failed: bool) -> Vec<(u64, bool)> {
        let t = &lock(&self.shared.table).map;
        let nonce_of = |name: String| {
            let e = t.get(&name)?;
            let v: serde_json::Value = serde_json::from_str(&e.text).ok()?;
            v["nonce"].as_str().map(str::to_string)
        };
        (0..self.shared.job.world)
            .filter(|&q| q != me)
            .filter_map(|q| {
                let left = [format!("r{q}.alive"), format!("r{q}.json")]
                    .into_iter()
                    .filter_map(nonce_of)
                    .any(|n| t.contains_key(&format!("r{q}-{n}.left")));
                // A rank that learnt of this rank's failure writes its own
                // failure marker and then, as it exits, its leaving: that
                // is given a moment to arrive (else the rank's last words
                // would find the meeting point gone).
                let fell = failed
                    && t.get(&format!("r{q}.failed"))
                        .is_some_and(|e| e.at.elapsed() >= LEFT_GRACE);
                let heartbeat = t.get(&format!("r{q}.alive"));
                let beat = heartbeat.map_or(self.shared.started, |e| e.at);
                (!left && !fell && beat.elapsed() < timeout).then_some((q, heartbeat.is_some()))
            })
            .collect()
    }

    pub(crate) fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

impl Drop for MeetingPoint {
    fn drop(&mut self) {
        self.stop();
    }
}

pub(crate) fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    let open = Arc::new(AtomicUsize::new(0));
    let max_open = usize::try_from(shared.job.world)
        .unwrap_or(usize::MAX)
        .saturating_add(MAX_CONNECTIONS);
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    let mut next_id: u64 = 0;
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, peer)) => {
                threads.retain(|t| !t.is_finished());
                let Some(o) = take_slot(&open, max_open) else {
                    // Over the limit: closed at once.
                    drop(stream);
                    continue;
                };
                let Ok(clone) = stream.try_clone() else {
                    continue;
                };
                next_id += 1;
                let id = next_id;
                admit(&mut lock(&shared.pending), id, peer.ip(), clone);
                let s = shared.clone();
                let spawned = std::thread::Builder::new()
                    .name("rendezvous-conn".into())
                    .spawn(move || {
                        let _open = o;
                        let pending = Pending { shared: &s, id };
                        serve_conn(stream, peer, &s, pending);
                    });
                if let Ok(t) = spawned {
                    threads.push(t);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
            }
            // EMFILE and friends: back off instead of spinning.
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    for t in threads {
        let _ = t.join();
    }
}

/// Queues a connection awaiting authentication; when [`MAX_PENDING`]
/// await, closes the oldest of the address with the most, so that one
/// source cannot crowd out the others' handshakes (and below that, many
/// ranks of one node connecting at once are all let in).
pub(crate) fn admit(
    q: &mut std::collections::VecDeque<(u64, IpAddr, TcpStream)>,
    id: u64,
    ip: IpAddr,
    stream: TcpStream,
) {
    let count = |ip: IpAddr| q.iter().filter(|e| e.1 == ip).count();
    let at = if q.len() >= MAX_PENDING {
        let most = q.iter().map(|e| count(e.1)).max().unwrap_or(0);
        q.iter().position(|e| count(e.1) == most)
    } else {
        None
    };
    if let Some((_, _, oldest)) = at.and_then(|at| q.remove(at)) {
        // Its thread reads an end of file and leaves.
        let _ = oldest.shutdown(std::net::Shutdown::Both);
    }
    q.push_back((id, ip, stream));
}

/// A connection's place among those awaiting authentication, given up
/// when dropped.
pub(crate) struct Pending<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) id: u64,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        lock(&self.shared.pending).retain(|(i, _, _)| *i != self.id);
    }
}

/// One rank's connection: the handshake, then requests.
pub(crate) fn serve_conn(
    mut s: TcpStream,
    peer: SocketAddr,
    shared: &Shared,
    pending: Pending<'_>,
) {
    if s.set_nonblocking(false).is_err()
        || s.set_read_timeout(Some(POLL)).is_err()
        || s.set_write_timeout(Some(HANDSHAKE)).is_err()
    {
        return;
    }
    let _ = s.set_nodelay(true);
    let stop = Some(&shared.stop);
    let by = Instant::now() + HANDSHAKE;
    let mut magic = [0u8; 4];
    if read_by(&mut s, &mut magic, by, stop).is_err() || magic != MAGIC {
        return;
    }
    let hello = read_frame(&mut s, MAX_HANDSHAKE_FRAME, by, stop);
    let _ = s.write_all(&MAGIC);
    let (client_nonce, job) = match hello {
        Ok(Msg::Hello {
            version,
            nonce,
            job,
            world,
        }) if version == VERSION => match from_hex(&nonce).filter(|n| n.len() == NONCE_LEN) {
            Some(n) => (n, Job { id: job, world }),
            None => {
                let _ = reply(
                    &mut s,
                    &error("the hello's nonce is not 32 bytes of hex".into()),
                );
                return;
            }
        },
        Ok(Msg::Hello { version, .. }) => {
            let _ = reply(
                &mut s,
                &error(format!(
                    "the meeting point speaks version {VERSION}, this rank {version}: give every rank the same benchsuite"
                )),
            );
            return;
        }
        Ok(other) => {
            let _ = reply(
                &mut s,
                &error(format!("expected hello, got {}", op_name(&other))),
            );
            return;
        }
        Err(e) => {
            if matches!(e, FrameError::TooLarge { .. } | FrameError::Malformed(_)) {
                let _ = reply(&mut s, &error(e.to_string()));
            }
            return;
        }
    };
    let Ok(server_nonce) = random_bytes(NONCE_LEN) else {
        return;
    };
    if reply(
        &mut s,
        &Msg::Challenge {
            nonce: to_hex(&server_nonce),
        },
    )
    .is_err()
    {
        return;
    }
    // The rank proves first; the proof is for it alone.
    let both = transcript(&client_nonce, &server_nonce);
    let expected = auth_mac(&shared.key, &both, RANK_SAYS);
    match read_frame(&mut s, MAX_HANDSHAKE_FRAME, by, stop) {
        Ok(Msg::Auth { mac })
            if from_hex(&mac).is_some_and(|g| constant_time_eq(&g, &expected)) => {}
        Ok(Msg::Auth { .. }) => {
            shared.refuse(peer, "wrong token");
            std::thread::sleep(REFUSAL_DELAY);
            let _ = reply(
                &mut s,
                &error(format!(
                    "wrong token: the authentication code does not match the meeting point's token (give every rank the same BENCHSUITE_TOKEN or --token-file), or {} serves another job (give each job a port of its own)",
                    shared.given
                )),
            );
            return;
        }
        _ => return,
    }
    if job != shared.job {
        let why = format!(
            "another job's meeting point: this rank is of {job}, the meeting point (rank 0) serves {}; give each job a port of its own (or the same --job-id, step and world size to the ranks of one job)",
            shared.job
        );
        shared.refuse(peer, &format!("a rank of another job ({job})"));
        let _ = reply(&mut s, &error(why));
        return;
    }
    let proof = auth_mac(&shared.key, &both, SERVER_SAYS);
    let welcome = Msg::Welcome {
        proof: to_hex(&proof),
        instance: shared.instance.clone(),
    };
    if reply(&mut s, &welcome).is_err() {
        return;
    }
    drop(pending);
    loop {
        match read_frame(&mut s, MAX_FRAME, Instant::now() + IDLE, stop) {
            Ok(m) => {
                let answer = shared.apply(m);
                if reply(&mut s, &answer).is_err() {
                    return;
                }
            }
            Err(e @ (FrameError::TooLarge { .. } | FrameError::Malformed(_))) => {
                let _ = reply(&mut s, &error(e.to_string()));
                return;
            }
            Err(FrameError::Io(_)) => return,
        }
    }
}

pub(crate) fn reply(s: &mut TcpStream, m: &Msg) -> io::Result<()> {
    s.write_all(&encode(m))
}

/// Rank 0's view of its own meeting point.
pub(crate) struct Served {
    pub(crate) shared: Arc<Shared>,
}

impl Store for Served {
    fn put(&self, name: &str, text: &str, how: Put) -> Result<(), StoreError> {
        if how == Put::Secret {
            return Err(StoreError::Secret { name: name.into() });
        }
        match self.shared.apply(Msg::Put {
            name: name.into(),
            text: text.into(),
        }) {
            Msg::Ok => Ok(()),
            Msg::Error { message } => Err(StoreError::Refused {
                point: self.shared.given.clone(),
                name: name.into(),
                message,
            }),
            other => Err(StoreError::Unexpected {
                point: self.shared.given.clone(),
                answer: op_name(&other).to_string(),
                request: "put",
            }),
        }
    }

    fn get(&self, name: &str) -> Result<String, StoreError> {
        lock(&self.shared.table)
            .map
            .get(name)
            .map(|e| e.text.clone())
            .ok_or_else(|| StoreError::Absent {
                name: name.into(),
                place: self.place(),
            })
    }

    fn remove(&self, name: &str) -> Result<(), StoreError> {
        self.shared.apply(Msg::Remove { name: name.into() });
        Ok(())
    }

    fn list(&self) -> Result<HashSet<String>, StoreError> {
        Ok(lock(&self.shared.table).map.keys().cloned().collect())
    }

    fn place(&self) -> String {
        format!("at the meeting point {} (this rank's)", self.shared.given)
    }

    fn location(&self) -> String {
        self.shared.given.clone()
    }

    fn flag(&self) -> &'static str {
        "--rendezvous"
    }

    fn fresh(&self) -> bool {
        true
    }

    fn trouble(&self) -> Option<String> {
        let r = lock(&self.shared.refused);
        let (at, peer, why) = r.as_ref()?;
        Some(format!(
            "the meeting point refused a connection from {peer} {} ago: {why}",
            benchsuite_core::units::format_seconds(at.elapsed().as_secs_f64())
        ))
    }
}
