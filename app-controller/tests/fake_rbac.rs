//! The RBAC the App controller prints (`--print-rbac`) on kubekit-fake with RBAC, beside
//! the real control plane: the real binary, run as a user bound to it in one namespace
//! with one rule cut (Services may not be created), creates its Deployment and is refused
//! its Service with the same `403` on both servers; bound to the whole of it, it creates
//! the Service on both.
//!
//! And in every mode (plain, leader election, sharded, webhooks) on kubekit-fake with
//! RBAC, run as a user bound to exactly what it prints for that mode, it reconciles an App
//! without a single refusal in its log; `artifacts/rbac.yaml` is what it prints for
//! `artifacts/deploy.yaml`'s flags.

// Shared with the other test binaries, which use the helpers this one does not.
#[allow(dead_code)]
mod common;

use testenv::eventually;

use common::{
    Controller, Server, apply, artifact, kubectl, print_rbac, printed_rbac, short_lease, try_apply,
};

const USER: &str = "app-controller-fake-rbac";

/// `rbac` (`--print-rbac`'s YAML stream) with `create` cut from the rule on Services.
fn without_service_create(rbac: &str) -> String {
    let mut cut = 0;
    let documents: Vec<String> = rbac
        .split("---\n")
        .map(|doc| {
            let mut doc: serde_json::Value = serde_yaml::from_str(doc).expect("YAML");
            for rule in doc["rules"].as_array_mut().into_iter().flatten() {
                let services = serde_json::json!(["services"]);
                if rule["resources"] == services && rule["apiGroups"] == serde_json::json!([""]) {
                    let verbs = rule["verbs"].as_array_mut().expect("verbs");
                    let before = verbs.len();
                    verbs.retain(|v| v != "create");
                    cut += before - verbs.len();
                }
            }
            doc.to_string()
        })
        .collect();
    assert_eq!(cut, 1, "one rule creates Services: {rbac}");
    documents.join("\n---\n")
}

/// A `kubectl get` of `what` in the namespace succeeds.
fn exists(s: &Server, what: &str) -> bool {
    kubectl(&s.admin)
        .args(["--namespace", &s.ns, "get", what])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs the controller on `s` with the cut role, and returns its refusal of the Service
/// (the namespace written `<ns>`); then applies the whole of it and waits for the
/// Service.
async fn refused_then_allowed(s: &Server) -> String {
    apply(&s.admin, &artifact("crd/appcontroller.k8s.io_apps.yaml"));
    apply(
        &s.admin,
        &format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {}\n",
            s.ns
        ),
    );
    let rbac = print_rbac(&s.ns, USER, &[]);
    apply(&s.admin, &without_service_create(&rbac));
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
    // The whole Role: the retried reconcile creates the Service.
    apply(&s.admin, &rbac);
    eventually(90, "the Service once the whole role is applied", || async {
        exists(s, "service/app-service").then_some(())
    })
    .await;
    let status = controller.terminate();
    assert!(status.success(), "app-controller exited with {status}");
    let _ = std::fs::remove_file(&log);
    refusal
}

// kubectl blocks its thread: the fake serves it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_cut_from_the_printed_rbac_is_refused_alike_on_the_fake_and_the_real_server() {
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

/// The flags of each mode, as far as RBAC is concerned (and short Lease timings), beside
/// `--namespace`.
fn modes(ns: &str) -> [(&'static str, Vec<&str>); 4] {
    let with = |flags: &[&'static str]| [flags, &short_lease(ns)[..]].concat();
    [
        ("plain", Vec::new()),
        ("leader election", with(&["--leader-elect"])),
        ("sharded", with(&["--shard-ring", "apps"])),
        ("webhooks", with(&["--webhook-bind-address", "127.0.0.1:0"])),
    ]
}

// kubectl blocks its thread: the fake serves it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mode_reconciles_on_the_fake_with_no_refusal_as_the_printed_rbac_allows() {
    let fake = kubekit_fake::FakeApiServer::with_rbac()
        .await
        .expect("the fake starts");
    let admin = fake.kubeconfig_path().to_path_buf();
    apply(&admin, &artifact("crd/appcontroller.k8s.io_apps.yaml"));
    for i in 0..modes("").len() {
        let ns = format!("mode-{i}");
        let (mode, flags) = &modes(&ns)[i];
        let user = format!("app-controller-mode-{i}");
        let namespace = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n");
        apply(&admin, &namespace);
        apply(&admin, &print_rbac(&ns, &user, flags));
        let kubeconfig = fake.user_kubeconfig(&user, &[]).expect("a kubeconfig");
        let health = common::free_address().to_string();
        let log = std::env::temp_dir().join(format!("{ns}-{}.log", std::process::id()));
        let file = std::fs::File::create(&log).expect("a log file");
        let flags = [&["--health-probe-bind-address", health.as_str()][..], flags].concat();
        let mut controller = Controller::start_with(&kubeconfig, &ns, &flags, file.into());
        common::wait_ready(&health).await;
        let app = artifact("example/test_app.yaml")
            .replace("namespace: tcs", &format!("namespace: {ns}"));
        // With webhooks, the App waits for their configurations to be installed.
        eventually(60, &format!("{mode}: the App created"), || async {
            try_apply(&admin, &app).0.then_some(())
        })
        .await;
        let s = Server {
            admin: admin.clone(),
            user: kubeconfig.clone(),
            ns: ns.clone(),
        };
        for child in ["deployment/app-deploy", "service/app-service"] {
            eventually(60, &format!("{mode}: {child}"), || async {
                exists(&s, child).then_some(())
            })
            .await;
        }
        eventually(
            60,
            &format!("{mode}: the App's status and event"),
            || async {
                let text = std::fs::read_to_string(&log).ok()?;
                let status = kubectl(&admin)
                    .args(["--namespace", &ns, "get", "app/test-app"])
                    .args(["-o", "jsonpath={.status.deploymentStatus}"])
                    .output()
                    .ok()?;
                let events = kubectl(&admin)
                    .args([
                        "--namespace",
                        &ns,
                        "get",
                        "events",
                        "--field-selector",
                        "reason=Synced",
                    ])
                    .args(["-o", "name"])
                    .output()
                    .ok()?;
                (!status.stdout.is_empty()
                    && !events.stdout.is_empty()
                    && text.contains("reconcile ended"))
                .then_some(())
            },
        )
        .await;
        let status = controller.terminate();
        let text = std::fs::read_to_string(&log).expect("the log");
        let _ = std::fs::remove_file(&log);
        assert!(
            status.success(),
            "{mode}: app-controller exited with {status}\n{text}"
        );
        // A 403's message and reason both say it.
        assert!(
            !text.to_lowercase().contains("forbidden"),
            "{mode}: a refusal in the log:\n{text}"
        );
    }
    fake.shutdown().await;
}

#[test]
fn the_shipped_rbac_yaml_is_what_the_controller_prints_for_deploy_yaml() {
    // The container's args in deploy.yaml.
    let deploy = artifact("deploy.yaml");
    let args: Vec<String> = deploy
        .split("\n---\n")
        .filter_map(|doc| serde_yaml::from_str::<serde_json::Value>(doc).ok())
        .find(|doc| doc["kind"] == "Deployment")
        .and_then(|d| {
            serde_json::from_value(d["spec"]["template"]["spec"]["containers"][0]["args"].clone())
                .ok()
        })
        .expect("deploy.yaml's Deployment has args");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let printed = printed_rbac(&args);
    let shipped = artifact("rbac.yaml");
    let shipped: String = shipped
        .lines()
        .skip_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        shipped,
        printed,
        "artifacts/rbac.yaml is out of date: regenerate its YAML with \
         `cargo run -p app-controller -- --print-rbac {}` (keeping its comment)",
        args.join(" ")
    );
}
