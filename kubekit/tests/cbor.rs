//! CBOR against kube-apiserver 1.37.2 with its `CBORServingAndStorage` feature gate: what
//! kubekit reads in CBOR (custom resources through typed clients, watches and informers;
//! the dynamic client's objects, `[]byte` fields included) decodes to what the same reads
//! give in JSON, the compact cache's too. This binary runs its own control plane, with the
//! gate on.

use std::time::Duration;

use app_controller::{App, AppSpec};
use futures_util::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Resource;
use kube::core::CustomResourceExt;
use kubekit::cache::Compact;
use kubekit::clientset::{
    Clientset, CreateOptions, DeleteOptions, GetOptions, ListOptions, PatchBody, PatchOptions,
    ResourceClient,
};
use kubekit::dynamic::DynamicClient;
use kubekit::informers::SharedInformerFactory;
use kubekit::labels::Selector;
use kubekit::meta::GroupVersionResource;
use kubekit::rest::{RestClient, RestConfig, WatchEvent};
use serde::Serialize;
use serde_json::{Value, json};
use testenv::ControlPlane;
use tokio_util::sync::CancellationToken;

const APP_CRD_MANAGER: &str = "kubekit-tests";

fn cbor_served() -> &'static ControlPlane {
    testenv::control_plane_with_feature_gates("ShardedListAndWatch=true,CBORServingAndStorage=true")
}

/// A clientset of the CBOR-serving control plane asking for CBOR first (`cbor`) or for
/// JSON alone, and a fresh namespace.
async fn clientset(cbor: bool) -> Clientset {
    let cp = cbor_served();
    let config = RestConfig::from_kubeconfig(cp.kubeconfig_path())
        .await
        .expect("admin kubeconfig")
        .with_cbor(cbor);
    Clientset::from_rest_client(RestClient::new(&config).expect("rest client"))
}

async fn setup(prefix: &str) -> (Clientset, Clientset, String) {
    let cp = cbor_served();
    let ns = cp.create_namespace(&cp.client().await, prefix).await;
    let cbor = clientset(true).await;
    cbor.install_crd(App::crd(), APP_CRD_MANAGER)
        .await
        .expect("install the App CRD");
    (cbor, clientset(false).await, ns)
}

fn app(name: &str, replicas: i32) -> App {
    let mut app = App::new(name, AppSpec::default());
    app.spec.deployment_template.name = format!("{name}-deploy");
    app.spec.deployment_template.image = "nginx".into();
    app.spec.deployment_template.replicas = replicas;
    app
}

fn value<T: Serialize>(object: &T) -> Value {
    serde_json::to_value(object).expect("serializes")
}

/// The next event of `events` that is not a bookmark, as its type and object.
async fn next_event<S>(events: &mut S) -> (&'static str, Value)
where
    S: futures_util::Stream<Item = kubekit::rest::Result<WatchEvent<App>>> + Unpin,
{
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .expect("a watch event within 30 s")
            .expect("the watch goes on")
            .expect("the event decodes");
        match &event {
            WatchEvent::Added(a) | WatchEvent::Modified(a) | WatchEvent::Deleted(a) => {
                return (event.type_name(), value(a));
            }
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(status) => panic!("watch error: {status:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn custom_resources_read_in_cbor_equal_their_json_in_gets_lists_watches_and_informers() {
    let (cbor, json, ns) = setup("cbor-cr").await;
    let apps_json: ResourceClient<App> = json.resource(&ns);
    let apps_cbor: ResourceClient<App> = cbor.resource(&ns);
    for (i, name) in ["web", "api", "db"].iter().enumerate() {
        apps_json
            .create(&app(name, i as i32 + 1), &CreateOptions::default())
            .await
            .expect("create an App");
    }

    // The server answers in CBOR (and the JSON client's answer is JSON).
    let get = |rest: &RestClient| {
        rest.get()
            .group_version("appcontroller.k8s.io", "v1")
            .namespace(&ns)
            .resource("apps")
            .name("web")
            .accept("application/cbor, application/json;q=0.9")
    };
    let raw = get(cbor.rest_client()).send().await.expect("get web");
    assert!(raw.is_cbor(), "content type {:?}", raw.content_type());
    // A watch answers a CBOR sequence (read whole here, for its header).
    let watch = cbor
        .rest_client()
        .get()
        .group_version("appcontroller.k8s.io", "v1")
        .namespace(&ns)
        .resource("apps")
        .param("watch", "true")
        .param("timeoutSeconds", "1")
        .accept("application/cbor, application/json;q=0.9")
        .send()
        .await
        .expect("watch apps");
    assert_eq!(watch.content_type(), "application/cbor-seq");

    let got = apps_cbor
        .get("web", &GetOptions::default())
        .await
        .expect("get in CBOR");
    let want = apps_json
        .get("web", &GetOptions::default())
        .await
        .expect("get in JSON");
    assert_eq!(value(&got), value(&want));
    assert_eq!(got.spec.deployment_template.replicas, 1);

    let list_cbor = apps_cbor
        .list(&ListOptions::default())
        .await
        .expect("list in CBOR");
    let list_json = apps_json
        .list(&ListOptions::default())
        .await
        .expect("list in JSON");
    assert_eq!(list_cbor.items.len(), 3);
    assert!(list_cbor.skipped.is_empty());
    assert_eq!(value(&list_cbor.items), value(&list_json.items));
    assert_eq!(
        list_cbor.metadata.resource_version,
        list_json.metadata.resource_version
    );

    // Both watches from the same version see the same events.
    let from = ListOptions {
        resource_version: list_json.metadata.resource_version.clone(),
        ..ListOptions::default()
    };
    let mut events_cbor = apps_cbor.watch(&from).await.expect("watch in CBOR");
    let mut events_json = apps_json.watch(&from).await.expect("watch in JSON");
    let patch = PatchBody::Merge(json!({"spec": {"deploymentTemplate": {"replicas": 5}}}));
    apps_json
        .patch("api", &patch, &PatchOptions::default())
        .await
        .expect("patch api");
    apps_json
        .delete("db", &DeleteOptions::default())
        .await
        .expect("delete db");
    for _ in 0..2 {
        let (kind, object) = next_event(&mut events_cbor).await;
        let (want_kind, want_object) = next_event(&mut events_json).await;
        assert_eq!((kind, &object), (want_kind, &want_object));
        if kind == "MODIFIED" {
            assert_eq!(object["spec"]["deploymentTemplate"]["replicas"], json!(5));
        }
    }

    // An informer syncs from CBOR, managedFields left out as by default.
    let factory = SharedInformerFactory::builder(cbor.clone())
        .namespace(&ns)
        .build();
    let apps = factory.for_type::<App>();
    // A factory keeps one informer per resource: the compact cache in a second one.
    let compact_factory = SharedInformerFactory::builder(cbor.clone())
        .namespace(&ns)
        .build();
    let compact = compact_factory.for_type::<Compact<App>>();
    for factory in [&factory, &compact_factory] {
        factory.start();
        let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
        assert!(synced.values().all(|s| *s), "{synced:?}");
    }
    let mut cached: Vec<Value> = apps
        .lister()
        .list(&Selector::everything())
        .iter()
        .map(|a| value(&**a))
        .collect();
    let mut want: Vec<Value> = apps_json
        .list(&ListOptions::default())
        .await
        .expect("list in JSON")
        .items
        .into_iter()
        .map(|mut a| {
            a.meta_mut().managed_fields = None;
            value(&a)
        })
        .collect();
    cached.sort_by_key(|a| a["metadata"]["name"].to_string());
    want.sort_by_key(|a| a["metadata"]["name"].to_string());
    assert_eq!(cached, want);
    // The compact cache keeps what it reads from CBOR, as from JSON.
    let mut kept: Vec<Value> = compact
        .lister()
        .list(&Selector::everything())
        .iter()
        .map(|c| value(&*c.get().expect("a compact App decodes")))
        .collect();
    kept.sort_by_key(|a| a["metadata"]["name"].to_string());
    assert_eq!(kept, want);

    // An API error answered in CBOR is read as such.
    let missing = apps_cbor
        .get("nowhere", &GetOptions::default())
        .await
        .unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
    assert!(missing.to_string().contains("nowhere"), "{missing}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_dynamic_client_reads_bytes_and_objects_in_cbor_as_in_json() {
    let (cbor, json, ns) = setup("cbor-dyn").await;
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "blob", "labels": {"kind": "binary"}},
        "type": "Opaque",
    }))
    .unwrap();
    let secret = Secret {
        data: Some([("all".to_string(), ByteString((0..=255).collect()))].into()),
        ..secret
    };
    json.resource::<Secret>(&ns)
        .create(&secret, &CreateOptions::default())
        .await
        .expect("create the Secret");

    let gvr = GroupVersionResource::new("", "v1", "secrets");
    let dynamic_cbor = DynamicClient::from_rest_client(cbor.rest_client().clone());
    let dynamic_json = DynamicClient::from_rest_client(json.rest_client().clone());
    let got = dynamic_cbor
        .resource(&gvr)
        .namespace(&ns)
        .get("blob", &GetOptions::default())
        .await
        .expect("get in CBOR");
    let want = dynamic_json
        .resource(&gvr)
        .namespace(&ns)
        .get("blob", &GetOptions::default())
        .await
        .expect("get in JSON");
    assert_eq!(value(&got), value(&want));
    assert_eq!(got.metadata.labels.as_ref().unwrap()["kind"], "binary");
    // The Secret's []byte came as tag 22: its base64 text, as JSON carries it.
    let all: Vec<u8> = (0..=255).collect();
    let base64 = serde_json::to_value(ByteString(all)).unwrap();
    assert_eq!(got.nested(&["data", "all"]), Some(&base64));

    let list_cbor = dynamic_cbor
        .resource(&gvr)
        .namespace(&ns)
        .list(&ListOptions::default())
        .await
        .expect("list in CBOR");
    let list_json = dynamic_json
        .resource(&gvr)
        .namespace(&ns)
        .list(&ListOptions::default())
        .await
        .expect("list in JSON");
    assert_eq!(value(&list_cbor.items), value(&list_json.items));

    // A typed client of a built-in type without protobuf asks for CBOR too: the bytes
    // come back as they were written.
    let config = RestConfig::from_kubeconfig(cbor_served().kubeconfig_path())
        .await
        .expect("admin kubeconfig");
    let mut no_protobuf = config;
    no_protobuf.protobuf = false;
    let typed = Clientset::from_rest_client(RestClient::new(&no_protobuf).unwrap());
    let read = typed
        .resource::<Secret>(&ns)
        .get("blob", &GetOptions::default())
        .await
        .expect("get the Secret in CBOR");
    assert_eq!(read.data, secret.data);

    // A delete's answer (a Secret's is a Status) decodes from CBOR.
    let deleted = dynamic_cbor
        .resource(&gvr)
        .namespace(&ns)
        .delete("blob", &DeleteOptions::default())
        .await
        .expect("delete in CBOR");
    let status = deleted
        .status()
        .expect("a Status answers a Secret's delete");
    assert_eq!(status.status.as_deref(), Some("Success"));
    assert_eq!(
        status.details.as_ref().and_then(|d| d.name.as_deref()),
        Some("blob")
    );
}
