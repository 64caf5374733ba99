//! The App controller end to end: the real binary, run as an identity bound only to
//! `artifacts/rbac.yaml`'s ClusterRole (through a RoleBinding in the test namespace), on
//! the real control plane, driven with kubectl like a user would.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use app_controller::App;
use app_controller::controller::APP_LABEL;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Service};
use kubekit::clientset::{
    Clientset, CreateOptions, DeleteOptions, GetOptions, ListOptions, Patch, PatchOptions,
    ResourceClient,
};
use kubekit::rest::Config;
use serde_json::json;
use testenv::{ControlPlane, eventually};

fn kubectl_apply(cp: &ControlPlane, yaml: &str) {
    let mut child = cp
        .kubectl()
        .args(["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kubectl");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(yaml.as_bytes())
        .expect("write manifest");
    let out = child.wait_with_output().expect("kubectl apply");
    assert!(
        out.status.success(),
        "kubectl apply failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn artifact(path: &str) -> String {
    std::fs::read_to_string(format!("{}/artifacts/{path}", env!("CARGO_MANIFEST_DIR")))
        .expect("artifact")
}

/// The controller process; stopped with SIGTERM when dropped (if still running).
struct Controller(Child);

impl Controller {
    fn start(kubeconfig: &std::path::Path, ns: &str) -> Self {
        let child = Command::new(env!("CARGO_BIN_EXE_app-controller"))
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--namespace", ns, "--workers", "5"])
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start app-controller");
        Self(child)
    }

    fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.0.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill -TERM");
        for _ in 0..300 {
            if let Some(status) = self.0.try_wait().expect("try_wait") {
                return status;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        panic!("app-controller did not exit within 30 s of SIGTERM");
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
        }
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

async fn events_for(cs: &Clientset, ns: &str, app: &str, reason: &str) -> Vec<Event> {
    cs.core_v1()
        .events(ns)
        .list(&ListOptions::default().fields(&format!("involvedObject.name={app}")))
        .await
        .expect("list events")
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .collect()
}

#[tokio::test]
async fn the_app_controller_manages_deployments_and_services_with_least_privilege() {
    let cp = testenv::control_plane();
    let admin =
        Clientset::new(&Config::from_kubeconfig(cp.kubeconfig_path()).await.unwrap()).unwrap();
    let ns = cp.create_namespace(&cp.client().await, "app-e2e").await;

    kubectl_apply(cp, &artifact("crd/appcontroller.k8s.io_apps.yaml"));
    let out = cp
        .kubectl()
        .args(["wait", "--for", "condition=Established", "--timeout", "60s"])
        .arg("crd/apps.appcontroller.k8s.io")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    kubectl_apply(cp, &artifact("rbac.yaml"));
    // The test identity gets the ClusterRole in its namespace only.
    kubectl_apply(
        cp,
        &format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: app-controller-e2e\n  namespace: {ns}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: app-controller\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: app-controller-e2e\n"
        ),
    );
    let user = cp.user_kubeconfig("app-controller-e2e", &[]);
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
    let spec = deploy.spec.as_ref().unwrap();
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
        other.spec.unwrap().selector.match_labels.unwrap()[APP_LABEL],
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
    let patch =
        Patch::Merge(json!({"spec": {"deploymentTemplate": {"replicas": 3, "image": "tomcat"}}}));
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
            let spec = d.spec?;
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
