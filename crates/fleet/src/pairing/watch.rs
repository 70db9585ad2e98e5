//! Watching the other ranks: failure markers, heartbeats, the barrier and the waits; the end of a rank (its markers, and rank 0 staying until the others learnt).

use super::*;

impl Pairing {
    pub(super) fn write_failed(&self, why: &str) {
        self.write_failed_as(why, Put::Durable);
    }

    /// [`Self::write_failed`], published `how` ([`Put::Last`] as the rank
    /// exits).
    pub(super) fn write_failed_as(&self, why: &str, how: Put) {
        let v = json!({
            "rank": self.rank,
            "host": self.host,
            "nonce": self.nonce,
            "reason": why,
            "written_at_ms": now_ms() as u64,
        });
        let _ = self
            .store
            .put(&format!("r{}.failed", self.rank), &v.to_string(), how);
    }

    /// Why rank `q` failed, if it wrote so in this run: the marker's nonce
    /// is the one met or seen beating, or it was written after this rank
    /// started, or the store holds this run's only (a meeting point: rank
    /// 0 may have failed before this rank started).
    pub(super) fn failed(&self, q: u64) -> Option<String> {
        let text = self.store.get(&format!("r{q}.failed")).ok()?;
        let v: Value = serde_json::from_str(&text).ok()?;
        let nonce = v["nonce"].as_str();
        let known = nonce.is_some_and(|n| {
            self.met.borrow().get(&q).is_some_and(|m| m == n)
                || self
                    .beats
                    .borrow()
                    .get(&q)
                    .and_then(|b| b.live.as_deref())
                    .is_some_and(|l| l == n)
        });
        let after = v["written_at_ms"]
            .as_u64()
            .is_some_and(|w| u128::from(w) >= self.started_ms);
        (known || after || self.store.fresh()).then(|| {
            format!(
                "rank {q} (host {}) failed: {}",
                v["host"].as_str().unwrap_or("?"),
                v["reason"].as_str().unwrap_or("no reason given")
            )
        })
    }

    /// [`Pairing::failed`], looked up through a listing.
    pub(super) fn failed_now(&self, q: u64) -> Option<String> {
        self.listing()
            .ok()?
            .contains(&format!("r{q}.failed"))
            .then(|| self.failed(q))
            .flatten()
    }

    /// The names in the store now (a listing: see [`Store::list`]); an
    /// error when the meeting point is lost.
    pub(super) fn listing(&self) -> Result<HashSet<String>, String> {
        Ok(self.store.list()?)
    }

    /// Reads rank `q`'s heartbeat: a change since the last look is a sign
    /// of life (and tells its nonce).
    pub(super) fn look(&self, q: u64, names: &HashSet<String>) {
        let name = format!("r{q}.alive");
        let text = names
            .contains(&name)
            .then(|| self.store.get(&name).ok())
            .flatten()
            .filter(|t| !t.is_empty());
        let mut beats = self.beats.borrow_mut();
        let Some(b) = beats.get_mut(&q) else {
            beats.insert(
                q,
                Beat {
                    text,
                    since: Instant::now(),
                    live: None,
                },
            );
            return;
        };
        if text.is_some() && text != b.text {
            b.live = text
                .as_deref()
                .and_then(|t| serde_json::from_str::<Value>(t).ok())
                .and_then(|v| v["nonce"].as_str().map(str::to_string));
            b.since = Instant::now();
        }
        if text.is_some() {
            b.text = text;
        }
    }

    /// Why rank `q` counts as failed for having started again: a live
    /// heartbeat whose nonce is not the one met at the barrier (it would
    /// never write the markers this rank waits for).
    pub(super) fn restarted(&self, q: u64) -> Option<String> {
        let met = self.met.borrow();
        let met = met.get(&q)?;
        let beats = self.beats.borrow();
        let live = beats.get(&q)?.live.as_ref()?;
        (live != met).then(|| {
            format!(
                "rank {q} restarted: its heartbeat r{q}.alive is another run's than the one met at the barrier {}",
                self.store.place()
            )
        })
    }

    /// Why rank `q` counts as gone: its heartbeat has not changed for
    /// `--rendezvous-timeout`.
    pub(super) fn gone(&self, q: u64) -> Option<String> {
        let beats = self.beats.borrow();
        let b = beats.get(&q)?;
        if b.since.elapsed() < self.timeout {
            return None;
        }
        let file = format!("r{q}.alive");
        Some(match (&b.text, &b.live) {
            (None, _) => format!(
                "rank {q} shows no sign of life ({file} absent: it never started, or not with this {})",
                self.store.flag()
            ),
            (Some(_), None) => {
                // A marker not counted: written before this rank started,
                // by a run not seen beating (see `failed`).
                let marker = self
                    .store
                    .get(&format!("r{q}.failed"))
                    .ok()
                    .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                    .and_then(|v| v["reason"].as_str().map(str::to_string))
                    .map(|why| {
                        format!(
                            "; its r{q}.failed, from before this rank started (this run's or an earlier one's), says: {why}"
                        )
                    })
                    .unwrap_or_default();
                format!(
                    "rank {q}'s heartbeat {file} has not changed in {} (an earlier run's, or this run's rank {q} ended or hangs){marker}",
                    humantime_secs(self.timeout)
                )
            }
            (Some(_), Some(_)) => format!(
                "rank {q}'s heartbeat {file} stopped {} ago (killed, or its host is down)",
                humantime_secs(b.since.elapsed())
            ),
        })
    }

    /// Waits until `ready(q, listing)` for every rank `q` of `ranks` but
    /// this one; stops early when `ready` says why not, when one of them
    /// (or of `watch`) failed, when one's heartbeat did not change for
    /// `--rendezvous-timeout` (judged only while the store answers), and
    /// when the store is lost (a meeting point silent for that long).
    /// Looks every 10 ms at first, every 250 ms at most.
    pub(super) fn wait_all(
        &self,
        ranks: &[u64],
        watch: &[u64],
        what: &str,
        file: impl Fn(u64) -> String,
        mut ready: impl FnMut(u64, &HashSet<String>) -> Result<bool, String>,
    ) -> Result<(), String> {
        let mut pause = Duration::from_millis(10);
        let mut looked: Option<Instant> = None;
        let mut left: Vec<u64> = ranks.iter().copied().filter(|&q| q != self.rank).collect();
        let watch: Vec<u64> = watch.iter().copied().filter(|&q| q != self.rank).collect();
        let mut answered = true;
        loop {
            let names = self.listing()?;
            // While the store did not answer, nobody's heartbeat could be
            // seen: their clocks start again when it answers.
            let answering = self.store.answering();
            if answering && !answered {
                for b in self.beats.borrow_mut().values_mut() {
                    b.since = Instant::now();
                }
            }
            answered = answering;
            if looked.is_none_or(|t| t.elapsed() >= self.look_every()) {
                for &q in left.iter().chain(&watch) {
                    self.look(q, &names);
                }
                looked = Some(Instant::now());
            }
            if let Some(why) = left.iter().chain(&watch).find_map(|&q| self.restarted(q)) {
                return Err(why);
            }
            let mut stop = None;
            left.retain(|&q| match ready(q, &names) {
                Ok(done) => !done,
                Err(why) => {
                    stop.get_or_insert(why);
                    true
                }
            });
            if let Some(why) = stop {
                return Err(why);
            }
            if left.is_empty() {
                return Ok(());
            }
            if let Some(why) = left
                .iter()
                .chain(&watch)
                .filter(|q| names.contains(&format!("r{q}.failed")))
                .find_map(|&q| self.failed(q))
            {
                return Err(why);
            }
            if self.cancel.load(Ordering::SeqCst) {
                return Err("interrupted (Ctrl-C)".into());
            }
            if let Some((q, why)) = left
                .iter()
                .chain(&watch)
                .filter(|_| self.store.answering())
                .find_map(|&q| self.gone(q).map(|w| (q, w)))
            {
                let awaited = if left.contains(&q) {
                    format!("{} absent {}", file(q), self.store.place())
                } else {
                    format!("its server measured, {}", self.store.place())
                };
                let trouble = self
                    .store
                    .trouble()
                    .map(|t| format!("; {t}"))
                    .unwrap_or_default();
                return Err(format!(
                    "gave up waiting for rank {q} {what} ({awaited}): {why}{trouble}; --rendezvous-timeout sets the wait"
                ));
            }
            std::thread::sleep(pause);
            pause = (pause * 3 / 2).min(Duration::from_millis(250));
        }
    }

    /// The barrier: every rank's `rR.json` of this run (this one serving
    /// on `addr`, or idle), with the same `schedule` where both measure.
    pub(super) fn join_all(
        &self,
        addr: Option<SocketAddr>,
        schedule: &str,
    ) -> Result<BTreeMap<u64, Peer>, String> {
        let mut peers = BTreeMap::new();
        let all: Vec<u64> = (0..self.world).collect();
        let name = |q: u64| format!("r{q}.json");
        self.wait_all(&all, &[], "to reach the network phase", name, |q, names| {
            if !names.contains(&name(q)) {
                return Ok(false);
            }
            let Ok(text) = self.store.get(&name(q)) else {
                return Ok(false);
            };
            let Ok(v) = serde_json::from_str::<Value>(&text) else {
                return Ok(false);
            };
            let nonce = v["nonce"].as_str().unwrap_or_default();
            let live = self
                .beats
                .borrow()
                .get(&q)
                .and_then(|b| b.live.clone())
                .is_some_and(|l| l == nonce);
            let met_me = v["met"][self.rank.to_string()].as_str() == Some(self.nonce.as_str());
            if !(live || met_me || self.store.fresh()) {
                return Ok(false);
            }
            let address = v["address"].as_str().and_then(|a| a.parse().ok());
            let host = v["host"].as_str().unwrap_or("?").to_string();
            if addr.is_some() && address.is_some() && v["schedule"].as_str() != Some(schedule) {
                let theirs = v["mode"].as_str().unwrap_or("?");
                return Err(if theirs == self.mode.name() {
                    format!(
                        "rank {q} (host {host}) and rank {} (host {}) would measure different net steps (benchmarks, parameters or --rounds differ); give every rank the same command",
                        self.rank, self.host
                    )
                } else {
                    format!(
                        "rank {q} (host {host}) runs --net-pairs {theirs} and rank {} (host {}) --net-pairs {}; give every rank the same command",
                        self.rank,
                        self.host,
                        self.mode.name()
                    )
                });
            }
            peers.insert(
                q,
                Peer {
                    rank: q,
                    host,
                    address,
                    nonce: nonce.to_string(),
                },
            );
            Ok(true)
        })?;
        peers.insert(
            self.rank,
            Peer {
                rank: self.rank,
                host: self.host.clone(),
                address: addr,
                nonce: self.nonce.clone(),
            },
        );
        *self.met.borrow_mut() = peers.iter().map(|(q, p)| (*q, p.nonce.clone())).collect();
        Ok(peers)
    }

    pub(super) fn wait_markers(
        &self,
        ranks: &[u64],
        watch: &[u64],
        peers: &BTreeMap<u64, Peer>,
        tag: &str,
        what: &str,
    ) -> Result<(), String> {
        let name = |q: u64| {
            format!(
                "r{q}-{}.{tag}",
                peers.get(&q).map_or("", |p| p.nonce.as_str())
            )
        };
        self.wait_all(ranks, watch, what, name, |q, names| {
            Ok(names.contains(&name(q)))
        })
    }
}

pub(super) fn humantime_secs(d: Duration) -> String {
    benchsuite_core::units::format_seconds(d.as_secs_f64())
}

impl Drop for Pairing {
    fn drop(&mut self) {
        if !self.completed.get() {
            self.write_failed_as(
                if std::thread::panicking() {
                    "it panicked before its network phase ended"
                } else {
                    "it ended before its network phase (an error or Ctrl-C; see its log)"
                },
                Put::Last,
            );
        }
        if self.must_be_seen() {
            self.stay_until_seen();
        }
        // This rank reads the store no more.
        let _ = self.store.put(
            &format!("r{}-{}.left", self.rank, self.nonce),
            "",
            Put::Last,
        );
        if let Some(m) = self.meeting.take() {
            m.close(self.rank, self.timeout, &self.cancel, !self.completed.get());
        }
    }
}

impl Pairing {
    /// Ends `run`'s command: on rank 0 of `--rendezvous`, the meeting
    /// point is kept until the other ranks no longer need it (every one
    /// left, or is silent for `--rendezvous-timeout`; after a failure of
    /// this rank, every one left or learnt of it, or is silent that long,
    /// and one never seen for [`crate::rendezvous::LINGER`] at most). An
    /// error is printed first, as `main` prints it, so that it shows at
    /// once (then the exit code is still 2).
    ///
    /// `report` prints an error as `main` does and gives its exit code, or
    /// gives it back (an error it does not print, a closed stdout).
    pub fn end<E>(
        pairing: Option<Pairing>,
        result: Result<i32, E>,
        report: impl FnOnce(E) -> Result<i32, E>,
    ) -> Result<i32, E> {
        let Some(mut p) = pairing else {
            return result;
        };
        let meeting = p.meeting.take();
        let failed = !p.completed.get();
        if meeting.is_none() && !p.must_be_seen() {
            return result;
        }
        // Printed before the wait for the others, so that it shows at once.
        let result = result.or_else(report);
        let (rank, timeout, cancel) = (p.rank, p.timeout, p.cancel.clone());
        // Its failure marker (if it failed) and its leaving.
        drop(p);
        if let Some(meeting) = meeting {
            meeting.close(rank, timeout, &cancel, failed);
        }
        result
    }

    /// Whether this rank failed (before or in its net phase) before the
    /// barrier (no nonce of it met), in a directory that keeps earlier
    /// runs' files, with its heartbeat beating: its failure marker could
    /// pass for an earlier run's. Another rank counts such a marker only
    /// when it was written after that rank started, or when its nonce is
    /// the one that rank saw beating; a rank that started after this one
    /// failed needs the latter. Not after Ctrl-C.
    pub(super) fn must_be_seen(&self) -> bool {
        (!self.completed.get() || self.failed_early.get())
            && self.world > 1
            && self.heartbeat.is_some()
            && !self.store.fresh()
            && self.met.borrow().is_empty()
            && !self.cancel.load(Ordering::SeqCst)
    }

    /// After a failure before the barrier ([`Self::must_be_seen`]): keeps
    /// beating until every other rank has reached the barrier in this run
    /// (its `rQ.json` carries the nonce its heartbeat showed: from there
    /// on it watches this rank's heartbeat), or failed, then long enough
    /// for them to see this heartbeat change (a failed rank that stays
    /// watches too). Otherwise a rank that started after this one failed
    /// would wait the whole `--rendezvous-timeout` out for it. A rank busy
    /// with its other benchmarks (or stalled) is waited for, one that left
    /// is not, one never seen [`crate::rendezvous::LINGER`] at most. The
    /// wait lasts `--rendezvous-timeout` at most (a rank arriving later
    /// gives up as soon), then the few seconds a rank that just arrived
    /// needs to see the change; Ctrl-C ends it.
    pub(super) fn stay_until_seen(&self) {
        let never = self.timeout.min(crate::rendezvous::LINGER);
        let mut said = false;
        let started = Instant::now();
        let mut left: Vec<u64> = (0..self.world).filter(|&q| q != self.rank).collect();
        let mut looked: Option<Instant> = None;
        let mut pause = Duration::from_millis(10);
        let mut watching = false;
        // Rank q's entry `name` (`rQ.json`, `rQ-NONCE.left`), if this run's:
        // the nonce of its heartbeat.
        let this_runs = |q: u64, names: &HashSet<String>, live: &str| {
            let barrier = format!("r{q}.json");
            names.contains(&format!("r{q}-{live}.left"))
                || names.contains(&barrier)
                    && self
                        .store
                        .get(&barrier)
                        .ok()
                        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                        .is_some_and(|v| v["nonce"].as_str() == Some(live))
        };
        while !left.is_empty() {
            if self.cancel.load(Ordering::SeqCst) || started.elapsed() >= self.timeout {
                return;
            }
            let Ok(names) = self.listing() else {
                return;
            };
            if looked.is_none_or(|t| t.elapsed() >= self.look_every()) {
                for &q in &left {
                    self.look(q, &names);
                }
                looked = Some(Instant::now());
            }
            let late = started.elapsed() >= never;
            left.retain(|&q| {
                let live = self.beats.borrow().get(&q).and_then(|b| b.live.clone());
                let failed = names.contains(&format!("r{q}.failed")) && self.failed(q).is_some();
                let there = live.as_deref().is_some_and(|l| this_runs(q, &names, l));
                watching |= failed || there;
                // A rank seen beating is waited for as at the barrier (a
                // stalled heartbeat may come back), within the bound.
                let gone = live.is_none() && late;
                !(failed || there || gone)
            });
            if !said && (!left.is_empty() || watching) {
                said = true;
                eprintln!(
                    "rank {}: staying until the other ranks reach the network barrier and see its failure marker (--rendezvous-timeout at most, {}, and a few seconds; a rank never seen: {}; Ctrl-C ends it)",
                    self.rank,
                    humantime_secs(self.timeout),
                    humantime_secs(never)
                );
            }
            std::thread::sleep(pause);
            pause = (pause * 3 / 2).min(Duration::from_millis(250));
        }
        if !watching {
            return;
        }
        // Two of their looks, and a beat between them.
        let until = Instant::now() + self.look_every() * 2 + self.beat_period();
        while Instant::now() < until && !self.cancel.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
