//! `os.process_create`: fork + exit, or fork + exec, then wait.

use std::path::{Path, PathBuf};

use benchsuite_core::{
    About, BenchError, Benchmark, Case, Context, Finished, Meta, MetricSpec, ParamSpec, Point,
    Work, choice_enum,
};

use crate::sys::{self, ChildAction, ExecImage};

choice_enum! {
    /// Values of the `mode` parameter.
    enum Mode {
        /// fork + `_exit(0)` + waitpid.
        ForkExit = "fork_exit",
        /// fork + execve(`true`) + waitpid.
        ForkExec = "fork_exec",
    }
}

/// Where `fork_exec` looks for a program that exits 0 at once.
const TRUE_PATHS: &[&str] = &["/bin/true", "/usr/bin/true"];

/// Process creation; see the crate docs.
#[derive(Debug, Default)]
pub struct ProcessCreate;

impl Benchmark for ProcessCreate {
    fn meta(&self) -> Meta {
        Meta {
            id: "os.process_create".into(),
            description: "fork a child that exits at once (or execs /bin/true), and wait for it"
                .into(),
            params: vec![ParamSpec::choice_of(
                "mode",
                "fork_exit: fork + _exit(0) + waitpid (lmbench `lat_proc fork`); fork_exec: fork + execve(/bin/true) + waitpid (lmbench `lat_proc exec`)",
                Mode::ForkExit,
            )],
            metrics: vec![MetricSpec::time_per_op("time_per_op")],
        }
    }

    fn prepare(&self, _ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let image = match point.choice::<Mode>("mode")? {
            Mode::ForkExit => None,
            Mode::ForkExec => {
                let path = find_true().ok_or_else(|| {
                    BenchError::Skip(format!(
                        "mode=fork_exec needs a `true` program; none of {} exists",
                        TRUE_PATHS.join(", ")
                    ))
                })?;
                Some(ExecImage::new(&path)?)
            }
        };
        let mut notes = Vec::new();
        if let Some(rss) = resident_mib() {
            notes.push(format!(
                "fork copies the parent's page tables: its cost grows with the parent's memory (resident now: {rss} MiB)"
            ));
        }
        if let Some(image) = &image {
            notes.push(format!(
                "exec runs {}: the dynamic loader and libc start-up are included (lmbench execs a tiny static program)",
                image.path()
            ));
        }
        Ok(Box::new(ProcessCase {
            image,
            about: About {
                notes,
                ..About::default()
            },
        }))
    }
}

fn find_true() -> Option<PathBuf> {
    TRUE_PATHS
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .map(Path::to_path_buf)
}

/// The resident set size of this process, in MiB (from /proc/self/status).
fn resident_mib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

#[derive(Debug)]
struct ProcessCase {
    /// `Some` for fork_exec.
    image: Option<ExecImage>,
    about: About,
}

impl Case for ProcessCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        let action = match &self.image {
            None => ChildAction::Exit,
            Some(image) => ChildAction::Exec(image),
        };
        for _ in 0..iters {
            let mut child = sys::fork_child(&action)?;
            let status = child.wait()?;
            if !status.success() {
                let what = match &self.image {
                    Some(image) if status.code() == Some(127) => {
                        format!("execve({}) failed in the child", image.path())
                    }
                    Some(image) => format!("{} did not exit 0", image.path()),
                    None => "the forked child did not exit 0".into(),
                };
                return Err(BenchError::Other(format!("{what} ({status})")));
            }
        }
        Ok(Work::ops(iters))
    }

    fn finish(self: Box<Self>) -> Finished {
        // Every child was reaped in `run`; the exec image is freed here.
        self.about.into()
    }
}
