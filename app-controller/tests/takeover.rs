//! 300 Apps after a takeover: how long two App controller replicas with `--leader-elect`
//! (the real binary, as a user bound to the RBAC it prints, each with its defaults: 20 requests/s,
//! burst 30, Events on a budget of their own) take to bring 300 changed Apps in line after
//! the leader is SIGKILLed. Its own test binary: 300 Apps with a Deployment and a Service
//! each would slow the other tests' timing down, and the Services need a wider range
//! than the control plane's default /24.
//!
//! The leader converges 300 Apps; then it is SIGKILLed and every App's image changed at
//! once. The other replica takes the Lease once it expired and brings every Deployment to
//! the new image. Printed: the first convergence, the takeover (kill to acquisition), and
//! from the acquisition to the last Deployment changed, with the reconciles the new leader
//! ran. `KUBEKIT_TAKEOVER_APPS` sets another count.

// Shared with the other test binaries, which use the helpers this one does not.
#[allow(dead_code)]
mod common;

use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use kubekit::clientset::{Clientset, ListOptions};
use kubekit::rest::RestConfig;
use testenv::eventually;

use common::replicas::{Replica, holder, start_replica};
use common::{apps_manifest, install, kubectl_apply, leader_flags, reconciles};

/// How many Deployments in `ns` run `image`.
async fn deployments_with(admin: &Clientset, ns: &str, image: &str) -> Option<usize> {
    let list = admin
        .apps_v1()
        .deployments(ns)
        .list(&ListOptions::default())
        .await
        .ok()?;
    let runs = |d: &&k8s_openapi::api::apps::v1::Deployment| {
        let pod = d.spec.template.spec.as_ref();
        pod.is_some_and(|p| {
            p.containers
                .iter()
                .any(|c| c.image.as_deref() == Some(image))
        })
    };
    Some(list.items.iter().filter(runs).count())
}

/// Waits until `count` Deployments in `ns` run `image`; returns how long it took.
async fn converged(admin: &Clientset, ns: &str, image: &str, count: usize, what: &str) -> Duration {
    let start = Instant::now();
    eventually(600, what, || async {
        (deployments_with(admin, ns, image).await? == count).then_some(())
    })
    .await;
    start.elapsed()
}

#[tokio::test]
async fn after_the_leader_is_killed_the_other_replica_brings_300_changed_apps_in_line() {
    let apps: usize = std::env::var("KUBEKIT_TAKEOVER_APPS")
        .ok()
        .map(|n| n.parse().expect("KUBEKIT_TAKEOVER_APPS: a count"))
        .unwrap_or(300);
    let cp = testenv::control_plane_with_service_cidr("10.0.0.0/16");
    let admin = Clientset::new(
        &RestConfig::from_kubeconfig(cp.kubeconfig_path())
            .await
            .unwrap(),
    )
    .unwrap();
    let ns = cp
        .create_namespace(&cp.client().await, "app-takeover")
        .await;
    let user = install(cp, &ns, "app-controller-takeover", &leader_flags(&ns));
    let leases = admin.coordination_v1().leases(&ns);
    let logs = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("takeover-{ns}"));
    std::fs::create_dir_all(&logs).unwrap();
    eprintln!("replica logs in {}", logs.display());
    let mut replicas: Vec<Replica> = Vec::new();
    for name in ["replica-0", "replica-1"] {
        replicas.push(start_replica(&user, &ns, &ns, &logs, name).await);
    }
    let first = eventually(30, "a leader in the Lease", || async {
        Some(holder(&leases).await).filter(|h| !h.is_empty())
    })
    .await;

    let manifest = apps_manifest(std::slice::from_ref(&ns), "app", apps);
    kubectl_apply(cp, &manifest);
    let initial = converged(&admin, &ns, "nginx", apps, "the Apps converge").await;

    // Kill the leader and change every App at once.
    let leader = replicas.iter().position(|r| r.identity == first).unwrap();
    let mut successor = replicas.remove(1 - leader);
    let killed_at = Timestamp::now();
    let killed = Instant::now();
    replicas[0].process.0.kill().unwrap();
    let _ = replicas[0].process.0.wait();
    kubectl_apply(cp, &manifest.replace("image: nginx", "image: nginx:1.29"));
    converged(&admin, &ns, "nginx:1.29", apps, "the changed Apps converge").await;
    let total = killed.elapsed();

    let acquired = successor.times("started leading");
    let acquired = *acquired.first().expect("the other replica took the Lease");
    let takeover = acquired.duration_since(killed_at).unsigned_abs();
    let after = total.saturating_sub(takeover);
    let ran: usize = reconciles(&successor.log(), false)
        .values()
        .flatten()
        .filter(|(start, _)| *start >= acquired)
        .count();
    eprintln!(
        "{apps} Apps: first convergence {initial:?}; after SIGKILL: lease taken {takeover:?} \
         after the kill, every changed App's Deployment {after:?} after that ({total:?} in \
         all, {ran} reconciles by the new leader)"
    );
    let status = successor.process.terminate();
    assert!(status.success(), "the new leader exited with {status}");
    assert!(ran >= apps, "{ran} reconciles for {apps} changed Apps");
}
