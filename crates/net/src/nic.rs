//! What carries the traffic: an interface classified from sysfs
//! (a NIC, a paravirtual NIC, a stacked VLAN/bond/bridge, or a virtual
//! one with no device) and the policy that decides whether its reported
//! speed is a line rate a peak may use (only a physical NIC's, directly or
//! through a VLAN, or a bond's whose links are all physical). Plain file
//! reads, no `unsafe`; the interface itself is found in [`crate::route`].

use std::path::Path;

/// How the outgoing interface was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// The kernel's own routing decision (rtnetlink `RTM_GETROUTE`, what
    /// `ip route get PEER` asks): the output interface, policy routing
    /// included.
    Netlink,
    /// The source address a connected UDP socket gets, and the interface
    /// that owns it (when rtnetlink is not available). Usually the same
    /// interface; not when a route names another interface's address as
    /// its source.
    SourceAddress,
}

/// An interface and what sysfs says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NetIf {
    /// Interface name (`eth0`).
    pub name: String,
    /// The link type rtnetlink reports (`veth`, `vlan`, `bond`, `bridge`,
    /// `tun`...); `None` for an ordinary NIC driver (or when unknown).
    pub link_kind: Option<String>,
    /// `/sys/class/net/<name>/speed`, when positive (Mb/s).
    pub speed_mbps: Option<u64>,
    /// What is behind it.
    pub class: IfClass,
    /// How it was found.
    pub lookup: Lookup,
}

/// What kind of interface carries the traffic, which decides whether its
/// "speed" is a physical limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IfClass {
    /// A device (`/sys/class/net/<name>/device`) driven by a NIC driver:
    /// its speed is the negotiated line rate.
    Physical {
        /// The driver (`ixgbe`, `mlx5_core`), when sysfs names one.
        driver: Option<String>,
    },
    /// A device driven by a paravirtual driver (virtio_net, vmxnet3,
    /// hv_netvsc, xen-netfront): a hypervisor's queue, not a wire; a speed
    /// it reports is the hypervisor's setting, not a line rate.
    Paravirtual {
        /// The driver.
        driver: String,
    },
    /// No device of its own but built on other interfaces
    /// (`/sys/class/net/<name>/lower_*`): VLAN, macvlan, bond, team,
    /// bridge.
    Stacked {
        /// The interfaces it sits on, each classified in turn.
        lower: Vec<NetIf>,
    },
    /// No device and nothing below it: veth, tun/tap, dummy, wireguard...
    /// Whatever speed it reports (a veth says 10000) is made up.
    Virtual,
}

/// Drivers of paravirtual NICs: a device exists, but it is a hypervisor's
/// queue rather than a wire.
const PARAVIRTUAL_DRIVERS: &[&str] = &["virtio_net", "vmxnet3", "hv_netvsc", "xen-netfront", "vif"];

/// Stacked link types whose traffic leaves through their single lower
/// interface at its line rate.
const PASS_THROUGH_KINDS: &[&str] = &["vlan", "macvlan", "macvtap", "ipvlan", "ipvtap"];

/// Link types that spread traffic over their lower interfaces and report
/// the sum of their speeds (active-backup: the active link's).
const AGGREGATE_KINDS: &[&str] = &["bond", "team"];

impl NetIf {
    /// The line rate a byte stream through this interface cannot exceed,
    /// with the interface whose speed it is, when there is one: a physical
    /// NIC's speed; a VLAN's (or macvlan's) physical lower interface's; a
    /// bond's or team's own (the sum over its links) when every link is
    /// physical. Nothing for virtual, paravirtual, bridged or unknown
    /// paths.
    pub fn line_rate(&self) -> Option<(u64, &NetIf)> {
        match &self.class {
            IfClass::Physical { .. } => self.speed_mbps.map(|s| (s, self)),
            IfClass::Stacked { lower } => {
                let kind = self.link_kind.as_deref().unwrap_or("");
                if PASS_THROUGH_KINDS.contains(&kind) {
                    match lower.as_slice() {
                        [one] => one.line_rate(),
                        _ => None,
                    }
                } else if AGGREGATE_KINDS.contains(&kind)
                    && !lower.is_empty()
                    && lower.iter().all(|l| l.line_rate().is_some())
                {
                    self.speed_mbps.map(|s| (s, self))
                } else {
                    None
                }
            }
            IfClass::Paravirtual { .. } | IfClass::Virtual => None,
        }
    }

    /// One phrase: `eth0 (driver ixgbe, 10000 Mb/s)`, `bsb1, a virtual
    /// interface (veth)`, `eth0.7 (vlan) on eth0 (driver ixgbe, ...)`.
    pub fn describe(&self) -> String {
        let speed = |s: Option<u64>| match s {
            Some(s) => format!("{s} Mb/s"),
            None => "no link speed reported".to_string(),
        };
        match &self.class {
            IfClass::Physical { driver } => format!(
                "{} (a NIC{}, {})",
                self.name,
                driver
                    .as_deref()
                    .map(|d| format!(", driver {d}"))
                    .unwrap_or_default(),
                speed(self.speed_mbps)
            ),
            IfClass::Paravirtual { driver } => format!(
                "{}, a paravirtual NIC (driver {driver}: a hypervisor's queue, not a wire; {})",
                self.name,
                match self.speed_mbps {
                    Some(s) => format!("its reported {s} Mb/s is the hypervisor's setting"),
                    None => "no link speed reported".into(),
                }
            ),
            IfClass::Stacked { lower } => format!(
                "{} ({}) on {}",
                self.name,
                self.link_kind.as_deref().unwrap_or("stacked"),
                lower
                    .iter()
                    .map(NetIf::describe)
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
            IfClass::Virtual => format!(
                "{}, a virtual interface ({}) with no device behind it{}",
                self.name,
                self.link_kind.as_deref().unwrap_or("no NIC driver"),
                self.speed_mbps
                    .map(|s| format!("; its reported {s} Mb/s is not a physical link speed"))
                    .unwrap_or_default()
            ),
        }
    }

    /// A one-word class for machine-readable facts.
    pub fn class_name(&self) -> &'static str {
        match self.class {
            IfClass::Physical { .. } => "physical",
            IfClass::Paravirtual { .. } => "paravirtual",
            IfClass::Stacked { .. } => "stacked",
            IfClass::Virtual => "virtual",
        }
    }
}

/// The sysfs directory of network interfaces.
pub(crate) const SYS_CLASS_NET: &str = "/sys/class/net";

/// Classifies interface `name` from the sysfs tree at `sys`
/// (`/sys/class/net`, or a test's copy): a `device` link means hardware
/// (paravirtual if its driver is one of [`PARAVIRTUAL_DRIVERS`]);
/// `lower_*` links mean a stacked interface (each lower one classified in
/// turn, four levels at most); neither means a virtual one.
pub(crate) fn classify(sys: &Path, name: &str, link_kind: Option<String>, lookup: Lookup) -> NetIf {
    classify_at(sys, name, link_kind, lookup, 0)
}

fn classify_at(
    sys: &Path,
    name: &str,
    link_kind: Option<String>,
    lookup: Lookup,
    depth: u32,
) -> NetIf {
    let dir = sys.join(name);
    let speed_mbps = std::fs::read_to_string(dir.join("speed"))
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .filter(|&s| s > 0)
        .map(|s| s as u64);
    let class = if dir.join("device").exists() {
        let driver = std::fs::read_link(dir.join("device").join("driver"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
        match driver {
            Some(d) if PARAVIRTUAL_DRIVERS.contains(&d.as_str()) => {
                IfClass::Paravirtual { driver: d }
            }
            driver => IfClass::Physical { driver },
        }
    } else {
        let mut lower: Vec<String> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .filter_map(|e| {
                e.ok()?
                    .file_name()
                    .to_str()?
                    .strip_prefix("lower_")
                    .map(str::to_string)
            })
            .collect();
        lower.sort();
        if lower.is_empty() || depth >= 4 {
            IfClass::Virtual
        } else {
            IfClass::Stacked {
                lower: lower
                    .iter()
                    .map(|l| {
                        let kind = uevent_devtype(sys, l);
                        classify_at(sys, l, kind, lookup, depth + 1)
                    })
                    .collect(),
            }
        }
    };
    let link_kind = link_kind.or_else(|| uevent_devtype(sys, name));
    NetIf {
        name: name.to_string(),
        link_kind,
        speed_mbps,
        class,
        lookup,
    }
}

/// `DEVTYPE=` of `/sys/class/net/<name>/uevent` (vlan, bridge, bond...),
/// the link type where rtnetlink did not tell it.
pub(crate) fn uevent_devtype(sys: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(sys.join(name).join("uevent"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("DEVTYPE=").map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake `/sys/class/net` in a temporary directory, removed on drop.
    struct FakeSys(std::path::PathBuf);

    impl FakeSys {
        fn new(tag: &str) -> FakeSys {
            let d = std::env::temp_dir()
                .join(format!("benchsuite-net-sys-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(d.join("drivers")).unwrap();
            FakeSys(d)
        }

        fn net(&self) -> std::path::PathBuf {
            self.0.join("class-net")
        }

        /// An interface; `driver` gives it a device driven by that driver.
        fn add(&self, name: &str, speed: i64, driver: Option<&str>, lower: &[&str]) {
            let dir = self.net().join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("speed"), format!("{speed}\n")).unwrap();
            if let Some(d) = driver {
                let target = self.0.join("drivers").join(d);
                std::fs::create_dir_all(&target).unwrap();
                std::fs::create_dir_all(dir.join("device")).unwrap();
                std::os::unix::fs::symlink(&target, dir.join("device").join("driver")).unwrap();
            }
            for l in lower {
                std::os::unix::fs::symlink(self.net().join(l), dir.join(format!("lower_{l}")))
                    .unwrap();
            }
        }

        fn classify(&self, name: &str, kind: Option<&str>) -> NetIf {
            classify(&self.net(), name, kind.map(str::to_string), Lookup::Netlink)
        }
    }

    impl Drop for FakeSys {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn only_physical_links_have_a_line_rate() {
        let sys = FakeSys::new("classes");
        sys.add("eth1", 25000, Some("mlx5_core"), &[]);
        sys.add("eth2", -1, Some("igb"), &[]);
        sys.add("ens3", 10000, Some("virtio_net"), &[]);
        sys.add("veth0", 10000, None, &[]);
        sys.add("eth1.7", 25000, None, &["eth1"]);
        // As the kernel writes it for a VLAN (read for lower interfaces).
        std::fs::write(
            sys.net().join("eth1.7/uevent"),
            "DEVTYPE=vlan\nINTERFACE=eth1.7\n",
        )
        .unwrap();
        sys.add("br0", 10000, None, &["eth1", "eth2"]);
        sys.add("bond0", 50000, None, &["eth1", "eth1.7"]);
        sys.add("bond1", 20000, None, &["veth0"]);

        let nic = sys.classify("eth1", None);
        assert_eq!(
            nic.class,
            IfClass::Physical {
                driver: Some("mlx5_core".into())
            }
        );
        assert_eq!(
            nic.line_rate().map(|(s, i)| (s, i.name.as_str())),
            Some((25000, "eth1"))
        );
        assert!(
            nic.describe().contains("driver mlx5_core, 25000 Mb/s"),
            "{}",
            nic.describe()
        );

        // A NIC with no speed (link down) has none.
        let down = sys.classify("eth2", None);
        assert_eq!((down.speed_mbps, down.line_rate()), (None, None));

        // virtio says 10000 here, but that is the hypervisor's number.
        let pv = sys.classify("ens3", None);
        assert_eq!(
            pv.class,
            IfClass::Paravirtual {
                driver: "virtio_net".into()
            }
        );
        assert_eq!(pv.speed_mbps, Some(10000));
        assert_eq!(pv.line_rate(), None);
        assert!(pv.describe().contains("paravirtual"), "{}", pv.describe());

        // A veth reports 10000 Mb/s and is still no link.
        let veth = sys.classify("veth0", Some("veth"));
        assert_eq!(veth.class, IfClass::Virtual);
        assert_eq!(veth.speed_mbps, Some(10000));
        assert_eq!(veth.line_rate(), None);
        let d = veth.describe();
        assert!(
            d.contains("veth0")
                && d.contains("virtual interface (veth)")
                && d.contains("not a physical link"),
            "{d}"
        );

        // A VLAN leaves through its NIC at the NIC's rate.
        let vlan = sys.classify("eth1.7", Some("vlan"));
        assert!(matches!(&vlan.class, IfClass::Stacked { lower } if lower.len() == 1));
        assert_eq!(
            vlan.line_rate().map(|(s, i)| (s, i.name.as_str())),
            Some((25000, "eth1"))
        );
        assert!(
            vlan.describe().starts_with("eth1.7 (vlan) on eth1"),
            "{}",
            vlan.describe()
        );
        // ...but one marked as a bridge could use either port.
        assert_eq!(sys.classify("br0", Some("bridge")).line_rate(), None);
        // A bond over physical links (here nested) has its own summed speed;
        // over a veth it has none.
        assert_eq!(
            sys.classify("bond0", Some("bond"))
                .line_rate()
                .map(|(s, _)| s),
            Some(50000)
        );
        assert_eq!(sys.classify("bond1", Some("bond")).line_rate(), None);
        // Without rtnetlink's word, uevent's DEVTYPE names the kind; with
        // neither, a stacked interface is only "stacked": no rate.
        assert_eq!(
            sys.classify("eth1.7", None).link_kind.as_deref(),
            Some("vlan")
        );
        assert_eq!(sys.classify("br0", None).line_rate(), None);
    }
}
