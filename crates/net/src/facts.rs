//! What a run records about the network path (`host.extra.net`): the
//! server, its address and the interface the route to it takes.

use crate::{client, nic, route};

/// The report's `host.extra.net`: where the server is and what the path to
/// it is, so a reader (or a script) sees whether the numbers crossed a
/// wire. Keys: `server` (`--peer` as given, or `in-process`), `address`,
/// `path` (`loopback`, `interface`, `unknown`), and for an interface
/// `interface`, `class` (`physical`, `paravirtual`, `stacked`,
/// `virtual`), `link_kind` (`veth`, `vlan`, `bond`..., or null for a NIC
/// driver), `driver`, `speed_mbps` (as sysfs reports it, even where it is
/// not a physical limit), `line_rate_mbps` (the speed a link-speed peak
/// uses, or null where none is claimed), `lower` (interfaces under a
/// stacked one) and `lookup` (`netlink` or `source_address`).
pub(crate) fn host_facts(ctx: &benchsuite_core::Context) -> serde_json::Value {
    use serde_json::json;
    let (server, addr) = match ctx.options.get("peer") {
        Some(p) => match client::resolve_peer(p) {
            Ok(a) => (p.clone(), a.ip()),
            Err(e) => {
                let error = benchsuite_core::error_chain(&e);
                return json!({ "server": p, "path": "unknown", "error": error });
            }
        },
        None => (
            "in-process".to_string(),
            std::net::Ipv4Addr::LOCALHOST.into(),
        ),
    };
    let path = match route::route_to(addr) {
        route::Route::Loopback => json!({ "path": "loopback" }),
        route::Route::Unknown(why) => json!({ "path": "unknown", "error": why }),
        route::Route::Interface(nif) => {
            let mut v = interface_facts(&nif);
            v["path"] = json!("interface");
            v["lookup"] = json!(match nif.lookup {
                route::Lookup::Netlink => "netlink",
                route::Lookup::SourceAddress => "source_address",
            });
            v
        }
    };
    let mut v = path;
    v["server"] = json!(server);
    v["address"] = json!(addr.to_string());
    v
}

fn interface_facts(nif: &nic::NetIf) -> serde_json::Value {
    use serde_json::json;
    let (driver, lower) = match &nif.class {
        nic::IfClass::Physical { driver } => (driver.clone(), Vec::new()),
        nic::IfClass::Paravirtual { driver } => (Some(driver.clone()), Vec::new()),
        nic::IfClass::Stacked { lower } => (None, lower.iter().map(interface_facts).collect()),
        nic::IfClass::Virtual => (None, Vec::new()),
    };
    json!({
        "interface": nif.name,
        "class": nif.class_name(),
        "link_kind": nif.link_kind,
        "driver": driver,
        "speed_mbps": nif.speed_mbps,
        "line_rate_mbps": nif.line_rate().map(|(s, _)| s),
        "lower": lower,
    })
}
