//! The App controller end to end: the real binary, run as an identity bound only to the
//! RBAC it prints for its flags (`--print-rbac`: Roles in the test namespace), on the real
//! control plane, driven with kubectl like a user would; three replicas of it electing a
//! leader; three sharded replicas splitting the Apps; and with its admission webhooks on
//! (`--webhook-bind-address`), served on its manager's webhook server with a generated
//! authority, which kube-apiserver calls.

// Shared with the other test binaries, which use the helpers this one does not.
#[allow(dead_code)]
mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use app_controller::App;
use app_controller::controller::APP_LABEL;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::jiff::Timestamp;
use kubekit::clientset::{
    Clientset, CreateOptions, DeleteOptions, GetOptions, ListOptions, PatchBody, PatchOptions,
    ResourceClient,
};
use kubekit::rest::RestConfig;
use serde_json::json;
use testenv::{ControlPlane, eventually};

use common::replicas::{
    LEASE, MAX_ATTEMPT_GAP, RETRY, Replica, holder, spawn_replica, start_replica,
};
use common::{
    Controller, apps_manifest, artifact, events_for, install, kubectl_apply, leader_flags,
    reconciles, short_lease,
};

impl Controller {
    /// Starts it without its health endpoint (`:8081` by default), so tests that run
    /// at once, or anything else on the machine, never compete for the port.
    fn start(kubeconfig: &std::path::Path, ns: &str) -> Self {
        let no_probes = ["--health-probe-bind-address", "0"];
        Self::start_with(kubeconfig, ns, &no_probes, Stdio::null())
    }
}

/// Waits up to 60 s for object `name` to exist and returns it.
async fn wait_for<K>(client: &ResourceClient<K>, name: &str) -> K
where
    K: kube::Resource<DynamicType = ()>
        + serde::Serialize
        + serde::de::DeserializeOwned
        + Clone
        + Send
        + Sync
        + 'static,
{
    eventually(60, &format!("{} {name}", K::kind(&())), || async {
        client.get(name, &GetOptions::default()).await.ok()
    })
    .await
}

#[tokio::test]
async fn the_app_controller_manages_deployments_and_services_with_least_privilege() {
    let cp = testenv::control_plane();
    let admin = Clientset::new(
        &RestConfig::from_kubeconfig(cp.kubeconfig_path())
            .await
            .unwrap(),
    )
    .unwrap();
    let ns = cp.create_namespace(&cp.client().await, "app-e2e").await;
    let user = install(cp, &ns, "app-controller-e2e", &[]);
    let mut controller = Controller::start(&user, &ns);

    // The seed's two example Apps, in the test namespace.
    for file in ["example/test_app.yaml", "example/test_app_2.yaml"] {
        kubectl_apply(
            cp,
            &artifact(file).replace("namespace: tcs", &format!("namespace: {ns}")),
        );
    }
    let deployments = admin.apps_v1().deployments(&ns);
    let services = admin.core_v1().services(&ns);
    let apps = ResourceClient::<App>::namespaced(admin.rest_client().clone(), &ns);

    let deploy = wait_for(&deployments, "app-deploy").await;
    let app = apps.get("test-app", &GetOptions::default()).await.unwrap();
    let owner = &deploy.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.controller), ("App", Some(true)));
    assert_eq!(Some(&owner.uid), app.metadata.uid.as_ref());
    let spec = &deploy.spec;
    assert_eq!(spec.replicas, Some(2));
    assert_eq!(
        spec.selector.match_labels.as_ref().unwrap()[APP_LABEL],
        "test-app",
        "selector labels are unique to the App"
    );
    assert_eq!(
        spec.template.spec.as_ref().unwrap().containers[0]
            .image
            .as_deref(),
        Some("nginx")
    );
    let svc = wait_for(&services, "app-service").await;
    assert_eq!(
        svc.spec.as_ref().unwrap().selector.as_ref().unwrap()[APP_LABEL],
        "test-app"
    );
    let other = wait_for(&deployments, "app-deploy-test").await;
    assert_eq!(
        other.spec.selector.match_labels.unwrap()[APP_LABEL],
        "test-app-2"
    );

    // Status through the status subresource, once kube-controller-manager reports on the
    // Deployment; and a Normal Synced event.
    eventually(60, "the Deployment's status in the App", || {
        let apps = apps.clone();
        async move {
            let app = apps.get("test-app", &GetOptions::default()).await.ok()?;
            app.status?.deployment_status?.replicas.filter(|r| *r == 2)
        }
    })
    .await;
    eventually(60, "a Synced event", || {
        let admin = admin.clone();
        let ns = ns.clone();
        async move {
            let events = events_for(&admin, &ns, "test-app", "Synced").await;
            events
                .first()
                .map(|e| assert_eq!(e.type_.as_deref(), Some("Normal")))
        }
    })
    .await;

    // A spec change reaches the Deployment.
    let patch = PatchBody::Merge(
        json!({"spec": {"deploymentTemplate": {"replicas": 3, "image": "tomcat"}}}),
    );
    apps.patch("test-app", &patch, &PatchOptions::default())
        .await
        .unwrap();
    eventually(60, "the Deployment updated to the new spec", || {
        let deployments = deployments.clone();
        async move {
            let d = deployments
                .get("app-deploy", &GetOptions::default())
                .await
                .ok()?;
            let spec = d.spec;
            let image = spec.template.spec?.containers[0].image.clone();
            (spec.replicas == Some(3) && image.as_deref() == Some("tomcat")).then_some(())
        }
    })
    .await;

    // A deleted child is re-created.
    let old_uid = deploy.metadata.uid.clone();
    deployments
        .delete("app-deploy", &DeleteOptions::default())
        .await
        .unwrap();
    eventually(60, "the Deployment re-created", || {
        let deployments = deployments.clone();
        let old_uid = old_uid.clone();
        async move {
            let d: Deployment = deployments
                .get("app-deploy", &GetOptions::default())
                .await
                .ok()?;
            (d.metadata.uid != old_uid).then_some(())
        }
    })
    .await;

    // A same-named Service the App does not own is left alone, with a Warning.
    let mut foreign = Service::default();
    foreign.metadata.name = Some("taken".into());
    foreign.spec = Some(serde_json::from_value(json!({"ports": [{"port": 80}]})).unwrap());
    services
        .create(&foreign, &CreateOptions::default())
        .await
        .unwrap();
    let mut squatter: App = serde_yaml::from_str(&artifact("example/test_app.yaml")).unwrap();
    squatter.metadata.name = Some("squatter".into());
    squatter.metadata.namespace = Some(ns.clone());
    squatter.spec.deployment_template.name = "squatter-deploy".into();
    squatter.spec.service_template.name = "taken".into();
    apps.create(&squatter, &CreateOptions::default())
        .await
        .unwrap();
    let warning = eventually(60, "an ErrResourceExists event", || {
        let admin = admin.clone();
        let ns = ns.clone();
        async move {
            events_for(&admin, &ns, "squatter", "ErrResourceExists")
                .await
                .pop()
        }
    })
    .await;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    assert!(
        warning
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("taken"),
        "{warning:?}"
    );
    let taken = services.get("taken", &GetOptions::default()).await.unwrap();
    assert!(taken.metadata.owner_references.is_none(), "never adopted");

    let status = controller.terminate();
    assert!(
        status.success(),
        "app-controller exited with {status} after SIGTERM"
    );
}

/// Applies an App named `name` and waits for the Deployment it asks for.
async fn app_reconciled(cp: &ControlPlane, admin: &Clientset, ns: &str, name: &str) {
    let manifest = artifact("example/test_app.yaml")
        .replace("namespace: tcs", &format!("namespace: {ns}"))
        .replace("name: test-app", &format!("name: {name}"))
        .replace("name: app-deploy", &format!("name: {name}-deploy"))
        .replace("name: app-service", &format!("name: {name}-svc"));
    kubectl_apply(cp, &manifest);
    wait_for(&admin.apps_v1().deployments(ns), &format!("{name}-deploy")).await;
}

/// The replica named `holder` in the Lease.
fn by_identity<'a>(replicas: &'a mut [Replica], holder: &str) -> &'a mut Replica {
    replicas
        .iter_mut()
        .find(|r| r.identity == holder)
        .unwrap_or_else(|| panic!("no replica is {holder:?}"))
}

#[tokio::test]
async fn three_replicas_elect_one_leader_and_hand_over_on_kill_and_on_sigterm() {
    let cp = testenv::control_plane();
    let admin = Clientset::new(
        &RestConfig::from_kubeconfig(cp.kubeconfig_path())
            .await
            .unwrap(),
    )
    .unwrap();
    let ns = cp.create_namespace(&cp.client().await, "app-leader").await;
    let user = install(cp, &ns, "app-controller-leader", &leader_flags(&ns));
    let leases = admin.coordination_v1().leases(&ns);
    let logs = cp.dir().join(format!("leader-election-{ns}"));
    std::fs::create_dir_all(&logs).unwrap();
    let mut replicas: Vec<Replica> = (0..3)
        .map(|i| spawn_replica(&user, &ns, &ns, &logs, &format!("replica-{i}")))
        .collect();
    for r in &mut replicas {
        r.identity = r.logged_identity().await;
    }

    // Exactly one leads, the Lease names it, and it alone reconciles.
    let first = eventually(30, "a leader in the Lease", || async {
        Some(holder(&leases).await).filter(|h| !h.is_empty())
    })
    .await;
    app_reconciled(cp, &admin, &ns, "one").await;
    for r in &replicas {
        let leads = r.identity == first;
        assert_eq!(
            r.log().contains("applying Deployment"),
            leads,
            "{}",
            r.identity
        );
        assert_eq!(
            r.times("started leading").len(),
            usize::from(leads),
            "{}",
            r.identity
        );
    }

    // SIGKILL the leader: another takes over once the lease expires, and reconciles.
    let killed_at = Timestamp::now();
    by_identity(&mut replicas, &first).process.0.kill().unwrap();
    let second = eventually(30, "a new leader after SIGKILL", || async {
        Some(holder(&leases).await).filter(|h| !h.is_empty() && *h != first)
    })
    .await;
    app_reconciled(cp, &admin, &ns, "two").await;
    let took =
        by_identity(&mut replicas, &second).times("started leading")[0].duration_since(killed_at);
    // A candidate sees the last renewal at its first attempt after it (up to one gap after
    // the kill), waits the lease duration from there, and acquires at its next attempt.
    let bound = LEASE + 2 * MAX_ATTEMPT_GAP;
    eprintln!("takeover after SIGKILL: {took:?}");
    assert!(
        took.unsigned_abs() <= bound,
        "takeover after SIGKILL took {took:?} > {bound:?}"
    );
    first_reconcile_follows_acquisition(by_identity(&mut replicas, &second), "SIGKILL");

    // SIGTERM the new leader: it releases the Lease on its way out; the last replica takes
    // over at its next attempt, and reconciles.
    let status = by_identity(&mut replicas, &second).process.terminate();
    assert!(
        status.success(),
        "the SIGTERMed leader exited with {status}"
    );
    let released = by_identity(&mut replicas, &second).times("released the leader lease");
    assert_eq!(released.len(), 1, "released on cancel");
    let third = eventually(30, "a new leader after SIGTERM", || async {
        Some(holder(&leases).await).filter(|h| !h.is_empty() && *h != second)
    })
    .await;
    assert_ne!(third, first, "the killed replica cannot lead");
    app_reconciled(cp, &admin, &ns, "three").await;
    let took =
        by_identity(&mut replicas, &third).times("started leading")[0].duration_since(released[0]);
    let bound = RETRY + MAX_ATTEMPT_GAP;
    eprintln!("takeover after SIGTERM (from the release): {took:?}");
    assert!(
        took.unsigned_abs() <= bound,
        "takeover after SIGTERM took {took:?} > {bound:?}"
    );
    first_reconcile_follows_acquisition(by_identity(&mut replicas, &third), "SIGTERM");
    let status = by_identity(&mut replicas, &third).process.terminate();
    assert!(status.success(), "the last leader exited with {status}");

    // Over the whole run, no two replicas' active periods overlap.
    let mut periods: Vec<(Timestamp, Timestamp)> = replicas
        .iter()
        .flat_map(|r| r.active_periods((r.identity == first).then_some(killed_at)))
        .collect();
    periods.sort();
    assert_eq!(periods.len(), 3, "{periods:?}");
    for pair in periods.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "overlapping leaders: {pair:?}");
    }
}

/// Checks that the first reconcile of `replica`, a new leader after a `signal` to the last
/// one, followed its acquisition at once: its caches were synced while it waited, and the
/// Apps of their initial list were queued already.
fn first_reconcile_follows_acquisition(replica: &mut Replica, signal: &str) {
    let leading = replica.times("started leading")[0];
    let reconciled = replica
        .times("applying Deployment")
        .into_iter()
        .find(|t| *t >= leading)
        .expect("a reconcile after acquiring");
    let took = reconciled.duration_since(leading);
    eprintln!("first reconcile after acquiring ({signal}): {took:?}");
    assert!(
        took.unsigned_abs() <= Duration::from_secs(1),
        "the first reconcile came {took:?} after acquiring"
    );
}

fn signal(replica: &Replica, sig: &str) {
    let pid = replica.process.0.id().to_string();
    let status = Command::new("kill").args([sig, &pid]).status().unwrap();
    assert!(status.success(), "kill {sig} {pid}");
}

/// What the controller writes in `ns`: each App, Deployment and Service with its
/// resourceVersion.
async fn written(admin: &Clientset, ns: &str) -> Vec<(String, String)> {
    let everything = ListOptions::default();
    let apps = admin.resource::<App>(ns).list(&everything).await.unwrap();
    let deployments = admin
        .apps_v1()
        .deployments(ns)
        .list(&everything)
        .await
        .unwrap();
    let services = admin
        .core_v1()
        .services(ns)
        .list(&everything)
        .await
        .unwrap();
    let mut objects: Vec<(String, String)> = apps
        .items
        .iter()
        .map(|a| ("App", &a.metadata))
        .chain(
            deployments
                .items
                .iter()
                .map(|d| ("Deployment", &d.metadata)),
        )
        .chain(services.items.iter().map(|s| ("Service", &s.metadata)))
        .map(|(kind, m)| {
            let name = m.name.clone().unwrap_or_default();
            (
                format!("{kind} {name}"),
                m.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect();
    objects.sort();
    objects
}

/// The leader is paused (SIGSTOP) while it reconciles a burst of Apps, until another
/// replica holds the Lease (one that watches another namespace, so nobody else writes
/// these Apps' objects); then it resumes (SIGCONT) with reconciles in flight and events
/// waiting in its watches. It must write nothing more, as its leadership ended by its own
/// clock while it was stopped, and stand as a candidate again (without exiting).
#[tokio::test]
async fn a_leader_paused_past_its_lease_writes_nothing_when_it_resumes() {
    let cp = testenv::control_plane();
    let admin = Clientset::new(
        &RestConfig::from_kubeconfig(cp.kubeconfig_path())
            .await
            .unwrap(),
    )
    .unwrap();
    let ns = cp.create_namespace(&cp.client().await, "app-paused").await;
    let other = cp.create_namespace(&cp.client().await, "app-other").await;
    let user = install(cp, &ns, "app-controller-paused", &leader_flags(&ns));
    install(cp, &other, "app-controller-paused", &leader_flags(&ns));
    let leases = admin.coordination_v1().leases(&ns);
    let logs = cp.dir().join(format!("paused-leader-{ns}"));
    std::fs::create_dir_all(&logs).unwrap();

    let paused = start_replica(&user, &ns, &ns, &logs, "paused").await;
    eventually(30, "the first replica leads", || async {
        (holder(&leases).await == paused.identity).then_some(())
    })
    .await;
    let successor = start_replica(&user, &other, &ns, &logs, "successor").await;

    // A burst of Apps; the leader is stopped as soon as it has begun writing their objects.
    let burst: Vec<String> = (0..40)
        .map(|i| {
            artifact("example/test_app.yaml")
                .replace("namespace: tcs", &format!("namespace: {ns}"))
                .replace("name: test-app", &format!("name: app-{i}"))
                .replace("name: app-deploy", &format!("name: app-{i}-deploy"))
                .replace("name: app-service", &format!("name: app-{i}-svc"))
        })
        .collect();
    kubectl_apply(cp, &burst.join("\n---\n"));
    let deployments = admin.apps_v1().deployments(&ns);
    eventually(30, "the leader's first Deployment", || async {
        let list = deployments.list(&ListOptions::default()).await.ok()?;
        (!list.items.is_empty()).then_some(())
    })
    .await;
    signal(&paused, "-STOP");
    eventually(30, "the successor takes the Lease", || async {
        (holder(&leases).await == successor.identity).then_some(())
    })
    .await;
    let before = written(&admin, &ns).await;

    signal(&paused, "-CONT");
    let mut paused = paused;
    eventually(
        30,
        "the resumed leader stands as a candidate again",
        || async { paused.log().contains("a candidate again").then_some(()) },
    )
    .await;
    assert!(
        paused.process.0.try_wait().unwrap().is_none(),
        "a replica that lost the lease keeps running"
    );
    let log = paused.log();
    assert!(log.contains("leadership lost"), "{log}");
    let children = before
        .iter()
        .filter(|(k, _)| !k.starts_with("App "))
        .count();
    eprintln!(
        "paused with {children} of 80 children written; writes refused after SIGCONT: {}",
        log.matches("write refused before it was sent").count()
    );
    // Nothing changed since the successor took the Lease: the resumed replica no longer
    // led, and the successor does not watch this namespace.
    assert_eq!(
        written(&admin, &ns).await,
        before,
        "the paused leader wrote after its lease expired"
    );
    assert_eq!(holder(&leases).await, successor.identity);
}

/// `kubectl apply -f -` of `yaml`: whether it succeeded, and what it printed.
fn try_kubectl_apply(cp: &ControlPlane, yaml: &str) -> (bool, String) {
    let out = cp.kubectl_with_stdin(&["apply", "-f", "-"], yaml);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[tokio::test]
async fn with_webhooks_on_an_invalid_app_is_denied_by_kubectl_and_the_seed_apps_run_as_before() {
    let cp = testenv::control_plane();
    let rest = kubekit::rest::RestClient::new(
        &RestConfig::from_kubeconfig(cp.kubeconfig_path())
            .await
            .unwrap(),
    )
    .unwrap();
    let ns = cp.create_namespace(&cp.client().await, "app-webhook").await;
    let user = "app-webhook-e2e";
    let kubeconfig = install(cp, &ns, user, &["--webhook-bind-address", "127.0.0.1:0"]);
    let health = common::free_address().to_string();
    // As the controller's identity, with the RBAC it prints for webhook mode only. The
    // authorizer may see the new binding a moment after the controller starts: its first
    // install may get a 403, which it retries.
    let mut controller = Controller::start_with(
        &kubeconfig,
        &ns,
        &[
            "--health-probe-bind-address",
            &health,
            "--webhook-bind-address",
            "127.0.0.1:0",
        ],
        Stdio::null(),
    );
    common::wait_ready(&health).await;

    let invalid = format!(
        "apiVersion: appcontroller.k8s.io/v1\nkind: App\nmetadata: {{name: bad, namespace: {ns}}}\n\
         spec: {{deploymentTemplate: {{name: web, image: nginx, replicas: -1}}}}\n"
    );
    let output = eventually(30, "kube-apiserver to call the validator", || async {
        let (ok, output) = try_kubectl_apply(cp, &invalid);
        (!ok).then_some(output)
    })
    .await;
    assert!(
        output.contains(
            r#"denied the request: App "bad" is invalid: spec.deploymentTemplate.replicas must not be negative"#
        ),
        "{output}"
    );

    // A valid App: its Deployment is made as before, its untagged image defaulted.
    kubectl_apply(
        cp,
        &artifact("example/test_app.yaml").replace("namespace: tcs", &format!("namespace: {ns}")),
    );
    let deployments = ResourceClient::<Deployment>::namespaced(rest.clone(), &ns);
    let deployment = eventually(60, "the App's Deployment", || async {
        deployments
            .get("app-deploy", &GetOptions::default())
            .await
            .ok()
    })
    .await;
    let image = deployment.spec.template.spec.unwrap().containers[0]
        .image
        .clone();
    assert_eq!(image.as_deref(), Some("nginx:latest"));
    let app = ResourceClient::<App>::namespaced(rest.clone(), &ns)
        .get("test-app", &GetOptions::default())
        .await
        .unwrap();
    assert_eq!(app.spec.deployment_template.replicas, 2);

    assert!(controller.terminate().success());
    let name = format!("app-controller-{ns}");
    ResourceClient::<ValidatingWebhookConfiguration>::cluster(rest.clone())
        .delete(&name, &DeleteOptions::default())
        .await
        .unwrap();
    ResourceClient::<MutatingWebhookConfiguration>::cluster(rest.clone())
        .delete(&name, &DeleteOptions::default())
        .await
        .unwrap();
}

/// Waits until `ns` has `count` Deployments.
async fn deployments(admin: &Clientset, ns: &str, count: usize) {
    let client = admin.apps_v1().deployments(ns);
    eventually(90, &format!("{count} Deployments"), || async {
        let list = client.list(&ListOptions::default()).await.ok()?;
        (list.items.len() == count).then_some(())
    })
    .await;
}

#[tokio::test]
async fn three_sharded_replicas_split_the_apps_and_hand_over_on_sigterm_without_overlap() {
    let cp = testenv::control_plane();
    let admin = Clientset::new(
        &RestConfig::from_kubeconfig(cp.kubeconfig_path())
            .await
            .unwrap(),
    )
    .unwrap();
    let ns = cp.create_namespace(&cp.client().await, "app-sharded").await;
    let user = install(
        cp,
        &ns,
        "app-controller-sharded",
        &["--shard-ring", "apps", "--leader-elect-namespace", &ns],
    );
    let logs = cp.dir().join(format!("sharded-{ns}"));
    std::fs::create_dir_all(&logs).unwrap();
    let mut replicas: Vec<Controller> = (0..3)
        .map(|i| {
            let identity = format!("replica-{i}");
            let ring = ["--shard-ring", "apps", "--shard-identity", &identity];
            let no_probes = ["--health-probe-bind-address", "0"];
            let flags = [&ring[..], &short_lease(&ns), &no_probes].concat();
            let file = std::fs::File::create(logs.join(format!("{identity}.log"))).unwrap();
            Controller::start_with(&user, &ns, &flags, file.into())
        })
        .collect();
    let log = |i: usize| std::fs::read_to_string(logs.join(format!("replica-{i}.log"))).unwrap();

    // 30 Apps: every one converges, and each replica reconciles some.
    kubectl_apply(cp, &apps_manifest(std::slice::from_ref(&ns), "first", 30));
    deployments(&admin, &ns, 30).await;
    eventually(30, "every replica reconciling Apps", || async {
        (0..3)
            .all(|i| !reconciles(&log(i), true).is_empty())
            .then_some(())
    })
    .await;

    // SIGTERM replica 2: it drains and releases its Lease; the Apps created after it are
    // reconciled by the other two.
    let status = replicas.pop().unwrap().terminate();
    assert!(
        status.success(),
        "the SIGTERMed replica exited with {status}"
    );
    assert!(log(2).contains("released the shard lease"), "{}", log(2));
    let before = reconciles(&log(2), true);
    kubectl_apply(cp, &apps_manifest(std::slice::from_ref(&ns), "second", 6));
    deployments(&admin, &ns, 36).await;
    assert_eq!(reconciles(&log(2), true), before, "nothing after its exit");
    for mut r in replicas {
        assert!(r.terminate().success());
    }

    // Over the whole run, no App was reconciled by two replicas at overlapping times.
    let all: Vec<_> = (0..3).map(|i| reconciles(&log(i), true)).collect();
    let counts: Vec<usize> = all.iter().map(|r| r.values().map(Vec::len).sum()).collect();
    eprintln!("reconciles per replica: {counts:?}");
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            for (key, spans) in a {
                for (s1, e1) in spans {
                    for (s2, e2) in b.get(key).into_iter().flatten() {
                        assert!(
                            e1 < s2 || e2 < s1,
                            "{key} reconciled at overlapping times by two replicas: \
                             {s1}..{e1} and {s2}..{e2}"
                        );
                    }
                }
            }
        }
    }
}
