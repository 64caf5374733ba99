//! Replicas of the App controller electing a leader: each process with its log in a file,
//! the times of what it logged, and the Lease they compete for.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kubekit::clientset::{GetOptions, ResourceClient};
use testenv::eventually;

use super::Controller;

/// Leader election timings of the replicas.
pub const LEASE: Duration = Duration::from_secs(4);
pub const RETRY: Duration = Duration::from_millis(500);
/// The longest a waiting candidate sleeps between attempts: client-go's jitter adds up to
/// 1.2 retry periods to each.
pub const MAX_ATTEMPT_GAP: Duration = Duration::from_millis(1100);

/// One replica with `--leader-elect`, logging to a file.
pub struct Replica {
    pub process: Controller,
    pub log: std::path::PathBuf,
    pub identity: String,
}

impl Replica {
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The identity the replica logs once it waits for leadership.
    pub async fn logged_identity(&self) -> String {
        eventually(30, "the replica's identity in its log", || async {
            let log = self.log();
            let line = log.lines().find(|l| l.contains("waiting for leadership"))?;
            let identity = line.split("identity=").nth(1)?.split_whitespace().next()?;
            Some(identity.to_string())
        })
        .await
    }

    /// The timestamps of the log lines containing `what`.
    pub fn times(&self, what: &str) -> Vec<Timestamp> {
        self.log()
            .lines()
            .filter(|l| l.contains(what))
            .map(|l| {
                let stamp = l.split_whitespace().next().unwrap_or_default();
                stamp
                    .parse()
                    .unwrap_or_else(|e| panic!("timestamp of {l:?}: {e}"))
            })
            .collect()
    }

    /// When it led: (started, stopped) per period; `killed_at` ends an open period.
    pub fn active_periods(&self, killed_at: Option<Timestamp>) -> Vec<(Timestamp, Timestamp)> {
        let starts = self.times("started leading");
        let mut stops = self.times("stopped leading: controllers stopped");
        stops.extend(killed_at.filter(|_| stops.len() < starts.len()));
        assert_eq!(
            starts.len(),
            stops.len(),
            "{}: unended leadership",
            self.identity
        );
        starts.into_iter().zip(stops).collect()
    }
}

/// The Lease's holder, or "" when it is free or missing.
pub async fn holder(leases: &ResourceClient<Lease>) -> String {
    let lease = leases.get("app-controller", &GetOptions::default()).await;
    lease
        .ok()
        .and_then(|l| l.spec?.holder_identity)
        .unwrap_or_default()
}

/// Starts a replica with `--leader-elect` on the Lease in `lease_ns`, watching `ns`, its
/// log `<name>.log` in `dir`.
pub fn spawn_replica(
    kubeconfig: &std::path::Path,
    ns: &str,
    lease_ns: &str,
    dir: &std::path::Path,
    name: &str,
) -> Replica {
    let log = dir.join(format!("{name}.log"));
    let file = std::fs::File::create(&log).unwrap();
    let (lease, retry) = (
        format!("{}s", LEASE.as_secs()),
        format!("{}ms", RETRY.as_millis()),
    );
    let flags = [
        "--leader-elect",
        "--leader-elect-namespace",
        lease_ns,
        "--leader-elect-lease-duration",
        &lease,
        "--leader-elect-renew-deadline",
        "3s",
        "--leader-elect-retry-period",
        &retry,
        "--health-probe-bind-address",
        "0",
    ];
    Replica {
        process: Controller::start_with(kubeconfig, ns, &flags, file.into()),
        log,
        identity: String::new(),
    }
}

/// [`spawn_replica`], then waits for its identity.
pub async fn start_replica(
    kubeconfig: &std::path::Path,
    ns: &str,
    lease_ns: &str,
    dir: &std::path::Path,
    name: &str,
) -> Replica {
    let mut replica = spawn_replica(kubeconfig, ns, lease_ns, dir, name);
    replica.identity = replica.logged_identity().await;
    replica
}
