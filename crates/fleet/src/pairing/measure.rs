//! Measuring between the ranks: the rounds of the schedule, each step started together, each server started and stopped.

use super::*;

impl Pairing {
    /// Runs the net parts ([`Pairing::split`]), one point after the other:
    /// serves, meets the other ranks, measures its partner's server. Never
    /// fails: what cannot be measured becomes failed (or, without a
    /// partner, skipped) records saying why. Each record is named after
    /// its part's phase; the report's selectors are every part's.
    pub fn run(&self, parts: &[NetPart<'_>], observer: &mut dyn Observer) -> Report {
        let steps: Vec<Step<'_>> = parts
            .iter()
            .enumerate()
            .flat_map(|(i, n)| {
                n.plan.benches.iter().flat_map(move |pb| {
                    pb.points.iter().map(move |p| Step {
                        bench: pb.bench,
                        point: p.clone(),
                        part: i,
                        rounds: n.cfg.rounds(),
                    })
                })
            })
            .collect();
        let total = weight(&steps);
        observer.start(total);
        let mut acc = Acc {
            base: None,
            records: Vec::new(),
        };
        if let Err(why) = self.phase(parts, &steps, observer, &mut acc) {
            let cancelled = self.cancel.load(Ordering::SeqCst);
            eprintln!(
                "rank {}: --net-pairs {}: {why}",
                self.rank,
                self.mode.name()
            );
            if !cancelled {
                let left = &steps[acc.records.len().min(steps.len())..];
                self.record_unmeasured(
                    parts,
                    left,
                    Record::failed,
                    &why.to_string(),
                    observer,
                    &mut acc,
                );
            }
        }
        self.completed.set(true);
        let mut report = match acc.base {
            Some(r) => r,
            None => {
                let empty = Plan {
                    benches: Vec::new(),
                    ctx: parts[0].plan.ctx.clone(),
                };
                benchsuite_core::runner::run_plan(
                    &empty,
                    &parts[0].cfg,
                    &mut benchsuite_core::runner::Silent,
                )
            }
        };
        let done = weight(&steps[..acc.records.len().min(steps.len())]);
        report.records = acc.records;
        report.config.selectors = Vec::new();
        for s in parts.iter().flat_map(|n| n.cfg.selectors()) {
            if !report.config.selectors.contains(s) {
                report.config.selectors.push(s.clone());
            }
        }
        report.progress = (done < total).then_some(RunProgress {
            done,
            planned: total,
        });
        report
    }

    /// The report as the user asked for it (selectors and parameters as
    /// given on the command line, not split; with a plan file, `plan`, its
    /// phases' as without pairing), with `host.extra.net.pairing`:
    /// the mode, this rank's role, whom it measured and who measured it.
    pub fn finish(&self, report: &mut Report, cfg: &RunConfig, plan: Option<&[RunConfig]>) {
        match plan.and_then(|p| p.first().map(|first| (p, first))) {
            None => {
                report.config.selectors = cfg.selectors().to_vec();
                report.config.params = cfg.sweep().clone();
            }
            // As without pairing: the first phase's settings, and every
            // phase's selectors (the first unit run may be a later phase's,
            // and the split narrowed them to benchmark ids).
            Some((phases, first)) => {
                let c = &mut report.config;
                c.selectors.clear();
                for s in phases.iter().flat_map(|p| p.selectors()) {
                    if !c.selectors.contains(s) {
                        c.selectors.push(s.clone());
                    }
                }
                c.params = first.sweep().clone();
                c.runs = first.runs();
                c.rounds = first.rounds();
                c.min_sample_time_s = first.min_sample_time().as_secs_f64();
                c.warmup_time_s = first.warmup().as_secs_f64();
                c.duration_s = first.duration().map(|d| d.as_secs_f64());
                c.interval_s = first.duration().map(|_| first.interval().as_secs_f64());
                c.quick = first.is_quick();
            }
        }
        // The partner's address and token were the pairing's, not
        // options given; the options given are all shown (secrets
        // redacted), whichever phase took them.
        let options = &mut report.config.options;
        for k in self.filled.borrow().iter() {
            options.remove(k.as_ref());
        }
        for (k, v) in cfg.options() {
            options.entry(k.clone()).or_insert_with(|| {
                if benchsuite_core::bench::is_secret_key(k) {
                    benchsuite_core::bench::REDACTED.to_string()
                } else {
                    v.clone()
                }
            });
        }
        let facts = self.facts.borrow().clone();
        if !facts.is_null() {
            let net = report
                .host
                .extra
                .entry(benchsuite_net::MODULE.to_string())
                .or_insert_with(|| json!({}));
            if !net.is_object() {
                *net = json!({});
            }
            net["pairing"] = facts;
        }
    }

    /// Serves, then meets and measures; a failure is marked (`rR.failed`)
    /// while the server still runs, so that its clients learn it first.
    pub(super) fn phase(
        &self,
        parts: &[NetPart<'_>],
        steps: &[Step<'_>],
        observer: &mut dyn Observer,
        acc: &mut Acc,
    ) -> Result<(), String> {
        let started = (|| -> Result<_, String> {
            // With --rendezvous, the job's token; else a fresh one,
            // published for this rank's clients only.
            let Some(token) = self.shared_token.clone() else {
                let token = random_hex(32)
                    .map_err(|e| format!("cannot read random bytes from the system: {e}"))?;
                let server = self.start_server(&token)?;
                let token_file = TokenFile {
                    store: self.store.clone(),
                    name: format!("r{}-{}.token", self.rank, self.nonce),
                };
                self.store.put(&token_file.name, &token, Put::Secret)?;
                return Ok((server, Some(token_file)));
            };
            Ok((self.start_server(&token)?, None))
        })();
        match started {
            Ok((server, token_file)) => {
                let addr = server.local_addr();
                let r = self.meet_and_measure(parts, steps, observer, acc, addr);
                if let Err(why) = &r {
                    self.write_failed(why);
                }
                server.shutdown();
                drop(token_file);
                r
            }
            Err(why) => {
                self.write_failed(&why);
                self.failed_early.set(true);
                Err(why)
            }
        }
    }

    pub(super) fn meet_and_measure(
        &self,
        parts: &[NetPart<'_>],
        steps: &[Step<'_>],
        observer: &mut dyn Observer,
        acc: &mut Acc,
        addr: SocketAddr,
    ) -> Result<(), String> {
        let hash = schedule_hash(self.mode, steps);
        self.publish_join(Some(addr), &hash)
            .inspect_err(|_| self.failed_early.set(true))?;
        eprintln!(
            "rank {}: --net-pairs {}: serving on {addr} ({}); waiting for the other {} rank(s) {}",
            self.rank,
            self.mode.name(),
            self.bind_from,
            self.world - 1,
            self.store.place()
        );
        let peers = self.join_all(Some(addr), &hash)?;
        // Now with the ranks met: a rank that comes late and finds this
        // rank gone still knows the file is this run's (at a meeting
        // point, it is anyway).
        if !self.store.fresh() {
            self.publish_join(Some(addr), &hash)?;
        }
        let measuring: Vec<u64> = peers
            .values()
            .filter(|p| p.address.is_some())
            .map(|p| p.rank)
            .collect();
        let (rounds, odd) = schedule(self.mode, &measuring);
        let peer_json = |q: u64| {
            let p = &peers[&q];
            json!({"rank": q, "host": p.host, "address": p.address.map(|a| a.to_string())})
        };
        let served: Vec<Value> = rounds
            .iter()
            .flat_map(|r| r.pairs.iter())
            .filter(|(_, s)| *s == self.rank)
            .map(|(c, _)| peer_json(*c))
            .collect();
        let against: Vec<Value> = rounds
            .iter()
            .flat_map(|r| r.pairs.iter())
            .filter(|(c, _)| *c == self.rank)
            .map(|(_, s)| peer_json(*s))
            .collect();
        *self.facts.borrow_mut() = json!({
            "mode": self.mode.name(),
            "rank": self.rank,
            "address": addr.to_string(),
            "measuring_ranks": measuring,
            "measured_against": against.first(),
            "served": served,
            "rendezvous": self.store.location(),
        });
        let mut measured = false;
        for (i, round) in rounds.iter().enumerate() {
            let tag = i + 1;
            let clients = round.clients();
            if let Some(&(_, srv)) = round.pairs.iter().find(|(c, _)| *c == self.rank) {
                let p = &peers[&srv];
                let note = match self.mode {
                    Mode::Pairwise => format!(
                        "cross-host (--net-pairs pairwise): measured against the server of rank {srv} (host {}) at {}; bisection round {tag} of {}, {} pair(s) measuring at once",
                        p.host,
                        p.address.map(|a| a.to_string()).unwrap_or_default(),
                        rounds.len(),
                        round.pairs.len()
                    ),
                    Mode::FanIn => format!(
                        "cross-host (--net-pairs fan-in): one of {} clients measuring the server of rank {srv} (host {}) at {} at once; this client's own result",
                        round.pairs.len(),
                        p.host,
                        p.address.map(|a| a.to_string()).unwrap_or_default()
                    ),
                };
                self.measure(parts, steps, observer, acc, p, &clients, &peers, tag, &note)?;
                measured = true;
            }
            self.wait_markers(
                &clients,
                &[],
                &peers,
                &format!("done-{tag}"),
                &format!("to finish round {tag}"),
            )?;
        }
        if !measured {
            let why = match (self.mode, odd) {
                _ if measuring.len() < 2 => format!(
                    "no partner: rank {} is the only one that measures (the others are idle: one task per node; --per-task makes every task measure)",
                    self.rank
                ),
                (Mode::Pairwise, Some(_)) => format!(
                    "no partner: {} ranks measure, an odd number, and rank {} is the one left out of the bisection pairs",
                    measuring.len(),
                    self.rank
                ),
                _ => format!(
                    "this rank served the fan-in ({} clients at once); their reports hold the results",
                    measuring.len() - 1
                ),
            };
            eprintln!(
                "rank {}: --net-pairs {}: {why}",
                self.rank,
                self.mode.name()
            );
            self.record_unmeasured(parts, steps, Record::skipped, &why, observer, acc);
        }
        Ok(())
    }

    /// One record per step this rank does not measure (`make`: skipped or
    /// failed), with `why`, reported to the observer as it goes.
    pub(super) fn record_unmeasured(
        &self,
        parts: &[NetPart<'_>],
        steps: &[Step<'_>],
        make: fn(&str, Point, String) -> Record,
        why: &str,
        observer: &mut dyn Observer,
        acc: &mut Acc,
    ) {
        for s in steps {
            let id = s.bench.meta().id;
            let mut r = make(
                &id,
                s.point.clone(),
                format!("--net-pairs {}: {why}", self.mode.name()),
            );
            r.phase = parts[s.part].phase.as_ref().map(|p| p.name.clone());
            observer.record_start(&id, &s.point);
            observer.record_done(&r);
            acc.records.push(r);
        }
    }

    /// Measures `server` point by point, the round's `clients` starting
    /// each point together; stops when the server's rank failed.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn measure(
        &self,
        parts: &[NetPart<'_>],
        steps: &[Step<'_>],
        observer: &mut dyn Observer,
        acc: &mut Acc,
        server: &Peer,
        clients: &[u64],
        peers: &BTreeMap<u64, Peer>,
        round: usize,
        note: &str,
    ) -> Result<(), String> {
        let addr = server
            .address
            .ok_or_else(|| format!("rank {} published no address", server.rank))?;
        let token = match &self.shared_token {
            Some(t) => t.clone(),
            None => self
                .store
                .get(&format!("r{}-{}.token", server.rank, server.nonce))
                .map_err(|e| format!("cannot read rank {}'s token {e}", server.rank))?,
        };
        let total = weight(steps);
        for (k, s) in steps.iter().enumerate() {
            let part = &parts[s.part];
            let tag = format!("ready-{round}-{}", k + 1);
            if let Some(why) = self.failed_now(server.rank) {
                return Err(why);
            }
            self.marker(&tag)?;
            // At the meeting point, whose names are counted: step k-1's
            // marker, since every client passed that step (each wrote
            // step k's) and none waits for it any more.
            if k >= 2 && self.shared_token.is_some() {
                let _ = self.store.remove(&format!(
                    "r{}-{}.ready-{round}-{}",
                    self.rank,
                    self.nonce,
                    k - 1
                ));
            }
            self.wait_markers(
                clients,
                &[server.rank],
                peers,
                &tag,
                &format!("to start step {} of round {round}", k + 1),
            )?;
            let mut ctx = part.plan.ctx.clone();
            if let Some(k) = option_with_role(s.bench, OptionRole::Peer) {
                ctx.options.insert(k.into(), addr.to_string());
            }
            if let Some(k) = option_with_role(s.bench, OptionRole::Token) {
                ctx.options.insert(k.into(), token.trim().to_string());
            }
            let step = Plan {
                benches: vec![PlannedBench {
                    bench: s.bench,
                    points: vec![s.point.clone()],
                }],
                ctx,
            };
            let mut r =
                benchsuite_core::runner::run_plan(&step, &part.cfg, &mut Steps { inner: observer });
            for rec in &mut r.records {
                rec.notes.push(note.to_string());
                rec.phase = part.phase.as_ref().map(|p| p.name.clone());
            }
            acc.records.append(&mut r.records);
            if acc.base.is_none() {
                acc.base = Some(r);
            }
            if observer.wants_checkpoints()
                && let Some(base) = &acc.base
            {
                let mut so_far = base.clone();
                so_far.records = acc.records.clone();
                so_far.progress = Some(RunProgress {
                    done: weight(&steps[..acc.records.len().min(steps.len())]),
                    planned: total,
                });
                observer.checkpoint(&so_far);
            }
            if self.cancel.load(Ordering::SeqCst) {
                return Err("interrupted (Ctrl-C)".into());
            }
        }
        self.marker(&format!("done-{round}"))
    }

    /// This rank's server on `--net-bind`, an ephemeral port, with room
    /// for every other rank measuring it at once (fan-in).
    pub(super) fn start_server(&self, token: &str) -> Result<benchsuite_net::Server, String> {
        let world = usize::try_from(self.world).unwrap_or(usize::MAX);
        // Up to 16 connections per rank (fan-in): a run process's usual
        // soft limit of 1024 open files would cut the server's limits.
        let _ = benchsuite_net::raise_open_file_limit();
        let mut c = benchsuite_net::ServerConfig::new(
            SocketAddr::new(self.bind, 0),
            Some(token.to_string()),
        );
        c.max_connections = c.max_connections.max(world.saturating_mul(16));
        c.max_per_address = c.max_per_address.max(world.saturating_mul(8));
        c.max_data_threads = c.max_data_threads.max(world.saturating_mul(8));
        benchsuite_net::Server::start(c).map_err(|e| {
            format!(
                "cannot start this rank's server on {} ({}): {}",
                self.bind,
                self.bind_from,
                benchsuite_core::error_chain(&e)
            )
        })
    }

    /// `rR.json`: this rank's server (`None`: idle), nonce and schedule
    /// hash, and the nonces of the ranks it met (once it did). Not at a
    /// meeting point, which holds this run's entries only (there a rank's
    /// `rR.json` is this run's), and whose store would not hold a list of
    /// the whole world per rank.
    pub(super) fn publish_join(
        &self,
        address: Option<SocketAddr>,
        schedule: &str,
    ) -> Result<(), String> {
        let met: serde_json::Map<String, Value> = if self.store.fresh() {
            serde_json::Map::new()
        } else {
            self.met
                .borrow()
                .iter()
                .map(|(q, n)| (q.to_string(), Value::from(n.as_str())))
                .collect()
        };
        let v = json!({
            "rank": self.rank,
            "host": self.host,
            "role": if address.is_some() { "measure" } else { "idle" },
            "address": address.map(|a| a.to_string()),
            "nonce": self.nonce,
            "mode": self.mode.name(),
            "schedule": schedule,
            "met": met,
            "written_at_ms": now_ms() as u64,
            "pid": std::process::id(),
        });
        Ok(self.store.put(
            &format!("r{}.json", self.rank),
            &v.to_string(),
            Put::Durable,
        )?)
    }

    /// An empty marker file `rR-NONCE.TAG`.
    pub(super) fn marker(&self, tag: &str) -> Result<(), String> {
        Ok(self.store.put(
            &format!("r{}-{}.{tag}", self.rank, self.nonce),
            "",
            Put::Durable,
        )?)
    }
}
