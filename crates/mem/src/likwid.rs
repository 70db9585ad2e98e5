//! `mem.bandwidth`'s reference: the `likwid-bench` command that streams the
//! same arrays with the same instruction set, store kind, working set and
//! threads (`benchsuite reference mem.bandwidth`).

use benchsuite_core::Reference;
use benchsuite_core::reference::{argv, number_after};

use crate::kernels::{Isa, Op};

/// One resolved `mem.bandwidth` point, as far as likwid-bench can follow.
#[derive(Debug, Clone, Copy)]
pub struct Streams {
    pub op: Op,
    pub random: bool,
    pub block: u64,
    /// Working set per thread, all arrays together, bytes.
    pub size: u64,
    pub threads: usize,
    pub isa: Isa,
    pub nt: bool,
    /// Ours backs the arrays with transparent huge pages (`hugepages=on`).
    pub huge: bool,
}

/// `likwid-bench -t KERNEL -W N:SIZEkB:THREADS -s 2`: `load`, `store`,
/// `copy` or `stream` (STREAM triad), `_mem` for non-temporal stores,
/// `_avx512`, `_avx` or `_sse` for the instruction set (ours `scalar` is
/// baseline SSE2 code). None where likwid-bench has no such kernel:
/// `scale`, `add`, random blocks, blocks below a cache line. `-W` makes
/// each thread first-touch its own chunk, as ours does; its size is the
/// whole domain's working set, in decimal kB as likwid reads it.
pub fn command(s: &Streams) -> Option<Reference> {
    if s.random || s.block < 64 || !s.block.is_multiple_of(64) {
        return None;
    }
    let base = match s.op {
        Op::Read => "load",
        Op::Write => "store",
        Op::Copy => "copy",
        Op::Triad => "stream",
        Op::Scale | Op::Add => return None,
    };
    let nt = if s.nt && s.op.stores() { "_mem" } else { "" };
    let isa = match s.isa {
        Isa::Avx512 => "_avx512",
        Isa::Avx2 => "_avx",
        Isa::Scalar => "_sse",
    };
    let kernel = format!("{base}{nt}{isa}");
    let kb = (s.size * s.threads as u64 / 1000).max(1);
    let mut r = Reference::new(
        "likwid-bench",
        "likwid",
        argv([
            "likwid-bench".to_string(),
            "-t".into(),
            kernel,
            "-W".into(),
            format!("N:{kb}kB:{}", s.threads),
            "-s".into(),
            "2".into(),
        ]),
        "bandwidth",
        |out| number_after(out, "MByte/s:").map(|mb| mb * 1e6),
    );
    r.version_argv = argv(["likwid-bench", "-h"]);
    let mut notes = Vec::new();
    if s.huge {
        // likwid-bench allocates with malloc, which asks for no huge pages:
        // under THP `madvise` (Debian's default) its arrays are 4 KiB
        // pages and its DRAM rates are page-walk bound (triad 23 vs 31
        // GB/s on a Zen 4 guest). glibc 2.35+ madvises its large
        // allocations for THP with this tunable, so both run on the same
        // pages; an older glibc ignores it.
        let tunables = match std::env::var("GLIBC_TUNABLES") {
            Ok(t) if !t.is_empty() => format!("{t}:glibc.malloc.hugetlb=1"),
            _ => "glibc.malloc.hugetlb=1".to_string(),
        };
        r.env.push(("GLIBC_TUNABLES".into(), tunables));
        notes.push("likwid-bench's arrays on transparent huge pages too (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, glibc 2.35+), as ours");
    }
    if s.op == Op::Triad {
        notes.push("likwid's stream kernel is STREAM triad (a = b·s + c), counted as ours: 24 B per element");
    }
    if !notes.is_empty() {
        r.note = Some(notes.join("; "));
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streams(op: Op) -> Streams {
        Streams {
            op,
            random: false,
            block: 64,
            size: 128 << 20,
            threads: 1,
            isa: Isa::Avx2,
            nt: false,
            huge: true,
        }
    }

    #[test]
    fn likwid_kernels_follow_op_isa_and_stores() {
        let r = command(&Streams {
            huge: false,
            ..streams(Op::Triad)
        })
        .unwrap();
        assert_eq!(
            r.command(),
            "likwid-bench -t stream_avx -W N:134217kB:1 -s 2"
        );
        // With ours on huge pages, likwid-bench's arrays are too.
        let r = command(&streams(Op::Triad)).unwrap();
        assert!(
            r.command().starts_with("GLIBC_TUNABLES=")
                && r.command().contains("glibc.malloc.hugetlb=1"),
            "{}",
            r.command()
        );
        assert!(r.note.as_deref().unwrap_or("").contains("huge pages too"));
        assert_eq!(
            (r.tool, r.package, r.metric),
            ("likwid-bench", "likwid", "bandwidth")
        );
        let r = command(&Streams {
            nt: true,
            threads: 2,
            isa: Isa::Avx512,
            huge: false,
            ..streams(Op::Copy)
        })
        .unwrap();
        assert_eq!(
            r.command(),
            "likwid-bench -t copy_mem_avx512 -W N:268435kB:2 -s 2"
        );
        let r = command(&Streams {
            nt: true,
            ..streams(Op::Read)
        })
        .unwrap();
        assert!(r.command().contains("-t load_avx "), "reads have no stores");
        let r = command(&Streams {
            isa: Isa::Scalar,
            ..streams(Op::Write)
        })
        .unwrap();
        assert!(r.command().contains("-t store_sse "));
        for none in [
            streams(Op::Scale),
            streams(Op::Add),
            Streams {
                random: true,
                ..streams(Op::Read)
            },
            Streams {
                block: 8,
                ..streams(Op::Read)
            },
        ] {
            assert!(command(&none).is_none(), "{none:?}");
        }
        let out =
            "Data volume (Byte):\t65535934464\nMByte/s:\t\t13968.18\nCycles per update:\t4.2\n";
        assert_eq!((r.parse)(out), Ok(13968.18e6));
    }
}
