//! Integration tests of `kubekit::rest`: the request builder, decoding, watch streams,
//! warnings and API errors against the real API server.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kubekit::rest::{PatchType, RestClient, WatchEvent};
use serde_json::json;

use crate::common::{admin_client, namespace};
use crate::configmaps::{configmaps, create_configmap};

#[tokio::test]
async fn builder_requests_create_get_list_patch_and_delete_objects() {
    let client = admin_client().await;
    let ns = namespace("rest-verbs").await;
    let created = create_configmap(&client, &ns, "one").await;
    assert_eq!(created.metadata.namespace.as_deref(), Some(ns.as_str()));

    let got: ConfigMap = configmaps(client.get(), &ns)
        .name("one")
        .send()
        .await
        .unwrap()
        .decode()
        .unwrap();
    assert_eq!(got.metadata.uid, created.metadata.uid);

    let list = configmaps(client.get(), &ns)
        .send()
        .await
        .unwrap()
        .decode_list::<ConfigMap>()
        .unwrap();
    assert!(
        list.items
            .iter()
            .any(|c| c.metadata.name.as_deref() == Some("one"))
    );
    assert!(list.skipped.is_empty());
    assert!(list.metadata.resource_version.is_some());

    let patched: ConfigMap = configmaps(client.patch(PatchType::Merge), &ns)
        .name("one")
        .body(&json!({"data": {"k": "v1"}}))
        .send()
        .await
        .unwrap()
        .decode()
        .unwrap();
    assert_eq!(patched.data.unwrap()["k"], "v1");

    configmaps(client.delete(), &ns)
        .name("one")
        .send()
        .await
        .expect("delete");
    let err = configmaps(client.get(), &ns)
        .name("one")
        .send()
        .await
        .expect_err("deleted");
    assert!(err.is_not_found(), "{err}");
    assert!(
        err.to_string().contains("configmaps \"one\" not found"),
        "{err}"
    );
}

#[tokio::test]
async fn cluster_scoped_list_decodes_namespaces() {
    let client = admin_client().await;
    let list = client
        .get()
        .group_version("", "v1")
        .resource("namespaces")
        .send()
        .await
        .unwrap()
        .decode_list::<Namespace>()
        .unwrap();
    let names: Vec<_> = list
        .items
        .iter()
        .filter_map(|n| n.metadata.name.as_deref())
        .collect();
    assert!(
        names.contains(&"kube-system") && names.contains(&"default"),
        "{names:?}"
    );
}

#[tokio::test]
async fn watch_streams_added_modified_deleted_and_bookmarks_in_order() {
    let client = admin_client().await;
    let ns = namespace("rest-watch").await;
    let list = configmaps(client.get(), &ns)
        .send()
        .await
        .unwrap()
        .decode_list::<ConfigMap>()
        .unwrap();
    let rv = list.metadata.resource_version.unwrap();
    let mut events = Box::pin(
        configmaps(client.get(), &ns)
            .param("resourceVersion", &rv)
            .param("allowWatchBookmarks", "true")
            .param("timeoutSeconds", "30")
            .watch::<ConfigMap>()
            .await
            .expect("start watch"),
    );
    create_configmap(&client, &ns, "w").await;
    configmaps(client.patch(PatchType::Merge), &ns)
        .name("w")
        .body(&json!({"data": {"k": "v1"}}))
        .send()
        .await
        .unwrap();
    configmaps(client.delete(), &ns)
        .name("w")
        .send()
        .await
        .unwrap();

    let mut seen = Vec::new();
    while seen.len() < 3 {
        let event = tokio::time::timeout(Duration::from_secs(20), events.next())
            .await
            .expect("event within 20 s")
            .expect("stream open")
            .expect("valid event");
        // kube-controller-manager publishes kube-root-ca.crt in every new namespace, maybe
        // after the list: only "w" is this test's.
        match event {
            WatchEvent::Added(c) | WatchEvent::Modified(c) | WatchEvent::Deleted(c)
                if c.metadata.name.as_deref() != Some("w") => {}
            WatchEvent::Added(c) => seen.push(("ADDED", c.data.unwrap()["k"].clone())),
            WatchEvent::Modified(c) => seen.push(("MODIFIED", c.data.unwrap()["k"].clone())),
            WatchEvent::Deleted(c) => seen.push(("DELETED", c.data.unwrap()["k"].clone())),
            WatchEvent::Bookmark(b) => assert!(!b.resource_version.is_empty()),
            WatchEvent::Error(s) => panic!("unexpected watch error {s:?}"),
        }
    }
    let expected = [("ADDED", "v0"), ("MODIFIED", "v1"), ("DELETED", "v1")];
    assert_eq!(seen, expected.map(|(t, v)| (t, v.to_string())));
}

#[tokio::test]
async fn server_warnings_reach_the_handler_and_the_response() {
    let received = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = received.clone();
    let client = admin_client()
        .await
        .with_warning_handler(Arc::new(move |w| sink.lock().unwrap().push(w.to_string())));
    // ComponentStatus has been deprecated since v1.19; the server says so in a Warning header.
    let res = client
        .get()
        .group_version("", "v1")
        .resource("componentstatuses")
        .send()
        .await
        .unwrap();
    assert!(
        res.warnings()
            .iter()
            .any(|w| w.contains("ComponentStatus is deprecated")),
        "warnings: {:?}",
        res.warnings()
    );
    assert_eq!(received.lock().unwrap().as_slice(), res.warnings());
}

#[tokio::test]
async fn invalid_object_and_duplicate_name_map_to_their_predicates() {
    let client = admin_client().await;
    let ns = namespace("rest-errors").await;
    create_configmap(&client, &ns, "dup").await;
    let err = configmaps(client.post(), &ns)
        .body(&json!({"metadata": {"name": "dup"}}))
        .send()
        .await
        .expect_err("same name twice");
    assert!(err.is_already_exists() && !err.is_conflict(), "{err}");

    let err = configmaps(client.post(), &ns)
        .body(&json!({"metadata": {"name": "Not_A_Valid_Name"}}))
        .send()
        .await
        .expect_err("invalid name");
    assert!(err.is_invalid(), "{err}");
    assert_eq!(err.code(), Some(422));
}

#[tokio::test]
async fn unauthenticated_and_forbidden_users_get_their_error_kinds() {
    let cp = testenv::control_plane();
    let kubeconfig = cp.user_kubeconfig("rest-nobody", &[]);
    let config = kubekit::rest::RestConfig::from_kubeconfig(&kubeconfig)
        .await
        .unwrap();
    let client = RestClient::new(&config).unwrap();
    let err = client
        .get()
        .group_version("", "v1")
        .resource("secrets")
        .send()
        .await
        .expect_err("no RBAC grant");
    assert!(err.is_forbidden(), "{err}");
    assert!(!err.is_unauthorized());
}

#[tokio::test]
async fn a_server_certificate_from_an_unknown_issuer_is_named_in_the_error() {
    let cp = testenv::control_plane();
    let admin = kubekit::rest::RestConfig::from_kubeconfig(cp.kubeconfig_path())
        .await
        .unwrap();
    // The same server, verified against the system's roots instead of its own CA.
    let mut config = kubekit::rest::RestConfig::from_url(&admin.host().to_string()).unwrap();
    config.max_retries = 0;
    let err = RestClient::new(&config)
        .unwrap()
        .get()
        .abs_path("/version")
        .send()
        .await
        .expect_err("unknown issuer");
    let text = err.to_string();
    assert!(text.contains("UnknownIssuer"), "{text}");
}

#[test]
fn path_segments_with_slashes_are_refused_before_sending() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = admin_client().await;
        let err = configmaps(client.get(), "default")
            .name("../secrets/x")
            .send()
            .await
            .expect_err("invalid name");
        assert!(err.to_string().contains("invalid name"), "{err}");
    });
}

#[tokio::test]
async fn a_large_list_comes_compressed_when_asked_and_decodes_alike() {
    let client = admin_client().await;
    let ns = namespace("rest-gzip").await;
    // kube-apiserver compresses responses of over 128 KiB: 40 ConfigMaps of 4 KiB each
    // (beside the namespace's kube-root-ca.crt).
    for i in 0..40 {
        configmaps(client.post(), &ns)
            .body(&json!({"metadata": {"name": format!("cm-{i}")},
                          "data": {"k": "x".repeat(4096)}}))
            .send()
            .await
            .expect("create configmap");
    }
    let config =
        kubekit::rest::RestConfig::from_kubeconfig(testenv::control_plane().kubeconfig_path())
            .await
            .unwrap();
    assert!(config.compression, "compression is on by default");
    let mut lists = Vec::new();
    for compression in [true, false] {
        let client = RestClient::new(&config.clone().with_compression(compression)).unwrap();
        let response = configmaps(client.get(), &ns).send().await.unwrap();
        let encoding = response.content_encoding().map(str::to_string);
        let list = response.decode_list::<ConfigMap>().unwrap();
        let names: Vec<_> = list
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .filter(|name| name.starts_with("cm-"))
            .collect();
        lists.push((encoding, names));
    }
    assert_eq!(lists[0].0.as_deref(), Some("gzip"));
    assert_eq!(lists[1].0, None);
    assert_eq!(lists[0].1.len(), 40);
    assert_eq!(lists[0].1, lists[1].1);
}

#[tokio::test]
async fn a_server_without_cbor_answers_json_to_a_client_that_asks_for_cbor_first() {
    let client = admin_client().await;
    assert!(client.cbor(), "kubekit asks for CBOR first by default");
    let ns = namespace("rest-cbor").await;
    create_configmap(&client, &ns, "plain").await;
    let response = configmaps(client.get(), &ns)
        .name("plain")
        .accept("application/cbor, application/json;q=0.9")
        .send()
        .await
        .unwrap();
    // kube-apiserver 1.37 serves CBOR only with its CBORServingAndStorage gate (off here).
    assert!(!response.is_cbor());
    assert!(response.content_type().starts_with("application/json"));
    let got: ConfigMap = response.decode().unwrap();
    assert_eq!(got.metadata.name.as_deref(), Some("plain"));
}
