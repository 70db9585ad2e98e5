//! Setting a pairing up: whether the ranks pair, the store, the heartbeat; splitting the run into its phases and the net parts.

use super::*;

impl Pairing {
    /// The pairing for this run, or `None` when net benchmarks measure on
    /// loopback as without a launcher (`--net-pairs off`, or `auto` where
    /// pairing cannot apply). `--net-pairs pairwise|fan-in` where it cannot
    /// apply is an error naming the missing piece. Called as soon as the
    /// placement is known: from here on this rank's heartbeat runs, and an
    /// error leaves its failure marker for the other ranks.
    pub fn new(
        args: &PairingConfig,
        placement: &Placement,
        cfg: &RunConfig,
        registry: &Registry,
        plan: Option<&[RunConfig]>,
    ) -> Result<Option<Pairing>> {
        let flags = checked_flags(args);
        // `--rendezvous` asks for pairing as `--net-pairs pairwise` does:
        // where it cannot apply, an error, not a note.
        let rendezvous = args.rendezvous.is_some();
        let explicit = match args.net_pairs {
            NetPairs::Off => {
                flags?;
                if rendezvous {
                    usage!(
                        "--rendezvous: --net-pairs off measures each rank's own loopback, with no meeting point; give one or the other"
                    );
                }
                note_ignored(args, "--net-pairs off");
                return Ok(None);
            }
            NetPairs::Auto => None,
            NetPairs::Pairwise => Some(Mode::Pairwise),
            NetPairs::FanIn => Some(Mode::FanIn),
        };
        // The command line's selection, or the plan file's phases (none
        // when it could not be read: its error comes next, and leaves the
        // failure marker, for ranks that could read it).
        let configs = plan.unwrap_or(std::slice::from_ref(cfg));
        let net_selected = configs.is_empty()
            || configs.iter().any(|c| {
                registry
                    .select(c.selectors())
                    .is_ok_and(|b| b.iter().any(|b| needs_peer(*b)))
            });
        let cluster = placement.cluster();
        let peer_given = |c: &RunConfig| {
            registry.select(c.selectors()).is_ok_and(|b| {
                b.iter().any(|b| {
                    option_with_role(*b, OptionRole::Peer)
                        .is_some_and(|k| c.options().contains_key(k.as_ref()))
                })
            })
        };
        let why_not = if configs.iter().any(peer_given) {
            Some("--peer names the server already; give one or the other")
        } else if !net_selected {
            Some("no net benchmark is selected (e.g. `net` or `net.tcp_throughput`)")
        } else if cluster.is_none() {
            Some(
                "needs a launcher's rank and world size (SLURM_PROCID and SLURM_NTASKS, OMPI_COMM_WORLD_*, PMI_*, RANK and WORLD_SIZE, or JOB_COMPLETION_INDEX with --world-size) and not --no-cluster",
            )
        } else if cluster.is_some_and(|c| c.world_size < 2) {
            Some("needs a world size of 2 or more")
        } else if placement.dir().is_none() && !rendezvous {
            Some(
                "needs --output-dir DIR on a file system all ranks share (the ranks find each other's servers there), or --rendezvous HOST:PORT",
            )
        } else {
            None
        };
        let mode = match (explicit, why_not) {
            (Some(m), Some(why)) => usage!("--net-pairs {}: {why}", m.name()),
            (None, Some(why)) if rendezvous => {
                flags?;
                usage!("--rendezvous: {why}")
            }
            (None, Some(why)) => {
                flags?;
                if net_selected
                    && placement.dir().is_none()
                    && !configs.iter().any(peer_given)
                    && cluster.is_some_and(|c| c.world_size >= 2)
                {
                    eprintln!(
                        "note: net benchmarks measure each rank's own loopback: give --output-dir DIR on a shared file system, or --rendezvous HOST:PORT, to measure between ranks (--net-pairs)"
                    );
                }
                note_ignored(args, &format!("--net-pairs auto: {why}"));
                return Ok(None);
            }
            (m, None) => m.unwrap_or(Mode::Pairwise),
        };
        let Some(c) = cluster else {
            return Ok(None); // checked above
        };
        let rank = c.rank;
        let nonce = random_hex(8).map_err(|e| FleetError::Io {
            what: "--net-pairs: cannot read random bytes from the system".into(),
            source: e,
        })?;
        let name = hostname();
        let mut step = c.step.as_deref().map_or_else(|| "run".into(), file_part);
        // A requeued Slurm job keeps its id, and its step ids start again.
        if c.launcher == Launcher::Slurm
            && let Some(n) = std::env::var("SLURM_RESTART_COUNT")
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|&n| n > 0)
        {
            step = format!("{step}.restart{n}");
        }
        let (store, shared_token, meeting, flags): (Arc<dyn Store>, _, _, _) = if rendezvous {
            // Checked before anything is served or published: no
            // failure marker can be written without them.
            let flags = flags?;
            let Some(rdv) = flags.rendezvous.clone() else {
                return Ok(None); // given, so parsed
            };
            let Some(token) = cfg.options().get("token") else {
                usage!(
                    "--rendezvous needs a token shared by every rank (it proves each connection to the meeting point and guards each rank's server; it never crosses the network): set {} or give --token-file PATH, the same on every rank",
                    crate::TOKEN_ENV
                );
            };
            let token = shared_token(token)?;
            // Without a job id, two jobs at one HOST:PORT with one token
            // could not be told apart.
            let Some(id) = c.job.as_deref() else {
                usage!(
                    "--rendezvous needs the job's id, so that only this job's ranks meet at {}: {}; give --job-id ID, the same on every rank of the job and another for each job",
                    rdv.given,
                    no_job_id(c.launcher)
                );
            };
            let job = Job {
                id: format!("{id}/{step}"),
                world: c.world_size,
            };
            crate::rendezvous::check_world(&rdv.given, job.world)
                .map_err(|e| FleetError::Usage(e.0))?;
            if rank == 0 {
                let mp = MeetingPoint::start(&rdv, &token, &job, flags.timeout)
                    .map_err(|e| FleetError::Rendezvous(e.0))?;
                eprintln!(
                    "rank 0: --net-pairs {}: serving the meeting point on {} (--rendezvous {})",
                    mode.name(),
                    mp.local_addr(),
                    rdv.given
                );
                (mp.store(), Some(token), Some(mp), Ok(flags))
            } else {
                let remote = Remote::new(
                    rdv,
                    &token,
                    job,
                    flags.timeout,
                    Arc::clone(cfg.cancel_flag()),
                );
                (Arc::new(remote), Some(token), None, Ok(flags))
            }
        } else {
            let Some(job_dir) = placement.dir() else {
                return Ok(None); // checked above
            };
            let dir = job_dir.join(".rendezvous").join(step);
            let store = DirStore::create(dir.clone()).map_err(|e| FleetError::Io {
                what: format!(
                    "--output-dir: cannot create the rendezvous directory {}",
                    dir.display()
                ),
                source: e,
            })?;
            (Arc::new(store), None, None, flags)
        };
        // An earlier run's files of this rank (same job and step).
        for name in [format!("r{rank}.json"), format!("r{rank}.failed")] {
            store
                .remove(&name)
                .map_err(|e| FleetError::Rendezvous(format!("{}: {e}", store.flag())))?;
        }
        let mut p = Pairing {
            mode,
            auto: explicit.is_none() && !rendezvous,
            rank,
            world: c.world_size,
            host: name
                .clone()
                .or_else(|| c.node.clone())
                .unwrap_or_else(|| "unknown-host".into()),
            store,
            shared_token,
            meeting,
            nonce,
            bind: Ipv4Addr::LOCALHOST.into(),
            bind_from: "",
            timeout: Duration::MAX,
            started_ms: now_ms(),
            cancel: Arc::clone(cfg.cancel_flag()),
            completed: Cell::new(false),
            failed_early: Cell::new(false),
            heartbeat: None,
            beats: RefCell::new(BTreeMap::new()),
            met: RefCell::new(BTreeMap::new()),
            facts: RefCell::new(Value::Null),
            filled: RefCell::new(BTreeSet::new()),
        };
        // Dropped on an error from here on: the failure marker.
        let flags = flags?;
        p.timeout = flags.timeout;
        (p.bind, p.bind_from) = bind_address(flags.bind, name.as_deref());
        p.heartbeat = Some(Heartbeat::start(
            p.store.clone(),
            format!("r{rank}.alive"),
            p.nonce.clone(),
            p.beat_period(),
        ));
        Ok(Some(p))
    }

    /// How often this rank's heartbeat beats, and others' are read.
    pub(super) fn beat_period(&self) -> Duration {
        (self.timeout / 4).clamp(Duration::from_millis(50), BEAT)
    }

    /// How often a waiting rank reads the others' heartbeats: often
    /// enough to see them change well within the timeout, seldom enough
    /// for a large world on a shared file system.
    pub(super) fn look_every(&self) -> Duration {
        (self.timeout / 8).clamp(self.beat_period() / 2, Duration::from_secs(2))
    }

    /// Splits the run's phases (the command line's one, or a plan file's)
    /// into their other benchmarks, run first, in their order, each phase
    /// as it is, and their net benchmarks, measured last between the ranks
    /// (in the phases' order); each part keeps the parameters and options
    /// its benchmarks take. The net parts are planned against a stand-in
    /// server (so what cannot run against another host's server is refused
    /// now); [`Pairing::run`] gives them the partner's. `None` where `auto`
    /// falls back to loopback (said on stderr): the run goes on unsplit,
    /// without this pairing.
    pub fn split<'r>(
        &self,
        registry: &'r Registry,
        phases: &[(Option<PlannedPhase>, RunConfig)],
        host: &Host,
    ) -> Result<Option<Split<'r>>> {
        let mut others: Phases<'r> = (Vec::new(), Vec::new());
        let mut net_parts = Vec::new();
        for (phase, cfg) in phases {
            let explain = |e: ConfigError| match phase {
                Some(p) => FleetError::Plan(p.explain(e).to_string()),
                None => FleetError::Plan(e.to_string()),
            };
            let selected = registry.select(cfg.selectors()).map_err(explain)?;
            let (net, other): (Vec<&dyn Benchmark>, Vec<&dyn Benchmark>) =
                selected.into_iter().partition(|b| needs_peer(*b));
            // The phase's configuration narrowed to `benches`: their ids,
            // and the parameters and options they take.
            let part = |benches: &[&dyn Benchmark]| {
                let mut c = cfg.to_builder();
                c.selectors(benches.iter().map(|b| b.meta().id))
                    .sweep(cfg.sweep().iter().filter(|(k, _)| {
                        benches
                            .iter()
                            .any(|b| benchsuite_core::sweep::key_applies(k, &b.meta()))
                    }))
                    .options(cfg.options().iter().filter(|(k, _)| {
                        benches
                            .iter()
                            .any(|b| b.options().iter().any(|o| o.name == k.as_str()))
                    }));
                c
            };
            if !other.is_empty() {
                let c = part(&other).build().map_err(explain)?;
                let plan = benchsuite_core::runner::plan_on(registry, &c, host.clone())
                    .map_err(explain)?;
                others.0.push((phase.clone(), c));
                others.1.push(plan);
            }
            if net.is_empty() {
                continue;
            }
            let mut c = part(&net);
            for b in &net {
                if let Some(k) = option_with_role(*b, OptionRole::Peer) {
                    c.option(
                        k.to_string(),
                        format!("{}:{}", self.bind, benchsuite_net::DEFAULT_PORT),
                    );
                    self.filled.borrow_mut().insert(k);
                }
                if let Some(k) = option_with_role(*b, OptionRole::Token) {
                    c.option(k.to_string(), "stand-in");
                    self.filled.borrow_mut().insert(k);
                }
            }
            let c = c.build().map_err(explain)?;
            match benchsuite_core::runner::plan_on(registry, &c, host.clone()) {
                Ok(plan) => net_parts.push(NetPart {
                    phase: phase.clone(),
                    cfg: c,
                    plan,
                }),
                Err(e) if self.auto => {
                    eprintln!(
                        "note: net benchmarks measure each rank's own loopback: they cannot measure another rank's server ({}); --net-pairs pairwise says so as an error",
                        explain(e)
                    );
                    self.completed.set(true);
                    return Ok(None);
                }
                Err(e) => usage!(
                    "--net-pairs {}: the net benchmarks measure another rank's server: {} (--net-pairs off measures each rank's loopback)",
                    self.mode.name(),
                    explain(e)
                ),
            }
        }
        if net_parts.is_empty() {
            self.completed.set(true);
            return Ok(None);
        }
        Ok(Some(Split {
            phases: others,
            net: net_parts,
        }))
    }

    /// An idle rank (another task of its node measures): says so in the
    /// rendezvous, so that the measuring ranks do not wait for it, and
    /// stays until all ranks met (the barrier), so that they can tell its
    /// file from an earlier run's.
    pub fn announce_idle(&self) -> Result<()> {
        self.publish_join(None, "")
            .map_err(|e| FleetError::Rendezvous(format!("{}: {e}", self.store.flag())))?;
        eprintln!(
            "rank {}: --net-pairs {}: idle; staying until every rank reaches the network phase ({})",
            self.rank,
            self.mode.name(),
            self.store.place()
        );
        match self.join_all(None, "") {
            // Now with the ranks met: final (a meeting point's needs no
            // list of them).
            Ok(_) if !self.store.fresh() => {
                if let Err(e) = self.publish_join(None, "") {
                    eprintln!("rank {}: --net-pairs: {e}", self.rank);
                }
            }
            Err(why) => {
                eprintln!(
                    "rank {}: --net-pairs {}: {why}",
                    self.rank,
                    self.mode.name()
                );
                self.write_failed(&why);
            }
            Ok(_) => {}
        }
        self.completed.set(true);
        Ok(())
    }
}
