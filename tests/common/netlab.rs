//! A private network of "nodes" on this machine: one network namespace per node, each joined
//! by a veth pair to a bridge in a switch namespace, with the kernel's token-bucket shaper
//! (tbf) on each node's outgoing side. Everything is created under a name unique to this test
//! process and deleted when the lab is dropped; no traffic leaves the namespaces it made.
//!
//! Needs root and iproute2 (`ip`, `tc`). [`NetLab::unavailable`] says why a lab cannot be made
//! here, so that tests can skip with that reason.

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// One node of the lab: its namespace, device and address.
pub struct Node {
    pub netns: String,
    pub dev: String,
    pub ip: String,
}

/// The lab; dropped, it deletes every namespace it made (which deletes their devices).
pub struct NetLab {
    pub nodes: Vec<Node>,
    switch: String,
    made: Vec<String>,
}

fn run(args: &[&str]) -> Output {
    Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {args:?}: {e}"))
}

/// Runs a setup command and insists that it worked.
fn must(args: &[&str]) {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn found(tool: &str) -> bool {
    ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        .iter()
        .any(|d| Path::new(d).join(tool).exists())
}

impl NetLab {
    /// Why no lab can be made here, if it cannot.
    pub fn unavailable() -> Option<String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Some("needs root (network namespaces and tc)".into());
        }
        if !found("ip") || !found("tc") {
            return Some("needs iproute2 (ip, tc): apt-get install iproute2".into());
        }
        static PROBES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let probe = format!("cbprobe{}x{n}", std::process::id());
        let out = run(&["ip", "netns", "add", &probe]);
        if !out.status.success() {
            return Some(format!(
                "cannot create a network namespace: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        run(&["ip", "netns", "del", &probe]);
        None
    }

    /// A lab of `rates_mbit.len()` nodes; node i sends at most `rates_mbit[i]` Mbit/s, with a
    /// bucket of `burst` (tc syntax, e.g. "32kb"). Addresses 10.77.<net>.(i + 1)/24.
    pub fn new(rates_mbit: &[u32], burst: &str) -> NetLab {
        let tag = format!("cb{}", std::process::id() % 100_000);
        let net = std::process::id() % 200 + 20;
        let switch = format!("{tag}sw");
        let mut lab = NetLab {
            nodes: Vec::new(),
            switch: switch.clone(),
            made: Vec::new(),
        };
        lab.add_netns(&switch);
        must(&["ip", "-n", &switch, "link", "add", "br0", "type", "bridge"]);
        must(&["ip", "-n", &switch, "link", "set", "br0", "up"]);
        for (i, rate) in rates_mbit.iter().enumerate() {
            let node = lab.add_node(&tag, net, i);
            lab.shape(&node, *rate, burst);
            lab.nodes.push(node);
        }
        lab
    }

    fn add_netns(&mut self, name: &str) {
        must(&["ip", "netns", "add", name]);
        self.made.push(name.to_string());
        must(&["ip", "-n", name, "link", "set", "lo", "up"]);
    }

    fn add_node(&mut self, tag: &str, net: u32, i: usize) -> Node {
        let netns = format!("{tag}n{i}");
        let (dev, port) = (format!("{tag}d{i}"), format!("{tag}p{i}"));
        let ip = format!("10.77.{net}.{}", i + 1);
        self.add_netns(&netns);
        must(&[
            "ip", "link", "add", &dev, "type", "veth", "peer", "name", &port,
        ]);
        must(&["ip", "link", "set", &dev, "netns", &netns]);
        must(&["ip", "link", "set", &port, "netns", &self.switch]);
        must(&[
            "ip",
            "-n",
            &self.switch,
            "link",
            "set",
            &port,
            "master",
            "br0",
            "up",
        ]);
        must(&[
            "ip",
            "-n",
            &netns,
            "addr",
            "add",
            &format!("{ip}/24"),
            "dev",
            &dev,
        ]);
        must(&["ip", "-n", &netns, "link", "set", &dev, "up"]);
        Node { netns, dev, ip }
    }

    /// Puts a tbf shaper on the node's outgoing side.
    fn shape(&self, node: &Node, rate_mbit: u32, burst: &str) {
        let rate = format!("{rate_mbit}mbit");
        must(&[
            "ip",
            "netns",
            "exec",
            &node.netns,
            "tc",
            "qdisc",
            "replace",
            "dev",
            &node.dev,
            "root",
            "tbf",
            "rate",
            &rate,
            "burst",
            burst,
            "latency",
            "200ms",
        ]);
    }

    /// (bytes, packets) the node's shaper has sent.
    pub fn sent(&self, i: usize) -> (u64, u64) {
        let n = &self.nodes[i];
        let out = run(&[
            "ip", "netns", "exec", &n.netns, "tc", "-s", "-j", "qdisc", "show", "dev", &n.dev,
        ]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "tc -j output: {e}: {}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        let q = &v[0];
        (q["bytes"].as_u64().unwrap(), q["packets"].as_u64().unwrap())
    }

    /// A command that runs `program args...` inside node `i`'s namespace.
    pub fn command(&self, i: usize, program: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.nodes[i].netns, program])
            .args(args);
        cmd
    }
}

impl Drop for NetLab {
    fn drop(&mut self) {
        for ns in self.made.iter().rev() {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stdin(Stdio::null())
                .output();
        }
    }
}
