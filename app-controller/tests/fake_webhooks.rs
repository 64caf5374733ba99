//! The App controller's admission webhooks on kubekit-fake with RBAC, beside the real
//! control plane: the real binary, run as a user bound to the RBAC it prints for webhook
//! mode in one namespace (`--print-rbac`), installs its webhook configurations
//! with a generated CA; kubectl's apply of an invalid App is denied by its validator with
//! the same message on both servers, and a valid App's untagged image is defaulted by its
//! defaulter into the Deployment on both.

// Shared with the other test binaries, which use the helpers this one does not.
#[allow(dead_code)]
mod common;

use std::process::Stdio;

use testenv::eventually;

use common::{Controller, Server, apply, artifact, kubectl, print_rbac, try_apply};

const USER: &str = "app-controller-fake-webhooks";

/// What a server did: kubectl's refusal of the invalid App (the namespace written
/// `<ns>`), and the image of the valid App's Deployment.
#[derive(Debug, PartialEq)]
struct Seen {
    refusal: String,
    image: String,
}

/// Installs the CRD and the RBAC, runs the controller with its webhooks on `s`, and
/// records what kubectl and the Deployment show.
async fn denied_and_defaulted(s: &Server) -> Seen {
    apply(&s.admin, &artifact("crd/appcontroller.k8s.io_apps.yaml"));
    let namespace = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {}\n",
        s.ns
    );
    apply(&s.admin, &namespace);
    let webhooks = ["--webhook-bind-address", "127.0.0.1:0"];
    apply(&s.admin, &print_rbac(&s.ns, USER, &webhooks));
    let health = common::free_address().to_string();
    let flags = [
        "--health-probe-bind-address",
        &health,
        "--webhook-bind-address",
        "127.0.0.1:0",
    ];
    let mut controller = Controller::start_with(&s.user, &s.ns, &flags, Stdio::null());
    common::wait_ready(&health).await;

    let invalid = format!(
        "apiVersion: appcontroller.k8s.io/v1\nkind: App\nmetadata: {{name: bad, namespace: {}}}\n\
         spec: {{deploymentTemplate: {{name: web, image: nginx, replicas: -1}}}}\n",
        s.ns
    );
    // The real server's admission sees the new configurations a moment after they are made.
    let refusal = eventually(30, "the validator to refuse the App", || async {
        let (ok, stderr) = try_apply(&s.admin, &invalid);
        (!ok).then(|| stderr.replace(&s.ns, "<ns>"))
    })
    .await;
    let app = artifact("example/test_app.yaml")
        .replace("namespace: tcs", &format!("namespace: {}", s.ns));
    apply(&s.admin, &app);
    let image = eventually(60, "the App's Deployment", || async {
        let out = kubectl(&s.admin)
            .args(["--namespace", &s.ns, "get", "deployment/app-deploy"])
            .args(["-o", "jsonpath={.spec.template.spec.containers[0].image}"])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    })
    .await;
    let status = controller.terminate();
    assert!(status.success(), "app-controller exited with {status}");
    let name = format!("app-controller-{}", s.ns);
    for kind in [
        "validatingwebhookconfiguration",
        "mutatingwebhookconfiguration",
    ] {
        let deleted = kubectl(&s.admin).args(["delete", kind, &name]).output();
        assert!(
            deleted.is_ok_and(|o| o.status.success()),
            "{kind} {name} deleted"
        );
    }
    Seen { refusal, image }
}

// kubectl blocks its thread: the fake serves it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_webhooks_deny_and_default_alike_on_the_fake_and_the_real_server() {
    let (real, fake, fake_server) = common::real_and_fake(USER, "fake-webhooks").await;
    let on_real = denied_and_defaulted(&real).await;
    let on_fake = denied_and_defaulted(&fake).await;
    println!("on both: {on_real:?}");
    assert!(
        on_real.refusal.contains(
            r#"denied the request: App "bad" is invalid: spec.deploymentTemplate.replicas must not be negative"#
        ),
        "{on_real:?}"
    );
    assert_eq!(on_real.image, "nginx:latest");
    assert_eq!(on_fake, on_real, "the fake admits as the real server does");
    fake_server.shutdown().await;
}
