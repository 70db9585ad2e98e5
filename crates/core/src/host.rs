//! Host detection: what changes the numbers.
//!
//! Everything is read from the running machine (`/proc`, `/sys`, `uname`,
//! runtime CPU feature detection). A field that cannot be read is `None`
//! (`null` in JSON) — never a guess.

use std::collections::BTreeMap;
use std::fs;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The machine a report was measured on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Host {
    /// Host name.
    pub hostname: Option<String>,
    /// Operating system (`linux`).
    pub os: String,
    /// CPU architecture (`x86_64`).
    pub arch: String,
    /// Kernel release (`uname -r`).
    pub kernel: Option<String>,
    /// Processor.
    pub cpu: CpuInfo,
    /// Total memory in bytes.
    pub memory_bytes: Option<u64>,
    /// Memory available to new work when the run started (`MemAvailable`:
    /// free plus reclaimable cache), bytes. Less than `memory_bytes` by what
    /// other programs hold; a large buffer test wants it, not the total.
    #[serde(default)]
    pub memory_available_bytes: Option<u64>,
    /// Hypervisor, when running virtualised (`kvm`, `vmware`...), or
    /// `none` when the CPU reports no hypervisor; `null` when unknown.
    pub virtualization: Option<String>,
    /// The benchsuite build that measured.
    pub build: BuildInfo,
    /// Module-specific facts (file system under test, NIC, GPU), keyed by
    /// module name.
    #[serde(default)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// Processor facts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CpuInfo {
    /// Model name.
    pub model: Option<String>,
    /// Vendor (`GenuineIntel`, `AuthenticAMD`, ARM implementer).
    pub vendor: Option<String>,
    /// x86 CPUID family (`cpu family` in /proc/cpuinfo; 6 for Intel cores,
    /// 25 = 0x19 for AMD Zen 3/4). Identifies the part when a hypervisor
    /// hides the model name.
    #[serde(default)]
    pub family: Option<u32>,
    /// x86 CPUID model number within the family (`model`; 143 = 0x8F is
    /// Sapphire Rapids).
    #[serde(default)]
    pub model_id: Option<u32>,
    /// x86 stepping.
    #[serde(default)]
    pub stepping: Option<u32>,
    /// Microcode revision (`microcode`), which can change results (for
    /// example mitigations).
    #[serde(default)]
    pub microcode: Option<String>,
    /// The core's microarchitecture named from vendor, family and model
    /// (`Sapphire Rapids`, `Zen 4`), for the parts in a small table; `null`
    /// for the others, never guessed.
    #[serde(default)]
    pub microarchitecture: Option<String>,
    /// Logical CPUs online.
    pub logical_cpus: Option<usize>,
    /// Physical cores (distinct core ids per package).
    pub physical_cores: Option<usize>,
    /// Sockets (distinct physical package ids).
    pub sockets: Option<usize>,
    /// SIMD features detected at run time (`sse2`, `avx2`, `fma`, `avx512f`...).
    pub simd: Vec<String>,
    /// Base frequency, MHz (sysfs `base_frequency`), when exposed.
    pub base_mhz: Option<f64>,
    /// Maximum frequency, MHz (sysfs `cpuinfo_max_freq`), when exposed.
    pub max_mhz: Option<f64>,
    /// Frequency governor of cpu0, when exposed.
    pub governor: Option<String>,
    /// Caches of cpu0.
    pub caches: Vec<CacheInfo>,
    /// How an idle CPU waits (Linux cpuidle), which sets what waking it
    /// costs: a ping-pong, a loopback stream or a disk completion that
    /// wakes a halted vCPU pays an exit through the hypervisor. Absent
    /// where the kernel exposes no cpuidle (schema 1.8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<IdleInfo>,
}

/// The kernel's idle handling (`/sys/devices/system/cpu/cpuidle`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IdleInfo {
    /// The cpuidle driver (`haltpoll` in a KVM guest, `intel_idle`,
    /// `acpi_idle`, `none`).
    pub driver: Option<String>,
    /// The cpuidle governor (`haltpoll`, `menu`, `teo`, `ladder`).
    pub governor: Option<String>,
    /// With the `haltpoll` driver: the most an idle vCPU polls before it
    /// halts, ns (`guest_halt_poll_ns`; 0: it halts at once, so every
    /// wake-up of an idle vCPU goes through the host).
    pub halt_poll_ns: Option<u64>,
    /// cpu0's idle states, shallowest first (`POLL`, `C1`...).
    pub states: Vec<String>,
}

impl IdleInfo {
    /// Reads it from sysfs under `root` (`/sys` on a live system); `None`
    /// without a cpuidle directory.
    fn detect(root: &str) -> Option<IdleInfo> {
        let dir = format!("{root}/devices/system/cpu/cpuidle");
        if !std::path::Path::new(&dir).is_dir() {
            return None;
        }
        let mut states: Vec<(u32, String)> =
            fs::read_dir(format!("{root}/devices/system/cpu/cpu0/cpuidle"))
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| {
                    let n = e
                        .file_name()
                        .to_str()?
                        .strip_prefix("state")?
                        .parse()
                        .ok()?;
                    Some((n, read_trim(e.path().join("name").to_str()?)?))
                })
                .collect();
        states.sort();
        Some(IdleInfo {
            driver: read_trim(&format!("{dir}/current_driver")),
            governor: read_trim(&format!("{dir}/current_governor"))
                .or_else(|| read_trim(&format!("{dir}/current_governor_ro"))),
            halt_poll_ns: read_trim(&format!(
                "{root}/module/haltpoll/parameters/guest_halt_poll_ns"
            ))
            .and_then(|v| v.parse().ok()),
            states: states.into_iter().map(|(_, name)| name).collect(),
        })
    }
}

/// One cache as seen from cpu0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CacheInfo {
    /// Level (1, 2, 3).
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Logical CPUs sharing it, when known.
    pub shared_by: Option<usize>,
}

/// How benchsuite itself was built.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BuildInfo {
    /// benchsuite-core version.
    pub version: String,
    /// `release` or `debug`. Debug builds give meaningless numbers.
    pub profile: String,
    /// Target triple parts (`x86_64-linux`).
    pub target: String,
    /// Cargo features the program was built with (`wgpu`), as it said
    /// ([`BuildInfo::set_program`]); absent for none or unknown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
    /// The source revision it was built from (`git describe`, `-dirty`
    /// for uncommitted changes), where the build knew it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// What the program embedding this library said of its own build.
static PROGRAM: std::sync::OnceLock<(Vec<String>, Option<String>)> = std::sync::OnceLock::new();

impl BuildInfo {
    /// This build.
    pub fn current() -> BuildInfo {
        let (features, commit) = PROGRAM.get().cloned().unwrap_or_default();
        BuildInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .to_string(),
            target: format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS),
            features,
            commit,
        }
    }

    /// Says, once per process, which features the program was built with
    /// and from which revision (the `benchsuite` binary knows; a library
    /// cannot): every report's `host.build` carries them. A second call is
    /// ignored.
    pub fn set_program(features: Vec<String>, commit: Option<String>) {
        let _ = PROGRAM.set((features, commit));
    }

    /// [`BuildInfo::set_program`] from text as a build script gives it:
    /// comma-separated features and a commit, each empty when none.
    pub fn set_program_text(features: &str, commit: &str) {
        BuildInfo::set_program(
            features
                .split(',')
                .filter(|f| !f.is_empty())
                .map(str::to_string)
                .collect(),
            Some(commit).filter(|c| !c.is_empty()).map(str::to_string),
        );
    }

    /// True for a debug build (numbers from it are not representative).
    pub fn is_debug(&self) -> bool {
        self.profile == "debug"
    }
}

impl Host {
    /// Detects the current machine. Never fails: unreadable facts are `None`.
    pub fn detect() -> Host {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        Host {
            hostname: hostname(),
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            kernel: read_trim("/proc/sys/kernel/osrelease"),
            cpu: CpuInfo::detect(&cpuinfo),
            memory_bytes: meminfo("MemTotal:"),
            memory_available_bytes: meminfo("MemAvailable:"),
            virtualization: virtualization(&cpuinfo),
            build: BuildInfo::current(),
            extra: BTreeMap::new(),
        }
    }

    /// A list of the facts that could not be detected (for `benchsuite info`).
    pub fn unknown_fields(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        let c = &self.cpu;
        let checks: [(&'static str, bool); 12] = [
            ("hostname", self.hostname.is_none()),
            ("kernel", self.kernel.is_none()),
            ("cpu.model", c.model.is_none()),
            ("cpu.vendor", c.vendor.is_none()),
            ("cpu.logical_cpus", c.logical_cpus.is_none()),
            ("cpu.physical_cores", c.physical_cores.is_none()),
            ("cpu.sockets", c.sockets.is_none()),
            ("cpu.base_mhz", c.base_mhz.is_none()),
            ("cpu.max_mhz", c.max_mhz.is_none()),
            ("cpu.governor", c.governor.is_none()),
            ("memory_bytes", self.memory_bytes.is_none()),
            ("virtualization", self.virtualization.is_none()),
        ];
        for (name, missing) in checks {
            if missing {
                v.push(name);
            }
        }
        if c.caches.is_empty() {
            v.push("cpu.caches");
        }
        v
    }

    /// Size of the last-level data or unified cache, bytes.
    pub fn last_level_cache(&self) -> Option<u64> {
        self.cpu
            .caches
            .iter()
            .filter(|c| c.kind != "Instruction")
            .max_by_key(|c| c.level)
            .map(|c| c.size_bytes)
    }
}

impl CpuInfo {
    fn detect(cpuinfo: &str) -> CpuInfo {
        let field = |key: &str| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == key).then(|| v.trim().to_string())
            })
        };
        let (physical_cores, sockets) = topology(cpuinfo);
        let khz_to_mhz = |p: &str| {
            read_trim(p)
                .and_then(|s| s.parse::<f64>().ok())
                .map(|k| k / 1000.0)
        };
        let number = |key: &str| field(key).and_then(|v| v.parse::<u32>().ok());
        let vendor = field("vendor_id").or_else(|| field("CPU implementer"));
        let (family, model_id) = (number("cpu family"), number("model"));
        CpuInfo {
            model: field("model name").or_else(|| field("Model")),
            microarchitecture: match (vendor.as_deref(), family, model_id) {
                (Some(v), Some(f), Some(m)) => microarchitecture(v, f, m).map(str::to_string),
                _ => None,
            },
            vendor,
            family,
            model_id,
            stepping: number("stepping"),
            microcode: field("microcode"),
            logical_cpus: std::thread::available_parallelism().ok().map(|n| n.get()),
            physical_cores,
            sockets,
            simd: simd_features(),
            base_mhz: khz_to_mhz("/sys/devices/system/cpu/cpu0/cpufreq/base_frequency"),
            max_mhz: khz_to_mhz("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"),
            governor: read_trim("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            caches: caches(),
            idle: IdleInfo::detect("/sys"),
        }
    }
}

/// The microarchitecture of common server and desktop x86 parts, from
/// CPUID vendor, family and model (Intel's and AMD's published model
/// numbers). Parts not listed are `None`: the model name and the numbers
/// are still in the report.
fn microarchitecture(vendor: &str, family: u32, model: u32) -> Option<&'static str> {
    Some(match (vendor, family, model) {
        ("GenuineIntel", 6, 0x55) => "Skylake-SP / Cascade Lake",
        ("GenuineIntel", 6, 0x6A | 0x6C) => "Ice Lake-SP",
        ("GenuineIntel", 6, 0x8F) => "Sapphire Rapids",
        ("GenuineIntel", 6, 0xCF) => "Emerald Rapids",
        ("GenuineIntel", 6, 0xAD | 0xAE) => "Granite Rapids",
        ("GenuineIntel", 6, 0xAF) => "Sierra Forest",
        ("GenuineIntel", 6, 0x4E | 0x5E | 0x8E | 0x9E | 0xA5 | 0xA6) => "Skylake family (client)",
        ("GenuineIntel", 6, 0x7D | 0x7E) => "Ice Lake (client)",
        ("GenuineIntel", 6, 0x8C | 0x8D) => "Tiger Lake",
        ("GenuineIntel", 6, 0x97 | 0x9A) => "Alder Lake",
        ("GenuineIntel", 6, 0xB7 | 0xBA | 0xBF) => "Raptor Lake",
        ("AuthenticAMD", 0x17, 0x01 | 0x08 | 0x11 | 0x18 | 0x20) => "Zen / Zen+",
        ("AuthenticAMD", 0x17, 0x31 | 0x47 | 0x60 | 0x68 | 0x71 | 0x84 | 0x90 | 0xA0) => "Zen 2",
        ("AuthenticAMD", 0x19, 0x00..=0x0F | 0x20..=0x2F | 0x40..=0x5F) => "Zen 3",
        ("AuthenticAMD", 0x19, 0x10..=0x1F | 0x60..=0x7F | 0xA0..=0xAF) => "Zen 4",
        ("AuthenticAMD", 0x1A, _) => "Zen 5",
        _ => return None,
    })
}

fn read_trim(path: &str) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn hostname() -> Option<String> {
    read_trim("/proc/sys/kernel/hostname").or_else(|| read_trim("/etc/hostname"))
}

/// A `/proc/meminfo` line's value (`MemTotal:`, in kB there), in bytes.
fn meminfo(key: &str) -> Option<u64> {
    let text = fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Distinct (package, core) pairs and distinct packages from /proc/cpuinfo.
fn topology(cpuinfo: &str) -> (Option<usize>, Option<usize>) {
    let mut cores = std::collections::BTreeSet::new();
    let mut packages = std::collections::BTreeSet::new();
    for block in cpuinfo.split("\n\n") {
        let get = |key: &str| {
            block.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == key).then(|| v.trim().to_string())
            })
        };
        if let (Some(pkg), Some(core)) = (get("physical id"), get("core id")) {
            packages.insert(pkg.clone());
            cores.insert((pkg, core));
        }
    }
    let n = |s: usize| (s > 0).then_some(s);
    (n(cores.len()), n(packages.len()))
}

fn virtualization(cpuinfo: &str) -> Option<String> {
    let flags = cpuinfo.lines().find(|l| l.starts_with("flags"))?;
    if !flags.split_whitespace().any(|f| f == "hypervisor") {
        return Some("none".into());
    }
    if let Some(sig) = hypervisor_signature() {
        let name = match sig.trim_end_matches('\0') {
            "KVMKVMKVM" => "kvm",
            "Microsoft Hv" => "hyper-v",
            "VMwareVMware" => "vmware",
            "XenVMMXenVMM" => "xen",
            "TCGTCGTCGTCG" => "qemu-tcg",
            "ACRNACRNACRN" => "acrn",
            "bhyve bhyve " => "bhyve",
            "VBoxVBoxVBox" => "virtualbox",
            _ => "",
        };
        if !name.is_empty() {
            return Some(name.into());
        }
    }
    let vendor = read_trim("/sys/class/dmi/id/sys_vendor")
        .unwrap_or_default()
        .to_lowercase();
    let product = read_trim("/sys/class/dmi/id/product_name")
        .unwrap_or_default()
        .to_lowercase();
    let both = format!("{vendor} {product}");
    let name = if both.contains("qemu") || both.contains("kvm") {
        "kvm"
    } else if both.contains("vmware") {
        "vmware"
    } else if both.contains("microsoft") {
        "hyper-v"
    } else if both.contains("xen") {
        "xen"
    } else if both.contains("amazon") {
        "kvm (aws nitro)"
    } else if both.contains("google") {
        "kvm (gce)"
    } else {
        "unknown hypervisor"
    };
    Some(name.into())
}

/// The hypervisor's CPUID signature (leaf 0x4000_0000), when the CPU
/// reports running under one.
#[cfg(target_arch = "x86_64")]
fn hypervisor_signature() -> Option<String> {
    use std::arch::x86_64::__cpuid;
    // CPUID exists on every x86_64 CPU; leaf 0x4000_0000 is reserved for
    // hypervisors and returns zeros or unrelated values on bare metal.
    let r = __cpuid(0x4000_0000);
    let bytes: Vec<u8> = [r.ebx, r.ecx, r.edx]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    String::from_utf8(bytes).ok()
}

#[cfg(not(target_arch = "x86_64"))]
fn hypervisor_signature() -> Option<String> {
    None
}

fn caches() -> Vec<CacheInfo> {
    let mut out = Vec::new();
    for i in 0..16 {
        let base = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let Some(level) = read_trim(&format!("{base}/level")).and_then(|s| s.parse().ok()) else {
            break;
        };
        let Some(size) =
            read_trim(&format!("{base}/size")).and_then(|s| crate::units::parse_size(&s).ok())
        else {
            continue;
        };
        let shared_by = read_trim(&format!("{base}/shared_cpu_list")).map(|s| cpu_list_len(&s));
        out.push(CacheInfo {
            level,
            kind: read_trim(&format!("{base}/type")).unwrap_or_else(|| "Unified".into()),
            size_bytes: size,
            shared_by,
        });
    }
    out
}

/// Number of CPUs in a list like `0-3,8,10-11`.
fn cpu_list_len(s: &str) -> usize {
    s.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('-') {
            Some((a, b)) => match (a.parse::<usize>(), b.parse::<usize>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 0,
            },
            None => 1,
        })
        .sum()
}

fn simd_features() -> Vec<String> {
    #[allow(unused_mut)]
    let mut v: Vec<&str> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! check {
            ($($f:tt),*) => {$(
                if std::arch::is_x86_feature_detected!($f) { v.push($f); }
            )*};
        }
        check!(
            "sse2",
            "sse4.2",
            "avx",
            "avx2",
            "fma",
            "f16c",
            "avx512f",
            "avx512bw",
            "avx512vl",
            "avx512dq",
            "avx512vnni",
            "avx512bf16",
            "avx512fp16",
            "avxvnni"
        );
        // AMX detection is not stable in std; the kernel's flags say it.
        let flags = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let flags = flags.lines().find(|l| l.starts_with("flags")).unwrap_or("");
        for (flag, name) in [
            ("amx_tile", "amx-tile"),
            ("amx_int8", "amx-int8"),
            ("amx_bf16", "amx-bf16"),
        ] {
            if flags.split_whitespace().any(|f| f == flag) {
                v.push(name);
            }
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        macro_rules! check {
            ($($f:tt),*) => {$(
                if std::arch::is_aarch64_feature_detected!($f) { v.push($f); }
            )*};
        }
        check!("neon", "fp16", "dotprod", "sve", "sve2", "bf16", "i8mm");
    }
    v.into_iter().map(String::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_handling_is_read_from_sysfs_and_absent_without_it() {
        let root = std::env::temp_dir().join(format!("benchsuite-idle-{}", std::process::id()));
        let w = |rel: &str, text: &str| {
            let p = root.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        };
        let r = root.to_str().unwrap().to_string();
        assert_eq!(IdleInfo::detect(&r), None, "no cpuidle directory");
        w("devices/system/cpu/cpuidle/current_driver", "haltpoll\n");
        w(
            "devices/system/cpu/cpuidle/current_governor_ro",
            "haltpoll\n",
        );
        w("module/haltpoll/parameters/guest_halt_poll_ns", "0\n");
        // Ten states sort by number, not by name.
        for (i, name) in [
            "POLL", "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9", "C10",
        ]
        .iter()
        .enumerate()
        {
            w(
                &format!("devices/system/cpu/cpu0/cpuidle/state{i}/name"),
                name,
            );
        }
        let i = IdleInfo::detect(&r).unwrap();
        fs::remove_dir_all(&root).unwrap();
        assert_eq!(i.driver.as_deref(), Some("haltpoll"));
        assert_eq!(i.governor.as_deref(), Some("haltpoll"));
        assert_eq!(i.halt_poll_ns, Some(0));
        assert_eq!(i.states.first().map(String::as_str), Some("POLL"));
        assert_eq!(i.states.last().map(String::as_str), Some("C10"));
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list_len("0-3,8,10-11"), 7);
        assert_eq!(cpu_list_len("0"), 1);
    }

    #[test]
    fn topology_counts_distinct_cores() {
        let text = "processor: 0\nphysical id: 0\ncore id: 0\n\nprocessor: 1\nphysical id: 0\ncore id: 0\n\nprocessor: 2\nphysical id: 0\ncore id: 1\n";
        assert_eq!(topology(text), (Some(2), Some(1)));
        assert_eq!(topology(""), (None, None));
    }

    #[test]
    fn cpuid_numbers_name_the_microarchitecture() {
        let text = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Processor\nstepping\t: 8\nmicrocode\t: 0x2b000603\n";
        let c = CpuInfo::detect(text);
        assert_eq!(
            (c.family, c.model_id, c.stepping),
            (Some(6), Some(143), Some(8))
        );
        assert_eq!(c.microcode.as_deref(), Some("0x2b000603"));
        assert_eq!(c.microarchitecture.as_deref(), Some("Sapphire Rapids"));
        assert_eq!(microarchitecture("AuthenticAMD", 0x19, 0x11), Some("Zen 4"));
        assert_eq!(microarchitecture("AuthenticAMD", 0x19, 0x01), Some("Zen 3"));
        // Not in the table: unknown, not guessed.
        assert_eq!(microarchitecture("GenuineIntel", 6, 0x01), None);
        assert_eq!(microarchitecture("AuthenticAMD", 6, 0x8F), None);
        // An ARM cpuinfo has none of these fields.
        let arm = CpuInfo::detect("processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n");
        assert_eq!(
            (arm.family, arm.model_id, arm.microarchitecture),
            (None, None, None)
        );
    }

    #[test]
    fn detect_is_consistent() {
        let h = Host::detect();
        assert!(!h.os.is_empty());
        if let Some(l) = h.cpu.logical_cpus {
            assert!(l >= 1);
        }
        for c in &h.cpu.caches {
            assert!((1..=4).contains(&c.level) && c.size_bytes >= 1024, "{c:?}");
        }
        if let Some(m) = h.memory_bytes {
            assert!(m > 1 << 20);
            let avail = h
                .memory_available_bytes
                .expect("MemAvailable beside MemTotal");
            assert!(avail > 0 && avail <= m, "{avail} of {m}");
        }
        let json = serde_json::to_string(&h).unwrap();
        let back: Host = serde_json::from_str(&json).unwrap();
        assert_eq!(back, h);
    }
}
