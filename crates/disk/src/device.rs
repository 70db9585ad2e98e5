//! What holds a path: its mount (from `/proc/self/mountinfo`) and the block
//! device under it (from sysfs). The report's `host.extra.disk` and every
//! record's notes say it, because the same file system on another device —
//! or the same device behind a paravirtual driver — gives other numbers.
//!
//! Everything here is best effort: a field that cannot be read is absent,
//! never guessed, and nothing here fails a run.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// One line of `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// The file-system type (`ext4`, `xfs`, `overlay`, `tmpfs`).
    pub fstype: String,
    /// What is mounted (`/dev/vda1`, `tmpfs`, `overlay`).
    pub source: String,
    /// Per-mount and per-superblock options, comma separated
    /// (`rw,relatime,discard`).
    pub options: String,
}

/// A block device as sysfs describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlockDevice {
    /// The whole disk's kernel name (`vda`, `nvme0n1`, `dm-0`).
    pub disk: String,
    /// The partition's name when the data sits on one (`vda1`).
    pub partition: Option<String>,
    /// The driver behind the disk (`virtio_blk`, `nvme`, `sd`).
    pub driver: Option<String>,
    /// Model string (NVMe, SCSI/SATA); virtio disks have none.
    pub model: Option<String>,
    /// `queue/rotational`: a spinning disk.
    pub rotational: Option<bool>,
    /// The active I/O scheduler (`none`, `mq-deadline`).
    pub scheduler: Option<String>,
    /// `queue/logical_block_size` in bytes.
    pub logical_block: Option<u64>,
    /// `queue/physical_block_size` in bytes.
    pub physical_block: Option<u64>,
    /// The whole disk's size in bytes.
    pub size_bytes: Option<u64>,
    /// The devices a device-mapper, MD RAID or similar device sits on.
    pub slaves: Vec<String>,
}

impl BlockDevice {
    /// True for drivers of paravirtual disks: the guest sees its host's
    /// storage stack (image file, host cache, network storage), not a drive.
    pub fn paravirtual(&self) -> bool {
        matches!(
            self.driver.as_deref(),
            Some(
                "virtio_blk" | "xen_blkfront" | "vbd" | "hv_storvsc" | "vmw_pvscsi" | "virtio_scsi"
            )
        )
    }

    /// A short description for a record note: `vda1 on vda (virtio_blk,
    /// non-rotational, scheduler none, 512 B logical blocks)`.
    pub fn describe(&self) -> String {
        let mut traits = Vec::new();
        if let Some(d) = &self.driver {
            traits.push(d.clone());
        }
        if let Some(m) = &self.model {
            traits.push(format!("model {m}"));
        }
        match self.rotational {
            Some(true) => traits.push("rotational".into()),
            Some(false) => traits.push("non-rotational".into()),
            None => {}
        }
        if let Some(s) = &self.scheduler {
            traits.push(format!("scheduler {s}"));
        }
        if let Some(b) = self.logical_block {
            traits.push(format!("{b} B logical blocks"));
        }
        if !self.slaves.is_empty() {
            traits.push(format!("on {}", self.slaves.join(", ")));
        }
        let name = match &self.partition {
            Some(p) => format!("{p} on {}", self.disk),
            None => self.disk.clone(),
        };
        if traits.is_empty() {
            name
        } else {
            format!("{name} ({})", traits.join(", "))
        }
    }
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses one mountinfo line: `id parent maj:min root mount_point options
/// [optional fields...] - fstype source super_options`.
fn parse_mount_line(line: &str) -> Option<Mount> {
    let (left, right) = line.split_once(" - ")?;
    let l: Vec<&str> = left.split(' ').collect();
    let r: Vec<&str> = right.split(' ').collect();
    if l.len() < 6 || r.len() < 3 {
        return None;
    }
    let mut options = l[5].to_string();
    for o in r[2].split(',') {
        if !options.split(',').any(|x| x == o) {
            options.push(',');
            options.push_str(o);
        }
    }
    Some(Mount {
        mount_point: PathBuf::from(unescape(l[4])),
        fstype: r[0].to_string(),
        source: unescape(r[1]),
        options,
    })
}

/// The mount holding `path` (already canonical) in a mountinfo text: the
/// longest mount point that is a prefix of it, the last such line winning
/// (a later mount on the same point hides the earlier one).
fn mount_in(mountinfo: &str, path: &Path) -> Option<Mount> {
    let mut best: Option<Mount> = None;
    for m in mountinfo.lines().filter_map(parse_mount_line) {
        if !path.starts_with(&m.mount_point) {
            continue;
        }
        let longer = best.as_ref().is_none_or(|b| {
            m.mount_point.components().count() >= b.mount_point.components().count()
        });
        if longer {
            best = Some(m);
        }
    }
    best
}

/// The mount holding `path`.
pub fn mount_of(path: &Path) -> Option<Mount> {
    let canon = std::fs::canonicalize(path).ok()?;
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mount_in(&text, &canon)
}

fn read_trim(p: &Path) -> Option<String> {
    let t = std::fs::read_to_string(p).ok()?;
    let t = t.trim();
    (!t.is_empty()).then(|| t.to_string())
}

fn read_u64(p: &Path) -> Option<u64> {
    read_trim(p)?.parse().ok()
}

fn link_name(p: &Path) -> Option<String> {
    let target = std::fs::read_link(p).ok()?;
    Some(target.file_name()?.to_string_lossy().into_owned())
}

/// The bracketed entry of `queue/scheduler` (`none [mq-deadline] kyber`).
fn active_scheduler(text: &str) -> Option<String> {
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    Some(text[start + 1..end].to_string())
}

/// Describes the block device `maj:min` from a sysfs root (`/sys` on a
/// live system; a directory tree in tests).
fn block_device_in(sys: &Path, maj: u64, min: u64) -> Option<BlockDevice> {
    let node = sys.join(format!("dev/block/{maj}:{min}"));
    let node = std::fs::canonicalize(&node).ok()?;
    let name = node.file_name()?.to_string_lossy().into_owned();
    // A partition's directory holds a `partition` file and sits inside its
    // disk's directory.
    let (disk_dir, partition) = if node.join("partition").exists() {
        (node.parent()?.to_path_buf(), Some(name))
    } else {
        (node.clone(), None)
    };
    let disk = disk_dir.file_name()?.to_string_lossy().into_owned();
    let queue = disk_dir.join("queue");
    let driver = link_name(&disk_dir.join("device/driver"))
        .or_else(|| link_name(&disk_dir.join("device/device/driver")))
        // device-mapper and md have no device/ link; say what they are.
        .or_else(|| disk_dir.join("dm").exists().then(|| "device-mapper".into()))
        .or_else(|| disk_dir.join("md").exists().then(|| "md".into()))
        .or_else(|| disk_dir.join("loop").exists().then(|| "loop".into()));
    let mut slaves: Vec<String> = std::fs::read_dir(disk_dir.join("slaves"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    slaves.sort();
    Some(BlockDevice {
        disk,
        partition,
        driver,
        model: read_trim(&disk_dir.join("device/model")),
        rotational: read_u64(&queue.join("rotational")).map(|v| v != 0),
        scheduler: read_trim(&queue.join("scheduler")).and_then(|t| active_scheduler(&t)),
        logical_block: read_u64(&queue.join("logical_block_size")),
        physical_block: read_u64(&queue.join("physical_block_size")),
        size_bytes: read_u64(&disk_dir.join("size")).map(|s| s * 512),
        slaves,
    })
}

/// The block device holding `path`, or the device `path` is (a block
/// special file). `None` for file systems without one (tmpfs, overlayfs
/// report an anonymous device, NFS a remote one).
pub fn block_device_of(path: &Path) -> Option<BlockDevice> {
    let meta = std::fs::metadata(path).ok()?;
    let dev = if meta.file_type().is_block_device() {
        meta.rdev()
    } else {
        meta.dev()
    };
    let (maj, min) = (libc::major(dev) as u64, libc::minor(dev) as u64);
    if maj == 0 {
        return None;
    }
    block_device_in(Path::new("/sys"), maj, min)
}

/// What holds `path`: the mount and the block device, for the report's
/// `host.extra.disk`.
pub fn facts(path: &Path) -> serde_json::Value {
    let mount = mount_of(path);
    let dev = block_device_of(path);
    serde_json::json!({
        "path": path.display().to_string(),
        "mount": mount.as_ref().map(|m| serde_json::json!({
            "mount_point": m.mount_point.display().to_string(),
            "fstype": m.fstype,
            "source": m.source,
            "options": m.options,
        })),
        "device": dev.as_ref().map(|d| serde_json::json!({
            "disk": d.disk,
            "partition": d.partition,
            "driver": d.driver,
            "model": d.model,
            "rotational": d.rotational,
            "scheduler": d.scheduler,
            "logical_block_bytes": d.logical_block,
            "physical_block_bytes": d.physical_block,
            "size_bytes": d.size_bytes,
            "slaves": d.slaves,
            "paravirtual": d.paravirtual(),
        })),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,discard
23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
24 22 0:22 / /tmp rw,nosuid,nodev shared:5 - tmpfs tmpfs rw,size=8g
25 22 259:2 / /mnt/my\\040data rw,noatime - xfs /dev/nvme0n1p2 rw,attr2
26 24 0:30 / /tmp rw,relatime - tmpfs tmpfs rw,size=1g
";

    #[test]
    fn the_longest_and_latest_mount_point_holds_a_path() {
        let m = mount_in(MOUNTINFO, Path::new("/home/u/x")).unwrap();
        assert_eq!(m.fstype, "ext4");
        assert_eq!(m.source, "/dev/vda1");
        assert_eq!(m.options, "rw,relatime,discard");
        // /tmp is mounted twice: the later mount hides the earlier.
        let m = mount_in(MOUNTINFO, Path::new("/tmp/scratch")).unwrap();
        assert_eq!(m.options, "rw,relatime,size=1g");
        // Escaped spaces; /mnt/my data is not a prefix of /mnt/my.
        let m = mount_in(MOUNTINFO, Path::new("/mnt/my data/f")).unwrap();
        assert_eq!(m.fstype, "xfs");
        assert_eq!(m.mount_point, Path::new("/mnt/my data"));
        assert_eq!(
            mount_in(MOUNTINFO, Path::new("/mnt/my")).unwrap().fstype,
            "ext4"
        );
        // Path prefixes are whole components: /tmpfoo is not under /tmp.
        assert_eq!(
            mount_in(MOUNTINFO, Path::new("/tmpfoo")).unwrap().fstype,
            "ext4"
        );
        assert!(parse_mount_line("garbage").is_none());
    }

    #[test]
    fn the_active_scheduler_is_the_bracketed_one() {
        assert_eq!(
            active_scheduler("none [mq-deadline] kyber bfq").as_deref(),
            Some("mq-deadline")
        );
        assert_eq!(
            active_scheduler("[none] mq-deadline").as_deref(),
            Some("none")
        );
        assert_eq!(active_scheduler("none"), None);
    }

    /// A fake sysfs: a virtio disk `vda` with partition `vda1`.
    #[test]
    fn a_partition_is_described_by_its_disk() {
        let root = tempfile::tempdir().unwrap();
        let sys = root.path();
        let disk = sys.join("devices/pci0000:00/virtio1/block/vda");
        let part = disk.join("vda1");
        std::fs::create_dir_all(&part).unwrap();
        std::fs::create_dir_all(disk.join("queue")).unwrap();
        std::fs::create_dir_all(sys.join("bus/virtio/drivers/virtio_blk")).unwrap();
        std::fs::create_dir_all(sys.join("devices/pci0000:00/virtio1/dev")).unwrap();
        std::os::unix::fs::symlink(
            sys.join("bus/virtio/drivers/virtio_blk"),
            sys.join("devices/pci0000:00/virtio1/dev/driver"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            sys.join("devices/pci0000:00/virtio1/dev"),
            disk.join("device"),
        )
        .unwrap();
        std::fs::write(part.join("partition"), "1\n").unwrap();
        std::fs::write(disk.join("size"), "2097152\n").unwrap();
        std::fs::write(disk.join("queue/rotational"), "0\n").unwrap();
        std::fs::write(disk.join("queue/scheduler"), "[none] mq-deadline\n").unwrap();
        std::fs::write(disk.join("queue/logical_block_size"), "512\n").unwrap();
        std::fs::write(disk.join("queue/physical_block_size"), "4096\n").unwrap();
        std::fs::create_dir_all(sys.join("dev/block")).unwrap();
        std::os::unix::fs::symlink(&part, sys.join("dev/block/253:1")).unwrap();
        std::os::unix::fs::symlink(&disk, sys.join("dev/block/253:0")).unwrap();

        let d = block_device_in(sys, 253, 1).unwrap();
        assert_eq!(d.disk, "vda");
        assert_eq!(d.partition.as_deref(), Some("vda1"));
        assert_eq!(d.driver.as_deref(), Some("virtio_blk"));
        assert!(d.paravirtual());
        assert_eq!(d.rotational, Some(false));
        assert_eq!(d.scheduler.as_deref(), Some("none"));
        assert_eq!(d.logical_block, Some(512));
        assert_eq!(d.physical_block, Some(4096));
        assert_eq!(d.size_bytes, Some(1 << 30));
        assert_eq!(
            d.describe(),
            "vda1 on vda (virtio_blk, non-rotational, scheduler none, 512 B logical blocks)"
        );
        let whole = block_device_in(sys, 253, 0).unwrap();
        assert_eq!((whole.disk.as_str(), whole.partition), ("vda", None));
        assert!(block_device_in(sys, 8, 0).is_none());
    }

    /// On the live system the temp dir's mount is found and its type agrees
    /// with what statfs says.
    #[test]
    fn the_temp_dir_has_a_mount() {
        let dir = std::env::temp_dir();
        let Some(m) = mount_of(&dir) else {
            benchsuite_core::testing::skip(
                benchsuite_core::testing::Capability::Linux,
                "/proc/self/mountinfo is not readable here",
            );
            return;
        };
        let fs = crate::sys::fs_info(&dir).unwrap();
        let same_family = match fs.name.as_str() {
            "ext2/3/4" => m.fstype.starts_with("ext"),
            "overlayfs" => m.fstype == "overlay",
            other if other.starts_with("file system 0x") => true,
            other => m.fstype.contains(other) || other.contains(&m.fstype),
        };
        assert!(same_family, "statfs says {}, mountinfo {m:?}", fs.name);
        assert!(
            dir.starts_with(&m.mount_point)
                || std::fs::canonicalize(&dir)
                    .unwrap()
                    .starts_with(&m.mount_point)
        );
    }
}
