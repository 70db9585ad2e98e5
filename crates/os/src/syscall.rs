//! `os.syscall`: the cost of entering and leaving the kernel.

use std::fs::File;
use std::io::Write;

use benchsuite_core::{
    About, BenchError, Benchmark, Case, Context, Finished, Meta, MetricSpec, ParamSpec, Point,
    Work, choice_enum,
};

use crate::sys;

choice_enum! {
    /// Values of the `call` parameter.
    enum CallChoice {
        /// `syscall(SYS_getppid)`.
        Getppid = "getppid",
        /// A 1-byte `write(2)` to `/dev/null`.
        WriteDevNull = "write_devnull",
    }
}

/// System-call cost; see the crate docs.
#[derive(Debug, Default)]
pub struct Syscall;

impl Benchmark for Syscall {
    fn meta(&self) -> Meta {
        Meta {
            id: "os.syscall".into(),
            description: "round trip into the kernel: raw getppid, or a 1-byte write to /dev/null"
                .into(),
            params: vec![ParamSpec::choice_of(
                "call",
                "getppid: syscall(SYS_getppid), the null call (lmbench `lat_syscall null`, `perf bench syscall basic`); write_devnull: write(2) of 1 byte to /dev/null (lmbench `lat_syscall write`)",
                CallChoice::Getppid,
            )],
            metrics: vec![MetricSpec::time_per_op("time_per_op")],
        }
    }

    fn prepare(&self, _ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let call = match point.choice::<CallChoice>("call")? {
            CallChoice::Getppid => SyscallCase::Getppid,
            CallChoice::WriteDevNull => SyscallCase::WriteDevNull(
                File::options()
                    .write(true)
                    .open("/dev/null")
                    .map_err(|e| BenchError::io("open /dev/null for writing", e))?,
            ),
        };
        Ok(Box::new(call))
    }

    /// `perf bench syscall basic` for `call=getppid`.
    fn reference(&self, _ctx: &Context, point: &Point) -> Option<benchsuite_core::Reference> {
        let allowed = sys::thread_affinity().ok()?.cpus();
        crate::reference::syscall(point, &allowed)
    }
}

/// The prepared call; `WriteDevNull` holds the descriptor it writes to.
#[derive(Debug)]
enum SyscallCase {
    Getppid,
    WriteDevNull(File),
}

impl Case for SyscallCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        match self {
            SyscallCase::Getppid => {
                let mut sum = 0i64;
                for _ in 0..iters {
                    sum = sum.wrapping_add(sys::getppid_raw());
                }
                std::hint::black_box(sum);
            }
            SyscallCase::WriteDevNull(file) => {
                let mut f = &*file;
                let byte = [0u8];
                for _ in 0..iters {
                    // `File::write` is one write(2) call, no buffering.
                    let n = f
                        .write(&byte)
                        .map_err(|e| BenchError::io("write to /dev/null", e))?;
                    if n != 1 {
                        return Err(BenchError::Other(format!(
                            "write to /dev/null wrote {n} bytes instead of 1"
                        )));
                    }
                }
            }
        }
        Ok(Work::ops(iters))
    }

    fn finish(self: Box<Self>) -> Finished {
        // Dropping the File closes /dev/null.
        About::default().into()
    }
}
