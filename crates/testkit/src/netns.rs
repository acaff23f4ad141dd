//! [`NetNs`]: a Linux network namespace joined to the host by a veth pair, for faults the
//! kernel makes more faithfully than a proxy: a slow link ([`NetNs::limit_rate`], the `tbf`
//! qdisc) and a link that goes away ([`NetNs::set_link`], `ip link set ... down`).
//!
//! ```text
//!  host                              namespace strait-<pid>-<n>
//!  st<pid>x<n>h  10.201.X.Y+1/30 ── veth ── st<pid>x<n>n  10.201.X.Y+2/30
//! ```
//!
//! Run a process inside with [`NetNs::exec_prefix`] (`ip netns exec NAME ...`; a
//! [`TansuBroker`](crate::TansuBroker) started with
//! [`BrokerOptions::netns`](crate::BrokerOptions::netns) does) and reach it from the host
//! at [`NetNs::ns_ip`]. Dropping the value deletes the namespace and both veth ends, also
//! when a test panics. Needs root and iproute2 ([`NetNs::check_available`] says clearly
//! why not); the kernel's `netem` qdisc is not assumed (delay and loss come from the
//! [`FaultProxy`](crate::FaultProxy)).

use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::error::{Error, Result, io};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Where a process in a namespace runs: its name and the namespace side's address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The namespace name (for `ip netns exec`).
    pub name: String,
    /// The address of the namespace's veth end.
    pub ip: Ipv4Addr,
}

/// A token bucket (`tc qdisc add dev DEV root tbf rate R burst B latency L`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tbf {
    /// Rate in kbit/s (8000 = 1 MB/s).
    pub rate_kbit: u32,
    /// Bucket size in kbit.
    pub burst_kbit: u32,
    /// How long a packet may wait in the queue, in ms (later ones are dropped).
    pub latency_ms: u32,
}

impl Tbf {
    /// 1 MiB/s (8 mbit), the issue's slow target: burst 32 kbit, latency 400 ms.
    pub fn one_mib_per_second() -> Tbf {
        Tbf {
            rate_kbit: 8 * 1024,
            burst_kbit: 32,
            latency_ms: 400,
        }
    }
}

/// Which end of the veth pair a [`Tbf`] shapes (each shapes what it sends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The host end: traffic from the host into the namespace.
    Host,
    /// The namespace end: traffic from the namespace out to the host.
    Namespace,
}

/// A network namespace with a veth pair to the host; deleted on drop. See the
/// [module docs](self).
#[derive(Debug)]
pub struct NetNs {
    name: String,
    host_if: String,
    ns_if: String,
    host_ip: Ipv4Addr,
    ns_ip: Ipv4Addr,
}

/// Runs a command; its stdout, or an [`Error::Netns`].
fn run(args: &[&str]) -> Result<String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(io(format!("running {}", args[0])))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(Error::Netns {
            command: args.join(" "),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

impl NetNs {
    /// Whether namespaces can be made here: root, and `ip netns list` works.
    pub fn check_available() -> Result<()> {
        let uid = run(&["id", "-u"]).map_err(|e| Error::NetnsUnavailable {
            reason: format!("`id -u` failed: {e}"),
        })?;
        if uid.trim() != "0" {
            return Err(Error::NetnsUnavailable {
                reason: format!("running as uid {}, not root", uid.trim()),
            });
        }
        run(&["ip", "netns", "list"]).map_err(|e| Error::NetnsUnavailable {
            reason: e.to_string(),
        })?;
        Ok(())
    }

    /// Creates a namespace and a veth pair on a free private /30 (10.201.0.0/16), both
    /// ends up, and loopback up inside.
    pub fn create() -> Result<NetNs> {
        Self::check_available()?;
        let pid = std::process::id();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let used = run(&["ip", "-4", "-o", "addr", "show"])?;
        // A /30 per namespace: 64 per third octet; the pid spreads parallel test processes.
        let (host_ip, ns_ip) = (0..16_384u32)
            .map(|k| (pid.wrapping_mul(64).wrapping_add(n).wrapping_add(k)) % 16_384)
            .map(|slot| {
                let (third, fourth) = ((slot / 64) as u8, ((slot % 64) * 4) as u8);
                (
                    Ipv4Addr::new(10, 201, third, fourth + 1),
                    Ipv4Addr::new(10, 201, third, fourth + 2),
                )
            })
            .find(|(h, s)| !used.contains(&format!("{h}/")) && !used.contains(&format!("{s}/")))
            .ok_or_else(|| Error::NetnsUnavailable {
                reason: "no free /30 in 10.201.0.0/16".into(),
            })?;
        let ns = NetNs {
            name: format!("strait-{pid}-{n}"),
            host_if: format!("st{pid:x}x{n}h"),
            ns_if: format!("st{pid:x}x{n}n"),
            host_ip,
            ns_ip,
        };
        // From here on, drop cleans up whatever was made.
        run(&["ip", "netns", "add", &ns.name])?;
        run(&[
            "ip",
            "link",
            "add",
            &ns.host_if,
            "type",
            "veth",
            "peer",
            "name",
            &ns.ns_if,
        ])?;
        run(&["ip", "link", "set", &ns.ns_if, "netns", &ns.name])?;
        run(&[
            "ip",
            "addr",
            "add",
            &format!("{}/30", ns.host_ip),
            "dev",
            &ns.host_if,
        ])?;
        run(&["ip", "link", "set", &ns.host_if, "up"])?;
        ns.in_ns(&[
            "ip",
            "addr",
            "add",
            &format!("{}/30", ns.ns_ip),
            "dev",
            &ns.ns_if,
        ])?;
        ns.in_ns(&["ip", "link", "set", &ns.ns_if, "up"])?;
        ns.in_ns(&["ip", "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    fn in_ns(&self, args: &[&str]) -> Result<String> {
        let mut all = vec!["ip", "netns", "exec", &self.name];
        all.extend_from_slice(args);
        run(&all)
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The host end's interface name.
    pub fn host_interface(&self) -> &str {
        &self.host_if
    }

    /// The host end's address.
    pub fn host_ip(&self) -> Ipv4Addr {
        self.host_ip
    }

    /// The namespace end's address: where the host reaches processes inside.
    pub fn ns_ip(&self) -> Ipv4Addr {
        self.ns_ip
    }

    /// Where a process inside runs (for [`BrokerOptions::netns`](crate::BrokerOptions::netns)).
    pub fn place(&self) -> Place {
        Place {
            name: self.name.clone(),
            ip: self.ns_ip,
        }
    }

    /// `["ip", "netns", "exec", NAME]`: prefix a command line with it to run it inside.
    pub fn exec_prefix(&self) -> Vec<String> {
        exec_prefix(&self.name)
    }

    /// Shapes what `side` sends with a token bucket (replacing any earlier one).
    pub fn limit_rate(&self, side: Side, tbf: &Tbf) -> Result<()> {
        let (rate, burst, latency) = (
            format!("{}kbit", tbf.rate_kbit),
            format!("{}kbit", tbf.burst_kbit),
            format!("{}ms", tbf.latency_ms),
        );
        let args = [
            "tc", "qdisc", "replace", "dev", "", "root", "tbf", "rate", &rate, "burst", &burst,
            "latency", &latency,
        ];
        match side {
            Side::Host => {
                let mut a = args;
                a[4] = &self.host_if;
                run(&a).map(drop)
            }
            Side::Namespace => {
                let mut a = args;
                a[4] = &self.ns_if;
                self.in_ns(&a).map(drop)
            }
        }
    }

    /// Removes the shaping of `side`.
    pub fn unlimit(&self, side: Side) -> Result<()> {
        match side {
            Side::Host => run(&["tc", "qdisc", "del", "dev", &self.host_if, "root"]).map(drop),
            Side::Namespace => self
                .in_ns(&["tc", "qdisc", "del", "dev", &self.ns_if, "root"])
                .map(drop),
        }
    }

    /// `ip link set HOST_END up|down`: down cuts the link (packets are dropped, sockets
    /// stay open: a network partition, not a reset).
    pub fn set_link(&self, up: bool) -> Result<()> {
        run(&[
            "ip",
            "link",
            "set",
            &self.host_if,
            if up { "up" } else { "down" },
        ])
        .map(drop)
    }
}

/// `["ip", "netns", "exec", name]`.
pub(crate) fn exec_prefix(name: &str) -> Vec<String> {
    ["ip", "netns", "exec", name]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

impl Drop for NetNs {
    fn drop(&mut self) {
        // Deleting the namespace deletes the veth end inside it, and so the pair; the
        // host end is deleted explicitly in case the move into the namespace never
        // happened. Errors mean it is already gone.
        let _ = run(&["ip", "netns", "del", &self.name]);
        let _ = run(&["ip", "link", "del", &self.host_if]);
    }
}
