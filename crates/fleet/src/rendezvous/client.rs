//! A rank's side of the meeting point.

use super::*;

/// Why a request got no answer.
#[derive(Debug)]
pub(crate) enum Fail {
    /// Not reachable now (not started yet, gone, a network error).
    Down(String),
    /// It refused this rank for good (a wrong token, another job).
    Refused(String),
}

/// The meeting point of another rank (rank 0), reached over TCP; one
/// connection, opened again as needed.
pub struct Remote {
    pub(crate) rdv: Rendezvous,
    pub(crate) key: [u8; 32],
    pub(crate) job: Job,
    pub(crate) timeout: Duration,
    pub(crate) cancel: Arc<AtomicBool>,
    pub(crate) conn: Mutex<Option<TcpStream>>,
    /// Since when, and why, it does not answer.
    pub(crate) down: Mutex<Option<(Instant, String)>>,
    pub(crate) refused: Mutex<Option<String>>,
    /// The names last listed, and their version.
    pub(crate) names: Mutex<Option<(u64, HashSet<String>)>>,
    /// The meeting point's `instance` last welcomed by.
    pub(crate) instance: Mutex<Option<String>>,
    /// Whether this rank published anything lasting there.
    pub(crate) published: AtomicBool,
    /// Why what this rank published is lost (rank 0 restarted).
    pub(crate) restarted: Mutex<Option<String>>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the key.
        f.debug_struct("Remote")
            .field("rendezvous", &self.rdv.given)
            .field("job", &self.job.id)
            .finish_non_exhaustive()
    }
}

impl Remote {
    /// The meeting point at `rdv`; nothing is connected yet. A rank waits
    /// for it (each request tries again) until it has not answered for
    /// `timeout`.
    pub fn new(
        rdv: Rendezvous,
        token: &str,
        job: Job,
        timeout: Duration,
        cancel: Arc<AtomicBool>,
    ) -> Remote {
        Remote {
            rdv,
            key: derive_key(token),
            job,
            timeout,
            cancel,
            conn: Mutex::new(None),
            down: Mutex::new(None),
            refused: Mutex::new(None),
            names: Mutex::new(None),
            instance: Mutex::new(None),
            published: AtomicBool::new(false),
            restarted: Mutex::new(None),
        }
    }

    pub(crate) fn connect(&self) -> Result<TcpStream, Fail> {
        let addrs = self
            .rdv
            .resolve()
            .map_err(|e| Fail::Down(format!("cannot resolve {}: {e}", self.rdv.host)))?;
        let wait = self
            .timeout
            .clamp(Duration::from_millis(100), Duration::from_secs(2));
        let mut last = format!("{} resolves to no address", self.rdv.host);
        for a in addrs {
            match TcpStream::connect_timeout(&a, wait) {
                Ok(s) => return self.handshake(s),
                Err(e) => last = format!("{a}: {e}"),
            }
        }
        Err(Fail::Down(last))
    }

    /// Hello, challenge, this rank's proof, the meeting point's: nothing
    /// else is sent before the meeting point proved that it knows the
    /// token. What is not the protocol (another service behind a stale
    /// address, garbage) is tried again; a refusal is final.
    pub(crate) fn handshake(&self, mut s: TcpStream) -> Result<TcpStream, Fail> {
        let io = |e: io::Error| Fail::Down(e.to_string());
        s.set_read_timeout(Some(POLL)).map_err(io)?;
        s.set_write_timeout(Some(REPLY)).map_err(io)?;
        let _ = s.set_nodelay(true);
        let by = Instant::now() + HANDSHAKE;
        let nonce = random_bytes(NONCE_LEN).map_err(io)?;
        let mut hello = MAGIC.to_vec();
        hello.extend(encode(&Msg::Hello {
            version: VERSION,
            nonce: to_hex(&nonce),
            job: self.job.id.clone(),
            world: self.job.world,
        }));
        s.write_all(&hello).map_err(io)?;
        let mut magic = [0u8; 4];
        read_by(&mut s, &mut magic, by, None).map_err(io)?;
        if magic != MAGIC {
            return Err(Fail::Down(format!(
                "{} is not a benchsuite meeting point (it answered {:?})",
                self.rdv.given,
                String::from_utf8_lossy(&magic)
            )));
        }
        let frame = |s: &mut TcpStream| {
            read_frame(s, MAX_HANDSHAKE_FRAME, by, None).map_err(|e| match e {
                FrameError::Io(e) => Fail::Down(e.to_string()),
                e => Fail::Down(format!(
                    "{} answered {}",
                    self.rdv.given,
                    untrusted(&e.to_string())
                )),
            })
        };
        // Before the welcome, whoever answers has proved nothing: its
        // words are shown escaped and cut, and said to be unproven.
        let refused = |message: &str| {
            Fail::Refused(format!(
                "{} (said before it proved that it knows the token)",
                untrusted(message)
            ))
        };
        let server_nonce = match frame(&mut s)? {
            Msg::Challenge { nonce: ns } => from_hex(&ns)
                .filter(|n| n.len() == NONCE_LEN)
                .ok_or_else(|| Fail::Down("a malformed challenge".into()))?,
            Msg::Error { message } => return Err(refused(&message)),
            other => {
                return Err(Fail::Down(format!(
                    "expected a challenge, got {}",
                    op_name(&other)
                )));
            }
        };
        let both = transcript(&nonce, &server_nonce);
        let mac = auth_mac(&self.key, &both, RANK_SAYS);
        s.write_all(&encode(&Msg::Auth { mac: to_hex(&mac) }))
            .map_err(io)?;
        let instance = match frame(&mut s)? {
            Msg::Welcome { proof, instance } => {
                let expected = auth_mac(&self.key, &both, SERVER_SAYS);
                if !from_hex(&proof).is_some_and(|p| constant_time_eq(&p, &expected)) {
                    return Err(Fail::Refused(
                        "the meeting point does not know this rank's token (a wrong token on this rank or on rank 0, or not the job's meeting point)".into(),
                    ));
                }
                instance
            }
            Msg::Error { message } => return Err(refused(&message)),
            other => {
                return Err(Fail::Down(format!(
                    "expected welcome, got {}",
                    op_name(&other)
                )));
            }
        };
        let mut seen = lock(&self.instance);
        if seen.as_ref().is_some_and(|i| *i != instance) && self.published.load(Ordering::SeqCst) {
            lock(&self.restarted).get_or_insert_with(|| {
                format!(
                    "the meeting point {} restarted (rank 0 restarted): what the ranks published there is lost",
                    self.rdv.given
                )
            });
        }
        *seen = Some(instance);
        Ok(s)
    }

    /// One request and its answer; a broken connection is opened again
    /// once.
    pub(crate) fn call(&self, msg: &Msg) -> Result<Msg, Fail> {
        if let Some(why) = lock(&self.refused).clone() {
            return Err(Fail::Refused(why));
        }
        let mut conn = lock(&self.conn);
        let mut last = String::new();
        for _ in 0..2 {
            if conn.is_none() {
                match self.connect() {
                    Ok(s) => *conn = Some(s),
                    Err(Fail::Refused(why)) => {
                        let why = format!(
                            "the meeting point {} refused this rank: {why}",
                            self.rdv.given
                        );
                        *lock(&self.refused) = Some(why.clone());
                        return Err(Fail::Refused(why));
                    }
                    Err(Fail::Down(why)) => {
                        last = why;
                        break;
                    }
                }
            }
            let Some(s) = conn.as_mut() else { break };
            let sent = s.write_all(&encode(msg)).map_err(FrameError::Io);
            match sent.and_then(|()| read_frame(s, MAX_REPLY, Instant::now() + REPLY, None)) {
                Ok(answer) => {
                    *lock(&self.down) = None;
                    return Ok(answer);
                }
                Err(e) => {
                    last = e.to_string();
                    *conn = None;
                }
            }
        }
        lock(&self.down)
            .get_or_insert_with(|| (Instant::now(), String::new()))
            .1 = last.clone();
        Err(Fail::Down(last))
    }

    /// The meeting point has not answered for `--rendezvous-timeout`.
    pub(crate) fn lost(&self) -> Option<String> {
        let d = lock(&self.down);
        let (since, why) = d.as_ref()?;
        (since.elapsed() >= self.timeout).then(|| {
            format!(
                "lost the meeting point {} (rank 0 serves it): no answer for {} ({why}): rank 0 never started, ended, or is not reachable; --rendezvous-timeout sets the wait",
                self.rdv.given,
                benchsuite_core::units::format_seconds(since.elapsed().as_secs_f64())
            )
        })
    }
}

impl Store for Remote {
    fn put(&self, name: &str, text: &str, how: Put) -> Result<(), StoreError> {
        if how == Put::Secret {
            return Err(StoreError::Secret { name: name.into() });
        }
        let msg = Msg::Put {
            name: name.into(),
            text: text.into(),
        };
        let mut pause = Duration::from_millis(50);
        let started = Instant::now();
        loop {
            match self.call(&msg) {
                Ok(Msg::Ok) => {
                    if how != Put::Beat {
                        self.published.store(true, Ordering::SeqCst);
                    }
                    return Ok(());
                }
                Ok(Msg::Error { message }) => {
                    return Err(StoreError::Refused {
                        point: self.rdv.given.clone(),
                        name: name.into(),
                        message,
                    });
                }
                Ok(other) => {
                    return Err(StoreError::Unexpected {
                        point: self.rdv.given.clone(),
                        answer: op_name(&other).to_string(),
                        request: "put",
                    });
                }
                Err(Fail::Refused(why)) => return Err(StoreError::Unreachable(why)),
                Err(Fail::Down(why)) => {
                    if how == Put::Beat || (how == Put::Last && started.elapsed() >= LAST_WORDS) {
                        return Err(StoreError::Unreachable(why));
                    }
                    if let Some(lost) = self.lost() {
                        return Err(StoreError::Unreachable(lost));
                    }
                    if self.cancel.load(Ordering::SeqCst) {
                        return Err(StoreError::Interrupted);
                    }
                }
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    fn get(&self, name: &str) -> Result<String, StoreError> {
        match self.call(&Msg::Get { name: name.into() }) {
            Ok(Msg::Value { text: Some(t) }) => Ok(t),
            Ok(Msg::Value { text: None }) => Err(StoreError::Absent {
                name: name.into(),
                place: self.place(),
            }),
            Ok(other) => Err(StoreError::Unexpected {
                point: self.rdv.given.clone(),
                answer: op_name(&other).to_string(),
                request: "get",
            }),
            Err(Fail::Refused(why) | Fail::Down(why)) => Err(StoreError::Unreachable(why)),
        }
    }

    fn remove(&self, name: &str) -> Result<(), StoreError> {
        match self.call(&Msg::Remove { name: name.into() }) {
            Err(Fail::Refused(why)) => Err(StoreError::Unreachable(why)),
            _ => Ok(()),
        }
    }

    fn list(&self) -> Result<HashSet<String>, StoreError> {
        if let Some(why) = lock(&self.restarted).clone() {
            return Err(StoreError::Unreachable(why));
        }
        let since = lock(&self.names).as_ref().map(|(v, _)| *v);
        match self.call(&Msg::List { since }) {
            Ok(Msg::Names { version, names }) => {
                let mut cache = lock(&self.names);
                match (names, cache.as_ref()) {
                    (Some(n), _) => {
                        let n: HashSet<String> = n.into_iter().collect();
                        *cache = Some((version, n.clone()));
                        Ok(n)
                    }
                    (None, Some((v, n))) if *v == version => Ok(n.clone()),
                    (None, _) => {
                        *cache = None;
                        Ok(HashSet::new())
                    }
                }
            }
            Ok(other) => Err(StoreError::Unexpected {
                point: self.rdv.given.clone(),
                answer: op_name(&other).to_string(),
                request: "list",
            }),
            Err(Fail::Refused(why)) => Err(StoreError::Unreachable(why)),
            Err(Fail::Down(_)) => self
                .lost()
                .map_or_else(|| Ok(HashSet::new()), |l| Err(StoreError::Unreachable(l))),
        }
    }

    fn place(&self) -> String {
        format!("at the meeting point {}", self.rdv.given)
    }

    fn location(&self) -> String {
        self.rdv.given.clone()
    }

    fn flag(&self) -> &'static str {
        "--rendezvous"
    }

    fn answering(&self) -> bool {
        lock(&self.down).is_none()
    }

    fn fresh(&self) -> bool {
        true
    }

    fn trouble(&self) -> Option<String> {
        if let Some(r) = lock(&self.refused).clone() {
            return Some(r);
        }
        let d = lock(&self.down);
        let (since, why) = d.as_ref()?;
        Some(format!(
            "the meeting point {} has not answered for {} ({why})",
            self.rdv.given,
            benchsuite_core::units::format_seconds(since.elapsed().as_secs_f64())
        ))
    }
}
