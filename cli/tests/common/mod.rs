//! Shared by the integration tests: the binary with a clean launcher
//! environment, and rendering the HTML report in a real browser (Debian's
//! `chromium`; a test without one skips the render, saying why, with
//! capability `chromium`).

#![allow(dead_code)] // each test binary uses its own subset

use std::path::Path;
use std::process::Command;

/// Every variable a launcher sets that `run` reads, and the token: removed
/// from the binary's environment, so the tests behave alike inside a Slurm
/// job or an MPI run, and with a BENCHSUITE_TOKEN set.
pub const LAUNCHER_VARS: &[&str] = &[
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "SLURM_NODEID",
    "SLURM_LOCALID",
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "SLURM_RESTART_COUNT",
    "SLURMD_NODENAME",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "PMIX_RANK",
    "PMIX_NAMESPACE",
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALRANKID",
    "JOB_COMPLETION_INDEX",
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "TORCHELASTIC_RUN_ID",
    "BENCHSUITE_TOKEN",
];

/// The benchsuite binary without [`LAUNCHER_VARS`], with `env` set.
pub fn benchsuite(env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_benchsuite"));
    for v in LAUNCHER_VARS {
        c.env_remove(v);
    }
    c.envs(env.iter().copied());
    c
}

/// Rank `rank`'s report in `dir` (the `HOST-rRANK.json` that `run
/// --output-dir` wrote there), parsed.
pub fn report_of_rank(dir: &Path, rank: usize) -> serde_json::Value {
    let file = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .find(|p| p.to_str().unwrap().ends_with(&format!("-r{rank}.json")))
        .unwrap_or_else(|| panic!("no report of rank {rank} in {}", dir.display()));
    serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap()
}

/// The records of `report` whose id starts with `prefix`.
pub fn records<'a>(report: &'a serde_json::Value, prefix: &str) -> Vec<&'a serde_json::Value> {
    report["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["id"].as_str().unwrap().starts_with(prefix))
        .collect()
}

/// The headless browser on PATH, if any.
pub fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// What a screenshot shows, pixel by pixel.
#[derive(Debug, Clone, Copy)]
pub struct Ink {
    /// Pixels that are not (near-)white: text, lines, chart bands.
    pub inked: f64,
    /// Pixels with a clearly coloured hue (the chart series), as a
    /// fraction: text and grid lines are grey.
    pub coloured: f64,
}

/// Renders `html` headless at 1280×`height`, fails on a console error
/// or a browser failure, and returns what the screenshot shows.
pub fn screenshot(browser: &str, html: &Path, png: &Path, height: u32) -> Ink {
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--window-size=1280,{height}"))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium runs");
    let log = String::from_utf8_lossy(&out.stderr);
    for line in log.lines() {
        let l = line.to_ascii_lowercase();
        assert!(
            !line.contains("Uncaught") && !l.contains("console error") && !l.contains(":console"),
            "console error rendering {}: {line}",
            html.display()
        );
    }
    assert!(out.status.success(), "chromium failed: {log}");
    if let Ok(keep) = std::env::var("BENCHSUITE_KEEP_SCREENSHOTS") {
        let _ = std::fs::copy(png, Path::new(&keep).join(png.file_name().unwrap()));
    }
    ink(png)
}

/// Counts the pixels of a PNG that are not white and those with colour.
pub fn ink(png: &Path) -> Ink {
    let file = std::fs::File::open(png).expect("a screenshot");
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("one frame");
    let step = info.color_type.samples();
    let px = &buf[..info.buffer_size()];
    let (mut inked, mut coloured, mut n) = (0u64, 0u64, 0u64);
    for p in px.chunks_exact(step) {
        n += 1;
        let (r, g, b) = if step >= 3 {
            (p[0], p[1], p[2])
        } else {
            (p[0], p[0], p[0])
        };
        if r.min(g).min(b) < 235 {
            inked += 1;
        }
        if r.max(g).max(b) - r.min(g).min(b) > 60 {
            coloured += 1;
        }
    }
    Ink {
        inked: inked as f64 / n as f64,
        coloured: coloured as f64 / n as f64,
    }
}
