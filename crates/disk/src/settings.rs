//! The parameters of `disk.io`, their declarations, and the resolved
//! settings of one sweep point (presets applied, `block=0` made concrete,
//! free text parsed and checked).

use std::path::PathBuf;

use benchsuite_core::openloop::{RATE, Rate};
use benchsuite_core::units::format_size;
use benchsuite_core::{Choice, ConfigError, ParamSpec, Point, Value};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const TIB: u64 = 1 << 40;

/// Largest block: 100 MiB, as the classic experiments go.
pub const MAX_BLOCK: u64 = 100 * MIB;
/// Smallest nonzero block: one 512 B sector.
pub const MIN_BLOCK: u64 = 512;
/// Default file size per thread (fio's `size` with `numjobs`).
pub const DEFAULT_SIZE: u64 = GIB;
/// The block `block=0` means for sequential ops.
pub const AUTO_SEQ_BLOCK: u64 = MIB;
/// The block `block=0` means for random ops.
pub const AUTO_RAND_BLOCK: u64 = 4 * KIB;
/// Most I/O buffer memory one point may ask for (block × qd × threads).
pub const MAX_BUFFER_BYTES: u64 = 8 * GIB;
/// Most blocks per file with `verify=on` (the per-block generation table
/// costs 4 bytes per block: 1 GiB at this limit).
pub const MAX_VERIFY_BLOCKS: u64 = 1 << 28;

benchsuite_core::choice_enum! {
    /// The I/O pattern.
    pub enum Op {
        /// Sequential reads.
        Read = "read",
        /// Sequential writes.
        Write = "write",
        /// Uniformly random reads.
        RandRead = "randread",
        /// Uniformly random writes.
        RandWrite = "randwrite",
        /// Random reads and writes mixed by `rwmix`.
        RandRw = "randrw",
    }
}

impl Op {
    /// Random offsets?
    pub fn random(self) -> bool {
        matches!(self, Op::RandRead | Op::RandWrite | Op::RandRw)
    }

    /// Does it write?
    pub fn writes(self) -> bool {
        matches!(self, Op::Write | Op::RandWrite | Op::RandRw)
    }
}

benchsuite_core::choice_enum! {
    /// The I/O engine.
    pub enum EngineKind {
        /// io_uring with `qd` I/Os in flight per thread.
        IoUring = "io_uring",
        /// `pread`/`pwrite`, one I/O at a time per thread.
        Sync = "sync",
    }
}

/// When to flush written data to stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsync {
    /// Never (the default).
    None,
    /// At the end of every timed batch.
    End,
    /// After every N writes of a thread.
    Every(u64),
}

impl Fsync {
    /// Parses `none`, `end` or `every:N`.
    pub fn parse(text: &str) -> Result<Fsync, benchsuite_core::ValueError> {
        Self::parse_text(text).map_err(Into::into)
    }

    fn parse_text(text: &str) -> Result<Fsync, String> {
        match text.trim() {
            "none" => Ok(Fsync::None),
            "end" => Ok(Fsync::End),
            t => {
                let n = t.strip_prefix("every:").ok_or_else(|| {
                    "expected none, end or every:N (fsync after every N writes)".to_string()
                })?;
                let n: u64 = n
                    .trim()
                    .parse()
                    .map_err(|_| format!("`{n}` is not a whole number (every:N)"))?;
                if n == 0 {
                    return Err("every:N needs N ≥ 1 (use none for no fsync)".into());
                }
                Ok(Fsync::Every(n))
            }
        }
    }

    /// The text form.
    pub fn label(self) -> String {
        match self {
            Fsync::None => "none".into(),
            Fsync::End => "end".into(),
            Fsync::Every(n) => format!("every:{n}"),
        }
    }
}

/// Where the scratch files go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirChoice {
    /// The run's scratch directory (`--scratch-dir`, else the system temp dir).
    Auto,
    /// This path.
    Path(PathBuf),
}

benchsuite_core::choice_enum! {
    /// A recipe that sets several parameters at once.
    pub enum Preset {
        /// No preset: every parameter as given.
        None = "none",
        /// The `sysbench fileio --file-test-mode=rndrw` recipe.
        SysbenchRndrw = "sysbench-rndrw",
    }
}

/// Parameter names and defaults, shared by [`declare`] and [`Settings`].
mod def {
    use crate::settings::{EngineKind, Op, Preset};

    pub const OP: Op = Op::Read;
    pub const ENGINE: EngineKind = EngineKind::IoUring;
    pub const FSYNC: &str = "none";
    pub const DIR: &str = "auto";
    pub const PRESET: Preset = Preset::None;
    pub const RWMIX: u64 = 70;
    pub const QD: u64 = 1;
    pub const THREADS: u64 = 1;
}

/// The parameters `disk.io` declares, in sweep order.
pub fn declare() -> Vec<ParamSpec> {
    vec![
        ParamSpec::choice_of(
            "op",
            "I/O pattern: sequential read|write, uniformly random randread|randwrite, or randrw mixed by rwmix",
            def::OP,
        ),
        ParamSpec::size(
            "block",
            "bytes per I/O (--block); 0 = auto: 1MiB for read/write, 4KiB for random ops",
            0,
            MAX_BLOCK,
            0,
        ),
        ParamSpec::count(
            "threads",
            "threads (--threads), each with its own file, like fio's numjobs",
            1,
            128,
            def::THREADS,
        ),
        ParamSpec::count(
            "qd",
            "I/Os in flight per thread with engine=io_uring (fio's iodepth); engine=sync always does 1",
            1,
            4096,
            def::QD,
        ),
        ParamSpec::size(
            "size",
            "size of each thread's file, laid out before timing (rounded down to whole blocks)",
            4 * KIB,
            16 * TIB,
            DEFAULT_SIZE,
        )
        .with_smoke(Value::Int(4 * MIB)),
        ParamSpec::count(
            "rwmix",
            "percent of I/Os that are reads with op=randrw",
            0,
            100,
            def::RWMIX,
        ),
        ParamSpec::choice_of(
            "engine",
            "io_uring (falls back to sync, with a warning, where the kernel forbids it) or sync (pread/pwrite)",
            def::ENGINE,
        ),
        ParamSpec::flag(
            "direct",
            "O_DIRECT: bypass the page cache and measure the device (off: buffered, with a warning)",
            true,
        ),
        ParamSpec::text(
            "fsync",
            "flush written data: none, end (after each timed batch) or every:N (after every N writes of a thread)",
            "none|end|every:N",
            def::FSYNC,
        ),
        ParamSpec::flag(
            "verify",
            "write a per-block pattern with offset and checksum, check every read and read back every written block",
            false,
        ),
        ParamSpec::text(
            "dir",
            "directory for the scratch files; auto = --scratch-dir, else $TMPDIR (or /tmp)",
            "auto|PATH",
            def::DIR,
        ),
        ParamSpec::choice_of(
            "preset",
            "sysbench-rndrw = op=randrw block=16K rwmix=60 fsync=every:40 (sysbench fileio rndrw)",
            def::PRESET,
        ),
        ParamSpec::rate(
            RATE,
            "off = closed loop (qd in flight per thread); N = open loop at N I/O/s across all threads, latency from each I/O's intended start; auto = a ladder up to saturation (see --slo)",
        ),
    ]
}

/// One sweep point, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// I/O pattern.
    pub op: Op,
    /// Bytes per I/O (never 0 here).
    pub block: u64,
    /// True when `block=0` chose it.
    pub block_auto: bool,
    /// Threads.
    pub threads: usize,
    /// Queue depth per thread, as asked.
    pub qd: usize,
    /// File size per thread, as asked.
    pub size: u64,
    /// Percent reads for randrw.
    pub rwmix: u32,
    /// Engine, as asked.
    pub engine: EngineKind,
    /// O_DIRECT.
    pub direct: bool,
    /// Flush policy.
    pub fsync: Fsync,
    /// Data verification.
    pub verify: bool,
    /// Scratch location.
    pub dir: DirChoice,
    /// The preset applied ([`Preset::None`] for none).
    pub preset: Preset,
    /// Open loop at this many I/Os per second across all threads
    /// (`rate=N`); `None`: closed loop (`rate=off`), or `rate=auto`.
    pub rate: Option<f64>,
    /// `rate=auto`: the capacity search replaces it with numeric rates
    /// before anything is prepared; `prepare` refuses it.
    pub rate_auto: bool,
}

fn bad(param: &str, value: impl ToString, reason: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        param: param.to_string(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

fn get_u64(p: &Point, name: &str) -> Result<u64, ConfigError> {
    p.get(name)
        .and_then(Value::as_u64)
        .ok_or_else(|| bad(name, "(missing)", "expected a number"))
}

fn get_str<'p>(p: &'p Point, name: &str) -> Result<&'p str, ConfigError> {
    p.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| bad(name, "(missing)", "expected text"))
}

fn get_bool(p: &Point, name: &str) -> Result<bool, ConfigError> {
    p.get(name)
        .and_then(Value::as_bool)
        .ok_or_else(|| bad(name, "(missing)", "expected on or off"))
}

/// A choice parameter as its enum (a `ConfigError` naming it, for
/// `validate`, where [`Point::choice`] gives a `BenchError`).
fn get_choice<C: Choice>(p: &Point, name: &str) -> Result<C, ConfigError> {
    let text = get_str(p, name)?;
    C::from_name(text).ok_or_else(|| {
        bad(
            name,
            text,
            format!("expected one of {}", C::NAMES.join(", ")),
        )
    })
}

impl Settings {
    /// Resolves and checks a point. Every error names its parameter. Checks
    /// here need no file system access except for an explicit `dir`.
    pub fn from_point(p: &Point) -> Result<Settings, ConfigError> {
        let mut op: Op = get_choice(p, "op")?;
        let mut block = get_u64(p, "block")?;
        let threads = get_u64(p, "threads")?;
        let qd = get_u64(p, "qd")?;
        let size = get_u64(p, "size")?;
        let mut rwmix = get_u64(p, "rwmix")?;
        let engine: EngineKind = get_choice(p, "engine")?;
        let direct = get_bool(p, "direct")?;
        let fsync_text = get_str(p, "fsync")?;
        let mut fsync = Fsync::parse(fsync_text).map_err(|r| bad("fsync", fsync_text, r))?;
        let verify = get_bool(p, "verify")?;
        let dir_text = get_str(p, "dir")?;
        let dir = if dir_text == "auto" {
            DirChoice::Auto
        } else {
            DirChoice::Path(PathBuf::from(dir_text))
        };
        let preset: Preset = get_choice(p, "preset")?;
        let rate = Rate::of(p);
        match preset {
            Preset::None => {}
            Preset::SysbenchRndrw => {
                // The preset sets these four; a different explicit value
                // would be silently overridden, so it is an error instead.
                let conflicts = [
                    ("op", op != Op::RandRw && op != def::OP, op.to_string()),
                    ("block", block != 0 && block != 16 * KIB, format_size(block)),
                    (
                        "rwmix",
                        rwmix != def::RWMIX && rwmix != 60,
                        rwmix.to_string(),
                    ),
                    (
                        "fsync",
                        fsync != Fsync::None && fsync != Fsync::Every(40),
                        fsync.label(),
                    ),
                ];
                if let Some((name, _, value)) = conflicts.iter().find(|c| c.1) {
                    return Err(bad(
                        "preset",
                        preset,
                        format!(
                            "the preset sets {name} itself (op=randrw block=16K rwmix=60 fsync=every:40); drop {name}={value} or the preset"
                        ),
                    ));
                }
                op = Op::RandRw;
                block = 16 * KIB;
                rwmix = 60;
                fsync = Fsync::Every(40);
            }
        }
        let block_auto = block == 0;
        if block_auto {
            block = if op.random() {
                AUTO_RAND_BLOCK
            } else {
                AUTO_SEQ_BLOCK
            };
        }
        if block < MIN_BLOCK {
            return Err(bad(
                "block",
                format_size(block),
                format!(
                    "must be at least {} (one sector), or 0 for the default",
                    format_size(MIN_BLOCK)
                ),
            ));
        }
        if block > MAX_BLOCK {
            return Err(bad(
                "block",
                format_size(block),
                format!("must be at most {}", format_size(MAX_BLOCK)),
            ));
        }
        if direct && block % MIN_BLOCK != 0 {
            return Err(bad(
                "block",
                format_size(block),
                "with direct=on the block must be a multiple of 512 B (O_DIRECT transfers whole sectors); use direct=off for odd sizes",
            ));
        }
        if size < block {
            return Err(bad(
                "size",
                format_size(size),
                format!(
                    "is smaller than one block ({}); each thread's file needs at least one",
                    format_size(block)
                ),
            ));
        }
        if rwmix > 100 {
            return Err(bad("rwmix", rwmix, "must be between 0 and 100"));
        }
        if !(1..=128).contains(&threads) {
            return Err(bad("threads", threads, "must be between 1 and 128"));
        }
        if !(1..=4096).contains(&qd) {
            return Err(bad("qd", qd, "must be between 1 and 4096"));
        }
        let buffers = block.saturating_mul(qd).saturating_mul(threads);
        if engine == EngineKind::IoUring && buffers > MAX_BUFFER_BYTES {
            return Err(bad(
                "qd",
                qd,
                format!(
                    "block × qd × threads = {} of I/O buffers, more than the {} limit; lower qd, block or threads",
                    format_size(buffers),
                    format_size(MAX_BUFFER_BYTES)
                ),
            ));
        }
        if verify && size / block > MAX_VERIFY_BLOCKS {
            return Err(bad(
                "verify",
                "on",
                format!(
                    "size/block = {} blocks per file, more than the {MAX_VERIFY_BLOCKS} verify=on can track; use a larger block or a smaller size",
                    size / block
                ),
            ));
        }
        check_rate(p, rate, qd, fsync)?;
        if let DirChoice::Path(d) = &dir {
            check_dir(d)?;
        }
        Ok(Settings {
            op,
            block,
            block_auto,
            threads: threads as usize,
            qd: qd as usize,
            size,
            rwmix: rwmix as u32,
            engine,
            direct,
            fsync,
            verify,
            dir,
            preset,
            rate: rate.fixed(),
            rate_auto: rate == Rate::Auto,
        })
    }

    /// Whole blocks per file.
    pub fn blocks_per_file(&self) -> u64 {
        self.size / self.block
    }

    /// The length each file is laid out to: `size` rounded down to blocks.
    pub fn file_len(&self) -> u64 {
        self.blocks_per_file() * self.block
    }
}

/// What open loop (`rate=N`, `rate=auto`) cannot be combined with: a
/// queue depth (open loop keeps as many I/Os in flight as the rate needs)
/// and `fsync=end` (a flush after each batch, outside the schedule, would
/// count against the achieved rate; `fsync=every:N` runs on schedule).
fn check_rate(p: &Point, rate: Rate, qd: u64, fsync: Fsync) -> Result<(), ConfigError> {
    if rate == Rate::Closed {
        return Ok(());
    }
    let shown = p.get(RATE).map_or_else(String::new, Value::to_string);
    if qd != 1 {
        return Err(bad(
            RATE,
            shown,
            format!(
                "qd={qd} does not apply in open loop: each I/O starts at its time on the rate's schedule, and as many are in flight as the rate and the device's latency need (up to a cap per thread); drop qd, or use rate=off for a closed loop at qd={qd}"
            ),
        ));
    }
    if fsync == Fsync::End {
        return Err(bad(
            RATE,
            shown,
            "cannot be combined with fsync=end: the flush after each batch is outside the schedule and would count against the achieved rate; use fsync=every:N (flushes on schedule, the I/Os behind one wait and their latency shows it) or rate=off",
        ));
    }
    Ok(())
}

/// A `dir` must exist and be a writable directory, or an existing regular
/// file or block device. Whether the point may use the latter (in place,
/// read-only, or writing with `--allow-overwrite=PATH`) needs the run's
/// options: `crate::target::examine` decides, in `validate`, on an open
/// descriptor; this look by path only gives early, parameter-named errors.
fn check_dir(d: &std::path::Path) -> Result<(), ConfigError> {
    let shown = d.display().to_string();
    let meta =
        std::fs::metadata(d).map_err(|e| bad("dir", &shown, format!("cannot use it: {e}")))?;
    if meta.is_dir() {
        if !crate::sys::dir_writable(d) {
            return Err(bad(
                "dir",
                &shown,
                "is not writable by this user (or is on a read-only file system)",
            ));
        }
        return Ok(());
    }
    use std::os::unix::fs::FileTypeExt;
    let ft = meta.file_type();
    if ft.is_block_device() || ft.is_file() {
        return Ok(());
    }
    Err(bad("dir", &shown, "is not a directory"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchsuite_core::param::ParamSpec;

    fn point(over: &[(&str, Value)]) -> Point {
        let mut p = Point::default();
        for s in declare() {
            p.set(&s.name, s.default.clone());
        }
        for (k, v) in over {
            p.set(k, v.clone());
        }
        p
    }

    fn err(over: &[(&str, Value)]) -> String {
        Settings::from_point(&point(over)).unwrap_err().to_string()
    }

    fn s(v: &str) -> Value {
        Value::Str(v.into())
    }

    #[test]
    fn defaults_resolve_to_auto_blocks() {
        let st = Settings::from_point(&point(&[])).unwrap();
        assert_eq!((st.op, st.block, st.block_auto), (Op::Read, MIB, true));
        let st = Settings::from_point(&point(&[("op", s("randread"))])).unwrap();
        assert_eq!(st.block, 4 * KIB);
        assert_eq!(st.file_len(), DEFAULT_SIZE);
    }

    #[test]
    fn bad_values_name_their_parameter() {
        let e = err(&[("block", Value::Int(100))]);
        assert!(e.contains("`block`") && e.contains("512"), "{e}");
        let e = err(&[("block", Value::Int(1000))]);
        assert!(e.contains("`block`") && e.contains("direct=off"), "{e}");
        let e = err(&[("size", Value::Int(8192)), ("block", Value::Int(MIB))]);
        assert!(
            e.contains("`size`") && e.contains("smaller than one block"),
            "{e}"
        );
        let e = err(&[("rwmix", Value::Int(150))]);
        assert!(e.contains("`rwmix`"), "{e}");
        let e = err(&[("qd", Value::Int(0))]);
        assert!(e.contains("`qd`"), "{e}");
        let e = err(&[("fsync", s("sometimes"))]);
        assert!(e.contains("`fsync`") && e.contains("every:N"), "{e}");
        let e = err(&[("fsync", s("every:0"))]);
        assert!(e.contains("`fsync`"), "{e}");
        let e = err(&[("dir", s("/nonexistent/benchsuite-disk"))]);
        assert!(e.contains("`dir`") && e.contains("cannot use it"), "{e}");
        let e = err(&[("block", Value::Int(MAX_BLOCK)), ("qd", Value::Int(4096))]);
        assert!(e.contains("`qd`") && e.contains("buffers"), "{e}");
        // The declared kinds reject what the parser sees first.
        let spec = declare().into_iter().find(|p| p.name == "rwmix").unwrap();
        assert!(spec.kind.parse("rwmix", "150").is_err());
        let block: ParamSpec = declare().into_iter().find(|p| p.name == "block").unwrap();
        let e = block.kind.parse("block", "1XB").unwrap_err().to_string();
        assert!(e.contains("`block`"), "{e}");
    }

    #[test]
    fn rate_is_open_loop_and_refuses_what_does_not_apply() {
        let st = Settings::from_point(&point(&[])).unwrap();
        assert_eq!((st.rate, st.rate_auto), (None, false));
        let st = Settings::from_point(&point(&[("rate", Value::Int(4000))])).unwrap();
        assert_eq!((st.rate, st.rate_auto), (Some(4000.0), false));
        let st = Settings::from_point(&point(&[("rate", s("auto"))])).unwrap();
        assert_eq!((st.rate, st.rate_auto), (None, true));
        // qd has no meaning in open loop.
        let e = err(&[("rate", Value::Int(4000)), ("qd", Value::Int(8))]);
        assert!(
            e.contains("`rate`") && e.contains("qd=8") && e.contains("open loop"),
            "{e}"
        );
        let e = err(&[("rate", s("auto")), ("qd", Value::Int(4))]);
        assert!(e.contains("`rate`") && e.contains("qd=4"), "{e}");
        assert!(Settings::from_point(&point(&[("qd", Value::Int(8))])).is_ok());
        // fsync=end is outside the schedule; every:N and the preset run.
        let e = err(&[("rate", Value::Int(4000)), ("fsync", s("end"))]);
        assert!(e.contains("`rate`") && e.contains("fsync=end"), "{e}");
        let st = Settings::from_point(&point(&[
            ("rate", Value::Int(4000)),
            ("preset", s("sysbench-rndrw")),
        ]))
        .unwrap();
        assert_eq!(st.fsync, Fsync::Every(40));
        // The declared kind: off, auto or a rate of at least 1.
        let spec = declare().into_iter().find(|p| p.name == "rate").unwrap();
        assert_eq!(spec.default, s("off"));
        assert_eq!(spec.kind.parse("rate", "2.5k").unwrap(), Value::Int(2500));
        assert!(spec.kind.parse("rate", "0").is_err());
    }

    #[test]
    fn choice_names_are_the_ones_reports_and_the_cli_use() {
        assert_eq!(
            Op::NAMES,
            ["read", "write", "randread", "randwrite", "randrw"]
        );
        assert_eq!(EngineKind::NAMES, ["io_uring", "sync"]);
        assert_eq!(Preset::NAMES, ["none", "sysbench-rndrw"]);
        let decl = declare();
        let default = |n: &str| decl.iter().find(|p| p.name == n).unwrap().default.clone();
        assert_eq!(default("op"), s("read"));
        assert_eq!(default("engine"), s("io_uring"));
        assert_eq!(default("preset"), s("none"));
    }

    #[test]
    fn fsync_forms() {
        assert_eq!(Fsync::parse("none"), Ok(Fsync::None));
        assert_eq!(Fsync::parse("end"), Ok(Fsync::End));
        assert_eq!(Fsync::parse("every:100"), Ok(Fsync::Every(100)));
        assert!(Fsync::parse("every:x").is_err());
        assert!(Fsync::parse("always").is_err());
    }

    #[test]
    fn the_sysbench_preset_sets_its_recipe_and_refuses_conflicts() {
        let st = Settings::from_point(&point(&[("preset", s("sysbench-rndrw"))])).unwrap();
        assert_eq!(st.op, Op::RandRw);
        assert_eq!(st.block, 16 * KIB);
        assert_eq!(st.rwmix, 60);
        assert_eq!(st.fsync, Fsync::Every(40));
        assert!(!st.block_auto);
        let e = err(&[("preset", s("sysbench-rndrw")), ("block", Value::Int(4096))]);
        assert!(e.contains("`preset`") && e.contains("block"), "{e}");
        // Giving the preset's own values is not a conflict.
        assert!(
            Settings::from_point(&point(&[
                ("preset", s("sysbench-rndrw")),
                ("op", s("randrw")),
                ("block", Value::Int(16 * KIB)),
            ]))
            .is_ok()
        );
    }
}
