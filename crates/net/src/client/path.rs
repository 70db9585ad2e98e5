//! The path to the server and the peak it sets: which interface the kernel
//! routes the peer through, what that interface is, and whether its line
//! rate bounds the headline throughput (see the crate docs, "Peak, and the
//! path to the server").

use std::net::IpAddr;

use benchsuite_core::{Peak, PeakInput};

use crate::nic::IfClass;
use crate::route::{Lookup, Route};

/// "path to PEER: ..." for a record's notes.
pub(crate) fn path_note(peer: IpAddr, route: &Route) -> String {
    match route {
        Route::Loopback => format!("path to {peer}: loopback (the server is on this machine)"),
        Route::Interface(nif) => format!(
            "path to {peer}, by {}: {}",
            match nif.lookup {
                Lookup::Netlink => "the kernel's routing decision",
                Lookup::SourceAddress => "the interface owning the source address",
            },
            nif.describe()
        ),
        Route::Unknown(why) => format!("path to {peer}: unknown ({why})"),
    }
}

/// The peak a link sets on `metric`, or none, and a clause saying which
/// and why.
pub(crate) fn link_peak(route: &Route, metric: &str, directions: u32) -> (Option<Peak>, String) {
    let nif = match route {
        Route::Loopback => {
            return (
                None,
                "no link: the limit is memory bandwidth (the kernel copies each byte from the sender's buffer to the receiver's), so no link-speed peak".into(),
            );
        }
        Route::Unknown(_) => return (None, "no link-speed peak".into()),
        Route::Interface(nif) => nif,
    };
    let Some((mbps, carrier)) = nif.line_rate() else {
        let why = match &nif.class {
            IfClass::Virtual => "no link-speed peak is claimed for a virtual interface",
            IfClass::Paravirtual { .. } => {
                "no link-speed peak is claimed: a paravirtual NIC's limit is the host's (its NIC, its rate limits), not a line rate"
            }
            IfClass::Physical { .. } => {
                "no peak: the NIC reports no link speed (link down, or the driver does not say)"
            }
            IfClass::Stacked { .. } => {
                "no link-speed peak is claimed: no single physical link bounds this path (a bridge's port depends on its forwarding table; virtual and paravirtual links have no line rate)"
            }
        };
        return (None, why.into());
    };
    let mut inputs = std::collections::BTreeMap::new();
    inputs.insert(
        "link_speed".to_string(),
        PeakInput {
            value: mbps as f64,
            unit: "Mb/s".into(),
            source: format!("sysfs /sys/class/net/{}/speed", carrier.name),
        },
    );
    inputs.insert(
        "directions".to_string(),
        PeakInput {
            value: f64::from(directions),
            unit: "".into(),
            source: "test".into(),
        },
    );
    let whose = if carrier.name == nif.name {
        carrier.name.clone()
    } else {
        format!("{} (under {})", carrier.name, nif.name)
    };
    let peak = Peak {
        metric: metric.into(),
        value: mbps as f64 * 1e6 / 8.0 * f64::from(directions),
        unit: "B/s".into(),
        formula: format!(
            "link speed of {whose} × 10^6 / 8 × directions (line rate; Ethernet, IP and TCP/UDP headers leave ~94-97% of it for payload)"
        ),
        inputs,
        efficiency: None,
    };
    let aggregate = if carrier.name == nif.name && matches!(nif.class, IfClass::Stacked { .. }) {
        " (the sum over its links; one stream travels one link)"
    } else {
        ""
    };
    (
        Some(peak),
        format!("the peak is {whose}'s line rate of {mbps} Mb/s{aggregate}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nif(
        name: &str,
        class: IfClass,
        kind: Option<&str>,
        speed: Option<u64>,
    ) -> crate::nic::NetIf {
        crate::nic::NetIf {
            name: name.into(),
            link_kind: kind.map(str::to_string),
            speed_mbps: speed,
            class,
            lookup: Lookup::Netlink,
        }
    }

    #[test]
    fn a_peak_only_from_a_physical_line_rate() {
        let nic = Route::Interface(nif(
            "eth1",
            IfClass::Physical {
                driver: Some("ixgbe".into()),
            },
            None,
            Some(10000),
        ));
        let (peak, why) = link_peak(&nic, "throughput", 2);
        let peak = peak.expect("a NIC with a speed has a peak");
        assert_eq!(peak.value, 10000e6 / 8.0 * 2.0);
        assert_eq!(peak.inputs["link_speed"].value, 10000.0);
        assert!(
            peak.inputs["link_speed"]
                .source
                .contains("/sys/class/net/eth1/speed")
        );
        assert!(why.contains("eth1's line rate of 10000 Mb/s"), "{why}");

        let vlan = Route::Interface(nif(
            "eth1.7",
            IfClass::Stacked {
                lower: vec![nif(
                    "eth1",
                    IfClass::Physical { driver: None },
                    None,
                    Some(1000),
                )],
            },
            Some("vlan"),
            Some(1000),
        ));
        let (peak, why) = link_peak(&vlan, "received", 1);
        assert_eq!(peak.map(|p| p.value), Some(1000e6 / 8.0));
        assert!(why.contains("eth1 (under eth1.7)"), "{why}");

        let veth = Route::Interface(nif("vb1", IfClass::Virtual, Some("veth"), Some(10000)));
        let (peak, why) = link_peak(&veth, "throughput", 1);
        assert!(peak.is_none());
        assert!(
            why.contains("no link-speed peak") && why.contains("virtual interface"),
            "{why}"
        );
        let note = path_note("10.0.0.1".parse().unwrap(), &veth);
        assert!(
            note.contains("vb1")
                && note.contains("virtual interface (veth)")
                && note.contains("routing decision"),
            "{note}"
        );

        let pv = Route::Interface(nif(
            "eth0",
            IfClass::Paravirtual {
                driver: "virtio_net".into(),
            },
            None,
            Some(10000),
        ));
        assert!(link_peak(&pv, "throughput", 1).0.is_none());

        let (peak, why) = link_peak(&Route::Loopback, "throughput", 1);
        assert!(peak.is_none() && why.contains("memory bandwidth"), "{why}");
    }
}
