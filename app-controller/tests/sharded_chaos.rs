//! Sharded App controller replicas under chaos: the real binary on the real control plane,
//! watching every namespace (so this is its own test binary: its control planes serve
//! nothing else), splitting Apps by uid over Leases of 4 s (renew deadline 3 s, retry
//! 500 ms). By default 30 Apps in 6 namespaces first (66 by the end), what CI affords;
//! `KUBEKIT_SHARD_CHAOS_SCALE=full` runs the scale of the issue: 300 Apps in 30 namespaces
//! first (450 by the end), every wait's time limit multiplied by ten, on control planes
//! whose Services get cluster IPs from a range wider than the default /24 (253 IPs):
//! `KUBEKIT_SERVICE_CIDR=10.0.0.0/16 KUBEKIT_SHARD_CHAOS_SCALE=full cargo test -p
//! app-controller --test sharded_chaos`.
//!
//! Three replicas start. Once the first Apps converged, each replica's `/metrics` shows its
//! share of the caches: its App informer holds the Apps whose uid hashes into its third
//! (the three add up to every App; each within the bounds of a binomial draw, see
//! [`share_bounds`]), and its Deployment and Service informers hold its Apps' children
//! (with uid sharding an owned object follows its controller's uid, see
//! `kubekit::manager::sharding`) and those nobody controls. Then one
//! is SIGKILLed (its ranges are taken once its Lease expired, within lease duration + retry
//! period of the kill), one SIGTERMed (it releases
//! its Lease), a fourth joins, and one is SIGSTOPped while it reconciles a burst of Apps,
//! past its lease, then resumed (SIGCONT). Apps are created after each step and every one
//! converges (its Deployment exists); the time from each signal (or the join) to the last
//! range taken is printed.
//!
//! From every replica's log (`reconcile started` / `reconcile ended`): no App is reconciled
//! by two replicas at overlapping times, with one exception that is the point of the
//! fence: a reconcile of the paused replica that was running when it was stopped ends only
//! after it resumed; its writes after its renew deadline are refused unsent by the fence
//! (counted from its log), so such a span is counted as ending at SIGSTOP; a reconcile of
//! the SIGKILLed replica that was running never logs its end, and ends at the kill. The resumed
//! replica starts no reconcile before it has taken ranges again.
//!
//! The scenario runs twice, each on a control plane of its own, one after the other: with
//! the `ShardedListAndWatch` feature gate on (kube-apiserver filters the App informers'
//! lists and watches: no reflector drops an App) and off (the reflectors filter alone:
//! `reflector_shard_server_filtered` is 0 and each drops the Apps of the other shards).
//! With the gate on that metric is 0 too: kube-apiserver 1.37.2 filters a custom
//! resource's list without echoing the selector in it (no `metadata.shardInfo`), so the
//! reflector cannot tell (see [`caches`]).

// Shared with the other test binaries, which use the helpers this one does not.
#[allow(dead_code)]
mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kubekit::clientset::{Clientset, ListOptions};
use kubekit::meta::controller_of;
use kubekit::rest::RestConfig;
use testenv::{ControlPlane, eventually, eventually_ok};

use common::{
    Controller, Spans, apps_manifest, free_address, install, kubectl_apply, reconciles, short_lease,
};

/// Lease timing of the ring (the replicas' flags).
const LEASE_DURATION: Duration = Duration::from_secs(4);
const RETRY_PERIOD: Duration = Duration::from_millis(500);

/// How many Apps, and how long waits may take.
#[derive(Clone, Copy, Debug)]
struct Scale {
    namespaces: usize,
    /// Apps per namespace created first, with three replicas.
    first: usize,
    /// What every wait's time limit is multiplied by.
    factor: u64,
}

impl Scale {
    /// `KUBEKIT_SHARD_CHAOS_SCALE=full`: the issue's 300 Apps in 30 namespaces; else (unset
    /// or `ci`) 30 Apps in 6.
    fn from_env() -> Self {
        match std::env::var("KUBEKIT_SHARD_CHAOS_SCALE").as_deref() {
            Ok("full") => {
                assert!(
                    std::env::var_os("KUBEKIT_SERVICE_CIDR").is_some(),
                    "KUBEKIT_SHARD_CHAOS_SCALE=full needs more than the 253 Services of the \
                     control plane's default range: set KUBEKIT_SERVICE_CIDR=10.0.0.0/16"
                );
                Scale {
                    namespaces: 30,
                    first: 10,
                    factor: 10,
                }
            }
            Ok("" | "ci") | Err(_) => Scale {
                namespaces: 6,
                first: 5,
                factor: 1,
            },
            Ok(other) => panic!("KUBEKIT_SHARD_CHAOS_SCALE={other:?}: `full` or `ci`"),
        }
    }

    /// The time limit of a wait that takes at most `secs` at the default scale.
    fn secs(&self, secs: u64) -> u64 {
        secs * self.factor
    }
}

/// Waits until the namespaces hold `count` Deployments between them.
async fn deployments(
    admin: &Clientset,
    namespaces: &[String],
    count: usize,
    secs: u64,
    what: &str,
) {
    eventually(secs, what, || async {
        let mut n = 0;
        for ns in namespaces {
            let list = admin
                .apps_v1()
                .deployments(ns)
                .list(&ListOptions::default())
                .await
                .ok()?;
            n += list.items.len();
        }
        (n == count).then_some(())
    })
    .await;
}

/// The text of `http://<address>/metrics`, or why not.
fn scrape(address: SocketAddr) -> Result<String, String> {
    let out = Command::new("curl")
        .args(["-sf", "--max-time", "5"])
        .arg(format!("http://{address}/metrics"))
        .output()
        .map_err(|e| format!("run curl: {e}"))?;
    if !out.status.success() {
        return Err(format!("GET http://{address}/metrics: curl {}", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The value of `metric` for the informer (or reflector) of `resource` (its plural: the
/// series' `name` label is `<plural>.<version>[.<group>]`).
fn informer_series(metrics: &str, metric: &str, resource: &str) -> Option<f64> {
    let prefix = format!("{metric}{{name=\"{resource}.");
    metrics.lines().find_map(|l| {
        let rest = l.strip_prefix(&prefix)?;
        rest.rsplit_once(' ')?.1.trim().parse().ok()
    })
}

/// The value of the series `line_prefix` (its whole name and labels) in `metrics`.
fn series(metrics: &str, line_prefix: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(line_prefix)?.trim().parse().ok())
}

/// The bounds `[lo, hi]` of the Apps one of three replicas caches out of `n`: uids are
/// random and hashed, so each App lands in a replica's third of the hash space with
/// probability 1/3 and its count is Binomial(n, 1/3) (mean n/3, standard deviation
/// sqrt(2n/9)). The bounds leave at most 1e-4 of that distribution outside on each side
/// (exact tails, not the normal approximation, which is poor at n = 30; about 3 to 4
/// standard deviations): with three replicas and two runs per test binary, a correct
/// split fails the check less than once in 800 runs (at ± 3 standard deviations it would
/// fail about once in 60). For n = 30 they are [2, 20], for n = 300 [70, 131]: a replica
/// caching none, or two thirds, of the Apps is caught at either scale; at 300 also one
/// caching half of them.
fn share_bounds(n: usize) -> (usize, usize) {
    const TAIL: f64 = 1e-4;
    let p: f64 = 1.0 / 3.0;
    let ln_choose = |k: usize| -> f64 {
        (1..=k)
            .map(|i| ((n - k + i) as f64).ln() - (i as f64).ln())
            .sum()
    };
    let pmf: Vec<f64> = (0..=n)
        .map(|k| (ln_choose(k) + k as f64 * p.ln() + (n - k) as f64 * (1.0 - p).ln()).exp())
        .collect();
    let (mut lo, mut below) = (0, 0.0);
    while below + pmf[lo] <= TAIL {
        below += pmf[lo];
        lo += 1;
    }
    let (mut hi, mut above) = (n, 0.0);
    while above + pmf[hi] <= TAIL {
        above += pmf[hi];
        hi -= 1;
    }
    (lo, hi)
}

/// The instants of the lines of `log` containing `needle` in `[from, to)`.
fn stamps(log: &str, needle: &str, from: Timestamp, to: Timestamp) -> Vec<Timestamp> {
    log.lines()
        .filter(|l| l.contains(needle))
        .filter_map(|l| l.split_whitespace().next()?.parse::<Timestamp>().ok())
        .filter(|t| *t >= from && *t < to)
        .collect()
}

/// `to - from`, as a `Duration` (zero when negative).
fn since(from: Timestamp, to: Timestamp) -> Duration {
    Duration::try_from(to.duration_since(from)).unwrap_or_default()
}

/// Checks the caches of the `live` replicas (by their `/metrics`) once `apps` Apps
/// converged and the ring settled: each caches the Apps of its share of the hash space
/// (between them every App, none twice; each within [`share_bounds`]), and the Deployments
/// and Services of its Apps and those nobody controls (the Service `kubernetes`): with uid
/// sharding an owned type follows its controller's uid, see `kubekit::manager::sharding`.
/// Its App reflector
/// reports whether the server filtered (`server_filters`); without it, it dropped the
/// Apps of the other shards itself.
async fn caches(
    ring: &Ring<'_>,
    admin: &Clientset,
    live: &[usize],
    apps: usize,
    server_filters: bool,
    scale: Scale,
) {
    let all = ListOptions::default();
    let (counts, deployments, services) =
        eventually_ok(scale.secs(30), "each replica caching its share", || async {
            // In every namespace (the Service `kubernetes` in `default` too); a Service
            // may still be on its way when its App's Deployment exists.
            let deployments = admin.apps_v1().deployments("").list(&all).await;
            let deployments = deployments.map_err(|e| e.to_string())?.items;
            let services = admin.core_v1().services("").list(&all).await;
            let services = services.map_err(|e| e.to_string())?.items;
            let free = (
                uncontrolled(deployments.iter().map(|d| &d.metadata)),
                uncontrolled(services.iter().map(|s| &s.metadata)),
            );
            let children = services
                .iter()
                .filter(|s| {
                    let ns = s.metadata.namespace.as_deref().unwrap_or_default();
                    ns.starts_with("shard-chaos-")
                })
                .count();
            if children != apps {
                return Err(format!("{children} of the {apps} Apps' Services created"));
            }
            let (deployments, services) = (deployments.len(), services.len());
            let mut counts = Vec::new();
            for &i in live {
                let metrics = ring.metrics(i)?;
                let objects = |resource: &str| {
                    informer_series(&metrics, "informer_objects", resource)
                        .map(|n| n as usize)
                        .ok_or(format!("replica-{i}: no informer_objects of {resource}"))
                };
                counts.push((
                    objects("apps")?,
                    objects("deployments")?,
                    objects("services")?,
                ));
            }
            let cached: usize = counts.iter().map(|c| c.0).sum();
            let children_follow = counts
                .iter()
                .all(|c| (c.1, c.2) == (c.0 + free.0, c.0 + free.1));
            if cached == apps && children_follow {
                Ok((counts, deployments, services))
            } else {
                Err(format!(
                    "{apps} Apps, {deployments} Deployments and {services} Services on the \
                     server, {free:?} of these two controlled by nothing; (Apps, Deployments, \
                     Services) cached by replicas {live:?}: {counts:?}"
                ))
            }
        })
        .await;
    let (lo, hi) = share_bounds(apps);
    let shares: Vec<usize> = counts.iter().map(|c| c.0).collect();
    eprintln!(
        "caches of replicas {live:?}: (Apps, Deployments, Services) {counts:?} of ({apps}, \
         {deployments}, {services}) (App bounds [{lo}, {hi}])"
    );
    assert!(
        shares.iter().all(|n| (lo..=hi).contains(n)),
        "Apps cached by replicas {live:?}: {shares:?} of {apps}, outside [{lo}, {hi}]"
    );

    // kube-apiserver 1.37.2 filters a custom resource's sharded list but does not echo the
    // selector in it (its `metadata` has no `shardInfo`, unlike a built-in type's), so the
    // App reflectors cannot tell the server filtered: `reflector_shard_server_filtered` is 0
    // with the feature gate on too. What tells the two servers apart is what the
    // reflectors dropped: nothing when the server filters, the other shards' Apps when not.
    let mut by_server = Vec::new();
    let mut dropped = Vec::new();
    for &i in live {
        let metrics = ring.metrics(i).unwrap();
        let series = |metric| informer_series(&metrics, metric, "apps");
        by_server.push(series("reflector_shard_server_filtered"));
        dropped.push(series("reflector_shard_dropped_objects_total").unwrap_or_default());
    }
    eprintln!(
        "App reflectors of replicas {live:?}: reflector_shard_server_filtered {by_server:?}, \
         Apps outside their shard dropped {dropped:?}"
    );
    if server_filters {
        assert!(
            dropped.iter().all(|d| *d == 0.0),
            "the server filters: no App outside a replica's shard reaches it: {dropped:?}"
        );
    } else {
        assert!(
            by_server.iter().all(|b| *b == Some(0.0)),
            "without the server feature the reflectors say they filter: {by_server:?}"
        );
        assert!(
            dropped.iter().all(|d| *d > 0.0),
            "without the server feature every replica's App reflector drops the other shards' \
             Apps: {dropped:?}"
        );
    }
}

/// How many of these objects have no controller.
fn uncontrolled<'a>(metas: impl Iterator<Item = &'a ObjectMeta>) -> usize {
    metas.filter(|m| controller_of(m).is_none()).count()
}

fn signal(replica: &Controller, sig: &str) {
    let pid = replica.0.id().to_string();
    let status = Command::new("kill").args([sig, &pid]).status().unwrap();
    assert!(status.success(), "kill {sig} {pid}");
}

struct Ring<'a> {
    cp: &'a ControlPlane,
    lease_ns: String,
    logs: std::path::PathBuf,
    /// Where each replica serves `/metrics`.
    metrics: std::cell::RefCell<BTreeMap<usize, SocketAddr>>,
}

impl Ring<'_> {
    fn start(&self, i: usize) -> Controller {
        self.start_keyed(i, "uid")
    }

    /// Member `i`, the ring sharded by `key`.
    fn start_keyed(&self, i: usize, key: &str) -> Controller {
        let identity = format!("replica-{i}");
        let metrics = free_address();
        self.metrics.borrow_mut().insert(i, metrics);
        let metrics = metrics.to_string();
        let ring = [
            "--shard-ring",
            "apps",
            "--shard-identity",
            &identity,
            "--shard-key",
            key,
        ];
        let endpoints = [
            "--health-probe-bind-address",
            "0",
            "--metrics-bind-address",
            &metrics,
        ];
        let flags = [&ring[..], &short_lease(&self.lease_ns), &endpoints].concat();
        let file = std::fs::File::create(self.logs.join(format!("{identity}.log"))).unwrap();
        // The admin's kubeconfig: every namespace is watched.
        Controller::start_with(self.cp.kubeconfig_path(), "", &flags, file.into())
    }

    fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.logs.join(format!("replica-{i}.log"))).unwrap_or_default()
    }

    /// Replica `i`'s `/metrics`.
    fn metrics(&self, i: usize) -> Result<String, String> {
        let address = self.metrics.borrow()[&i];
        scrape(address).map_err(|e| format!("replica-{i}: {e}"))
    }

    /// Waits until each of the `live` replicas works on an equal share of the hash space
    /// (`kubekit_shard_hash_space_held_ratio`): the ring has settled.
    async fn settled(&self, live: &[usize], secs: u64, what: &str) {
        let share = 1.0 / live.len() as f64;
        eventually_ok(secs, what, || async {
            let mut ratios = Vec::new();
            for &i in live {
                let metrics = self.metrics(i)?;
                ratios.push(
                    series(
                        &metrics,
                        r#"kubekit_shard_hash_space_held_ratio{ring="apps"}"#,
                    )
                    .ok_or(format!("replica-{i}: no held ratio"))?,
                );
            }
            if ratios.iter().all(|r| (r - share).abs() < 1e-6) {
                Ok(())
            } else {
                Err(format!("shares of replicas {live:?}: {ratios:?}"))
            }
        })
        .await
    }

    /// The time from `from` to the last range taken (`took shard ranges`) by the replicas
    /// `by` before `to`, and how many were taken.
    fn taken(&self, by: &[usize], from: Timestamp, to: Timestamp) -> (Option<Duration>, usize) {
        let took: Vec<Timestamp> = by
            .iter()
            .flat_map(|&i| stamps(&self.log(i), "took shard ranges", from, to))
            .collect();
        (took.iter().max().map(|t| since(from, *t)), took.len())
    }

    /// The time from `from` until the ranges the replicas `by` took (`took shard ranges`)
    /// after it cover `ranges` (a departed member's), if they did before `to`.
    fn covered(
        &self,
        ranges: &[(u128, u128)],
        by: &[usize],
        from: Timestamp,
        to: Timestamp,
    ) -> Option<Duration> {
        let mut took: Vec<(Timestamp, Vec<(u128, u128)>)> = Vec::new();
        for &i in by {
            for line in self.log(i).lines() {
                if !line.contains("took shard ranges") {
                    continue;
                }
                let Some(at) = line.split_whitespace().next().and_then(|t| t.parse().ok()) else {
                    continue;
                };
                let Some(text) = line.split("ranges=").nth(1) else {
                    continue;
                };
                if at >= from && at < to {
                    took.push((
                        at,
                        parse_ranges(text.split_whitespace().next().unwrap_or("")),
                    ));
                }
            }
        }
        took.sort();
        let mut union = Vec::new();
        for (at, r) in took {
            union.extend(r);
            if covers(&union, ranges) {
                return Some(since(from, at));
            }
        }
        None
    }
}

/// The ranges `0x…-0x…,…` of a log line or of a Lease's `kubekit.io/shard-held`
/// annotation, as `[start, end)` (the end may be 2^64).
fn parse_ranges(text: &str) -> Vec<(u128, u128)> {
    let hex = |h: &str| u128::from_str_radix(h.trim().trim_start_matches("0x"), 16).ok();
    text.split(',')
        .filter_map(|r| {
            let (a, b) = r.split_once('-')?;
            Some((hex(a)?, hex(b)?))
        })
        .collect()
}

/// Whether the union of `have` covers every range of `want`.
fn covers(have: &[(u128, u128)], want: &[(u128, u128)]) -> bool {
    let mut have = have.to_vec();
    have.sort();
    want.iter().all(|&(start, end)| {
        let mut at = start;
        for &(a, b) in &have {
            if a <= at && at < b {
                at = b;
            }
        }
        at >= end
    })
}

/// The ranges replica `i` publishes in its Lease (`kubekit.io/shard-held`).
async fn held(admin: &Clientset, lease_ns: &str, i: usize) -> Vec<(u128, u128)> {
    let lease = admin
        .coordination_v1()
        .leases(lease_ns)
        .get(&format!("apps-replica-{i}"), &Default::default())
        .await
        .expect("get the replica's Lease");
    let annotations = lease.metadata.annotations.unwrap_or_default();
    parse_ranges(
        annotations
            .get(kubekit::manager::HELD_ANNOTATION)
            .map(String::as_str)
            .unwrap_or(""),
    )
}

#[test]
fn share_bounds_are_the_documented_ones() {
    assert_eq!(share_bounds(30), (2, 20));
    assert_eq!(share_bounds(300), (70, 131));
}

/// Runs one test at a time: each starts its own control plane and four replicas, on
/// machines with few cores, and measures handover times.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn sharded_replicas_never_overlap_through_a_kill_a_release_a_join_and_a_pause() {
    let _serial = SERIAL.lock().await;
    scenario(testenv::control_plane(), true).await;
}

/// The same on a kube-apiserver without the `ShardedListAndWatch` feature: the reflectors
/// filter the Apps themselves.
#[tokio::test]
async fn sharded_replicas_filter_on_the_client_without_the_server_feature() {
    let _serial = SERIAL.lock().await;
    scenario(
        testenv::control_plane_with_feature_gates("ShardedListAndWatch=false"),
        false,
    )
    .await;
}

/// The scenario on `cp`, whose kube-apiserver filters sharded lists and watches if
/// `server_filters`.
async fn scenario(cp: &'static ControlPlane, server_filters: bool) {
    let began = Instant::now();
    let scale = Scale::from_env();
    eprintln!("scale: {scale:?}; the server filters: {server_filters}");
    let admin = Clientset::new(
        &RestConfig::from_kubeconfig(cp.kubeconfig_path())
            .await
            .unwrap(),
    )
    .unwrap();
    let client = cp.client().await;
    let lease_ns = cp.create_namespace(&client, "shard-chaos-leases").await;
    install(cp, &lease_ns, "app-controller-shard-chaos", &[]);
    let mut namespaces = Vec::new();
    for _ in 0..scale.namespaces {
        namespaces.push(cp.create_namespace(&client, "shard-chaos").await);
    }
    // Kept after the run (the control plane's directory is not), for a failure's evidence.
    let gate = if server_filters { "on" } else { "off" };
    let logs = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("shard-chaos-gate-{gate}-{lease_ns}"));
    std::fs::create_dir_all(&logs).unwrap();
    eprintln!("replica logs in {}", logs.display());
    let ring = Ring {
        cp,
        lease_ns,
        logs: logs.clone(),
        metrics: Default::default(),
    };
    let mut replicas: BTreeMap<usize, Controller> = (0..3).map(|i| (i, ring.start(i))).collect();

    // The first Apps: every one converges, each replica reconciles some. (Each replica's
    // client is limited to 5 requests/s: more Apps make every step slower, not the test
    // harder.)
    let ns = scale.namespaces;
    let mut total = scale.first * ns;
    kubectl_apply(cp, &apps_manifest(&namespaces, "first", scale.first));
    deployments(
        &admin,
        &namespaces,
        total,
        scale.secs(60),
        &format!("the first {total} Apps converge"),
    )
    .await;
    eventually(scale.secs(30), "every replica reconciling Apps", || async {
        (0..3)
            .all(|i| !reconciles(&ring.log(i), false).is_empty())
            .then_some(())
    })
    .await;
    ring.settled(&[0, 1, 2], scale.secs(30), "three replicas share the ring")
        .await;
    caches(&ring, &admin, &[0, 1, 2], total, server_filters, scale).await;

    // SIGKILL replica 0: its ranges are taken once its Lease expired.
    let dead = held(&admin, &ring.lease_ns, 0).await;
    let mut killed = replicas.remove(&0).unwrap();
    let killed_at = Timestamp::now();
    killed.0.kill().unwrap();
    let _ = killed.0.wait();
    let at = Instant::now();
    total += ns;
    kubectl_apply(cp, &apps_manifest(&namespaces, "after-kill", 1));
    deployments(
        &admin,
        &namespaces,
        total,
        scale.secs(60),
        "Apps after a SIGKILL converge",
    )
    .await;
    let converged = at.elapsed();
    ring.settled(
        &[1, 2],
        scale.secs(30),
        "two replicas share the ring after the kill",
    )
    .await;
    let term_at = Timestamp::now();
    let kill_takeover = ring.covered(&dead, &[1, 2], killed_at, term_at);
    let kill_takeover = kill_takeover.expect("the killed replica's ranges were not taken");
    let (settled, n) = ring.taken(&[1, 2], killed_at, term_at);
    let bound = LEASE_DURATION + RETRY_PERIOD;
    eprintln!(
        "after SIGKILL: the killed replica's ranges taken {kill_takeover:?} after the kill \
         (lease duration + retry period: {bound:?}); the last of {n} range(s) taken {:?} after \
         it; new Apps converged within {converged:?}",
        settled.expect("no range taken after the SIGKILL"),
    );
    // The survivors' watches saw the killed replica's last renewal, before the kill: they
    // take its ranges a lease duration after it, plus a round and their informers' relist.
    assert!(
        kill_takeover <= bound,
        "the killed replica's ranges were taken {kill_takeover:?} after the kill, past {bound:?}"
    );

    // SIGTERM replica 1: it releases its Lease, replica 2 takes its ranges.
    let leaving = held(&admin, &ring.lease_ns, 1).await;
    let status = replicas.remove(&1).unwrap().terminate();
    assert!(status.success(), "SIGTERMed replica exited with {status}");
    assert!(ring.log(1).contains("released the shard lease"));
    ring.settled(
        &[2],
        scale.secs(30),
        "one replica holds the ring after the release",
    )
    .await;
    let join_at = Timestamp::now();
    let released = stamps(&ring.log(1), "released the shard lease", term_at, join_at);
    let released = since(term_at, *released.first().expect("released after SIGTERM"));
    let term_handover = ring.covered(&leaving, &[2], term_at, join_at);
    eprintln!(
        "after SIGTERM: the lease released {released:?} after the signal, its ranges taken \
         {:?} after it",
        term_handover.expect("the terminated replica's ranges were not taken")
    );

    // Replica 3 joins.
    replicas.insert(3, ring.start(3));
    total += ns;
    kubectl_apply(cp, &apps_manifest(&namespaces, "after-join", 1));
    deployments(
        &admin,
        &namespaces,
        total,
        scale.secs(60),
        "Apps after a join converge",
    )
    .await;
    eventually(
        scale.secs(30),
        "the joining replica reconciling Apps",
        || async { (!reconciles(&ring.log(3), false).is_empty()).then_some(()) },
    )
    .await;
    ring.settled(
        &[2, 3],
        scale.secs(30),
        "two replicas share the ring after the join",
    )
    .await;
    let (join_split, n) = ring.taken(&[2, 3], join_at, Timestamp::now());
    eprintln!(
        "after the join: the last of {n} range(s) taken {:?} after the joining replica started",
        join_split.expect("no range taken after the join")
    );

    // SIGSTOP replica 2 while a burst is being reconciled, past its lease; then SIGCONT.
    total += 2 * ns;
    kubectl_apply(cp, &apps_manifest(&namespaces, "burst", 2));
    let paused = &replicas[&2];
    let pausing = held(&admin, &ring.lease_ns, 2).await;
    let stopped_at = Timestamp::now();
    signal(paused, "-STOP");
    tokio::time::sleep(Duration::from_secs(6)).await;
    deployments(
        &admin,
        &namespaces,
        total,
        scale.secs(60),
        "the burst converges while one is paused",
    )
    .await;
    let resumed_at = Timestamp::now();
    let pause_takeover = ring.covered(&pausing, &[3], stopped_at, resumed_at);
    eprintln!(
        "after SIGSTOP: the paused replica's ranges taken {:?} after the stop",
        pause_takeover.expect("the paused replica's ranges were not taken while it was paused")
    );
    let resumed_log_len = ring.log(2).len();
    signal(paused, "-CONT");
    eventually(
        scale.secs(30),
        "the resumed replica takes ranges again",
        || async {
            ring.log(2)[resumed_log_len..]
                .contains("took shard ranges")
                .then_some(())
        },
    )
    .await;
    total += ns;
    kubectl_apply(cp, &apps_manifest(&namespaces, "last", 1));
    deployments(
        &admin,
        &namespaces,
        total,
        scale.secs(60),
        "Apps after the pause converge",
    )
    .await;

    for (_, mut r) in replicas {
        assert!(r.terminate().success());
    }

    // The resumed replica started nothing before it had taken ranges again.
    let after = ring.log(2)[resumed_log_len..].to_string();
    let rejoined = after.find("took shard ranges").unwrap_or(after.len());
    assert!(
        !after[..rejoined].contains("reconcile started"),
        "the resumed replica started a reconcile before taking ranges again:\n{after}"
    );
    let refused = after.matches("write refused before it was sent").count();

    // No App reconciled by two replicas at overlapping times (the paused replica's spans
    // across the pause counted as ending when it was stopped: its writes were fenced).
    let mut all: Vec<(usize, Spans)> = (0..4)
        .map(|i| (i, reconciles(&ring.log(i), false)))
        .collect();
    // The killed replica's reconciles in flight never logged their end: it ran nothing
    // after its SIGKILL.
    for spans in all[0].1.values_mut() {
        for (_, end) in spans.iter_mut() {
            if *end > killed_at {
                *end = killed_at;
            }
        }
    }
    let mut cut = 0;
    for spans in all[2].1.values_mut() {
        for (start, end) in spans.iter_mut() {
            // A span across the pause started before the process stopped, which may be
            // just after `stopped_at` was read (the signal takes a moment): it ends at the
            // stop either way.
            if *start < resumed_at && *end > resumed_at {
                *end = (*start).max(stopped_at);
                cut += 1;
            }
        }
    }
    let counts: Vec<usize> = all
        .iter()
        .map(|(_, r)| r.values().map(Vec::len).sum())
        .collect();
    eprintln!(
        "the server filters: {server_filters}; reconciles per replica: {counts:?}; paused replica: {cut} reconcile(s) across the \
         pause, {refused} write(s) refused after it; test took {:?}",
        began.elapsed()
    );
    let mut overlaps = Vec::new();
    for (i, (ra, a)) in all.iter().enumerate() {
        for (rb, b) in &all[i + 1..] {
            for (key, spans) in a {
                for (s1, e1) in spans {
                    for (s2, e2) in b.get(key).into_iter().flatten() {
                        if !(e1 < s2 || e2 < s1) {
                            overlaps.push(format!(
                                "{key}: replica-{ra} {s1}..{e1} and replica-{rb} {s2}..{e2}"
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(
        overlaps.is_empty(),
        "overlapping reconciles (logs in {}): {overlaps:#?}",
        logs.display()
    );
    all.clear();
}

/// kube-apiserver's bytes sent to lists (`apiserver_response_sizes_sum`, verb LIST) and
/// watches (`apiserver_watch_events_sizes_sum`) of `resource`, from its `/metrics`.
fn server_bytes(metrics: &str, resource: &str) -> f64 {
    let label = format!("resource=\"{resource}\"");
    metrics
        .lines()
        .filter(|l| l.contains(&label))
        .filter(|l| {
            l.starts_with("apiserver_watch_events_sizes_sum{")
                || (l.starts_with("apiserver_response_sizes_sum{") && l.contains("verb=\"LIST\""))
        })
        .filter_map(|l| l.rsplit_once(' ')?.1.trim().parse::<f64>().ok())
        .sum()
}

/// kube-apiserver's `/metrics`, read as admin.
fn apiserver_metrics(cp: &ControlPlane) -> String {
    let out = cp
        .kubectl()
        .args(["get", "--raw", "/metrics"])
        .output()
        .expect("kubectl get --raw /metrics");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// kube-apiserver's CPU seconds (from its `/metrics`).
fn server_cpu(metrics: &str) -> f64 {
    series(metrics, "process_cpu_seconds_total ").unwrap_or_default()
}

/// The CPU seconds a process has run (user and system, from `/proc`).
fn process_cpu(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command (which may hold spaces) in parentheses.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or_default()
    };
    // utime and stime are fields 14 and 15 of stat(5), 11 and 12 after the command.
    (ticks(11) + ticks(12)) / 100.0
}

/// One way of running the App controller in [`ring_costs`]: one unsharded replica, or a
/// ring of three sharded by `key`.
#[derive(Clone, Copy, Debug)]
enum Layout {
    One,
    Ring(&'static str),
}

/// What one [`Layout`] cost, per replica (means over the replicas).
struct Costs {
    layout: Layout,
    replicas: usize,
    /// Per resource: bytes kube-apiserver sent to lists and watches, per replica.
    sent: Vec<(String, f64)>,
    /// Per resource: objects cached, and objects received but dropped, per replica.
    cached: Vec<(String, f64, f64)>,
    cpu: f64,
    server_cpu: f64,
}

const COST_RESOURCES: [&str; 3] = ["apps", "deployments", "services"];

/// Starts `layout`, waits until its replicas reconciled `apps` Apps between them and then
/// ran no reconcile for 3 s, reads what it cost, and stops it.
async fn measure(cp: &ControlPlane, layout: Layout, apps: usize, logs: &std::path::Path) -> Costs {
    let before = apiserver_metrics(cp);
    let lease_ns = cp.create_namespace(&cp.client().await, "ring-costs").await;
    let run = logs.join(
        format!("{layout:?}")
            .to_lowercase()
            .replace(['(', ')', '"'], "-"),
    );
    std::fs::create_dir_all(&run).unwrap();
    let ring = Ring {
        cp,
        lease_ns,
        logs: run,
        metrics: Default::default(),
    };
    let mut replicas: Vec<Controller> = match layout {
        Layout::One => {
            let metrics = free_address();
            ring.metrics.borrow_mut().insert(0, metrics);
            let metrics = metrics.to_string();
            let flags = [
                "--health-probe-bind-address",
                "0",
                "--metrics-bind-address",
                &metrics,
            ];
            let file = std::fs::File::create(ring.logs.join("replica-0.log")).unwrap();
            vec![Controller::start_with(
                cp.kubeconfig_path(),
                "",
                &flags,
                file.into(),
            )]
        }
        Layout::Ring(key) => (0..3).map(|i| ring.start_keyed(i, key)).collect(),
    };
    let live: Vec<usize> = (0..replicas.len()).collect();
    let ended = || -> usize {
        live.iter()
            .map(|&i| ring.log(i).matches("reconcile ended").count())
            .sum()
    };
    // Polled every 100 ms: 30 polls alike are 3 s without a reconcile.
    let (mut last, mut quiet) = (0, 0);
    eventually(
        300,
        "every App reconciled, then 3 s without a reconcile",
        || {
            let now = ended();
            quiet = if now == last { quiet + 1 } else { 0 };
            last = now;
            let done = now >= apps && quiet >= 30;
            async move { done.then_some(()) }
        },
    )
    .await;
    let after = apiserver_metrics(cp);
    let n = replicas.len() as f64;
    let mut cached = Vec::new();
    let metrics: Vec<String> = live.iter().map(|&i| ring.metrics(i).unwrap()).collect();
    for resource in COST_RESOURCES {
        let sum = |metric: &str| -> f64 {
            metrics
                .iter()
                .map(|m| informer_series(m, metric, resource).unwrap_or_default())
                .sum()
        };
        let dropped = sum("reflector_shard_dropped_objects_total");
        cached.push((
            resource.to_string(),
            sum("informer_objects") / n,
            dropped / n,
        ));
    }
    let cpu = replicas.iter().map(|r| process_cpu(r.0.id())).sum::<f64>() / n;
    for r in &mut replicas {
        assert!(r.terminate().success());
    }
    let sent = COST_RESOURCES
        .iter()
        .map(|r| {
            (
                r.to_string(),
                (server_bytes(&after, r) - server_bytes(&before, r)) / n,
            )
        })
        .collect();
    Costs {
        layout,
        replicas: live.len(),
        sent,
        cached,
        cpu,
        server_cpu: (server_cpu(&after) - server_cpu(&before)) / n,
    }
}

/// What a ring of App controllers saves, replica by replica, against one replica: the bytes
/// kube-apiserver sends each replica's informers, the objects each caches and drops, and
/// the CPU each spends (its informers' start, its share of reconciles with nothing to
/// change, idle until settled), on a kube-apiserver with `ShardedListAndWatch`. A
/// measurement, not a check: `bench/run.sh ring` runs it (`KUBEKIT_RING_APPS` Apps, 300
/// unless set, in 30 namespaces).
#[tokio::test]
#[ignore = "a measurement, run by bench/run.sh ring"]
async fn ring_costs() {
    let _serial = SERIAL.lock().await;
    let apps: usize = std::env::var("KUBEKIT_RING_APPS")
        .ok()
        .map(|n| n.parse().expect("KUBEKIT_RING_APPS: a count"))
        .unwrap_or(300);
    let cp = testenv::control_plane_with_service_cidr("10.0.0.0/16");
    let client = cp.client().await;
    let admin = Clientset::new(
        &RestConfig::from_kubeconfig(cp.kubeconfig_path())
            .await
            .unwrap(),
    )
    .unwrap();
    install(cp, "default", "app-controller-ring-costs", &[]);
    let mut namespaces = Vec::new();
    for _ in 0..30 {
        namespaces.push(cp.create_namespace(&client, "ring-costs").await);
    }
    let logs = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("ring-costs");
    std::fs::create_dir_all(&logs).unwrap();
    kubectl_apply(cp, &apps_manifest(&namespaces, "app", apps.div_ceil(30)));
    let apps = apps.div_ceil(30) * 30;
    // Converged once first, so every layout finds the same work: a reconcile per App that
    // changes nothing.
    let warm = measure(cp, Layout::One, apps, &logs).await;
    deployments(&admin, &namespaces, apps, 300, "the Apps converge").await;
    drop(warm);
    let costs = [
        measure(cp, Layout::One, apps, &logs).await,
        measure(cp, Layout::Ring("uid"), apps, &logs).await,
        measure(cp, Layout::Ring("namespace"), apps, &logs).await,
    ];
    println!("ring costs: {apps} Apps in 30 namespaces, converged; per replica (mean)");
    println!(
        "| layout | replicas | resource | server sent (KiB) | cached | received and dropped |"
    );
    println!("|---|---|---|---|---|---|");
    for c in &costs {
        for ((resource, sent), (_, cached, dropped)) in c.sent.iter().zip(&c.cached) {
            println!(
                "| {:?} | {} | {resource} | {:.0} | {cached:.0} | {dropped:.0} |",
                c.layout,
                c.replicas,
                sent / 1024.0
            );
        }
    }
    println!("| layout | replicas | CPU (s) | kube-apiserver CPU (s) |");
    println!("|---|---|---|---|");
    for c in &costs {
        println!(
            "| {:?} | {} | {:.2} | {:.2} |",
            c.layout, c.replicas, c.cpu, c.server_cpu
        );
    }
}
