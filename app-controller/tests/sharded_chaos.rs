//! Sharded App controller replicas under chaos: the real binary on the real control plane,
//! watching every namespace (so this is its own test binary: its control plane serves
//! nothing else), splitting 30 Apps in 6 namespaces (66 by the end) by uid over Leases of 4 s (renew
//! deadline 3 s, retry 500 ms).
//!
//! Three replicas start; one is SIGKILLed (its ranges are taken once its Lease expired),
//! one SIGTERMed (it releases its Lease), a fourth joins, and one is SIGSTOPped while it
//! reconciles a burst of Apps, past its lease, then resumed (SIGCONT). Apps are created
//! after each step and every one converges (its Deployment exists).
//!
//! From every replica's log (`reconcile started` / `reconcile ended`): no App is reconciled
//! by two replicas at overlapping times, with one exception that is the point of the
//! fence: a reconcile of the paused replica that was running when it was stopped ends only
//! after it resumed; its writes after its renew deadline are refused unsent by the fence
//! (counted from its log), so such a span is counted as ending at SIGSTOP; a reconcile of
//! the SIGKILLed replica that was running never logs its end, and ends at the kill. The resumed
//! replica starts no reconcile before it has taken ranges again.

// Shared with the other test binaries, which use the helpers this one does not.
#[allow(dead_code)]
mod common;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use kubekit::clientset::{Clientset, ListOptions};
use kubekit::rest::Config;
use testenv::{ControlPlane, eventually};

use common::{Controller, artifact, install, kubectl_apply};

const NAMESPACES: usize = 6;

/// Every reconcile's span in one replica's log, by App key.
type Spans = BTreeMap<String, Vec<(Timestamp, Timestamp)>>;

/// The spans of every reconcile in a replica's log, by App key, from the `reconcile
/// started` and `reconcile ended` lines; one not ended yet ends at `Timestamp::MAX`.
fn reconciles(log: &str) -> Spans {
    let mut open: std::collections::HashMap<String, Timestamp> = Default::default();
    let mut done: Spans = Default::default();
    for line in log.lines() {
        let started = line.contains("reconcile started");
        if !started && !line.contains("reconcile ended") {
            continue;
        }
        let Some(stamp) = line
            .split_whitespace()
            .next()
            .and_then(|s| s.parse::<Timestamp>().ok())
        else {
            continue;
        };
        let Some(key) = line
            .split("key=")
            .nth(1)
            .and_then(|k| k.split([' ', '}']).next())
        else {
            continue;
        };
        if started {
            open.insert(key.to_string(), stamp);
        } else if let Some(start) = open.remove(key) {
            done.entry(key.to_string())
                .or_default()
                .push((start, stamp));
        }
    }
    for (key, start) in open {
        done.entry(key).or_default().push((start, Timestamp::MAX));
    }
    done
}

/// `count` Apps `<prefix>-<i>` in each namespace, in one manifest.
fn apps_manifest(namespaces: &[String], prefix: &str, count: usize) -> String {
    namespaces
        .iter()
        .flat_map(|ns| {
            (0..count).map(move |i| {
                let name = format!("{prefix}-{i}");
                artifact("example/test_app.yaml")
                    .replace("namespace: tcs", &format!("namespace: {ns}"))
                    .replace("name: test-app", &format!("name: {name}"))
                    .replace("name: app-deploy", &format!("name: {name}-deploy"))
                    .replace("name: app-service", &format!("name: {name}-svc"))
            })
        })
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// Waits until the namespaces hold `count` Deployments between them.
async fn deployments(admin: &Clientset, namespaces: &[String], count: usize, what: &str) {
    eventually(60, what, || async {
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

fn signal(replica: &Controller, sig: &str) {
    let pid = replica.0.id().to_string();
    let status = Command::new("kill").args([sig, &pid]).status().unwrap();
    assert!(status.success(), "kill {sig} {pid}");
}

struct Ring<'a> {
    cp: &'a ControlPlane,
    lease_ns: String,
    logs: std::path::PathBuf,
}

impl Ring<'_> {
    fn start(&self, i: usize) -> Controller {
        let identity = format!("replica-{i}");
        let flags = [
            "--shard-ring",
            "apps",
            "--shard-identity",
            &identity,
            "--leader-elect-namespace",
            &self.lease_ns,
            "--leader-elect-lease-duration",
            "4s",
            "--leader-elect-renew-deadline",
            "3s",
            "--leader-elect-retry-period",
            "500ms",
            "--health-probe-bind-address",
            "0",
        ];
        let file = std::fs::File::create(self.logs.join(format!("{identity}.log"))).unwrap();
        // The admin's kubeconfig: every namespace is watched.
        Controller::start_with(self.cp.kubeconfig_path(), "", &flags, file.into())
    }

    fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.logs.join(format!("replica-{i}.log"))).unwrap_or_default()
    }
}

#[tokio::test]
async fn sharded_replicas_never_overlap_through_a_kill_a_release_a_join_and_a_pause() {
    let began = Instant::now();
    let cp = testenv::control_plane();
    let admin =
        Clientset::new(&Config::from_kubeconfig(cp.kubeconfig_path()).await.unwrap()).unwrap();
    let client = cp.client().await;
    let lease_ns = cp.create_namespace(&client, "shard-chaos-leases").await;
    install(cp, &lease_ns, "app-controller-shard-chaos");
    let mut namespaces = Vec::new();
    for _ in 0..NAMESPACES {
        namespaces.push(cp.create_namespace(&client, "shard-chaos").await);
    }
    let logs = cp.dir().join(format!("shard-chaos-{lease_ns}"));
    std::fs::create_dir_all(&logs).unwrap();
    let ring = Ring {
        cp,
        lease_ns,
        logs: logs.clone(),
    };
    let mut replicas: BTreeMap<usize, Controller> = (0..3).map(|i| (i, ring.start(i))).collect();

    // 30 Apps: every one converges, each replica reconciles some. (Each replica's client
    // is limited to 5 requests/s: more Apps make every step slower, not the test harder.)
    let mut total = 5 * NAMESPACES;
    kubectl_apply(cp, &apps_manifest(&namespaces, "first", 5));
    deployments(&admin, &namespaces, total, "the first 30 Apps converge").await;
    eventually(30, "every replica reconciling Apps", || async {
        (0..3)
            .all(|i| !reconciles(&ring.log(i)).is_empty())
            .then_some(())
    })
    .await;

    // SIGKILL replica 0: its ranges are taken once its Lease expired.
    let mut killed = replicas.remove(&0).unwrap();
    let killed_at = Timestamp::now();
    killed.0.kill().unwrap();
    let _ = killed.0.wait();
    let at = Instant::now();
    total += NAMESPACES;
    kubectl_apply(cp, &apps_manifest(&namespaces, "after-kill", 1));
    deployments(&admin, &namespaces, total, "Apps after a SIGKILL converge").await;
    eprintln!(
        "after SIGKILL: new Apps converged within {:?}",
        at.elapsed()
    );

    // SIGTERM replica 1: it releases its Lease.
    let status = replicas.remove(&1).unwrap().terminate();
    assert!(status.success(), "SIGTERMed replica exited with {status}");
    assert!(ring.log(1).contains("released the shard lease"));

    // Replica 3 joins.
    replicas.insert(3, ring.start(3));
    total += NAMESPACES;
    kubectl_apply(cp, &apps_manifest(&namespaces, "after-join", 1));
    deployments(&admin, &namespaces, total, "Apps after a join converge").await;
    eventually(30, "the joining replica reconciling Apps", || async {
        (!reconciles(&ring.log(3)).is_empty()).then_some(())
    })
    .await;

    // SIGSTOP replica 2 while a burst is being reconciled, past its lease; then SIGCONT.
    total += 2 * NAMESPACES;
    kubectl_apply(cp, &apps_manifest(&namespaces, "burst", 2));
    let paused = &replicas[&2];
    let stopped_at = Timestamp::now();
    signal(paused, "-STOP");
    tokio::time::sleep(Duration::from_secs(6)).await;
    deployments(
        &admin,
        &namespaces,
        total,
        "the burst converges while one is paused",
    )
    .await;
    let resumed_at = Timestamp::now();
    let resumed_log_len = ring.log(2).len();
    signal(paused, "-CONT");
    eventually(30, "the resumed replica takes ranges again", || async {
        ring.log(2)[resumed_log_len..]
            .contains("took shard ranges")
            .then_some(())
    })
    .await;
    total += NAMESPACES;
    kubectl_apply(cp, &apps_manifest(&namespaces, "last", 1));
    deployments(&admin, &namespaces, total, "Apps after the pause converge").await;

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
    let mut all: Vec<(usize, Spans)> = (0..4).map(|i| (i, reconciles(&ring.log(i)))).collect();
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
            if *start < stopped_at && *end > resumed_at {
                *end = stopped_at;
                cut += 1;
            }
        }
    }
    let counts: Vec<usize> = all
        .iter()
        .map(|(_, r)| r.values().map(Vec::len).sum())
        .collect();
    eprintln!(
        "reconciles per replica: {counts:?}; paused replica: {cut} reconcile(s) across the \
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
