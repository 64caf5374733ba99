//! The scenario both test binaries run: on kubekit-fake (`tests/fake.rs`) and on kubekit's
//! local control plane (`tests/e2e.rs`).

use std::time::Duration;

use kube::core::CustomResourceExt;
use kubekit::k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kubekit::prelude::*;

use __CRATE__::__SNAKE__::controller::{FINALIZER, add_to, config_map_name};
use __CRATE__::__SNAKE__::{__KIND__, __KIND__Spec};

/// Polls `check` every 50 ms until it gives a value, for at most `secs` seconds.
async fn eventually<T, F: Future<Output = Option<T>>>(
    secs: u64,
    what: &str,
    check: impl Fn() -> F,
) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Installs the CRD with `config`, runs the controller in namespace `ns`, and checks a
/// __KIND__'s ConfigMap, `Ready` condition, finalizer, update and deletion.
pub async fn scenario(config: RestConfig, ns: &str) {
    let clientset = Clientset::new(&config).expect("a client");
    clientset
        .install_crd(__KIND__::crd(), "__NAME__-test")
        .await
        .expect("the CRD installed");
    let namespace = Namespace {
        metadata: kubekit::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(ns.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    let namespaces = clientset.core_v1().namespaces();
    namespaces
        .create(&namespace, &CreateOptions::default())
        .await
        .expect("the namespace");
    let mut mgr = Manager::builder(config)
        .namespace(ns)
        .build()
        .expect("a manager");
    add_to(&mut mgr, 2).expect("the controller");
    let cancel = CancellationToken::new();
    let running = tokio::spawn(mgr.start(cancel.clone()));

    let objects = clientset.resource::<__KIND__>(ns);
    let object = __KIND__::new(
        "sample",
        __KIND__Spec {
            message: "hello".into(),
        },
    );
    // A CRD is served a moment after it is created on a real server.
    eventually(30, "the __KIND__ created", || async {
        objects
            .create(&object, &CreateOptions::default())
            .await
            .ok()
    })
    .await;
    let config_maps = clientset.core_v1().config_maps(ns);
    let cm_name = config_map_name(&object);
    // Waits until the ConfigMap holds `expected`.
    let holds = |expected: &'static str| {
        let (config_maps, cm_name) = (&config_maps, &cm_name);
        async move {
            let what = format!("the ConfigMap to hold {expected:?}");
            eventually(60, &what, || async {
                let cm: ConfigMap = config_maps
                    .get(cm_name, &GetOptions::default())
                    .await
                    .ok()?;
                let message = cm.data?.remove("message");
                (message.as_deref() == Some(expected)).then_some(())
            })
            .await
        }
    };
    holds("hello").await;
    let ready = eventually(60, "Ready", || async {
        let object = objects.get("sample", &GetOptions::default()).await.ok()?;
        let conditions = object
            .status
            .clone()
            .map(|s| s.conditions)
            .unwrap_or_default();
        is_status_condition_true(&conditions, "Ready").then_some(object)
    })
    .await;
    assert!(
        has_finalizer(&ready, FINALIZER),
        "the finalizer is added first"
    );

    // A new message reaches the ConfigMap.
    let patch = PatchBody::Merge(serde_json::json!({"spec": {"message": "again"}}));
    objects
        .patch("sample", &patch, &PatchOptions::default())
        .await
        .expect("the patch");
    holds("again").await;

    // Deleted: the finalizer's cleanup deletes the ConfigMap, then the __KIND__ goes.
    objects
        .delete("sample", &DeleteOptions::default())
        .await
        .expect("the delete");
    eventually(60, "the __KIND__ and its ConfigMap gone", || async {
        let object = objects
            .get("sample", &GetOptions::default())
            .await
            .map(drop);
        let cm = config_maps
            .get(&cm_name, &GetOptions::default())
            .await
            .map(drop);
        let gone = |r: Result<(), kubekit::rest::Error>| r.is_err_and(|e| e.is_not_found());
        (gone(object) && gone(cm)).then_some(())
    })
    .await;

    cancel.cancel();
    running
        .await
        .expect("the manager's task")
        .expect("the manager stops cleanly");
}
