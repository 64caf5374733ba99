//! The App controller's `artifacts/rbac.yaml` on kubekit-fake with RBAC, beside the real
//! control plane: the real binary, run as a user bound in one namespace to that
//! ClusterRole with one rule cut (Services may not be created), creates its Deployment
//! and is refused its Service with the same `403` on both servers; bound to the whole
//! ClusterRole, it creates the Service on both.

// Shared with the other test binaries, which use the helpers this one does not.
#[allow(dead_code)]
mod common;

use testenv::eventually;

use common::{Controller, Server, apply, artifact, kubectl, try_apply};

const USER: &str = "app-controller-fake-rbac";

/// rbac.yaml's ClusterRole without `create` of Services, as ClusterRole `name`.
fn role_without_service_create(name: &str) -> String {
    let rbac = artifact("rbac.yaml");
    let role = rbac.split("\n---\n").next().expect("the ClusterRole");
    let services = "  resources: [\"services\"]\n  verbs: [\"list\", \"watch\", \"create\", \"patch\", \"delete\"]";
    assert!(role.contains(services), "rbac.yaml's Services rule moved");
    role.replace(
        services,
        "  resources: [\"services\"]\n  verbs: [\"list\", \"watch\", \"patch\", \"delete\"]",
    )
    .replace("  name: app-controller\n", &format!("  name: {name}\n"))
}

/// RoleBinding `name` of ClusterRole `role` to the user in `ns`.
fn binding(ns: &str, name: &str, role: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {name}\n  namespace: {ns}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: {role}\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: {USER}\n"
    )
}

/// A `kubectl get` of `what` in the namespace succeeds.
fn exists(s: &Server, what: &str) -> bool {
    kubectl(&s.admin)
        .args(["--namespace", &s.ns, "get", what])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs the controller on `s` with the cut role, and returns its refusal of the Service
/// (the namespace written `<ns>`); then binds the whole ClusterRole and waits for the
/// Service.
async fn refused_then_allowed(s: &Server) -> String {
    apply(&s.admin, &artifact("crd/appcontroller.k8s.io_apps.yaml"));
    let cut = format!("app-controller-without-service-create-{}", s.ns);
    apply(&s.admin, &role_without_service_create(&cut));
    apply(
        &s.admin,
        &format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {}\n",
            s.ns
        ),
    );
    apply(&s.admin, &binding(&s.ns, "cut", &cut));
    let log = std::env::temp_dir().join(format!("{}-{}.log", s.ns, std::process::id()));
    let file = std::fs::File::create(&log).expect("a log file");
    let no_probes = ["--health-probe-bind-address", "0"];
    let mut controller = Controller::start_with(&s.user, &s.ns, &no_probes, file.into());
    // The CRD is established at once on the fake, a moment later on the real server.
    let app = artifact("example/test_app.yaml")
        .replace("namespace: tcs", &format!("namespace: {}", s.ns));
    eventually(60, "the App created", || async {
        try_apply(&s.admin, &app).0.then_some(())
    })
    .await;
    eventually(60, "the Deployment", || async {
        exists(s, "deployment/app-deploy").then_some(())
    })
    .await;
    let refusal = eventually(60, "the Service refused", || async {
        let text = std::fs::read_to_string(&log).ok()?;
        let start = text.find("services \"app-service\" is forbidden")?;
        let rest = &text[start..];
        let end = rest.find(&format!("\"{}\"", s.ns))? + s.ns.len() + 2;
        Some(rest[..end].replace(&s.ns, "<ns>"))
    })
    .await;
    // The whole ClusterRole: the retried reconcile creates the Service.
    apply(&s.admin, &artifact("rbac.yaml"));
    apply(&s.admin, &binding(&s.ns, "whole", "app-controller"));
    eventually(90, "the Service once the whole role is bound", || async {
        exists(s, "service/app-service").then_some(())
    })
    .await;
    let status = controller.terminate();
    assert!(status.success(), "app-controller exited with {status}");
    let _ = std::fs::remove_file(&log);
    let deleted = kubectl(&s.admin)
        .args(["delete", "clusterrole", &cut])
        .output();
    assert!(
        deleted.is_ok_and(|o| o.status.success()),
        "the cut ClusterRole deleted"
    );
    refusal
}

// kubectl blocks its thread: the fake serves it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_cut_from_rbac_yaml_is_refused_alike_on_the_fake_and_the_real_server() {
    let (real, fake, fake_server) = common::real_and_fake(USER, "fake-rbac").await;
    let on_real = refused_then_allowed(&real).await;
    let on_fake = refused_then_allowed(&fake).await;
    println!("refused on both: {on_real}");
    assert_eq!(on_fake, on_real, "the fake refuses as the real server does");
    assert!(
        on_real.contains("cannot create resource \"services\""),
        "{on_real}"
    );
    fake_server.shutdown().await;
}
