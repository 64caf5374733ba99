//! The example of the guide's testing chapter (docs/testing.md): a controller — here the
//! repository's App controller, informers, work queue, reconciler and event recorder
//! included — tested against the fake in plain `cargo test`, in well under a second, no Go
//! and no kube-apiserver needed.

use std::time::{Duration, Instant};

use app_controller::App;
use app_controller::controller::{APP_LABEL, add_to};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use k8s_openapi::api::core::v1::Service;
use kube::core::CustomResourceExt;
use kubekit::clientset::{
    Clientset, CreateOptions, DeleteOptions, GetOptions, PatchBody, PatchOptions, UpdateOptions,
};
use kubekit::manager::Manager;
use kubekit_fake::FakeApiServer;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Polls `check` every 5 ms until it gives `Some` (at most 10 s).
async fn eventually<T, Fut>(what: &str, mut check: impl FnMut() -> Fut) -> T
where
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The App controller (two workers) on a manager watching `default`, as a task.
struct Running {
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), kubekit::manager::ManagerError>>,
}

impl Running {
    async fn stop(self) {
        self.cancel.cancel();
        self.task
            .await
            .expect("controller task")
            .expect("controller ran");
    }
}

/// A fake API server with the App CRD installed, a clientset for it, and the App
/// controller running against it.
async fn app_controller() -> (FakeApiServer, Clientset, Running) {
    let server = FakeApiServer::start().await.expect("fake starts");
    let cs = Clientset::new(&server.config()).expect("clientset");
    // The fake establishes and serves a CRD at once, so this returns on the first read.
    cs.install_crd(App::crd(), "kubekit-tests")
        .await
        .expect("App CRD installed");
    let cancel = CancellationToken::new();
    let mut mgr = Manager::builder(server.config())
        .namespace("default")
        .build()
        .expect("manager");
    add_to(&mut mgr, 2, 10).expect("App controller added");
    let task = tokio::spawn(mgr.start(cancel.clone()));
    (server, cs, Running { cancel, task })
}

/// App `web` in `default`: Deployment `web-deploy` (2 nginx) and Service `web-svc`.
fn web() -> App {
    serde_json::from_value(json!({
        "apiVersion": "appcontroller.k8s.io/v1", "kind": "App",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"deploymentTemplate": {"name": "web-deploy", "image": "nginx", "replicas": 2},
                 "serviceTemplate": {"name": "web-svc"}},
    }))
    .expect("an App")
}

#[tokio::test]
async fn app_controller_creates_owned_children_copies_their_status_and_recreates_a_deleted_deployment()
 {
    let started = Instant::now();
    let (server, cs, controller) = app_controller().await;
    let app = cs
        .resource::<App>("default")
        .create(&web(), &CreateOptions::default())
        .await
        .expect("App created");
    let uid = app.metadata.uid.clone();

    let deployments = cs.apps_v1().deployments("default");
    let services = cs.core_v1().services("default");
    let get = GetOptions::default();
    let deployment = eventually("the Deployment", || async {
        deployments.get("web-deploy", &get).await.ok()
    })
    .await;
    let owner = &deployment
        .metadata
        .owner_references
        .as_ref()
        .expect("owned")[0];
    assert_eq!(
        (owner.uid.as_str(), owner.controller),
        (uid.as_deref().unwrap_or(""), Some(true))
    );
    assert_eq!(deployment.spec.replicas, Some(2));
    let service: Service = eventually("the Service", || async {
        services.get("web-svc", &get).await.ok()
    })
    .await;
    assert_eq!(
        service.metadata.owner_references.as_ref().map(Vec::len),
        Some(1)
    );
    // The fake runs no Deployment controller: the test plays it, and the App controller
    // copies the Deployment's status into the App's.
    let mut with_status = deployment.clone();
    with_status.status = Some(DeploymentStatus {
        available_replicas: Some(2),
        ..Default::default()
    });
    deployments
        .update_status(&with_status, &UpdateOptions::default())
        .await
        .expect("status written");
    eventually("the App's status", || async {
        let app = cs.resource::<App>("default").get("web", &get).await.ok()?;
        app.status?
            .deployment_status?
            .available_replicas
            .filter(|n| *n == 2)
    })
    .await;

    // A deleted Deployment is made again.
    deployments
        .delete("web-deploy", &DeleteOptions::default())
        .await
        .expect("deleted");
    let again: Deployment = eventually("the Deployment again", || async {
        deployments
            .get("web-deploy", &get)
            .await
            .ok()
            .filter(|d| d.metadata.uid != deployment.metadata.uid)
    })
    .await;
    assert!(again.metadata.uid.is_some());

    // Deleting the App collects what it owns.
    cs.resource::<App>("default")
        .delete("web", &DeleteOptions::default())
        .await
        .expect("App deleted");
    // (The controller may still make a child for the App it has not seen go; the
    // collector removes that one too.)
    eventually("the children collected", || async {
        let deployment = deployments.get("web-deploy", &get).await;
        let service = services.get("web-svc", &get).await;
        (deployment.is_err_and(|e| e.is_not_found()) && service.is_err_and(|e| e.is_not_found()))
            .then_some(())
    })
    .await;

    controller.stop().await;
    server.shutdown().await;
    println!(
        "App controller scenario against kubekit-fake: {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn renaming_an_apps_children_deletes_the_old_ones_it_controls_and_nothing_else() {
    let (server, cs, controller) = app_controller().await;
    let apps = cs.resource::<App>("default");
    apps.create(&web(), &CreateOptions::default())
        .await
        .expect("App created");
    let deployments = cs.apps_v1().deployments("default");
    let services = cs.core_v1().services("default");
    let get = GetOptions::default();
    eventually("the children", || async {
        deployments.get("web-deploy", &get).await.ok()?;
        services.get("web-svc", &get).await.ok()
    })
    .await;
    // A Deployment with the App's label that the App does not control.
    let lookalike: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "lookalike", "labels": {APP_LABEL: "web"}},
        "spec": {"selector": {"matchLabels": {APP_LABEL: "web"}},
                 "template": {"metadata": {"labels": {APP_LABEL: "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    }))
    .expect("a Deployment");
    deployments
        .create(&lookalike, &CreateOptions::default())
        .await
        .expect("lookalike created");

    let rename = PatchBody::Merge(
        json!({"spec": {"deploymentTemplate": {"name": "web-deploy-2"},
                                              "serviceTemplate": {"name": "web-svc-2"}}}),
    );
    apps.patch("web", &rename, &PatchOptions::default())
        .await
        .expect("App renamed its children");
    eventually("the new children, and the old ones gone", || async {
        let new = deployments.get("web-deploy-2", &get).await.is_ok()
            && services.get("web-svc-2", &get).await.is_ok();
        let gone = deployments
            .get("web-deploy", &get)
            .await
            .is_err_and(|e| e.is_not_found())
            && services
                .get("web-svc", &get)
                .await
                .is_err_and(|e| e.is_not_found());
        (new && gone).then_some(())
    })
    .await;
    assert!(
        deployments.get("lookalike", &get).await.is_ok(),
        "a Deployment the App does not control is left alone"
    );

    controller.stop().await;
    server.shutdown().await;
}

#[tokio::test]
async fn an_app_being_deleted_gets_no_new_children() {
    let (server, cs, controller) = app_controller().await;
    let apps = cs.resource::<App>("default");
    let mut held = web();
    // A finalizer of someone else's keeps the App in deletion until it is removed.
    held.metadata.finalizers = Some(vec!["test.kubekit.dev/hold".into()]);
    apps.create(&held, &CreateOptions::default())
        .await
        .expect("App created");
    let deployments = cs.apps_v1().deployments("default");
    let get = GetOptions::default();
    eventually("the Deployment", || async {
        deployments.get("web-deploy", &get).await.ok()
    })
    .await;

    apps.delete("web", &DeleteOptions::default())
        .await
        .expect("deletion started");
    eventually("the App marked for deletion", || async {
        apps.get("web", &get)
            .await
            .ok()?
            .metadata
            .deletion_timestamp
    })
    .await;
    deployments
        .delete("web-deploy", &DeleteOptions::default())
        .await
        .expect("Deployment deleted");
    // A live App gets its Deployment back within milliseconds here (the test above); one
    // being deleted must not, or the controller would fight the garbage collector.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let gone = deployments.get("web-deploy", &get).await;
    assert!(gone.is_err_and(|e| e.is_not_found()), "made again");

    apps.patch(
        "web",
        &PatchBody::Merge(json!({"metadata": {"finalizers": null}})),
        &PatchOptions::default(),
    )
    .await
    .expect("finalizer removed");
    controller.stop().await;
    server.shutdown().await;
}
