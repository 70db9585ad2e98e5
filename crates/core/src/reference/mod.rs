//! Reference tools: how to measure one sweep point with the single-purpose
//! tool benchsuite claims to match (fio, iperf3, sockperf, sysbench,
//! `perf bench`), and what the comparison found.
//!
//! A [`Reference`] is plain data made by
//! [`Benchmark::reference`](crate::Benchmark::reference): the exact command
//! line, an optional server to start first, the metric it corresponds to
//! and a parser for the tool's output. Making one runs no process, so a
//! test can check the command line of every point without the tool
//! installed; `benchsuite reference` runs them, each in a process group of
//! its own ([`ToolProcess`]), so a timeout or Ctrl-C stops the tool and
//! everything it forked (`perf bench`, `ip netns exec`, iperf3). A record
//! then carries a [`ReferenceResult`].

mod process;
pub mod run;
mod tool;

pub use process::*;
pub use run::metric_value;

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::metric::Direction;

/// How long one run of a reference tool lasts, in seconds, where the tool
/// takes a duration (fio `--runtime`, iperf3 `-t`, sysbench `--time`):
/// comparable to the time one benchsuite round takes for the same point.
pub const REFERENCE_SECS: u64 = 4;

/// How long each of our samples lasts at a point whose tool runs for
/// [`REFERENCE_SECS`] (fio, iperf3): a round of the default five samples
/// spans the tool's window. With the run's 10 ms samples ours would move
/// a twentieth of the tool's data per round, and on a virtual disk or
/// loopback that is a different experiment: ours' rounds would always
/// follow the tool's 4 s burst (a host write cache full of fio's 10 GB
/// made ours' 1 MiB writes fall from 3.3 to 1.8 GB/s over four rounds
/// while fio's held 2.4-2.9) and a 50 ms state can fill a round.
pub const WINDOW_SAMPLE: Duration = Duration::from_millis(REFERENCE_SECS * 1000 / 5);

/// Environment variables that hold benchsuite's secrets (the network
/// token), removed from the environment of every reference tool, its
/// server and its version probe.
pub const SECRET_ENV: &[&str] = &["BENCHSUITE_TOKEN"];

/// Parses a reference tool's standard output into the value of the metric
/// it corresponds to, in that metric's base unit (B/s, s, op/s, event/s).
pub type ParseFn = fn(&str) -> Result<f64, crate::error::ValueError>;

/// How to measure one sweep point with a reference tool.
#[derive(Debug, Clone)]
pub struct Reference {
    /// The tool's name (`fio`, `iperf3`).
    pub tool: &'static str,
    /// The Debian package that provides it (`apt install PACKAGE`).
    pub package: &'static str,
    /// The exact command line, program first.
    pub argv: Vec<String>,
    /// A server to start before `argv` and kill (by its PID) after it
    /// (`iperf3 -s -1 -p PORT`, `sockperf sr`).
    pub server_argv: Option<Vec<String>>,
    /// The name of our metric the tool's number corresponds to.
    pub metric: &'static str,
    /// Turns the tool's standard output into that metric's value.
    pub parse: ParseFn,
    /// A command line that prints the tool's version.
    pub version_argv: Vec<String>,
    /// Run both sides on this one CPU: the tool under `taskset -c CPU`
    /// (already in `argv`), ours on the calling thread pinned to it for its
    /// rounds. For single-threaded points whose speed depends on which CPU
    /// runs them (a virtual machine's vCPUs need not be alike), so the
    /// ratio compares code, not placement.
    pub same_cpu: Option<usize>,
    /// Where the tool's files go (fio's, on the disk under test): the
    /// tool runs in a fresh private directory (mode 0700, a random name,
    /// created exclusively) made in this one before each run, and that
    /// directory is removed with what the tool wrote in it after the run.
    /// Nothing outside it is ever removed, and no name in a shared
    /// directory is opened, so a link planted there by another user is
    /// never followed. Without it the private directory is made in the
    /// temporary directory: a tool (its server and its version probe too)
    /// never runs where benchsuite runs, whose files could be anyone's
    /// (python3 imports a `torch.py` from its working directory first).
    pub scratch_in: Option<std::path::PathBuf>,
    /// A known reason the tool's number may mislead on this point; the
    /// record carries it.
    pub note: Option<String>,
    /// Environment variables set for the tool (`OPENBLAS_NUM_THREADS=2`),
    /// on top of benchsuite's own environment.
    pub env: Vec<(String, String)>,
    /// Input files (name, contents) written into a fresh scratch directory
    /// before each run; when there are any, the tool runs in that
    /// directory, which is removed after the run (hpcc reads
    /// `hpccinf.txt` from where it runs).
    pub inputs: Vec<(String, String)>,
    /// A file in the scratch directory the tool writes its results to
    /// (hpcc's `hpccoutf.txt`). When set, the parser gets that file's
    /// text followed by the tool's standard output and standard error
    /// (where a library it loads says what it picked: OpenBLAS's
    /// `Core: Zen`), instead of the standard output alone.
    pub output_file: Option<&'static str>,
    /// Why the tool cannot give a meaningful number on this machine (hpcc
    /// linked to the unoptimised netlib BLAS): the tool is not run, and the
    /// record says this instead of giving a ratio.
    pub unusable: Option<String>,
    /// How long one run may take before the tool (and what it forked) is
    /// stopped. The default is [`REFERENCE_SECS`] + [`TOOL_GRACE`].
    pub timeout: Duration,
    /// Our samples last at least this long at this point (`None`: as the
    /// run says). For a tool that reports one average over a long run of
    /// a quantity with states (a scheduler that puts both ends of a
    /// ping-pong on one CPU or two, for stretches): short samples of ours
    /// each catch one state and their median picks the commoner one, while
    /// the tool averages over them; samples as long as the tool's window
    /// average the same way.
    pub sample_time: Option<Duration>,
    /// One file both sides read (or write over). When set (with [`Reference::scratch_in`]
    /// naming the disk under test), the runner lays out the file with data
    /// in a fresh private directory there before the point's first round,
    /// runs ours with the parameter it names set to the file's path (as a
    /// user's `dir=FILE` would), gives the tool the path wherever its
    /// [`FILE_PLACEHOLDER`] stands in `argv`, and removes the directory
    /// after the last round. Each side laying out its own file would
    /// compare two layouts of different age, which a virtual disk serves
    /// at different speeds.
    pub shared_file: Option<SharedFile>,
    /// How the tool's command line takes the shared file's path (what
    /// stands for [`FILE_PLACEHOLDER`] in `argv`), or why it cannot take
    /// it: the path as it is by default ([`plain_file_arg`]); fio's
    /// `--filename` takes a `:`-separated list, so a `:` in the path is
    /// escaped there. An error names no parameter: the runner adds it.
    pub file_arg: FileArgFn,
}

/// Writes a file's path as a tool's command line takes it
/// ([`Reference::file_arg`]), or says why it cannot.
pub type FileArgFn = fn(&str) -> Result<String, crate::error::ValueError>;

/// The path as it is: for a tool that takes a whole argument as one path.
pub fn plain_file_arg(path: &str) -> Result<String, crate::error::ValueError> {
    plain_file_arg_text(path).map_err(Into::into)
}

fn plain_file_arg_text(path: &str) -> Result<String, String> {
    Ok(path.to_string())
}

/// The file both sides of a reference use ([`Reference::shared_file`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedFile {
    /// Our parameter that takes the file's path (`disk.io`'s `dir`).
    pub param: &'static str,
    /// Its length in bytes.
    pub len: u64,
    /// Options set for our rounds only, each value with every
    /// [`FILE_PLACEHOLDER`] replaced by the file's path: what lets ours
    /// write over the file the runner made (`disk.io`'s
    /// `allow-overwrite`), and nothing else.
    pub grants: Vec<(&'static str, String)>,
}

/// Stands for the shared file's path in a reference's `argv`.
pub const FILE_PLACEHOLDER: &str = "{file}";

/// How long a tool may run past [`REFERENCE_SECS`] before it is stopped,
/// unless its [`Reference::timeout`] says otherwise.
pub const TOOL_GRACE: Duration = Duration::from_secs(60);

impl Reference {
    /// A reference with no server, no files to clean up and no note.
    pub fn new(
        tool: &'static str,
        package: &'static str,
        argv: Vec<String>,
        metric: &'static str,
        parse: ParseFn,
    ) -> Reference {
        Reference {
            tool,
            package,
            version_argv: vec![tool.to_string(), "--version".to_string()],
            argv,
            server_argv: None,
            metric,
            parse,
            scratch_in: None,
            same_cpu: None,
            note: None,
            env: Vec::new(),
            inputs: Vec::new(),
            output_file: None,
            unusable: None,
            timeout: Duration::from_secs(REFERENCE_SECS) + TOOL_GRACE,
            sample_time: None,
            shared_file: None,
            file_arg: plain_file_arg,
        }
    }

    /// The command line as one shell-quoted string, for reports: the
    /// environment it sets first (`OPENBLAS_NUM_THREADS=2 hpcc`), and the
    /// input files it reads (`(in a scratch directory with hpccinf.txt)`).
    pub fn command(&self) -> String {
        let mut parts: Vec<String> = self.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        parts.extend(self.argv.iter().cloned());
        let mut line = shell_join(&parts);
        if !self.inputs.is_empty() {
            let names: Vec<&str> = self.inputs.iter().map(|(n, _)| n.as_str()).collect();
            line.push_str(&format!(
                " (in a scratch directory with {})",
                names.join(", ")
            ));
        }
        line
    }
}

/// Joins an argv into one line a shell would split back into it.
pub fn shell_join(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_=./:,@%+".contains(c));
            if plain {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Makes an argv from string slices.
pub fn argv<S: AsRef<str>>(parts: impl IntoIterator<Item = S>) -> Vec<String> {
    parts.into_iter().map(|s| s.as_ref().to_string()).collect()
}

/// What running a reference tool beside a record found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReferenceResult {
    /// The tool (`fio`).
    pub tool: String,
    /// Its version, as it prints it (null where it could not be read).
    pub version: Option<String>,
    /// The exact command line that ran (shell-quoted).
    pub command: String,
    /// The metric of the record it compares with.
    pub metric: String,
    /// Median of the tool's rounds, in `unit` (null when none succeeded).
    pub median: Option<f64>,
    /// Unit of `median` and `rounds`: the metric's base unit.
    pub unit: String,
    /// Direction-aware ratio, above 1 when benchsuite did better (more
    /// throughput, less latency): the median of `round_ratios` where two
    /// or more rounds paired (before 1.8: the ratio of the two sides'
    /// medians, which is what a single round still gives); null when
    /// either side has no value (the tool is missing or failed, the record
    /// did not run). Read it with `note`, which says where the tool
    /// measures something slightly different.
    pub ratio: Option<f64>,
    /// The tool's value in each round, in the order they ran (interleaved
    /// with benchsuite's own rounds).
    pub rounds: Vec<f64>,
    /// Why there is no ratio (`not installed: apt install fio`, a round's
    /// error, `perf bench unavailable: ...`), or what to know about the
    /// tool's number at this point (a known difference or misbehaviour).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Our value of the tool's metric in each round, in order, where it is
    /// a latency percentile (`latency.p99`): the ratio compares their
    /// median, since a pooled record keeps only the first round's
    /// percentiles. Schema 1.8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub our_rounds: Option<Vec<f64>>,
    /// The direction-aware ratio of each round: our round to the tool's
    /// round that followed it, for every round both measured, in order.
    /// `ratio` is their median; their spread is the spread between runs
    /// that one figure hides (on a virtual disk, one point's rounds gave
    /// 0.87 to 1.47). Schema 1.8.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub round_ratios: Vec<f64>,
}

/// The direction-aware ratio of our median to the tool's: above 1 means
/// benchsuite did better. None unless both are finite and positive.
pub fn ratio(ours: f64, tool: f64, direction: Direction) -> Option<f64> {
    if !(ours.is_finite() && tool.is_finite() && ours > 0.0 && tool > 0.0) {
        return None;
    }
    Some(match direction {
        Direction::Higher => ours / tool,
        Direction::Lower => tool / ours,
    })
}

/// The metric a reference's metric name refers to: `latency` for
/// `latency.p99`.
pub fn base_metric(name: &str) -> &str {
    name.split_once('.').map_or(name, |(b, _)| b)
}

/// The median of the finite values among `values` (None for none): the
/// project's one median, [`crate::stats::median`], over what a tool
/// printed.
pub fn median(values: &[f64]) -> Option<f64> {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    (!v.is_empty()).then(|| crate::stats::median(&v))
}

/// The number after `key` on the first line of `text` that contains it
/// (`events per second:   1234.5` → 1234.5), for tools that print text.
pub fn number_after(text: &str, key: &str) -> Result<f64, crate::error::ValueError> {
    number_after_text(text, key).map_err(Into::into)
}

fn number_after_text(text: &str, key: &str) -> Result<f64, String> {
    let line = text
        .lines()
        .find(|l| l.contains(key))
        .ok_or_else(|| format!("no `{key}` in the output"))?;
    let rest = &line[line.find(key).unwrap_or(0) + key.len()..];
    rest.split(|c: char| c.is_whitespace() || c == ':' || c == '=')
        .filter(|w| !w.is_empty())
        .find_map(|w| w.parse::<f64>().ok())
        .ok_or_else(|| format!("no number after `{key}` in: {}", line.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::Instant;

    #[test]
    fn ratio_is_direction_aware() {
        assert_eq!(ratio(2.0, 1.0, Direction::Higher), Some(2.0));
        assert_eq!(ratio(2.0, 1.0, Direction::Lower), Some(0.5));
        assert_eq!(ratio(0.0, 1.0, Direction::Lower), None);
        assert_eq!(ratio(f64::NAN, 1.0, Direction::Higher), None);
    }

    #[test]
    fn median_and_number_after() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        let out = "CPU speed:\n    events per second:  1234.56\n";
        assert_eq!(number_after(out, "events per second"), Ok(1234.56));
        assert!(number_after(out, "latency").is_err());
    }

    #[test]
    fn shell_join_quotes_what_needs_it() {
        let a = argv(["fio", "--name=x y", "--bs=4096", "it's"]);
        assert_eq!(shell_join(&a), r"fio '--name=x y' --bs=4096 'it'\''s'");
    }

    /// Whether a process is gone: no /proc entry, or a zombie (dead,
    /// waiting for whoever reaps orphans in this PID namespace).
    fn gone(pid: u32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
        }
    }

    fn wait_gone(pid: u32) -> bool {
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if gone(pid) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    /// A fake tool that forks a sleeping child, prints its PID and sleeps
    /// past any deadline.
    fn forking_tool() -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", "sleep 300 & echo $!; sleep 300"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped());
        c
    }

    fn child_pid(t: &mut ToolProcess) -> u32 {
        use std::io::BufRead;
        let out = t.child_mut().stdout.take().unwrap();
        let mut line = String::new();
        std::io::BufReader::new(out).read_line(&mut line).unwrap();
        line.trim().parse().unwrap()
    }

    #[test]
    fn a_timeout_stops_the_tool_and_what_it_forked() {
        let mut t = ToolProcess::spawn(forking_tool()).unwrap();
        let (tool, forked) = (t.id(), child_pid(&mut t));
        assert!(!gone(forked) && !gone(tool));
        let deadline = Instant::now() + Duration::from_millis(200);
        let r = t.wait(deadline, &|| false);
        assert!(matches!(r, Err(Stopped::TimedOut)), "{r:?}");
        // The tool is reaped: no /proc entry at all.
        assert!(!std::path::Path::new(&format!("/proc/{tool}")).exists());
        assert!(wait_gone(forked), "the forked sleep {forked} still runs");
        assert!(!RUNNING.lock().unwrap().contains(&(tool as i32)));
    }

    #[test]
    fn cancel_and_drop_stop_the_group_too() {
        let mut t = ToolProcess::spawn(forking_tool()).unwrap();
        let forked = child_pid(&mut t);
        let r = t.wait(Instant::now() + Duration::from_secs(60), &|| true);
        assert!(matches!(r, Err(Stopped::Cancelled)), "{r:?}");
        assert!(wait_gone(forked), "the forked sleep {forked} still runs");

        let mut t = ToolProcess::spawn(forking_tool()).unwrap();
        let (tool, forked) = (t.id(), child_pid(&mut t));
        drop(t);
        assert!(!std::path::Path::new(&format!("/proc/{tool}")).exists());
        assert!(wait_gone(forked), "the forked sleep {forked} still runs");
    }

    /// `wait_or_stop` asks first: a tool that cleans up on SIGTERM gets to
    /// (its trap runs), one that ignores SIGTERM is killed after the grace,
    /// with what it forked.
    #[test]
    fn a_stop_with_grace_asks_with_sigterm_then_kills() {
        let dir = std::env::temp_dir().join(format!(
            "benchsuite-stop-{}",
            crate::atomic::random_hex().unwrap()
        ));
        std::fs::create_dir(&dir).unwrap();
        let cleaned = dir.join("cleaned");
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(format!(
                "trap 'echo bye > {}; exit 3' TERM; echo $$; while :; do sleep 0.05; done",
                cleaned.display()
            ))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped());
        let mut t = ToolProcess::spawn(c).unwrap();
        let _ = child_pid(&mut t);
        let r = t.wait_or_stop(
            Instant::now() + Duration::from_millis(100),
            &|| false,
            Duration::from_secs(10),
        );
        assert!(matches!(r, Err(Stopped::TimedOut)), "{r:?}");
        assert_eq!(std::fs::read_to_string(&cleaned).unwrap(), "bye\n");

        let mut c = Command::new("sh");
        c.args([
            "-c",
            "trap '' TERM; sleep 300 & echo $!; while :; do sleep 0.05; done",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped());
        let mut t = ToolProcess::spawn(c).unwrap();
        let forked = child_pid(&mut t);
        let start = Instant::now();
        let r = t.wait_or_stop(
            Instant::now() + Duration::from_secs(60),
            &|| true,
            Duration::from_millis(300),
        );
        assert!(matches!(r, Err(Stopped::Cancelled)), "{r:?}");
        assert!(
            start.elapsed() >= Duration::from_millis(300),
            "{:?}",
            start.elapsed()
        );
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        assert!(wait_gone(forked), "the forked sleep {forked} still runs");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A pipe whose other end `write` fills (then closes, as a child that
    /// exits does).
    fn piped(write: impl FnOnce(std::io::PipeWriter) + Send + 'static) -> std::io::PipeReader {
        let (r, w) = std::io::pipe().unwrap();
        std::thread::spawn(move || write(w));
        r
    }

    #[test]
    fn a_pipe_tail_keeps_only_the_last_bytes_and_says_how_many_were_cut() {
        use std::io::Write;
        let text: Vec<u8> = (0..100_000u32)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let sent = text.clone();
        let tail = PipeTail::read(piped(move |mut w| w.write_all(&sent).unwrap()), 1000)
            .tail(Duration::from_secs(5))
            .unwrap();
        assert_eq!(tail.text.as_bytes(), &text[text.len() - 1000..]);
        assert_eq!(tail.cut, text.len() as u64 - 1000);
        assert!(tail.text.ends_with("99999\n"));
        let shown = PipeTail::read(piped(move |mut w| w.write_all(&text).unwrap()), 1000)
            .get(Duration::from_secs(5))
            .unwrap();
        assert!(
            shown.starts_with(&format!("[{} bytes cut; the last 1000 follow]\n", tail.cut)),
            "{}",
            &shown[..80]
        );
        let short = PipeTail::read(piped(|mut w| w.write_all(b"error: x\n").unwrap()), 1000)
            .get(Duration::from_secs(5));
        assert_eq!(short.as_deref(), Some("error: x\n"));
    }

    /// A daemon the child started keeps the pipe open: after the grace the
    /// tail gives up, and its reader ends and closes its end of the pipe
    /// (the daemon's next write fails with a broken pipe) instead of
    /// reading on as long as the daemon lives.
    #[test]
    fn a_pipe_tail_reader_ends_with_its_grace_when_a_daemon_holds_the_pipe() {
        use std::io::Write;
        let (r, mut daemon) = std::io::pipe().unwrap();
        daemon.write_all(b"started\n").unwrap();
        let start = Instant::now();
        let tail = PipeTail::read(r, 1000).tail(Duration::from_millis(200));
        assert_eq!(tail, None);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        // The reader's end is closed: nobody reads any more.
        let e = daemon.write_all(b"still here\n").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
    }

    /// This thread's voluntary context switches so far.
    fn voluntary_switches() -> u64 {
        std::fs::read_to_string("/proc/thread-self/status")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[test]
    fn a_wait_sleeps_until_the_tool_exits_instead_of_polling() {
        let mut c = Command::new("sleep");
        c.arg("1").stdin(std::process::Stdio::null());
        let mut t = ToolProcess::spawn(c).unwrap();
        if pidfd_open(t.id()).is_none() {
            eprintln!("skipped: this kernel has no pidfd_open (before Linux 5.3): the wait polls");
            let _ = t.wait(Instant::now() + Duration::from_secs(60), &|| false);
            return;
        }
        let before = voluntary_switches();
        let status = t.wait(Instant::now() + Duration::from_secs(60), &|| false);
        let woke = voluntary_switches() - before;
        assert!(status.unwrap().success());
        // A 20 ms poll wakes 50 times in that second; this waiter wakes
        // when `sleep` exits and at most every CANCEL_CHECK before that
        // (plus a wake_waits of another test of this binary, now and then).
        assert!(woke <= 8, "the waiter woke {woke} times in 1 s");
    }

    #[test]
    fn wake_waits_makes_a_wait_look_at_cancelled_at_once() {
        static CANCEL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        let mut t = ToolProcess::spawn(forking_tool()).unwrap();
        let forked = child_pid(&mut t);
        let waker = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(100));
            CANCEL.store(true, std::sync::atomic::Ordering::SeqCst);
            wake_waits();
        });
        let start = Instant::now();
        // Without the wake this wait would look at the flag after a minute.
        let r = t.wait_checking(
            Instant::now() + Duration::from_secs(300),
            &|| CANCEL.load(std::sync::atomic::Ordering::SeqCst),
            Duration::from_secs(60),
            Duration::ZERO,
        );
        waker.join().unwrap();
        assert!(matches!(r, Err(Stopped::Cancelled)), "{r:?}");
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{:?}",
            start.elapsed()
        );
        assert!(wait_gone(forked), "the forked sleep {forked} still runs");
    }

    #[test]
    fn a_tool_that_exits_leaves_nothing_behind() {
        // The tool exits at once, leaving its forked child running.
        let mut c = Command::new("sh");
        c.args(["-c", "sleep 300 & echo $!"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped());
        let mut t = ToolProcess::spawn(c).unwrap();
        let forked = child_pid(&mut t);
        let status = t.wait(Instant::now() + Duration::from_secs(60), &|| false);
        assert!(status.unwrap().success());
        assert!(wait_gone(forked), "the forked sleep {forked} still runs");
    }
}
