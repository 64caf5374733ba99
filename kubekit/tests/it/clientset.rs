//! Integration tests of `kubekit::clientset`: every verb on a built-in type and on the App
//! custom resource, each API error kind provoked for real, paging, server-side apply,
//! delete options and dry run.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use app_controller::{App, AppSpec, AppStatus};
use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::core::CustomResourceExt;
use kubekit::clientset::{
    Clientset, CreateOptions, DeleteOptions, DeleteResponse, GetOptions, ListOptions, PatchBody,
    PatchOptions, PropagationPolicy, ResourceClient, UpdateOptions, WatchStream,
};
use kubekit::rest::{RestConfig, WatchEvent};
use serde_json::json;

use crate::common::{admin_client, namespace};
use testenv::eventually;

/// The admin clientset and a fresh namespace.
pub(crate) async fn setup(prefix: &str) -> (Clientset, String) {
    let clientset = Clientset::from_rest_client(admin_client().await);
    (clientset, namespace(prefix).await)
}

/// A clientset for a user that RBAC grants nothing.
pub(crate) async fn restricted_config(user: &str) -> RestConfig {
    let path = testenv::control_plane().user_kubeconfig(user, &[]);
    RestConfig::from_kubeconfig(&path)
        .await
        .expect("restricted user's kubeconfig")
}

/// Installs the App CRD (every test may: it is server-side applied) and waits until the
/// API server serves it.
pub(crate) async fn ensure_app_crd(clientset: &Clientset) {
    clientset
        .install_crd(App::crd(), "kubekit-tests")
        .await
        .expect("install the App CRD");
}

/// A ConfigMap named `name` with `labels` and `data`.
pub(crate) fn config_map(name: &str, labels: &[(&str, &str)], data: &[(&str, &str)]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    if !labels.is_empty() {
        cm.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
    }
    cm.data = Some(
        data.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    cm
}

/// A valid Deployment of one nginx pod labelled `app=<name>`.
pub(crate) fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }))
    .expect("deployment")
}

/// An App whose Deployment template is `replicas` nginx pods.
pub(crate) fn app(name: &str, replicas: i32) -> App {
    let mut app = App::new(name, AppSpec::default());
    app.spec.deployment_template.name = format!("{name}-deploy");
    app.spec.deployment_template.image = "nginx".into();
    app.spec.deployment_template.replicas = replicas;
    app
}

/// The next event of `events` about object `name`, skipping others and bookmarks.
pub(crate) async fn next_event_for<K>(events: &mut WatchStream<K>, name: &str) -> WatchEvent<K>
where
    K: kube::Resource,
{
    let named = |k: &K| k.meta().name.as_deref() == Some(name);
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .unwrap_or_else(|_| panic!("no watch event for {name} within 30 s"))
            .unwrap_or_else(|| panic!("watch ended before an event for {name}"))
            .expect("watch event decodes");
        match &event {
            WatchEvent::Added(k) | WatchEvent::Modified(k) | WatchEvent::Deleted(k) if named(k) => {
                return event;
            }
            WatchEvent::Error(status) => panic!("watch error: {status:?}"),
            _ => {}
        }
    }
}

fn data_of(cm: &ConfigMap) -> BTreeMap<String, String> {
    cm.data.clone().unwrap_or_default()
}

fn names<K: kube::Resource>(items: &[K]) -> Vec<String> {
    let mut names: Vec<String> = items.iter().filter_map(|k| k.meta().name.clone()).collect();
    names.sort();
    names
}

#[tokio::test]
async fn typed_config_maps_support_every_verb() {
    let (cs, ns) = setup("cs-typed-verbs").await;
    let cms = cs.core_v1().config_maps(&ns);

    let created = cms
        .create(
            &config_map("web", &[("app", "web")], &[("a", "1")]),
            &CreateOptions::default(),
        )
        .await
        .expect("create");
    assert!(created.metadata.uid.is_some() && created.metadata.resource_version.is_some());
    assert_eq!(created.metadata.namespace.as_deref(), Some(ns.as_str()));
    cms.create(
        &config_map("db", &[("app", "db")], &[]),
        &CreateOptions::default(),
    )
    .await
    .expect("create db");

    let got = cms.get("web", &GetOptions::default()).await.expect("get");
    assert_eq!(got.metadata.uid, created.metadata.uid);
    let cached = cms
        .get("web", &GetOptions::default().resource_version("0"))
        .await
        .expect("get rv=0");
    assert_eq!(cached.metadata.uid, created.metadata.uid);

    let by_label = cms
        .list(&ListOptions::default().labels("app=web"))
        .await
        .expect("list by label");
    assert_eq!(names(&by_label.items), ["web"]);
    assert!(by_label.skipped.is_empty());
    let by_field = cms
        .list(&ListOptions::default().fields("metadata.name=db"))
        .await
        .expect("list by field");
    assert_eq!(names(&by_field.items), ["db"]);
    let by_set = cms
        .list(&ListOptions::default().labels("app in (web,db)"))
        .await
        .expect("list by set");
    assert_eq!(names(&by_set.items), ["db", "web"]);

    // Watch from the list's resourceVersion: only what happens afterwards.
    let rv = by_label
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
    changed
        .data
        .get_or_insert_with(BTreeMap::new)
        .insert("a".into(), "2".into());
    let updated = cms
        .update(&changed, &UpdateOptions::default())
        .await
        .expect("update");
    assert_eq!(data_of(&updated)["a"], "2");
    assert_ne!(
        updated.metadata.resource_version,
        got.metadata.resource_version
    );

    let merged = cms
        .patch(
            "web",
            &PatchBody::Merge(json!({"data": {"b": "3"}})),
            &PatchOptions::default(),
        )
        .await
        .expect("merge patch");
    let json_patched = cms
        .patch(
            "web",
            &PatchBody::Json(json!([{"op": "add", "path": "/data/c", "value": "4"}])),
            &PatchOptions::default(),
        )
        .await
        .expect("json patch");
    let strategic = cms
        .patch(
            "web",
            &PatchBody::Strategic(json!({"data": {"d": "5"}})),
            &PatchOptions::default(),
        )
        .await
        .expect("strategic merge patch");
    assert_eq!(data_of(&merged)["b"], "3");
    assert_eq!(data_of(&json_patched)["c"], "4");
    assert_eq!(
        data_of(&strategic),
        BTreeMap::from(
            [("a", "2"), ("b", "3"), ("c", "4"), ("d", "5")].map(|(k, v)| (k.into(), v.into()))
        )
    );

    let deleted = cms
        .delete("web", &DeleteOptions::default())
        .await
        .expect("delete");
    match &deleted {
        DeleteResponse::Status(s) => {
            assert_eq!(s.status.as_deref(), Some("Success"));
            assert_eq!(
                s.details.as_ref().and_then(|d| d.uid.clone()),
                created.metadata.uid
            );
        }
        DeleteResponse::Object(o) => {
            panic!("a config map deleted at once is reported by a Status, got {o:?}")
        }
    }
    let err = cms
        .get("web", &GetOptions::default())
        .await
        .expect_err("deleted");
    assert!(err.is_not_found(), "{err}");

    // The watch saw the four writes and the delete, in order, and nothing of "db".
    for (i, expected_d) in [None, None, None, Some("5")].into_iter().enumerate() {
        match next_event_for(&mut events, "web").await {
            WatchEvent::Modified(cm) => assert_eq!(
                data_of(&cm).get("d").map(String::as_str),
                expected_d,
                "event {i}"
            ),
            other => panic!("event {i}: expected MODIFIED, got {other:?}"),
        }
    }
    assert!(matches!(
        next_event_for(&mut events, "web").await,
        WatchEvent::Deleted(_)
    ));
}

#[tokio::test]
async fn cluster_scoped_and_all_namespace_clients_span_the_cluster() {
    let (cs, ns) = setup("cs-cluster").await;
    let namespaces = cs
        .core_v1()
        .namespaces()
        .list(&ListOptions::default())
        .await
        .expect("namespaces");
    assert!(
        namespaces
            .items
            .iter()
            .any(|n| n.metadata.name.as_deref() == Some(ns.as_str()))
    );
    cs.core_v1()
        .nodes()
        .list(&ListOptions::default())
        .await
        .expect("nodes (none without kubelets)");

    let label = format!("kubekit-test={ns}");
    cs.core_v1()
        .config_maps(&ns)
        .create(
            &config_map("spanned", &[("kubekit-test", &ns)], &[]),
            &CreateOptions::default(),
        )
        .await
        .expect("create");
    let everywhere = cs
        .core_v1()
        .config_maps("")
        .list(&ListOptions::default().labels(&label))
        .await
        .expect("list");
    assert_eq!(names(&everywhere.items), ["spanned"]);
    let generic = cs
        .resource::<ConfigMap>("")
        .list(&ListOptions::default().labels(&label))
        .await
        .expect("list");
    assert_eq!(names(&generic.items), ["spanned"]);
}

/// A CustomResourceDefinition of `plural.group`, kind `kind`, objects of any shape.
pub(crate) fn crd(group: &str, plural: &str, kind: &str) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": format!("{plural}.{group}") },
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": { "plural": plural, "singular": kind.to_lowercase(), "kind": kind },
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                } },
            }],
        },
    }))
    .expect("a CustomResourceDefinition")
}

#[tokio::test]
async fn install_crd_returns_once_the_resource_is_served_and_installing_again_changes_nothing() {
    let (cs, ns) = setup("cs-install-crd").await;
    let group = format!("{ns}.kubekit.test");
    let installed = cs
        .install_crd(crd(&group, "widgets", "Widget"), "kubekit-tests")
        .await
        .expect("install");
    let established = installed
        .status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| c.type_ == "Established" && c.status == "True");
    assert!(established, "{:?}", installed.status);

    // Served on return: the first create succeeds, with no retry.
    let widgets = kubekit::dynamic::DynamicClient::from_rest_client(cs.rest_client().clone())
        .resource(&kubekit::meta::GroupVersionResource::new(
            &group, "v1", "widgets",
        ))
        .namespace(&ns);
    let mut widget = kubekit::dynamic::Unstructured::new(&format!("{group}/v1"), "Widget");
    widget.metadata.name = Some("first".into());
    widgets
        .create(&widget, &CreateOptions::default())
        .await
        .expect("create a Widget right after install_crd");

    let again = cs
        .install_crd(crd(&group, "widgets", "Widget"), "kubekit-tests")
        .await
        .expect("install again");
    assert_eq!(
        again.metadata.resource_version, installed.metadata.resource_version,
        "installing the same definition again changes nothing"
    );
}

#[tokio::test]
async fn install_crd_reports_names_the_server_refused_and_a_definition_without_a_name() {
    let (cs, ns) = setup("cs-install-crd-conflict").await;
    let group = format!("{ns}.kubekit.test");
    cs.install_crd(crd(&group, "widgets", "Widget"), "kubekit-tests")
        .await
        .expect("install the first definition");
    // Another plural of the same group with the same kind: the server never serves it.
    let err = cs
        .install_crd(crd(&group, "gadgets", "Widget"), "kubekit-tests")
        .await
        .expect_err("a kind taken in the group");
    let message = err.to_string();
    assert!(
        message.contains(&format!("gadgets.{group}")) && message.contains("KindConflict"),
        "{message}"
    );

    let mut nameless = crd(&group, "things", "Thing");
    nameless.metadata.name = None;
    let err = cs
        .install_crd(nameless, "kubekit-tests")
        .await
        .expect_err("no name");
    assert!(
        matches!(err, kubekit::rest::Error::Request(_))
            && err.to_string().contains("metadata.name"),
        "{err}"
    );
}

#[tokio::test]
async fn app_custom_resource_supports_every_verb_with_status_subresource() {
    let (cs, ns) = setup("cs-app-crd").await;
    ensure_app_crd(&cs).await;
    let apps: ResourceClient<App> = cs.resource(&ns);

    let created = apps
        .create(&app("shop", 2), &CreateOptions::default())
        .await
        .expect("create");
    assert_eq!(created.spec.deployment_template.replicas, 2);
    let mut events = apps
        .watch(
            &ListOptions::default()
                .resource_version(created.metadata.resource_version.as_deref().unwrap()),
        )
        .await
        .expect("watch");

    // update ignores the status; update_status ignores everything else.
    let mut both = apps.get("shop", &GetOptions::default()).await.expect("get");
    both.spec.deployment_template.replicas = 3;
    both.status = Some(AppStatus {
        deployment_status: Some(DeploymentStatus {
            replicas: Some(9),
            ..Default::default()
        }),
        service_status: None,
    });
    let updated = apps
        .update(&both, &UpdateOptions::default())
        .await
        .expect("update");
    assert_eq!(updated.spec.deployment_template.replicas, 3);
    assert!(updated.status.is_none(), "update must not write the status");

    let mut status_only = updated.clone();
    status_only.spec.deployment_template.replicas = 100;
    status_only.status = both.status.clone();
    let with_status = apps
        .update_status(&status_only, &UpdateOptions::default())
        .await
        .expect("update_status");
    assert_eq!(
        with_status.spec.deployment_template.replicas, 3,
        "update_status must not write the spec"
    );
    let replicas = |a: &App| a.status.as_ref()?.deployment_status.as_ref()?.replicas;
    assert_eq!(replicas(&with_status), Some(9));
    assert_eq!(
        replicas(
            &apps
                .get_status("shop", &GetOptions::default())
                .await
                .expect("get_status")
        ),
        Some(9)
    );

    let patched_status = apps
        .patch_status(
            "shop",
            &PatchBody::Merge(json!({"status": {"deploymentStatus": {"replicas": 4}}})),
            &PatchOptions::default(),
        )
        .await
        .expect("patch_status");
    assert_eq!(replicas(&patched_status), Some(4));

    let patched = apps
        .patch(
            "shop",
            &PatchBody::Json(json!([
                {"op": "replace", "path": "/spec/deploymentTemplate/image", "value": "httpd"},
            ])),
            &PatchOptions::default(),
        )
        .await
        .expect("json patch");
    assert_eq!(patched.spec.deployment_template.image, "httpd");
    let err = apps
        .patch(
            "shop",
            &PatchBody::Strategic(json!({"spec": {}})),
            &PatchOptions::default(),
        )
        .await
        .expect_err("custom resources take no strategic merge patch");
    assert_eq!(err.code(), Some(415), "{err}");

    let mut applied = app("shop", 5);
    applied.spec.deployment_template.image = "httpd".into();
    let applied = apps
        .patch(
            "shop",
            &PatchBody::Apply(&applied),
            &PatchOptions::apply("kubekit-test").force(),
        )
        .await
        .expect("apply");
    assert_eq!(applied.spec.deployment_template.replicas, 5);

    let listed = apps.list(&ListOptions::default()).await.expect("list");
    assert_eq!(names(&listed.items), ["shop"]);

    for step in [
        "update",
        "update_status",
        "patch_status",
        "json patch",
        "apply",
    ] {
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
    let status = deleted
        .status()
        .expect("a custom resource deleted at once is reported by a Status");
    assert_eq!(status.status.as_deref(), Some("Success"));
    assert_eq!(
        status.details.as_ref().and_then(|d| d.uid.clone()),
        created.metadata.uid
    );
    assert!(matches!(
        next_event_for(&mut events, "shop").await,
        WatchEvent::Deleted(_)
    ));

    for name in ["a1", "a2"] {
        apps.create(&app(name, 1), &CreateOptions::default())
            .await
            .expect("create");
    }
    let gone = apps
        .delete_collection(&DeleteOptions::default(), &ListOptions::default())
        .await
        .expect("delete_collection");
    assert_eq!(
        names(&gone.object().expect("list of deleted apps").items),
        ["a1", "a2"]
    );
    assert!(
        apps.list(&ListOptions::default())
            .await
            .expect("list")
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn get_of_a_missing_object_is_not_found() {
    let (cs, ns) = setup("cs-404").await;
    let err = cs
        .core_v1()
        .config_maps(&ns)
        .get("missing", &GetOptions::default())
        .await
        .expect_err("404");
    assert!(err.is_not_found(), "{err}");
    assert_eq!(err.code(), Some(404));
    assert!(!err.is_conflict() && !err.is_already_exists());
    let err = cs
        .core_v1()
        .config_maps(&ns)
        .delete("missing", &DeleteOptions::default())
        .await
        .expect_err("404");
    assert!(err.is_not_found(), "{err}");
}

#[tokio::test]
async fn create_of_an_existing_name_is_already_exists() {
    let (cs, ns) = setup("cs-409-exists").await;
    let cms = cs.core_v1().config_maps(&ns);
    cms.create(&config_map("dup", &[], &[]), &CreateOptions::default())
        .await
        .expect("first");
    let err = cms
        .create(&config_map("dup", &[], &[]), &CreateOptions::default())
        .await
        .expect_err("second");
    assert!(err.is_already_exists(), "{err}");
    assert_eq!(err.code(), Some(409));
}

#[tokio::test]
async fn update_from_a_stale_resource_version_is_conflict() {
    let (cs, ns) = setup("cs-409-conflict").await;
    let cms = cs.core_v1().config_maps(&ns);
    let original = cms
        .create(
            &config_map("web", &[], &[("v", "0")]),
            &CreateOptions::default(),
        )
        .await
        .expect("create");

    let mut first = original.clone();
    first.data = Some(BTreeMap::from([("v".into(), "first".into())]));
    cms.update(&first, &UpdateOptions::default())
        .await
        .expect("first update");

    let mut stale = original;
    stale.data = Some(BTreeMap::from([("v".into(), "second".into())]));
    let err = cms
        .update(&stale, &UpdateOptions::default())
        .await
        .expect_err("stale resourceVersion");
    assert!(err.is_conflict(), "{err}");
    assert!(!err.is_already_exists());
    assert_eq!(err.code(), Some(409));
    assert_eq!(
        data_of(&cms.get("web", &GetOptions::default()).await.expect("get"))["v"],
        "first"
    );
}

#[tokio::test]
async fn deployment_without_a_selector_is_invalid() {
    let (cs, ns) = setup("cs-422").await;
    let mut bad = deployment("bad");
    bad.spec.selector = Default::default();
    let err = cs
        .apps_v1()
        .deployments(&ns)
        .create(&bad, &CreateOptions::default())
        .await
        .expect_err("invalid");
    assert!(err.is_invalid(), "{err}");
    assert_eq!(err.code(), Some(422));
    assert!(err.to_string().contains("selector"), "{err}");
}

#[tokio::test]
async fn user_without_rbac_rights_is_forbidden() {
    let (cs, ns) = setup("cs-403").await;
    cs.core_v1()
        .config_maps(&ns)
        .create(
            &config_map("secret-ish", &[], &[]),
            &CreateOptions::default(),
        )
        .await
        .expect("create");
    let restricted =
        Clientset::new(&restricted_config("kubekit-cs-nobody").await).expect("clientset");
    let cms = restricted.core_v1().config_maps(&ns);
    let err = cms.list(&ListOptions::default()).await.expect_err("list");
    assert!(err.is_forbidden(), "{err}");
    assert_eq!(err.code(), Some(403));
    let err = cms
        .get("secret-ish", &GetOptions::default())
        .await
        .expect_err("get");
    assert!(err.is_forbidden() && !err.is_not_found(), "{err}");
    let err = cms
        .create(&config_map("mine", &[], &[]), &CreateOptions::default())
        .await
        .expect_err("create");
    assert!(err.is_forbidden(), "{err}");
}

#[tokio::test]
async fn paging_520_config_maps_with_continue_tokens_returns_each_exactly_once() {
    let (cs, ns) = setup("cs-paging").await;
    let cms = cs.core_v1().config_maps(&ns);
    const N: usize = 520;
    futures_util::stream::iter(0..N)
        .map(|i| {
            let cms = cms.clone();
            async move {
                let cm = config_map(
                    &format!("cm-{i:04}"),
                    &[("paged", "yes")],
                    &[("i", &i.to_string())],
                );
                cms.create(&cm, &CreateOptions::default()).await
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await
        .expect("create 520 config maps");

    let mut seen = Vec::new();
    let mut pages = 0;
    let mut snapshot = None;
    let mut opts = ListOptions::default().labels("paged=yes").limit(200);
    loop {
        let page = cms.list(&opts).await.expect("page");
        pages += 1;
        assert!(page.items.len() <= 200);
        // Every page is read from the first page's snapshot.
        let rv = page.metadata.resource_version.clone();
        assert_eq!(
            snapshot.get_or_insert_with(|| rv.clone()),
            &rv,
            "page {pages}"
        );
        seen.extend(page.items.iter().filter_map(|c| c.metadata.name.clone()));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => opts = opts.continue_token(&token),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), N, "every object once");
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), N, "no object twice");
    let expected: HashSet<String> = (0..N).map(|i| format!("cm-{i:04}")).collect();
    assert_eq!(unique, expected.iter().collect());

    // Without a limit, one response holds them all.
    let whole = cms
        .list(&ListOptions::default().labels("paged=yes"))
        .await
        .expect("list");
    assert_eq!(whole.items.len(), N);
    assert!(whole.metadata.continue_.is_none_or(|c| c.is_empty()));
}

#[tokio::test]
async fn server_side_apply_conflicts_between_managers_until_forced() {
    let (cs, ns) = setup("cs-apply").await;
    let cms = cs.core_v1().config_maps(&ns);
    let first = config_map("shared", &[], &[("owner", "alice")]);
    let applied = cms
        .patch(
            "shared",
            &PatchBody::Apply(&first),
            &PatchOptions::apply("alice"),
        )
        .await
        .expect("alice creates by apply");
    assert_eq!(data_of(&applied)["owner"], "alice");

    let second = config_map("shared", &[], &[("owner", "bob")]);
    let err = cms
        .patch(
            "shared",
            &PatchBody::Apply(&second),
            &PatchOptions::apply("bob"),
        )
        .await
        .expect_err("bob conflicts with alice");
    assert!(err.is_conflict(), "{err}");
    assert!(
        err.to_string().contains("alice"),
        "the conflict names the other manager: {err}"
    );
    assert_eq!(
        data_of(
            &cms.get("shared", &GetOptions::default())
                .await
                .expect("get")
        )["owner"],
        "alice"
    );

    let forced = cms
        .patch(
            "shared",
            &PatchBody::Apply(&second),
            &PatchOptions::apply("bob").force(),
        )
        .await
        .expect("forced apply");
    assert_eq!(data_of(&forced)["owner"], "bob");
    let managers: Vec<_> = forced
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.as_deref())
        .collect();
    assert!(managers.contains(&"bob"), "{managers:?}");

    // Dry-run apply and a JSON body work too.
    let dry = cms
        .patch(
            "shared",
            &PatchBody::Apply(json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "shared"},
                "data": {"owner": "carol"},
            })),
            &PatchOptions::apply("carol").force().dry_run(),
        )
        .await
        .expect("dry-run apply");
    assert_eq!(data_of(&dry)["owner"], "carol");
    assert_eq!(
        data_of(
            &cms.get("shared", &GetOptions::default())
                .await
                .expect("get")
        )["owner"],
        "bob"
    );
}

#[tokio::test]
async fn delete_with_a_wrong_uid_precondition_is_conflict_and_deletes_nothing() {
    let (cs, ns) = setup("cs-preconditions").await;
    let cms = cs.core_v1().config_maps(&ns);
    let created = cms
        .create(&config_map("guarded", &[], &[]), &CreateOptions::default())
        .await
        .expect("create");
    let uid = created.metadata.uid.clone().expect("uid");
    let rv = created.metadata.resource_version.clone().expect("rv");

    let wrong = DeleteOptions::default().precondition_uid("00000000-0000-0000-0000-000000000000");
    let err = cms.delete("guarded", &wrong).await.expect_err("wrong uid");
    assert!(err.is_conflict(), "{err}");
    let stale = DeleteOptions::default().precondition_resource_version("1");
    let err = cms
        .delete("guarded", &stale)
        .await
        .expect_err("wrong resourceVersion");
    assert!(err.is_conflict(), "{err}");
    cms.get("guarded", &GetOptions::default())
        .await
        .expect("still there");

    let right = DeleteOptions::default()
        .precondition_uid(&uid)
        .precondition_resource_version(&rv);
    cms.delete("guarded", &right)
        .await
        .expect("matching preconditions");
    assert!(
        cms.get("guarded", &GetOptions::default())
            .await
            .expect_err("gone")
            .is_not_found()
    );
}

#[tokio::test]
async fn delete_propagation_policy_decides_the_fate_of_dependents() {
    let (cs, ns) = setup("cs-propagation").await;
    let cms = cs.core_v1().config_maps(&ns);
    // An owner and a dependent per policy; the garbage collector of the
    // kube-controller-manager acts on the owner references.
    let make_pair = |policy: &'static str| {
        let cms = cms.clone();
        async move {
            let owner = cms
                .create(
                    &config_map(&format!("{policy}-owner"), &[], &[]),
                    &CreateOptions::default(),
                )
                .await
                .expect("owner");
            let mut dependent = config_map(&format!("{policy}-dependent"), &[], &[]);
            dependent.metadata.owner_references = Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: owner.metadata.name.clone().expect("name"),
                uid: owner.metadata.uid.clone().expect("uid"),
                block_owner_deletion: Some(true),
                ..Default::default()
            }]);
            cms.create(&dependent, &CreateOptions::default())
                .await
                .expect("dependent");
        }
    };
    for policy in ["orphan", "background", "foreground"] {
        make_pair(policy).await;
    }
    let exists = |name: String| {
        let cms = cms.clone();
        async move {
            match cms.get(&name, &GetOptions::default()).await {
                Ok(cm) => Some(cm),
                Err(e) if e.is_not_found() => None,
                Err(e) => panic!("get {name}: {e}"),
            }
        }
    };

    // Foreground: the owner stays, marked for deletion, until its dependent is gone.
    let res = cms
        .delete(
            "foreground-owner",
            &DeleteOptions::default().propagation_policy(PropagationPolicy::Foreground),
        )
        .await
        .expect("foreground delete");
    let owner = res
        .object()
        .expect("the owner outlives a foreground delete");
    assert!(owner.metadata.deletion_timestamp.is_some());
    assert!(
        owner
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == "foregroundDeletion")
    );
    eventually(60, "foreground owner and dependent to go", || async move {
        let gone = exists("foreground-owner".into()).await.is_none()
            && exists("foreground-dependent".into()).await.is_none();
        gone.then_some(())
    })
    .await;

    // Background: the owner goes at once, the dependent after it.
    let res = cms
        .delete(
            "background-owner",
            &DeleteOptions::default().propagation_policy(PropagationPolicy::Background),
        )
        .await
        .expect("background delete");
    assert!(
        res.status().is_some(),
        "a config map deleted at once is reported by a Status: {res:?}"
    );
    assert!(exists("background-owner".into()).await.is_none());
    eventually(60, "background dependent to go", || async move {
        exists("background-dependent".into())
            .await
            .is_none()
            .then_some(())
    })
    .await;

    // Orphan: the dependent stays, its owner reference removed.
    cms.delete(
        "orphan-owner",
        &DeleteOptions::default().propagation_policy(PropagationPolicy::Orphan),
    )
    .await
    .expect("orphan delete");
    eventually(
        60,
        "orphan owner to go and the dependent to be released",
        || async move {
            if exists("orphan-owner".into()).await.is_some() {
                return None;
            }
            let dependent = exists("orphan-dependent".into())
                .await
                .expect("orphans are kept");
            dependent
                .metadata
                .owner_references
                .is_none_or(|r| r.is_empty())
                .then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn delete_collection_with_a_label_selector_deletes_only_matching_objects() {
    let (cs, ns) = setup("cs-delete-collection").await;
    let cms = cs.core_v1().config_maps(&ns);
    for (name, tier) in [("a", "cache"), ("b", "cache"), ("c", "db")] {
        cms.create(
            &config_map(name, &[("tier", tier)], &[]),
            &CreateOptions::default(),
        )
        .await
        .expect("create");
    }
    let res = cms
        .delete_collection(
            &DeleteOptions::default(),
            &ListOptions::default().labels("tier=cache"),
        )
        .await
        .expect("delete_collection");
    let deleted = res
        .object()
        .expect("delete_collection returns the deleted objects");
    assert_eq!(names(&deleted.items), ["a", "b"]);
    let left = cms
        .list(&ListOptions::default().labels("tier"))
        .await
        .expect("list");
    assert_eq!(names(&left.items), ["c"]);

    // Dry run deletes nothing.
    cms.delete_collection(
        &DeleteOptions::default().dry_run(),
        &ListOptions::default().labels("tier"),
    )
    .await
    .expect("dry-run delete_collection");
    assert_eq!(
        names(
            &cms.list(&ListOptions::default().labels("tier"))
                .await
                .expect("list")
                .items
        ),
        ["c"]
    );
}

#[tokio::test]
async fn dry_run_writes_return_the_result_but_store_nothing() {
    let (cs, ns) = setup("cs-dry-run").await;
    let deployments = cs.apps_v1().deployments(&ns);
    let dry = deployments
        .create(&deployment("ghost"), &CreateOptions::default().dry_run())
        .await
        .expect("dry-run create");
    assert_eq!(dry.metadata.name.as_deref(), Some("ghost"));
    assert!(
        dry.spec.revision_history_limit.is_some(),
        "defaults are applied"
    );
    let err = deployments
        .get("ghost", &GetOptions::default())
        .await
        .expect_err("nothing stored");
    assert!(err.is_not_found(), "{err}");
    assert!(
        deployments
            .list(&ListOptions::default())
            .await
            .expect("list")
            .items
            .is_empty()
    );

    // Dry-run update and delete leave the stored object as it was.
    let cms = cs.core_v1().config_maps(&ns);
    let real = cms
        .create(
            &config_map("real", &[], &[("v", "0")]),
            &CreateOptions::default(),
        )
        .await
        .expect("create");
    let mut changed = real.clone();
    changed.data = Some(BTreeMap::from([("v".into(), "1".into())]));
    let dry_updated = cms
        .update(&changed, &UpdateOptions::default().dry_run())
        .await
        .expect("dry update");
    assert_eq!(data_of(&dry_updated)["v"], "1");
    cms.delete("real", &DeleteOptions::default().dry_run())
        .await
        .expect("dry delete");
    let stored = cms
        .get("real", &GetOptions::default())
        .await
        .expect("still there");
    assert_eq!(data_of(&stored)["v"], "0");
    assert_eq!(
        stored.metadata.resource_version,
        real.metadata.resource_version
    );
}

#[tokio::test]
async fn apply_child_owns_the_child_keeps_others_fields_and_is_refused_another_controller() {
    let (cs, ns) = setup("cs-apply-child").await;
    let cms = cs.core_v1().config_maps(&ns);
    let create = CreateOptions::default();
    let owner = cms
        .create(&config_map("owner", &[], &[]), &create)
        .await
        .expect("owner");
    let fields = |mode: &str| json!({ "metadata": { "labels": { "app": "web" } }, "data": { "mode": mode } });
    let child = cms
        .apply_child(&owner, "child", fields("fast"), "child-controller")
        .await
        .expect("first apply creates the child");
    let reference = &child
        .metadata
        .owner_references
        .as_deref()
        .unwrap_or_default()[0];
    assert_eq!(reference.uid, owner.metadata.uid.clone().unwrap());
    assert_eq!(
        (reference.controller, reference.block_owner_deletion),
        (Some(true), Some(true))
    );
    assert!(kubekit::meta::is_controlled_by(
        &child.metadata,
        &owner.metadata
    ));

    // Someone else adds a label and changes a field the controller decides.
    let theirs =
        json!({ "metadata": { "labels": { "team": "blue" } }, "data": { "mode": "slow" } });
    cms.patch("child", &PatchBody::Merge(theirs), &PatchOptions::default())
        .await
        .expect("another writer's patch");
    let child = cms
        .apply_child(&owner, "child", fields("fast"), "child-controller")
        .await
        .expect("applied again, forcing its own fields back");
    let labels = child.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        child.data.unwrap()["mode"],
        "fast",
        "the controller's field is its own"
    );
    assert_eq!(
        labels["team"], "blue",
        "a field it does not set stays the other writer's"
    );
    assert_eq!(labels["app"], "web");

    // A child controlled by another owner is refused by the server.
    let other = cms
        .create(&config_map("other-owner", &[], &[]), &create)
        .await
        .expect("other owner");
    let err = cms
        .apply_child(&other, "child", fields("fast"), "other-controller")
        .await
        .expect_err("two controllers");
    assert!(err.is_invalid(), "{err}");
}

/// The managedFields entry of `manager`.
fn managed_by<'a>(
    meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    manager: &str,
) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry {
    meta.managed_fields
        .iter()
        .flatten()
        .find(|m| m.manager.as_deref() == Some(manager))
        .unwrap_or_else(|| panic!("no managedFields entry of {manager}"))
}

#[tokio::test]
async fn a_typed_apply_sends_only_what_it_sets_so_a_scaler_owns_replicas_alone() {
    use kubekit::applyconfigurations::api::apps::v1 as apps;
    use kubekit::applyconfigurations::api::core::v1 as core;
    use kubekit::applyconfigurations::apimachinery::pkg::apis::meta::v1 as meta;

    let (cs, ns) = setup("cs-typed-apply").await;
    let deployments = cs.apps_v1().deployments(&ns);
    let labels = [("app", "web".to_string())];
    let pod = core::PodTemplateSpec::default()
        .metadata(meta::ObjectMeta::default().labels(labels.clone()))
        .spec(
            core::PodSpec::default()
                .containers([core::Container::default().name("web").image("nginx:1.29")]),
        );
    let full = apps::Deployment::new("web", &ns).spec(
        apps::DeploymentSpec::default()
            .replicas(1)
            .selector(meta::LabelSelector::default().match_labels(labels))
            .template(pod),
    );
    let created = deployments
        .apply(&full, &PatchOptions::apply("creator"))
        .await
        .expect("the creator's typed apply");
    assert_eq!(created.spec.replicas, Some(1));

    // The scaler's configuration sets replicas only: none of the spec's required fields
    // (selector, template) goes with it, so it takes none of them over.
    let scale = apps::Deployment::new("web", &ns).spec(apps::DeploymentSpec::default().replicas(3));
    let scaled = deployments
        .apply(&scale, &PatchOptions::apply("scaler").force())
        .await
        .expect("the scaler's typed apply");
    assert_eq!(scaled.spec.replicas, Some(3));
    let owned = |manager: &str| {
        serde_json::to_value(&managed_by(&scaled.metadata, manager).fields_v1).unwrap()
    };
    assert_eq!(owned("scaler"), json!({ "f:spec": { "f:replicas": {} } }));
    let creator = owned("creator");
    assert!(
        creator["f:spec"].get("f:template").is_some()
            && creator["f:spec"].get("f:replicas").is_none(),
        "the creator keeps the template and lost replicas: {creator}"
    );

    // Refused unsent: a configuration of another kind.
    let err = deployments
        .apply(
            &core::ConfigMap::new("web", &ns),
            &PatchOptions::apply("creator"),
        )
        .await
        .expect_err("a ConfigMap to the Deployments' client");
    assert!(
        err.to_string()
            .contains("sent to the client of apps/v1 Deployment"),
        "{err}"
    );

    // A typed child: the controller reference is set, the data applied.
    let cms = cs.core_v1().config_maps(&ns);
    let settings = core::ConfigMap::new("web-settings", &ns).data([("mode", "fast".to_string())]);
    let child = cms
        .apply_owned(&scaled, settings, "web-controller")
        .await
        .expect("the typed child");
    assert!(kubekit::meta::is_controlled_by(
        &child.metadata,
        &scaled.metadata
    ));
    assert_eq!(child.data.unwrap()["mode"], "fast");
}

/// A namespace named after `prefix` with the App CRD installed, and in it the App `shop`
/// whose spec (a Deployment `web` of `replicas` replicas) the field manager `author`
/// applied: the Apps' client, the namespace and the App as stored.
async fn shop_applied_by_the_author(
    prefix: &str,
    replicas: i32,
) -> (ResourceClient<App>, String, App) {
    use app_controller::{AppApply, AppSpecApply, DeploymentTemplateApply};

    let (cs, ns) = setup(prefix).await;
    ensure_app_crd(&cs).await;
    let apps = cs.resource::<App>(&ns);
    let template = DeploymentTemplateApply::default()
        .name("web")
        .replicas(replicas);
    let spec = AppSpecApply::default().deployment_template(template);
    let shop = apps
        .apply(
            &AppApply::new("shop", &ns).spec(spec),
            &PatchOptions::apply("author"),
        )
        .await
        .expect("the author's typed apply of the spec");
    (apps, ns, shop)
}

#[tokio::test]
async fn a_derived_custom_resource_configuration_applies_spec_and_status_each_to_its_own_manager() {
    use app_controller::{AppApply, AppSpecApply, AppStatusApply, DeploymentTemplateApply};
    use kubekit::applyconfigurations::{configuration_of, extract, extract_status};

    let (apps, ns, created) = shop_applied_by_the_author("cs-typed-cr", 2).await;
    assert_eq!(created.spec.deployment_template.name, "web");
    assert_eq!(created.spec.deployment_template.replicas, 2);
    assert!(created.status.is_none());

    // The status subresource, from a status as a controller observes it.
    let observed = k8s_openapi::api::apps::v1::DeploymentStatus {
        replicas: Some(2),
        available_replicas: Some(1),
        ..Default::default()
    };
    let status = AppStatusApply::default()
        .deployment_status(configuration_of(&observed).expect("a status's configuration"));
    let reported = apps
        .apply_status(
            &AppApply::new("shop", &ns).status(status),
            &PatchOptions::apply("reporter").force(),
        )
        .await
        .expect("the reporter's typed apply of the status");
    let deployment_status = reported
        .status
        .as_ref()
        .and_then(|s| s.deployment_status.as_ref());
    assert_eq!(deployment_status, Some(&observed));
    // Applied to the subresource, the status is the reporter's and the spec stays the
    // author's, each in an Apply entry of its own subresource.
    let entry = |manager: &str| {
        let entry = managed_by(&reported.metadata, manager).clone();
        assert_eq!(entry.operation.as_deref(), Some("Apply"), "{manager}");
        (
            entry.subresource,
            serde_json::to_value(&entry.fields_v1).unwrap(),
        )
    };
    let (subresource, fields) = entry("reporter");
    assert_eq!(subresource.as_deref(), Some("status"));
    assert_eq!(
        fields,
        json!({ "f:status": { "f:deploymentStatus": {
            "f:availableReplicas": {}, "f:replicas": {}
        } } })
    );
    let (subresource, fields) = entry("author");
    assert_eq!(subresource, None);
    assert!(
        fields.get("f:spec").is_some() && fields.get("f:status").is_none(),
        "{fields}"
    );

    // What each applied, read back from the stored object.
    let spec = AppSpecApply::default()
        .deployment_template(DeploymentTemplateApply::default().name("web").replicas(2));
    let authored = extract(&reported, "author").expect("the author's configuration");
    assert_eq!(authored, AppApply::new("shop", &ns).spec(spec));
    let status = AppStatusApply::default()
        .deployment_status(configuration_of(&observed).expect("a status's configuration"));
    let reported_config = extract_status(&reported, "reporter").expect("the reporter's status");
    assert_eq!(reported_config, AppApply::new("shop", &ns).status(status));
}

#[tokio::test]
async fn apply_status_of_fills_in_the_objects_kind_name_and_namespace_and_refuses_another_objects()
{
    use app_controller::{AppApply, AppStatusApply};
    use kubekit::applyconfigurations::configuration_of;

    let (apps, ns, shop) = shop_applied_by_the_author("cs-status-of", 1).await;

    // A configuration of the status alone: no apiVersion, kind, name or namespace.
    let observed = DeploymentStatus {
        replicas: Some(1),
        ..Default::default()
    };
    let status = AppStatusApply::default()
        .deployment_status(configuration_of(&observed).expect("a status's configuration"));
    let reported = apps
        .apply_status_of(
            &shop,
            AppApply::default().status(status.clone()),
            "reporter",
        )
        .await
        .expect("the status of the App itself");
    let deployment_status = reported
        .status
        .as_ref()
        .and_then(|s| s.deployment_status.as_ref());
    assert_eq!(deployment_status, Some(&observed));
    let entry = managed_by(&reported.metadata, "reporter");
    assert_eq!(entry.subresource.as_deref(), Some("status"));

    let other = AppApply::new("other", &ns).status(status);
    let err = apps
        .apply_status_of(&shop, other, "reporter")
        .await
        .expect_err("a configuration of another App");
    let refused_unsent = matches!(err, kubekit::rest::Error::Request(_));
    assert!(
        refused_unsent && err.to_string().contains("\"other\""),
        "{err}"
    );
}

#[tokio::test]
async fn extract_gives_back_what_a_manager_applied_less_what_another_took_over() {
    use kubekit::applyconfigurations::api::apps::v1 as apps;
    use kubekit::applyconfigurations::api::core::v1 as core;
    use kubekit::applyconfigurations::apimachinery::pkg::apis::meta::v1 as meta;
    use kubekit::applyconfigurations::extract;
    use kubekit::k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    let (cs, ns) = setup("cs-extract").await;
    let deployments = cs.apps_v1().deployments(&ns);
    let labels = [("app", "web".to_string())];
    let port = |number: i32, protocol: &str, name: &str| {
        core::ContainerPort::default()
            .container_port(number)
            .protocol(protocol)
            .name(name)
    };
    let container = core::Container::default()
        .name("web")
        .image("nginx:1.29")
        .args(["-g".to_string(), "daemon off;".to_string()])
        .ports([port(80, "TCP", "http"), port(80, "UDP", "quic")])
        .env([core::EnvVar::default().name("MODE").value("fast")])
        .resources(
            core::ResourceRequirements::default().limits([("cpu", Quantity("500m".into()))]),
        );
    let spec = |replicas: Option<i32>| {
        let mut spec = apps::DeploymentSpec::default()
            .selector(meta::LabelSelector::default().match_labels(labels.clone()))
            .template(
                core::PodTemplateSpec::default()
                    .metadata(meta::ObjectMeta::default().labels(labels.clone()))
                    .spec(core::PodSpec::default().containers([container.clone()])),
            );
        spec.replicas = replicas;
        spec
    };
    let creator = apps::Deployment::new("web", &ns)
        .labels(labels.clone())
        .spec(spec(Some(1)));
    deployments
        .apply(&creator, &PatchOptions::apply("creator"))
        .await
        .expect("the creator's apply");
    let scale = apps::Deployment::new("web", &ns).spec(apps::DeploymentSpec::default().replicas(3));
    let stored = deployments
        .apply(&scale, &PatchOptions::apply("scaler").force())
        .await
        .expect("the scaler's apply");

    // The creator's fields, less replicas, which the scaler took; the server's defaults
    // (imagePullPolicy, strategy, …) are no one's configuration.
    let extracted = extract(&stored, "creator").expect("the creator's configuration");
    let expected = apps::Deployment::new("web", &ns)
        .labels(labels.clone())
        .spec(spec(None));
    assert_eq!(
        serde_json::to_value(&extracted).unwrap(),
        serde_json::to_value(&expected).unwrap()
    );
    assert_eq!(
        extract(&stored, "scaler").expect("the scaler's configuration"),
        scale
    );
    assert_eq!(
        extract(&stored, "nobody").expect("no one's configuration"),
        apps::Deployment::new("web", &ns)
    );

    // Changed and applied again, it moves only what the creator owns.
    let mut again = extracted;
    let template = again.spec.as_mut().and_then(|s| s.template.as_mut());
    let containers = template
        .and_then(|t| t.spec.as_mut())
        .and_then(|s| s.containers.as_mut());
    containers.expect("the extracted containers")[0].image = Some("nginx:1.30".into());
    let updated = deployments
        .apply(&again, &PatchOptions::apply("creator"))
        .await
        .expect("the creator's second apply");
    assert_eq!(updated.spec.replicas, Some(3));
    let containers = updated.spec.template.spec.map(|s| s.containers);
    let image = containers
        .and_then(|c| c.into_iter().next())
        .and_then(|c| c.image);
    assert_eq!(image.as_deref(), Some("nginx:1.30"));
}

#[tokio::test]
async fn apply_to_the_scale_subresource_owns_the_replicas_under_scale_in_typed_and_dynamic_clients()
{
    use k8s_openapi::api::autoscaling::v1::Scale;
    use kubekit::applyconfigurations::api::autoscaling::v1 as autoscaling;
    use kubekit::applyconfigurations::extract_from;
    use kubekit::dynamic::DynamicClient;
    use kubekit::meta::GroupVersionResource;

    let (cs, ns) = setup("cs-apply-scale").await;
    let deployments = cs.apps_v1().deployments(&ns);
    deployments
        .create(&testenv::deployment("web", 1), &CreateOptions::default())
        .await
        .expect("create the deployment");
    let scale = |replicas| {
        autoscaling::Scale::new("web", &ns)
            .spec(autoscaling::ScaleSpec::default().replicas(replicas))
    };
    let opts = PatchOptions::apply("autoscaler").force();
    let scaled: Scale = deployments
        .apply_subresource("scale", &scale(3), &opts)
        .await
        .expect("apply to scale");
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(3));
    let stored = deployments
        .get("web", &GetOptions::default())
        .await
        .unwrap();
    assert_eq!(stored.spec.replicas, Some(3));
    let entry = stored
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .find(|e| e.manager.as_deref() == Some("autoscaler"))
        .expect("the autoscaler's managedFields entry");
    assert_eq!(
        (entry.operation.as_deref(), entry.subresource.as_deref()),
        (Some("Apply"), Some("scale"))
    );
    // What it owns, read back as the Deployment's fields.
    let owned = extract_from(&stored, "autoscaler", "scale").expect("extract");
    assert_eq!(
        serde_json::to_value(&owned).unwrap()["spec"],
        json!({ "replicas": 3 })
    );

    let dynamic = DynamicClient::from_rest_client(cs.rest_client().clone());
    let resource = GroupVersionResource::new("apps", "v1", "deployments");
    let answer = dynamic
        .resource(&resource)
        .namespace(&ns)
        .apply_subresource("scale", &scale(4), &opts)
        .await
        .expect("dynamic apply to scale");
    assert_eq!(answer.gvk().kind, "Scale");
    assert_eq!(answer.nested(&["spec", "replicas"]), Some(&json!(4)));

    let unnamed = autoscaling::Scale::default();
    let err = deployments
        .apply_subresource::<_, Scale>("scale", &unnamed, &opts)
        .await
        .unwrap_err();
    assert!(
        matches!(err, kubekit::rest::Error::Request(_)),
        "refused unsent: {err}"
    );
}
