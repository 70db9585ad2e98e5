//! `cpu.linpack`'s reference: HPL as hpcc runs it, on the optimised BLAS
//! the system provides (`benchsuite reference cpu.linpack`).
//!
//! hpcc reads `hpccinf.txt` from the directory it runs in and writes
//! `hpccoutf.txt` there, so the run gets a scratch directory (removed
//! after it) holding an input file for one problem: `N` as the point's,
//! `NB` 192 (a usual block for OpenBLAS; N where N is smaller) and one MPI
//! process (P×Q = 1×1) whose BLAS runs `threads` threads
//! (`OPENBLAS_NUM_THREADS`, and `OMP_NUM_THREADS` for an OpenMP build).
//! HPL's rate (`HPL_Tflops` of the summary) is its operation count over
//! the time of the factorisation and solve; HPL counts 2/3·N³ + 3/2·N²
//! (`HPL_pdtest`), ours 2/3·N³ + 2·N² (LINPACK's count), so at equal times
//! ours reads higher by 3/(4N) of the rate: 0.075% at N = 1000, 0.019% at
//! N = 4000 — well inside the rounds' spread, and not corrected. hpcc also runs
//! its other tests (DGEMM, STREAM, PTRANS, FFT, RandomAccess), which only
//! cost time.
//!
//! The number means something only with an optimised BLAS: the system's
//! `libblas.so.3` is read before the run, and the netlib reference BLAS
//! makes the record say so instead of giving a ratio. OpenBLAS picks its
//! kernels by CPU when it loads; with `OPENBLAS_VERBOSE=2` it says which
//! (`Core: Zen`), and a fall-back to its generic Prescott kernels (a CPU
//! this OpenBLAS does not know) is reported as a failed round, with that
//! reason, rather than as a ratio.

use std::path::{Path, PathBuf};
use std::time::Duration;

use benchsuite_core::reference::{argv, number_after};
use benchsuite_core::{Point, Reference};

/// HPL's operation count for one solve of order `n`: 2/3·n³ + 2·n².
pub fn hpl_flops(n: u64) -> f64 {
    let n = n as f64;
    2.0 / 3.0 * n * n * n + 2.0 * n * n
}

/// HPL's block size for OpenBLAS: a usual choice on one node.
const NB: u64 = 192;

/// The input file and command for one point; None where the point lacks
/// `n` or `threads`. `blas` is the resolved path of the system's
/// `libblas.so.3` ([`active_blas`]), None where it cannot be found.
pub fn hpcc(point: &Point, blas: Option<&Path>) -> Option<Reference> {
    let n = point.get("n")?.as_u64()?;
    let threads = point.get("threads")?.as_u64()?.max(1);
    let nb = NB.min(n).max(1);
    // Debian's hpcc pulls in the netlib BLAS unless an optimised one is
    // there: install both.
    let package = "hpcc libopenblas0-pthread";
    let mut r = Reference::new("hpcc", package, argv(["hpcc"]), "flops", parse);
    // hpcc has no --version; running it writes files where it runs.
    // dpkg-query exits 1 when any package named is not installed (one
    // OpenBLAS flavour of three is the rule), after listing those that are.
    r.version_argv = argv([
        "sh",
        "-c",
        "dpkg-query -W -f '${Package}=${Version} ' hpcc libopenblas0-pthread libopenblas0-openmp libopenblas0-serial 2>/dev/null; true",
    ]);
    r.env = vec![
        ("OPENBLAS_NUM_THREADS".into(), threads.to_string()),
        ("OMP_NUM_THREADS".into(), threads.to_string()),
        ("OPENBLAS_VERBOSE".into(), "2".into()),
    ];
    r.inputs = vec![("hpccinf.txt".into(), input_file(n, nb))];
    r.output_file = Some("hpccoutf.txt");
    // The whole suite, not only HPL: generous, for a machine that does a
    // GFLOP per second.
    r.timeout = Duration::from_secs(300) + Duration::from_secs_f64(hpl_flops(n) / 1e9);
    let mut note = format!(
        "hpccinf.txt: N={n} NB={nb} P×Q=1×1 (one MPI process, {threads} BLAS thread{})",
        if threads == 1 { "" } else { "s" }
    );
    match blas.map(blas_kind) {
        Some(BlasKind::Netlib) => {
            r.unusable = Some(format!(
                "the system's libblas.so.3 is the netlib reference BLAS ({}), which is not optimised: hpcc's HPL would measure it, not the CPU; install an optimised one (apt install libopenblas0-pthread) or select it (update-alternatives --config libblas.so.3-{})",
                blas.map(Path::display)
                    .map(|d| d.to_string())
                    .unwrap_or_default(),
                multiarch()
            ));
        }
        Some(kind) => {
            note.push_str(&format!(
                "; BLAS: {} ({})",
                kind.name(),
                blas.map(|p| p.display().to_string()).unwrap_or_default()
            ));
            if kind == BlasKind::OpenBlas {
                note.push_str(&coretype_note(
                    std::env::var("OPENBLAS_CORETYPE").ok().as_deref(),
                ));
            }
        }
        None => note.push_str("; BLAS: libblas.so.3 not found where Debian puts it"),
    }
    // Ours' solver as it runs (`Linpack::reference` resolves `auto`).
    let pin = point.get("pin").and_then(benchsuite_core::Value::as_bool) == Some(true);
    match point.get("solver").and_then(benchsuite_core::Value::as_str) {
        Some("lapack") => note.push_str(
            "; ours: solver=lapack, dgetrf/dgetrs of the system's optimised LAPACK in-process (its notes name the library), whose threads neither pins",
        ),
        solver => {
            if solver == Some("faer") {
                note.push_str("; ours: solver=faer");
            }
            if pin {
                note.push_str("; ours pins its threads, Debian's OpenBLAS does not");
            }
        }
    }
    r.note = Some(note);
    Some(r)
}

/// What hpcc's OpenBLAS runs where the environment pins its kernels
/// (`OPENBLAS_CORETYPE`, which hpcc inherits): images that pin Haswell's
/// on AVX-512 CPUs make hpcc measure AVX2 kernels, and a ratio against
/// ours (faer there, by `solver=auto`) is about that choice, not the CPU.
fn coretype_note(coretype: Option<&str>) -> String {
    match coretype.map(str::trim).filter(|c| !c.is_empty()) {
        Some(c) => format!(
            "; hpcc's OpenBLAS ran the kernels OPENBLAS_CORETYPE={} names (set in this environment, which hpcc inherits): unset it for the kernels OpenBLAS picks for this CPU",
            benchsuite_core::text::printable_line(c)
        ),
        None => String::new(),
    }
}

/// hpcc's input for one HPL problem of order `n` with block `nb` on one
/// process; the rest as hpcc's example (`_hpccinf.txt`), and no extra
/// PTRANS sizes.
fn input_file(n: u64, nb: u64) -> String {
    format!(
        "HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
{n}         Ns
1            # of NBs
{nb}          NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
1            Ps
1            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
{n}        	values of N
0                       	number of additional blocking sizes for PTRANS
{nb}       	values of NB
"
    )
}

/// HPL's rate in flop/s from `hpccoutf.txt` (followed by hpcc's stdout and
/// stderr): `HPL_Tflops=` of the summary, provided HPL's residual check
/// passed and OpenBLAS did not fall back to its generic kernels.
fn parse(text: &str) -> Result<f64, benchsuite_core::ValueError> {
    parse_text(text).map_err(Into::into)
}

fn parse_text(text: &str) -> Result<f64, String> {
    if text.contains("Falling back to Prescott core") || core(text) == Some("Prescott") {
        return Err("OpenBLAS does not recognise this CPU and fell back to its generic Prescott kernels (OPENBLAS_VERBOSE=2 printed it); its HPL number would not be the CPU's. A newer OpenBLAS, or OPENBLAS_CORETYPE set to the nearest known core, fixes it".into());
    }
    if text.contains("...... FAILED") {
        return Err("HPL's residual check failed (hpccoutf.txt: FAILED)".into());
    }
    let tflops = number_after(text, "HPL_Tflops=").map_err(|e| format!("hpccoutf.txt: {e}"))?;
    if !(tflops.is_finite() && tflops > 0.0) {
        return Err(format!(
            "hpccoutf.txt: HPL_Tflops={tflops}: HPL did not run"
        ));
    }
    Ok(tflops * 1e12)
}

/// The kernel set OpenBLAS says it picked (`Core: Zen`), if it said.
fn core(text: &str) -> Option<&str> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Core: "))
        .map(str::trim)
}

/// Which BLAS a resolved `libblas.so.3` path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlasKind {
    Netlib,
    OpenBlas,
    Blis,
    Atlas,
    Mkl,
    Other,
}

impl BlasKind {
    fn name(self) -> &'static str {
        match self {
            BlasKind::Netlib => "netlib reference BLAS",
            BlasKind::OpenBlas => "OpenBLAS",
            BlasKind::Blis => "BLIS",
            BlasKind::Atlas => "ATLAS",
            BlasKind::Mkl => "MKL",
            BlasKind::Other => "unknown BLAS",
        }
    }
}

/// Debian's alternatives put each BLAS in a directory of its own:
/// `blas/` (netlib), `openblas-pthread/`, `blis-openmp/`, `atlas/`.
fn blas_kind(path: &Path) -> BlasKind {
    let dir = path
        .parent()
        .and_then(Path::file_name)
        .map(|d| d.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if dir.starts_with("openblas") || file.contains("openblas") {
        BlasKind::OpenBlas
    } else if dir.starts_with("blis") {
        BlasKind::Blis
    } else if dir.starts_with("atlas") {
        BlasKind::Atlas
    } else if dir.contains("mkl") || file.contains("mkl") {
        BlasKind::Mkl
    } else if dir == "blas" {
        BlasKind::Netlib
    } else {
        BlasKind::Other
    }
}

/// Debian's multiarch triple for this build (`x86_64-linux-gnu`).
fn multiarch() -> String {
    format!("{}-linux-gnu", std::env::consts::ARCH)
}

/// The file the dynamic linker loads for `libblas.so.3` (what hpcc is
/// linked to), with Debian's alternatives symlinks resolved.
pub fn active_blas() -> Option<PathBuf> {
    let arch = multiarch();
    [
        format!("/usr/lib/{arch}/libblas.so.3"),
        format!("/lib/{arch}/libblas.so.3"),
        "/usr/lib64/libblas.so.3".into(),
        "/usr/lib/libblas.so.3".into(),
    ]
    .iter()
    .find_map(|p| std::fs::canonicalize(p).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchsuite_core::Value;

    fn point(n: u64, threads: u64) -> Point {
        let mut p = Point::default();
        p.set("n", Value::Int(n));
        p.set("threads", Value::Int(threads));
        p.set("pin", Value::Bool(true));
        p
    }

    const OPENBLAS: &str = "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3";

    #[test]
    fn the_command_sets_the_blas_threads_and_writes_the_input_file() {
        let r = hpcc(&point(8000, 2), Some(Path::new(OPENBLAS))).unwrap();
        assert_eq!(
            r.command(),
            "OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 OPENBLAS_VERBOSE=2 hpcc (in a scratch directory with hpccinf.txt)"
        );
        assert_eq!(
            (r.tool, r.package, r.metric),
            ("hpcc", "hpcc libopenblas0-pthread", "flops")
        );
        assert_eq!(r.output_file, Some("hpccoutf.txt"));
        assert!(r.unusable.is_none());
        let (name, text) = &r.inputs[0];
        assert_eq!(name, "hpccinf.txt");
        let lines: Vec<&str> = text.lines().collect();
        // HPL reads each value from the start of its line, by line number.
        assert_eq!(lines.len(), 36);
        assert_eq!(lines[5].split_whitespace().next(), Some("8000"));
        assert_eq!(lines[7].split_whitespace().next(), Some("192"));
        assert_eq!(lines[10].split_whitespace().next(), Some("1"));
        assert_eq!(lines[11].split_whitespace().next(), Some("1"));
        assert!(lines[31].starts_with("#####"));
        let note = r.note.unwrap();
        assert!(note.contains("N=8000 NB=192 P×Q=1×1"), "{note}");
        assert!(note.contains("BLAS: OpenBLAS ("), "{note}");
        // The time allowed covers the whole suite.
        assert!(
            r.timeout >= Duration::from_secs(300 + 341),
            "{:?}",
            r.timeout
        );
        // hpcc --version would run the suite; the version comes from dpkg.
        assert!(r.version_argv[2].starts_with("dpkg-query -W "));

        // A block no larger than the matrix; one thread is one.
        let r = hpcc(&point(96, 1), Some(Path::new(OPENBLAS))).unwrap();
        assert!(r.command().starts_with("OPENBLAS_NUM_THREADS=1 "));
        let lines: Vec<String> = r.inputs[0].1.lines().map(String::from).collect();
        assert!(lines[7].starts_with("96 "), "{}", lines[7]);
        assert!(hpcc(&Point::default(), None).is_none());
        // A pinned kernel set is named; none, nothing.
        assert!(coretype_note(Some("Haswell")).contains("OPENBLAS_CORETYPE=Haswell names"));
        assert_eq!(coretype_note(None), "");
        assert_eq!(coretype_note(Some(" ")), "");
    }

    #[test]
    fn the_netlib_blas_is_not_run_and_says_why() {
        let netlib = Path::new("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3");
        let r = hpcc(&point(2000, 2), Some(netlib)).unwrap();
        let why = r.unusable.unwrap();
        assert!(
            why.contains("netlib reference BLAS") && why.contains("update-alternatives"),
            "{why}"
        );
        let blis = Path::new("/usr/lib/x86_64-linux-gnu/blis-openmp/libblas.so.3");
        assert_eq!(blas_kind(blis), BlasKind::Blis);
        assert_eq!(blas_kind(Path::new(OPENBLAS)), BlasKind::OpenBlas);
        let r = hpcc(&point(2000, 2), None).unwrap();
        assert!(r.unusable.is_none());
        assert!(r.note.unwrap().contains("libblas.so.3 not found"));
    }

    /// The end of a real hpccoutf.txt (hpcc 1.5.0, N=2000), then what
    /// OpenBLAS printed on stderr.
    const OUT: &str =
        "T/V                N    NB     P     Q               Time                 Gflops
--------------------------------------------------------------------------------
WR11C2R4        2000   192     1     1               0.72              7.417e+00
--------------------------------------------------------------------------------
||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=        0.0031106 ...... PASSED
================================================================================
Begin of Summary section.
VersionMajor=1
CommWorldProcs=1
HPL_Tflops=0.00741705
HPL_time=0.719873
StarDGEMM_Gflops=23.2029
End of Summary section.

Core: Zen
";

    #[test]
    fn the_rate_is_hpl_tflops_unless_hpl_or_openblas_misbehaved() {
        assert_eq!(parse(OUT), Ok(0.00741705e12));
        let failed = OUT.replace("...... PASSED", "...... FAILED");
        assert!(parse(&failed).unwrap_err().contains("residual"));
        let generic = OUT.replace("Core: Zen", "Core: Prescott");
        assert!(parse(&generic).unwrap_err().contains("Prescott"));
        let fallback = OUT.replace("Core: Zen", "Falling back to Prescott core");
        assert!(parse(&fallback).unwrap_err().contains("does not recognise"));
        assert!(parse("HPL WARNING: cannot open file hpccinf.txt").is_err());
        assert!(parse(&OUT.replace("0.00741705", "0")).is_err());
    }
}
