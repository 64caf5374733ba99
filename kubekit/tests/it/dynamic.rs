//! Integration tests of `kubekit::dynamic`: every verb on a built-in resource and on the
//! App custom resource by GVR, the same error kinds as the typed clients, and conversion
//! of listed objects into typed ones.

use std::collections::BTreeMap;

use app_controller::App;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kubekit::clientset::{
    CreateOptions, DeleteOptions, DeleteResponse, GetOptions, ListOptions, PatchBody, PatchOptions,
    UpdateOptions,
};
use kubekit::dynamic::{ConversionError, DynamicClient, Unstructured, from_typed};
use kubekit::meta::{GroupVersionKind, GroupVersionResource};
use kubekit::rest::WatchEvent;
use serde_json::{Value, json};

use crate::clientset::{
    app, config_map, deployment, ensure_app_crd, next_event_for, restricted_config, setup,
};
use testenv::eventually;

fn configmaps() -> GroupVersionResource {
    GroupVersionResource::new("", "v1", "configmaps")
}

fn apps() -> GroupVersionResource {
    GroupVersionResource::of::<App>()
}

fn object(value: Value) -> Unstructured {
    serde_json::from_value(value).expect("unstructured object")
}

fn names(items: &[Unstructured]) -> Vec<&str> {
    let mut names: Vec<&str> = items.iter().filter_map(Unstructured::name).collect();
    names.sort_unstable();
    names
}

#[tokio::test]
async fn dynamic_config_maps_support_every_verb() {
    let (cs, ns) = setup("dyn-verbs").await;
    let dynamic = DynamicClient::from_rest_client(cs.rest_client().clone());
    let cms = dynamic.resource(&configmaps()).namespace(&ns);

    let created = cms
        .create(
            &object(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "web", "labels": {"app": "web"}},
                "data": {"a": "1"},
            })),
            &CreateOptions::default(),
        )
        .await
        .expect("create");
    assert_eq!(created.namespace(), Some(ns.as_str()));
    assert!(created.uid().is_some() && created.resource_version().is_some());
    cms.create(
        &from_typed(&config_map("db", &[("app", "db")], &[])).expect("from typed"),
        &CreateOptions::default(),
    )
    .await
    .expect("create db");

    let got = cms.get("web", &GetOptions::default()).await.expect("get");
    assert_eq!(got.nested(&["data", "a"]), Some(&json!("1")));
    assert_eq!(got.labels().get("app").map(String::as_str), Some("web"));

    let listed = cms
        .list(&ListOptions::default().labels("app in (web,db)"))
        .await
        .expect("list");
    assert_eq!(names(&listed.items), ["db", "web"]);
    for item in &listed.items {
        assert_eq!(
            item.gvk(),
            GroupVersionKind::new("", "v1", "ConfigMap"),
            "list items carry their type"
        );
    }
    let by_field = cms
        .list(&ListOptions::default().fields("metadata.name=web"))
        .await
        .expect("list by field");
    assert_eq!(names(&by_field.items), ["web"]);

    let rv = listed
        .metadata
        .resource_version
        .clone()
        .expect("list resourceVersion");
    let mut events = cms
        .watch(
            &ListOptions::default()
                .labels("app=web")
                .resource_version(&rv),
        )
        .await
        .expect("watch");

    let mut changed = got.clone();
    changed.fields.insert("data".into(), json!({"a": "2"}));
    let updated = cms
        .update(&changed, &UpdateOptions::default())
        .await
        .expect("update");
    assert_eq!(updated.nested(&["data", "a"]), Some(&json!("2")));
    cms.patch(
        "web",
        &PatchBody::Merge(json!({"data": {"b": "3"}})),
        &PatchOptions::default(),
    )
    .await
    .expect("merge patch");
    cms.patch(
        "web",
        &PatchBody::Json(json!([{"op": "add", "path": "/data/c", "value": "4"}])),
        &PatchOptions::default(),
    )
    .await
    .expect("json patch");
    cms.patch(
        "web",
        &PatchBody::Strategic(json!({"data": {"d": "5"}})),
        &PatchOptions::default(),
    )
    .await
    .expect("strategic merge patch");
    let applied = cms
        .patch(
            "web",
            &PatchBody::Apply(json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "web"},
                "data": {"e": "6"},
            })),
            &PatchOptions::apply("kubekit-dynamic"),
        )
        .await
        .expect("apply");
    assert_eq!(
        applied.field("data"),
        Some(&json!({"a": "2", "b": "3", "c": "4", "d": "5", "e": "6"}))
    );

    for step in ["update", "merge", "json", "strategic", "apply"] {
        match next_event_for(&mut events, "web").await {
            WatchEvent::Modified(obj) => assert_eq!(obj.gvk().kind, "ConfigMap", "{step}"),
            other => panic!("{step}: expected MODIFIED, got {other:?}"),
        }
    }

    let deleted = cms
        .delete("web", &DeleteOptions::default())
        .await
        .expect("delete");
    assert!(matches!(deleted, DeleteResponse::Status(_)), "{deleted:?}");
    assert!(matches!(
        next_event_for(&mut events, "web").await,
        WatchEvent::Deleted(_)
    ));
    assert!(
        cms.get("web", &GetOptions::default())
            .await
            .expect_err("gone")
            .is_not_found()
    );

    let gone = cms
        .delete_collection(
            &DeleteOptions::default(),
            &ListOptions::default().labels("app=db"),
        )
        .await
        .expect("delete_collection");
    let gone = gone.object().expect("the deleted objects");
    assert_eq!(names(&gone.items), ["db"]);
    assert_eq!(gone.items[0].kind, "ConfigMap");
    assert!(
        cms.list(&ListOptions::default().labels("app"))
            .await
            .expect("list")
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn dynamic_app_custom_resource_supports_every_verb_with_status_subresource() {
    let (cs, ns) = setup("dyn-app-crd").await;
    ensure_app_crd(&cs).await;
    let dynamic = DynamicClient::from_rest_client(cs.rest_client().clone());
    let apps = dynamic.resource(&apps()).namespace(&ns);

    let created = apps
        .create(
            &from_typed(&app("shop", 2)).expect("from typed"),
            &CreateOptions::default(),
        )
        .await
        .expect("create");
    assert_eq!(
        created.gvk(),
        GroupVersionKind::new("appcontroller.k8s.io", "v1", "App")
    );
    assert_eq!(
        created.nested(&["spec", "deploymentTemplate", "replicas"]),
        Some(&json!(2))
    );
    let mut events = apps
        .watch(&ListOptions::default().resource_version(created.resource_version().expect("rv")))
        .await
        .expect("watch");

    let mut both = apps.get("shop", &GetOptions::default()).await.expect("get");
    both.fields.insert(
        "status".into(),
        json!({"deploymentStatus": {"replicas": 7}}),
    );
    let spec = both
        .fields
        .get_mut("spec")
        .and_then(Value::as_object_mut)
        .expect("spec");
    spec.insert("serviceTemplate".into(), json!({"name": "shop-svc"}));
    let updated = apps
        .update(&both, &UpdateOptions::default())
        .await
        .expect("update");
    assert_eq!(
        updated.nested(&["spec", "serviceTemplate", "name"]),
        Some(&json!("shop-svc"))
    );
    assert_eq!(
        updated.field("status"),
        None,
        "update must not write the status"
    );

    let mut status_only = updated.clone();
    status_only.fields.insert(
        "status".into(),
        json!({"deploymentStatus": {"replicas": 7}}),
    );
    status_only.fields.insert("spec".into(), json!({}));
    let with_status = apps
        .update_status(&status_only, &UpdateOptions::default())
        .await
        .expect("update_status");
    assert_eq!(
        with_status.nested(&["status", "deploymentStatus", "replicas"]),
        Some(&json!(7))
    );
    assert_eq!(
        with_status.nested(&["spec", "serviceTemplate", "name"]),
        Some(&json!("shop-svc"))
    );
    let status = apps
        .get_status("shop", &GetOptions::default())
        .await
        .expect("get_status");
    assert_eq!(
        status.nested(&["status", "deploymentStatus", "replicas"]),
        Some(&json!(7))
    );

    let patched = apps
        .patch_status(
            "shop",
            &PatchBody::Merge(json!({"status": {"deploymentStatus": {"replicas": 8}}})),
            &PatchOptions::default(),
        )
        .await
        .expect("patch_status");
    assert_eq!(
        patched.nested(&["status", "deploymentStatus", "replicas"]),
        Some(&json!(8))
    );
    let patched = apps
        .patch(
            "shop",
            &PatchBody::Merge(json!({"spec": {"deploymentTemplate": {"replicas": 4}}})),
            &PatchOptions::default(),
        )
        .await
        .expect("patch");
    let typed: App = patched.to_typed().expect("to typed");
    assert_eq!(typed.spec.deployment_template.replicas, 4);
    assert_eq!(
        typed
            .status
            .and_then(|s| s.deployment_status)
            .and_then(|d| d.replicas),
        Some(8)
    );

    let listed = apps.list(&ListOptions::default()).await.expect("list");
    assert_eq!(names(&listed.items), ["shop"]);
    assert_eq!(listed.items[0].kind, "App");

    for step in ["update", "update_status", "patch_status", "patch"] {
        assert!(
            matches!(
                next_event_for(&mut events, "shop").await,
                WatchEvent::Modified(_)
            ),
            "{step}"
        );
    }
    let deleted = apps
        .delete("shop", &DeleteOptions::default())
        .await
        .expect("delete");
    assert_eq!(
        deleted
            .status()
            .and_then(|s| s.details.as_ref())
            .and_then(|d| d.uid.as_deref()),
        created.uid()
    );
    assert!(matches!(
        next_event_for(&mut events, "shop").await,
        WatchEvent::Deleted(_)
    ));

    for name in ["a1", "a2"] {
        apps.create(
            &from_typed(&app(name, 1)).expect("from typed"),
            &CreateOptions::default(),
        )
        .await
        .expect("create");
    }
    let gone = apps
        .delete_collection(&DeleteOptions::default(), &ListOptions::default())
        .await
        .expect("delete_collection");
    assert_eq!(
        names(&gone.object().expect("deleted apps").items),
        ["a1", "a2"]
    );
}

#[tokio::test]
async fn dynamic_pods_convert_into_typed_pods_and_refuse_other_kinds() {
    let (cs, ns) = setup("dyn-pods").await;
    let pods = cs.core_v1().pods(&ns);
    for name in ["p1", "p2"] {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"app": "demo"}},
            "spec": {
                "containers": [{"name": "c", "image": "nginx"}],
                "automountServiceAccountToken": false,
            },
        }))
        .expect("pod");
        // The namespace's default service account appears shortly after the namespace.
        eventually(30, "a pod to be admitted", || {
            let (pods, pod) = (pods.clone(), pod.clone());
            async move { pods.create(&pod, &CreateOptions::default()).await.ok() }
        })
        .await;
    }

    let dynamic = DynamicClient::from_rest_client(cs.rest_client().clone());
    let listed = dynamic
        .resource(&GroupVersionResource::new("", "v1", "pods"))
        .namespace(&ns)
        .list(&ListOptions::default().limit(500))
        .await
        .expect("list pods");
    assert!(listed.skipped.is_empty());
    let typed: Vec<Pod> = listed
        .items
        .iter()
        .cloned()
        .map(Unstructured::into_typed)
        .collect::<Result<_, _>>()
        .expect("typed pods");
    let mut typed_names: Vec<_> = typed
        .iter()
        .filter_map(|p| p.metadata.name.as_deref())
        .collect();
    typed_names.sort_unstable();
    assert_eq!(typed_names, ["p1", "p2"]);
    let direct = pods
        .list(&ListOptions::default())
        .await
        .expect("typed list");
    for pod in &direct.items {
        let same = typed
            .iter()
            .find(|p| p.metadata.name == pod.metadata.name)
            .expect("same pod");
        assert_eq!(same.metadata.uid, pod.metadata.uid);
        assert_eq!(same.spec, pod.spec);
    }

    let err = listed.items[0]
        .to_typed::<Deployment>()
        .expect_err("a Pod is not a Deployment");
    match &err {
        ConversionError::KindMismatch {
            found, expected, ..
        } => {
            assert_eq!(**found, GroupVersionKind::new("", "v1", "Pod"));
            assert_eq!(**expected, GroupVersionKind::of::<Deployment>());
        }
        other => panic!("expected a kind mismatch, got {other}"),
    }
    assert!(
        err.to_string()
            .contains("(v1, Kind=Pod) into apps/v1, Kind=Deployment"),
        "{err}"
    );
}

#[tokio::test]
async fn dynamic_errors_have_the_same_kinds_as_typed_ones() {
    let (cs, ns) = setup("dyn-errors").await;
    let dynamic = DynamicClient::from_rest_client(cs.rest_client().clone());
    let cms = dynamic.resource(&configmaps()).namespace(&ns);

    let err = cms
        .get("missing", &GetOptions::default())
        .await
        .expect_err("404");
    assert!(err.is_not_found(), "{err}");

    let original = cms
        .create(
            &from_typed(&config_map("dup", &[], &[("v", "0")])).expect("from typed"),
            &CreateOptions::default(),
        )
        .await
        .expect("create");
    let again = from_typed(&config_map("dup", &[], &[])).expect("from typed");
    let err = cms
        .create(&again, &CreateOptions::default())
        .await
        .expect_err("409 exists");
    assert!(err.is_already_exists(), "{err}");

    let mut first = original.clone();
    first.fields.insert("data".into(), json!({"v": "1"}));
    cms.update(&first, &UpdateOptions::default())
        .await
        .expect("first update");
    let mut stale = original;
    stale.fields.insert("data".into(), json!({"v": "2"}));
    let err = cms
        .update(&stale, &UpdateOptions::default())
        .await
        .expect_err("409 conflict");
    assert!(err.is_conflict() && !err.is_already_exists(), "{err}");

    let mut bad = from_typed(&deployment("bad")).expect("from typed");
    let spec = bad
        .fields
        .get_mut("spec")
        .and_then(Value::as_object_mut)
        .expect("spec");
    spec.remove("selector");
    let err = dynamic
        .resource(&GroupVersionResource::of::<Deployment>())
        .namespace(&ns)
        .create(&bad, &CreateOptions::default())
        .await
        .expect_err("422");
    assert!(err.is_invalid(), "{err}");

    let restricted =
        DynamicClient::new(&restricted_config("kubekit-dyn-nobody").await).expect("client");
    let err = restricted
        .resource(&configmaps())
        .namespace(&ns)
        .list(&ListOptions::default())
        .await
        .expect_err("403");
    assert!(err.is_forbidden(), "{err}");
}

#[tokio::test]
async fn dynamic_cluster_wide_resource_lists_cluster_scoped_objects_and_all_namespaces() {
    let (cs, ns) = setup("dyn-cluster").await;
    let dynamic = DynamicClient::from_rest_client(cs.rest_client().clone());
    let namespaces = dynamic
        .resource(&GroupVersionResource::new("", "v1", "namespaces"))
        .list(&ListOptions::default())
        .await
        .expect("namespaces");
    let ours = namespaces
        .items
        .iter()
        .find(|n| n.name() == Some(ns.as_str()))
        .expect("our namespace");
    assert_eq!(ours.kind, "Namespace");
    assert_eq!(ours.namespace(), None);

    let label = format!("kubekit-dyn={ns}");
    let cm = from_typed(&config_map("spread", &[("kubekit-dyn", &ns)], &[])).expect("from typed");
    dynamic
        .resource(&configmaps())
        .namespace(&ns)
        .create(&cm, &CreateOptions::default())
        .await
        .expect("create");
    let everywhere = dynamic
        .resource(&configmaps())
        .list(&ListOptions::default().labels(&label))
        .await
        .expect("list all namespaces");
    assert_eq!(names(&everywhere.items), ["spread"]);
    assert_eq!(everywhere.items[0].namespace(), Some(ns.as_str()));
    let labels: &BTreeMap<String, String> = everywhere.items[0].labels();
    assert_eq!(labels.get("kubekit-dyn"), Some(&ns));
}

#[tokio::test]
async fn a_dynamic_client_applies_typed_configurations_of_its_group_version_only() {
    use app_controller::{AppApply, AppSpecApply, AppStatusApply, DeploymentTemplateApply};
    use kubekit::applyconfigurations::api::core::v1::ConfigMap as ConfigMapApply;

    let (cs, ns) = setup("dyn-apply").await;
    ensure_app_crd(&cs).await;
    let dynamic = DynamicClient::from_rest_client(cs.rest_client().clone());
    let apps = dynamic.resource(&apps()).namespace(&ns);
    let spec = AppSpecApply::default()
        .deployment_template(DeploymentTemplateApply::default().name("web").replicas(4));
    let applied = apps
        .apply(
            &AppApply::new("shop", &ns).spec(spec),
            &PatchOptions::apply("dyn"),
        )
        .await
        .expect("the typed apply through the dynamic client");
    assert_eq!(
        applied.nested(&["spec", "deploymentTemplate", "replicas"]),
        Some(&json!(4))
    );
    let status = AppStatusApply::default().deployment_status(Default::default());
    let reported = apps
        .apply_status(
            &AppApply::new("shop", &ns).status(status),
            &PatchOptions::apply("dyn"),
        )
        .await
        .expect("the typed status apply through the dynamic client");
    assert_eq!(
        reported.nested(&["status", "deploymentStatus"]),
        Some(&json!({}))
    );

    // Refused unsent: another group version, another namespace.
    let err = apps
        .apply(
            &ConfigMapApply::new("shop", &ns),
            &PatchOptions::apply("dyn"),
        )
        .await
        .expect_err("a ConfigMap to the Apps' resource");
    assert!(
        err.to_string()
            .contains("sent to the client of appcontroller.k8s.io/v1"),
        "{err}"
    );
    let err = apps
        .apply(
            &AppApply::new("shop", "elsewhere"),
            &PatchOptions::apply("dyn"),
        )
        .await
        .expect_err("an App of another namespace");
    assert!(
        err.to_string().contains("sent to a client of namespace"),
        "{err}"
    );
}
