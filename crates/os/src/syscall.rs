//! `os.syscall`: the cost of entering and leaving the kernel.

use std::fs::File;
use std::io::Write;

use benchsuite_core::{
    BenchError, Benchmark, Case, Context, Meta, MetricSpec, ParamSpec, Point, Work,
};

use crate::sys;

/// Values of the `call` parameter.
const CALLS: &[&str] = &["getppid", "write_devnull"];

/// System-call cost; see the crate docs.
#[derive(Debug, Default)]
pub struct Syscall;

impl Benchmark for Syscall {
    fn meta(&self) -> Meta {
        Meta {
            id: "os.syscall",
            description: "round trip into the kernel: raw getppid, or a 1-byte write to /dev/null",
            params: vec![ParamSpec::choice(
                "call",
                "getppid: syscall(SYS_getppid), the null call (lmbench `lat_syscall null`, `perf bench syscall basic`); write_devnull: write(2) of 1 byte to /dev/null (lmbench `lat_syscall write`)",
                CALLS,
                "getppid",
            )],
            metrics: vec![MetricSpec::time_per_op("time_per_op")],
        }
    }

    fn prepare(&self, _ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let call = match point.str("call")? {
            "getppid" => SyscallKind::Getppid,
            "write_devnull" => SyscallKind::WriteDevNull(
                File::options()
                    .write(true)
                    .open("/dev/null")
                    .map_err(|e| BenchError::io("open /dev/null for writing", e))?,
            ),
            other => return Err(BenchError::Other(format!("unknown call `{other}`"))),
        };
        Ok(Box::new(SyscallCase { call: Some(call) }))
    }
}

#[derive(Debug)]
enum SyscallKind {
    Getppid,
    WriteDevNull(File),
}

#[derive(Debug)]
struct SyscallCase {
    /// `None` once torn down.
    call: Option<SyscallKind>,
}

impl Case for SyscallCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        match &self.call {
            Some(SyscallKind::Getppid) => {
                let mut sum = 0i64;
                for _ in 0..iters {
                    sum = sum.wrapping_add(sys::getppid_raw());
                }
                std::hint::black_box(sum);
            }
            Some(SyscallKind::WriteDevNull(file)) => {
                let mut f = file;
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
            None => {
                return Err(BenchError::Other(
                    "os.syscall: case already torn down".into(),
                ));
            }
        }
        Ok(Work::ops(iters))
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        // Dropping the File closes /dev/null.
        self.call = None;
        Ok(())
    }
}
