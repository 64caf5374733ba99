//! What the peers of the informer benchmark (`kubekit-bench informer`) share, so that
//! kubekit's peer and kube-rs's measure and report the same way: their command line, the
//! process's CPU time and memory read from `/proc`, the timing of the watch updates, and
//! the two lines each peer prints on stdout for the orchestrator:
//!
//! ```text
//! synced {"client":"kubekit","objects":N,"sync_seconds":S,"cpu_seconds":C,"rss_bytes":R,"peak_rss_bytes":P}
//! updated {"client":"kubekit","updates":M,"seconds":T,"events_per_second":E,"cpu_seconds":C,"rss_bytes":R,"peak_rss_bytes":P}
//! ```
//!
//! client-go's peer (`bench/go/informer`) prints the same lines. The crate depends on
//! serde, kube's core and k8s-openapi (for [`widget::Widget`], the custom resource of
//! `--resource widgets`), not on kubekit, so the kube-rs peer stays independent of it. It also holds the
//! `main` of kubekit's benchmark programs, whose first argument names a subcommand
//! ([`main_with_subcommands`]).

use std::fmt;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use serde::{Deserialize, Serialize};

pub mod widget;

/// What a peer's informer caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    /// Every Pod (the default).
    #[default]
    Pods,
    /// Every Deployment (apps/v1).
    Deployments,
    /// Every ConfigMap.
    ConfigMaps,
    /// Every Secret.
    Secrets,
    /// Every Event (core/v1).
    Events,
    /// Every Node.
    Nodes,
    /// Every [`widget::Widget`] (`--resource widgets`).
    Widgets,
}

impl Kind {
    /// Every kind, in the order of `--resource`'s help.
    pub const ALL: [Kind; 7] = [
        Kind::Pods,
        Kind::Deployments,
        Kind::ConfigMaps,
        Kind::Secrets,
        Kind::Events,
        Kind::Nodes,
        Kind::Widgets,
    ];

    /// The resource's plural name, as `--resource` takes it.
    pub fn resource(self) -> &'static str {
        match self {
            Kind::Pods => "pods",
            Kind::Deployments => "deployments",
            Kind::ConfigMaps => "configmaps",
            Kind::Secrets => "secrets",
            Kind::Events => "events",
            Kind::Nodes => "nodes",
            Kind::Widgets => widget::PLURAL,
        }
    }

    /// The API group and version that serve it (`""` for the core group).
    pub fn group_version(self) -> (&'static str, &'static str) {
        match self {
            Kind::Deployments => ("apps", "v1"),
            Kind::Widgets => (widget::GROUP, widget::VERSION),
            _ => ("", "v1"),
        }
    }

    /// Whether its objects live in namespaces.
    pub fn namespaced(self) -> bool {
        self != Kind::Nodes
    }

    /// The kind named `resource` (`--resource`'s value).
    pub fn parse(resource: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.resource() == resource)
            .ok_or_else(|| {
                let known: Vec<_> = Self::ALL.iter().map(|k| k.resource()).collect();
                format!("--resource {resource:?}: one of {}", known.join(", "))
            })
    }
}

/// The API server a peer syncs from.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A plain-HTTP server with no credentials (the replay server): `--server URL`.
    Server(String),
    /// A real cluster: `--kubeconfig PATH`.
    Kubeconfig(PathBuf),
}

/// A peer's command line: `(--server URL | --kubeconfig PATH) [--updates M]`.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerOptions {
    /// Where to sync from.
    pub target: Target,
    /// MODIFIED events to wait for after the sync (0: exit once synced).
    pub updates: u64,
    /// What to cache.
    pub kind: Kind,
}

impl PeerOptions {
    /// The usage line of a peer program.
    pub const USAGE: &'static str = "(--server URL | --kubeconfig PATH) [--updates M] [--resource pods|deployments|configmaps|secrets|events|nodes|widgets]";

    /// Parses the arguments that follow the program name (or subcommand).
    pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut target = None;
        let mut updates = 0;
        let mut kind = Kind::Pods;
        while let Some(arg) = args.next() {
            let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
            let new_target = match arg.as_str() {
                "--server" => Target::Server(value("--server")?),
                "--kubeconfig" => Target::Kubeconfig(PathBuf::from(value("--kubeconfig")?)),
                "--updates" => {
                    updates = value("--updates")?
                        .parse()
                        .map_err(|e| format!("--updates: {e}"))?;
                    continue;
                }
                "--resource" => {
                    kind = Kind::parse(&value("--resource")?)?;
                    continue;
                }
                other => return Err(format!("unknown option {other:?}")),
            };
            if target.replace(new_target).is_some() {
                return Err("give one of --server and --kubeconfig, once".into());
            }
        }
        Ok(Self {
            target: target.ok_or("one of --server and --kubeconfig is required")?,
            updates,
            kind,
        })
    }
}

/// The process's resource usage at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    /// User plus system CPU time of every thread, in seconds.
    pub cpu_seconds: f64,
    /// Resident memory (`VmRSS`), in bytes.
    pub rss_bytes: u64,
    /// The resident memory's high-water mark (`VmHWM`), in bytes.
    pub peak_rss_bytes: u64,
}

/// Clock ticks per second of `/proc/<pid>/stat`'s times (`sysconf(_SC_CLK_TCK)`: 100 on
/// every Linux architecture the benchmark runs on).
const CLOCK_TICKS_PER_SECOND: f64 = 100.0;

impl Usage {
    /// Reads this process's usage from `/proc/self/stat` and `/proc/self/status`.
    pub fn now() -> io::Result<Self> {
        Self::read("/proc/self")
    }

    /// Reads another process's usage from `/proc/<pid>`.
    pub fn of_process(pid: u32) -> io::Result<Self> {
        Self::read(&format!("/proc/{pid}"))
    }

    fn read(proc_dir: &str) -> io::Result<Self> {
        let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
        let stat = std::fs::read_to_string(format!("{proc_dir}/stat"))?;
        let status = std::fs::read_to_string(format!("{proc_dir}/status"))?;
        let cpu_seconds =
            cpu_seconds(&stat).ok_or_else(|| invalid(&format!("unreadable {proc_dir}/stat")))?;
        let field = |name| {
            status_bytes(&status, name)
                .ok_or_else(|| invalid(&format!("no {name} in {proc_dir}/status")))
        };
        Ok(Self {
            cpu_seconds,
            rss_bytes: field("VmRSS")?,
            peak_rss_bytes: field("VmHWM")?,
        })
    }
}

/// utime + stime of a `/proc/<pid>/stat` line, in seconds. The fields are counted after
/// the command name, which is in parentheses and may itself hold spaces or parentheses.
fn cpu_seconds(stat: &str) -> Option<f64> {
    let (_, after_name) = stat.rsplit_once(')')?;
    // After the name come field 3 (state) onwards; utime and stime are fields 14 and 15.
    let mut fields = after_name.split_whitespace().skip(14 - 3);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / CLOCK_TICKS_PER_SECOND)
}

/// A `Name:   1234 kB` field of `/proc/<pid>/status`, in bytes.
fn status_bytes(status: &str, name: &str) -> Option<u64> {
    let value = status
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))?;
    let kib: u64 = value.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

/// The payload of a `synced` line: the informer's cache holds every object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Synced {
    /// `kubekit`, `kube-rs` or `client-go`.
    pub client: String,
    /// Objects in the cache once synced.
    pub objects: u64,
    /// Seconds from just before the informer started to the end of its sync.
    pub sync_seconds: f64,
    /// The process's CPU seconds at that moment.
    pub cpu_seconds: f64,
    /// `VmRSS` at that moment, in bytes.
    pub rss_bytes: u64,
    /// `VmHWM` at that moment, in bytes.
    pub peak_rss_bytes: u64,
}

impl Synced {
    /// The report of `client`, with `usage` measured before `objects` were counted.
    pub fn new(client: &str, objects: usize, sync_seconds: f64, usage: Usage) -> Self {
        Self {
            client: client.into(),
            objects: objects as u64,
            sync_seconds,
            cpu_seconds: usage.cpu_seconds,
            rss_bytes: usage.rss_bytes,
            peak_rss_bytes: usage.peak_rss_bytes,
        }
    }
}

/// The payload of an `updated` line: the M watch updates have reached the handler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Updated {
    /// `kubekit`, `kube-rs` or `client-go`.
    pub client: String,
    /// Updates counted (M).
    pub updates: u64,
    /// Seconds from the first counted update to the M-th.
    pub seconds: f64,
    /// (M - 1) / seconds; 0 when that is undefined.
    pub events_per_second: f64,
    /// The process's CPU seconds after the M-th update.
    pub cpu_seconds: f64,
    /// `VmRSS` after the M-th update, in bytes.
    pub rss_bytes: u64,
    /// `VmHWM` after the M-th update, in bytes.
    pub peak_rss_bytes: u64,
}

impl Updated {
    /// The report of `client` for `updates` updates spread over `seconds`.
    pub fn new(client: &str, updates: u64, seconds: f64, usage: Usage) -> Self {
        let events_per_second = if updates > 1 && seconds > 0.0 {
            (updates - 1) as f64 / seconds
        } else {
            0.0
        };
        Self {
            client: client.into(),
            updates,
            seconds,
            events_per_second,
            cpu_seconds: usage.cpu_seconds,
            rss_bytes: usage.rss_bytes,
            peak_rss_bytes: usage.peak_rss_bytes,
        }
    }
}

/// One line of a peer's stdout.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// `synced {...}`
    Synced(Synced),
    /// `updated {...}`
    Updated(Updated),
}

impl Line {
    /// Parses a line (without its newline); the error says what is wrong with it.
    pub fn parse(line: &str) -> Result<Self, String> {
        let (tag, json) = line
            .split_once(' ')
            .ok_or_else(|| format!("not `synced {{json}}` or `updated {{json}}`: {line:?}"))?;
        let bad = |e: serde_json::Error| format!("malformed {tag} line ({e}): {line:?}");
        match tag {
            "synced" => serde_json::from_str(json).map(Line::Synced).map_err(bad),
            "updated" => serde_json::from_str(json).map(Line::Updated).map_err(bad),
            _ => Err(format!("unknown line {line:?}")),
        }
    }

    /// Prints the line on stdout and flushes it.
    pub fn emit(&self) -> io::Result<()> {
        let mut out = io::stdout().lock();
        writeln!(out, "{self}")?;
        out.flush()
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (tag, json) = match self {
            Line::Synced(s) => ("synced", serde_json::to_string(s)),
            Line::Updated(u) => ("updated", serde_json::to_string(u)),
        };
        write!(f, "{tag} {}", json.map_err(|_| fmt::Error)?)
    }
}

/// Prints a peer's `synced` line: measures the process first, then counts the objects
/// (so that counting them does not show in the figures).
pub fn report_synced(
    client: &str,
    sync_seconds: f64,
    objects: impl FnOnce() -> usize,
) -> Result<(), String> {
    let usage = Usage::now().map_err(|e| format!("reading /proc: {e}"))?;
    let report = Synced::new(client, objects(), sync_seconds, usage);
    Line::Synced(report)
        .emit()
        .map_err(|e| format!("writing stdout: {e}"))
}

/// Prints a peer's `updated` line for `updates` updates spread over `seconds`.
pub fn report_updated(client: &str, updates: u64, seconds: f64) -> Result<(), String> {
    let usage = Usage::now().map_err(|e| format!("reading /proc: {e}"))?;
    let report = Updated::new(client, updates, seconds, usage);
    Line::Updated(report)
        .emit()
        .map_err(|e| format!("writing stdout: {e}"))
}

/// Times the updates a peer counts: the first one and the target-th.
#[derive(Debug)]
pub struct UpdateTimer {
    target: u64,
    counted: u64,
    first: Option<Instant>,
}

impl UpdateTimer {
    /// A timer that completes at the `target`-th update.
    pub fn new(target: u64) -> Self {
        Self {
            target,
            counted: 0,
            first: None,
        }
    }

    /// Counts one update seen at `at`. Returns the seconds from the first update to this
    /// one when this is the target-th; updates past the target are not counted.
    pub fn record(&mut self, at: Instant) -> Option<f64> {
        if self.counted >= self.target {
            return None;
        }
        self.counted += 1;
        let first = *self.first.get_or_insert(at);
        (self.counted == self.target).then(|| at.duration_since(first).as_secs_f64())
    }
}

/// The arguments after a program's subcommand.
pub type SubcommandArgs = std::iter::Skip<std::env::Args>;

/// The `main` of a program whose first argument names a subcommand: `dispatch` runs the
/// one named (`None`: there is no such subcommand); `-h`, `--help` and `help` print
/// `usage`. A missing or unknown subcommand, and a subcommand's failure, are printed on
/// stderr with exit status 2.
pub fn main_with_subcommands(
    usage: &str,
    dispatch: impl FnOnce(&str, SubcommandArgs) -> Option<Result<(), String>>,
) -> ExitCode {
    let mut args = std::env::args().skip(1);
    let result = match args.next() {
        Some(help) if matches!(help.as_str(), "-h" | "--help" | "help") => {
            println!("{usage}");
            return ExitCode::SUCCESS;
        }
        Some(name) => dispatch(&name, args)
            .unwrap_or_else(|| Err(format!("unknown subcommand {name:?}\n{usage}"))),
        None => Err(usage.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn args(line: &str) -> impl Iterator<Item = String> {
        line.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn options() {
        let o = PeerOptions::parse(args("--server http://127.0.0.1:1 --updates 5")).unwrap();
        assert_eq!(o.target, Target::Server("http://127.0.0.1:1".into()));
        assert_eq!(o.updates, 5);
        let o = PeerOptions::parse(args("--kubeconfig /k")).unwrap();
        assert_eq!(o.target, Target::Kubeconfig("/k".into()));
        assert_eq!(o.updates, 0);
        assert_eq!(o.kind, Kind::Pods);
        let o = PeerOptions::parse(args("--kubeconfig /k --resource configmaps")).unwrap();
        assert_eq!(o.kind, Kind::ConfigMaps);
        for bad in [
            "",
            "--kubeconfig /k --resource configmap",
            "--updates 3",
            "--server a --kubeconfig b",
            "--server",
            "--server a --updates x",
            "--what",
        ] {
            assert!(PeerOptions::parse(args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn every_kind_is_parsed_from_its_resource_name() {
        for kind in Kind::ALL {
            assert_eq!(Kind::parse(kind.resource()), Ok(kind));
        }
        let e = Kind::parse("Pods").unwrap_err();
        assert!(e.contains("pods, deployments"), "{e}");
    }

    #[test]
    fn proc_parsing() {
        let stat = "42 (a (weird) name) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0";
        assert_eq!(cpu_seconds(stat), Some(3.0));
        assert_eq!(cpu_seconds("42 (x) S 1"), None);
        let status = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t    10 kB\n";
        assert_eq!(status_bytes(status, "VmRSS"), Some(10 * 1024));
        assert_eq!(status_bytes(status, "VmHWM"), Some(2048 * 1024));
        assert_eq!(status_bytes(status, "VmSwap"), None);
        let usage = Usage::now().unwrap();
        assert!(usage.rss_bytes > 0 && usage.peak_rss_bytes >= usage.rss_bytes);
    }

    #[test]
    fn lines_round_trip() {
        let usage = Usage {
            cpu_seconds: 1.5,
            rss_bytes: 10,
            peak_rss_bytes: 20,
        };
        let synced = Line::Synced(Synced::new("kube-rs", 7, 0.25, usage));
        let text = synced.to_string();
        assert_eq!(
            text,
            r#"synced {"client":"kube-rs","objects":7,"sync_seconds":0.25,"cpu_seconds":1.5,"rss_bytes":10,"peak_rss_bytes":20}"#
        );
        assert_eq!(Line::parse(&text).unwrap(), synced);
        let updated = Line::Updated(Updated::new("kubekit", 11, 2.0, usage));
        let Line::Updated(u) = Line::parse(&updated.to_string()).unwrap() else {
            panic!("not an updated line");
        };
        assert_eq!(u.events_per_second, 5.0);
        assert_eq!(Updated::new("x", 1, 2.0, usage).events_per_second, 0.0);
        // client-go's encoding of the same figures parses as well.
        let go = r#"updated {"client":"client-go","updates":2,"seconds":0.5,"events_per_second":2,"cpu_seconds":3,"rss_bytes":4,"peak_rss_bytes":5}"#;
        assert!(matches!(Line::parse(go), Ok(Line::Updated(_))));
    }

    #[test]
    fn garbage_lines() {
        for bad in [
            "",
            "synced",
            "hello world",
            "synced {}",
            "synced {\"client\":\"x\"",
            r#"updated {"client":"x","updates":-1,"seconds":0,"events_per_second":0,"cpu_seconds":0,"rss_bytes":0,"peak_rss_bytes":0}"#,
            r#"synced {"client":"x","objects":1,"sync_seconds":1,"cpu_seconds":1,"rss_bytes":1,"peak_rss_bytes":1,"extra":1}"#,
        ] {
            assert!(Line::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn update_timer() {
        let start = Instant::now();
        let mut timer = UpdateTimer::new(3);
        assert_eq!(timer.record(start), None);
        assert_eq!(timer.record(start + Duration::from_secs(1)), None);
        assert_eq!(timer.record(start + Duration::from_secs(4)), Some(4.0));
        assert_eq!(timer.record(start + Duration::from_secs(5)), None);
        assert_eq!(UpdateTimer::new(1).record(start), Some(0.0));
    }
}
