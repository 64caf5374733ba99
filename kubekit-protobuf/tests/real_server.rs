//! Against the real kube-apiserver: what it sends as protobuf decodes to the values its JSON
//! decodes to (lists read at one resourceVersion, watch events), and what kubekit-protobuf
//! encodes is accepted and stored as sent.

use http::Request;
use k8s_openapi::List;
use k8s_openapi::api::apps::v1::{ControllerRevision, Deployment};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    ConfigMap, Event, LimitRange, Namespace, Pod, ResourceQuota, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, Role, RoleBinding};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::client::Body;
use kubekit_protobuf::{CONTENT_TYPE, WatchEvent, decode, encode, split_frame};
use serde::de::DeserializeOwned;

const JSON: &str = "application/json";

/// Objects of every field family: maps, byte maps, quantities, IntOrString in both forms,
/// probes, affinity, MicroTime, a CRD schema with every union.
const MANIFEST: &str = include_str!("manifest.yaml");

async fn get(client: &kube::Client, path: &str, accept: &str) -> (u16, Vec<u8>) {
    let req = Request::get(path)
        .header("Accept", accept)
        .body(Body::from(Vec::new()))
        .unwrap();
    let resp = client.send(req).await.expect("request");
    let status = resp.status().as_u16();
    let body = resp
        .into_body()
        .collect_bytes()
        .await
        .expect("body")
        .to_vec();
    (status, body)
}

/// Lists `path` as JSON, then as protobuf at exactly the JSON list's resourceVersion, and
/// checks both decode to the same list. Returns how many items it compared.
async fn same_list<T>(client: &kube::Client, path: &str) -> usize
where
    T: k8s_openapi::ListableResource
        + kubekit_protobuf::Message
        + kubekit_protobuf::runtime::Value
        + DeserializeOwned
        + PartialEq
        + std::fmt::Debug,
    List<T>: kubekit_protobuf::Message + PartialEq + std::fmt::Debug,
{
    let (status, body) = get(client, path, JSON).await;
    assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
    let from_json: List<T> = serde_json::from_slice(&body).expect("the JSON list decodes");
    let rv = from_json
        .metadata
        .resource_version
        .clone()
        .expect("a list has a resourceVersion");
    let sep = if path.contains('?') { '&' } else { '?' };
    let exact = format!("{path}{sep}resourceVersion={rv}&resourceVersionMatch=Exact");
    let (status, body) = get(client, &exact, CONTENT_TYPE).await;
    assert_eq!(status, 200, "{exact}");
    assert!(
        body.starts_with(b"k8s\0"),
        "{path}: the server answered protobuf"
    );
    let from_proto: List<T> = decode(&body).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(from_proto.items.len(), from_json.items.len(), "{path}");
    for (p, j) in from_proto.items.iter().zip(&from_json.items) {
        assert_eq!(p, j, "{path}: an item differs");
    }
    assert_eq!(from_proto.metadata, from_json.metadata, "{path}");
    from_json.items.len()
}

#[tokio::test]
async fn every_kind_read_as_protobuf_equals_its_json() {
    let cp = testenv::control_plane();
    let client = cp.client().await;
    let ns = cp.create_namespace(&client, "proto-read").await;
    let manifest = MANIFEST.replace("NAMESPACE", &ns);
    let out = cp
        .kubectl()
        .args(["apply", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child
                .stdin
                .take()
                .expect("piped")
                .write_all(manifest.as_bytes())?;
            child.wait_with_output()
        })
        .expect("kubectl apply");
    assert!(
        out.status.success(),
        "kubectl apply: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let n = |kind: &str| format!("/api/v1/namespaces/{ns}/{kind}");
    let g = |group: &str, kind: &str| format!("/apis/{group}/namespaces/{ns}/{kind}");
    let mut compared = 0;
    compared += same_list::<ConfigMap>(&client, &n("configmaps")).await;
    compared += same_list::<Secret>(&client, &n("secrets")).await;
    compared += same_list::<Service>(&client, &n("services")).await;
    compared += same_list::<Pod>(&client, &n("pods")).await;
    compared += same_list::<ServiceAccount>(&client, &n("serviceaccounts")).await;
    compared += same_list::<ResourceQuota>(&client, &n("resourcequotas")).await;
    compared += same_list::<LimitRange>(&client, &n("limitranges")).await;
    compared += same_list::<Event>(&client, &n("events")).await;
    compared += same_list::<Deployment>(&client, &g("apps/v1", "deployments")).await;
    compared +=
        same_list::<ControllerRevision>(&client, &g("apps/v1", "controllerrevisions")).await;
    compared += same_list::<CronJob>(&client, &g("batch/v1", "cronjobs")).await;
    compared += same_list::<HorizontalPodAutoscaler>(
        &client,
        &g("autoscaling/v2", "horizontalpodautoscalers"),
    )
    .await;
    compared +=
        same_list::<PodDisruptionBudget>(&client, &g("policy/v1", "poddisruptionbudgets")).await;
    compared += same_list::<Lease>(&client, &g("coordination.k8s.io/v1", "leases")).await;
    compared +=
        same_list::<NetworkPolicy>(&client, &g("networking.k8s.io/v1", "networkpolicies")).await;
    compared += same_list::<Ingress>(&client, &g("networking.k8s.io/v1", "ingresses")).await;
    compared += same_list::<Role>(&client, &g("rbac.authorization.k8s.io/v1", "roles")).await;
    compared +=
        same_list::<RoleBinding>(&client, &g("rbac.authorization.k8s.io/v1", "rolebindings")).await;
    // Cluster-wide lists of what the server itself created.
    compared += same_list::<Namespace>(&client, "/api/v1/namespaces").await;
    compared +=
        same_list::<ClusterRole>(&client, "/apis/rbac.authorization.k8s.io/v1/clusterroles").await;
    compared +=
        same_list::<PriorityClass>(&client, "/apis/scheduling.k8s.io/v1/priorityclasses").await;
    compared +=
        same_list::<FlowSchema>(&client, "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas").await;
    compared += same_list::<PriorityLevelConfiguration>(
        &client,
        "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
    )
    .await;
    compared +=
        same_list::<APIService>(&client, "/apis/apiregistration.k8s.io/v1/apiservices").await;
    compared += same_list::<CustomResourceDefinition>(
        &client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    )
    .await;
    assert!(compared > 150, "only {compared} objects compared");
}

/// A JSON `*List`'s items, as `T`.
#[derive(serde::Deserialize)]
struct JsonItems<T> {
    items: Vec<T>,
}

/// Lists `path` as JSON and as protobuf at the JSON list's resourceVersion, item by item as
/// `T`; the two must be equal. Returns how many items it compared.
async fn same_items<T: kubekit_protobuf::ResourceMessage>(
    client: kube::Client,
    path: String,
) -> usize {
    let (status, body) = get(&client, &path, JSON).await;
    assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
    let list: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
    let from_json: JsonItems<T> =
        serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{path} as JSON: {e}"));
    // What is not stored (componentstatuses) has no resourceVersion to read at, and comes
    // in no fixed order: its items are compared by name.
    let rv = list["metadata"]["resourceVersion"].as_str();
    let exact = match rv {
        Some(rv) => format!("{path}?resourceVersion={rv}&resourceVersionMatch=Exact"),
        None => path.clone(),
    };
    let (status, body) = get(&client, &exact, CONTENT_TYPE).await;
    assert_eq!(status, 200, "{exact}");
    let unknown = kubekit_protobuf::Unknown::read(&body).unwrap_or_else(|e| panic!("{path}: {e}"));
    let (_, items) =
        kubekit_protobuf::list_parts(unknown.raw).unwrap_or_else(|e| panic!("{path}: {e}"));
    let values = |items: Vec<serde_json::Value>| {
        let mut items = items;
        if rv.is_none() {
            items.sort_by_key(|i| i["metadata"]["name"].to_string());
        }
        items
    };
    let from_proto = values(
        items
            .iter()
            .map(|raw| {
                let p: T =
                    kubekit_protobuf::decode_message(raw).unwrap_or_else(|e| panic!("{path}: {e}"));
                serde_json::to_value(&p).unwrap()
            })
            .collect(),
    );
    let from_json = values(
        from_json
            .items
            .iter()
            .map(|j| serde_json::to_value(j).unwrap())
            .collect(),
    );
    assert_eq!(from_proto.len(), from_json.len(), "{path}");
    for (p, j) in from_proto.iter().zip(&from_json) {
        assert_eq!(p, j, "{path}: an item differs");
    }
    from_proto.len()
}

/// Compares one resource type's lists; see [`same_items`].
type Compare = fn(kube::Client, String) -> futures_util::future::BoxFuture<'static, usize>;

/// The comparison of every type that has a codec, by `apiVersion` and kind.
#[derive(Default)]
struct Comparisons(std::collections::HashMap<(String, String), Compare>);

impl kubekit_protobuf::ResourceVisitor for Comparisons {
    fn visit<T: kubekit_protobuf::ResourceMessage>(&mut self) {
        let compare: Compare = |client, path| Box::pin(same_items::<T>(client, path));
        self.0
            .insert((T::API_VERSION.to_string(), T::KIND.to_string()), compare);
    }
}

/// Every listable resource the server serves: (groupVersion, kind, plural), from discovery.
async fn served_resources(client: &kube::Client) -> Vec<(String, String, String)> {
    let json = |body: Vec<u8>| serde_json::from_slice::<serde_json::Value>(&body).unwrap();
    let mut group_versions = vec!["v1".to_string()];
    let groups = json(get(client, "/apis", JSON).await.1);
    for group in groups["groups"].as_array().expect("groups") {
        for version in group["versions"].as_array().expect("versions") {
            group_versions.push(version["groupVersion"].as_str().unwrap().to_string());
        }
    }
    let mut served = Vec::new();
    for gv in group_versions {
        let path = if gv == "v1" {
            "/api/v1".to_string()
        } else {
            format!("/apis/{gv}")
        };
        let resources = json(get(client, &path, JSON).await.1);
        for r in resources["resources"].as_array().expect("resources") {
            let name = r["name"].as_str().unwrap();
            let listable = r["verbs"]
                .as_array()
                .is_some_and(|v| v.iter().any(|v| v == "list"));
            if listable && !name.contains('/') {
                let kind = r["kind"].as_str().unwrap().to_string();
                served.push((gv.clone(), kind, name.to_string()));
            }
        }
    }
    served
}

#[tokio::test]
async fn every_served_built_in_kind_lists_as_protobuf_equal_to_its_json() {
    let cp = testenv::control_plane();
    let client = cp.client().await;
    let mut comparisons = Comparisons::default();
    kubekit_protobuf::for_each_resource(&mut comparisons);
    let crds: List<CustomResourceDefinition> = serde_json::from_slice(
        &get(
            &client,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            JSON,
        )
        .await
        .1,
    )
    .unwrap();
    let custom_groups: Vec<String> = crds.items.into_iter().map(|c| c.spec.group).collect();
    let (mut kinds, mut items) = (0, 0);
    for (gv, kind, plural) in served_resources(&client).await {
        if custom_groups
            .iter()
            .any(|g| gv.starts_with(&format!("{g}/")))
        {
            continue; // custom resources have no protobuf form
        }
        let compare = comparisons
            .0
            .get(&(gv.clone(), kind.clone()))
            .unwrap_or_else(|| panic!("{gv} {kind} is served and has no codec"));
        let path = if gv == "v1" {
            format!("/api/v1/{plural}")
        } else {
            format!("/apis/{gv}/{plural}")
        };
        items += compare(client.clone(), path).await;
        kinds += 1;
    }
    println!("{kinds} served kinds, {items} objects compared");
    assert!(kinds > 50, "only {kinds} kinds served");
}

async fn post(client: &kube::Client, path: &str, body: Vec<u8>) -> (u16, Vec<u8>) {
    let req = Request::post(path)
        .header("Content-Type", CONTENT_TYPE)
        .header("Accept", JSON)
        .body(Body::from(body))
        .unwrap();
    let resp = client.send(req).await.expect("request");
    let status = resp.status().as_u16();
    (
        status,
        resp.into_body()
            .collect_bytes()
            .await
            .expect("body")
            .to_vec(),
    )
}

#[tokio::test]
async fn objects_sent_as_protobuf_are_accepted_and_stored_as_sent() {
    let cp = testenv::control_plane();
    let client = cp.client().await;
    let ns = cp.create_namespace(&client, "proto-write").await;

    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("sent".into());
    cm.metadata.labels = Some([("a".to_string(), "b".to_string())].into());
    cm.data = Some([("text".to_string(), "ü\n".to_string())].into());
    cm.binary_data = Some([("bin".to_string(), k8s_openapi::ByteString(vec![0, 1, 255]))].into());
    let (status, body) = post(
        &client,
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        encode(&cm),
    )
    .await;
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let stored: ConfigMap = serde_json::from_slice(
        &get(
            &client,
            &format!("/api/v1/namespaces/{ns}/configmaps/sent"),
            JSON,
        )
        .await
        .1,
    )
    .unwrap();
    assert_eq!(
        (stored.data, stored.binary_data, stored.metadata.labels),
        (cm.data, cm.binary_data, cm.metadata.labels)
    );

    let mut dep = testenv::deployment("sent", 2);
    dep.metadata.namespace = Some(ns.clone());
    let (status, body) = post(
        &client,
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        encode(&dep),
    )
    .await;
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let stored: Deployment = serde_json::from_slice(&body).unwrap();
    assert_eq!(stored.spec.replicas, Some(2));
    assert_eq!(stored.spec.selector, dep.spec.selector);
    assert_eq!(
        stored
            .spec
            .template
            .spec
            .as_ref()
            .map(|s| &s.containers[0].image),
        dep.spec
            .template
            .spec
            .as_ref()
            .map(|s| &s.containers[0].image)
    );

    // A body that is not protobuf is refused, not stored.
    let (status, _) = post(
        &client,
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        b"k8s\0\xff\xff".to_vec(),
    )
    .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn watch_events_read_as_protobuf_equal_their_json() {
    let cp = testenv::control_plane();
    let client = cp.client().await;
    let ns = cp.create_namespace(&client, "proto-watch").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let (_, body) = get(&client, &format!("{path}?labelSelector=w"), JSON).await;
    let rv = serde_json::from_slice::<List<ConfigMap>>(&body)
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let watch = format!("{path}?watch=true&labelSelector=w&resourceVersion={rv}&timeoutSeconds=4");
    let (proto_watch, json_watch) = (client.clone(), client.clone());
    let proto = tokio::spawn({
        let watch = watch.clone();
        async move { get(&proto_watch, &watch, CONTENT_TYPE).await }
    });
    let json = tokio::spawn(async move { get(&json_watch, &watch, JSON).await });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    for i in 0..3 {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("w{i}"));
        cm.metadata.labels = Some([("w".to_string(), String::new())].into());
        cm.data = Some([("i".to_string(), i.to_string())].into());
        let (status, _) = post(&client, &path, encode(&cm)).await;
        assert_eq!(status, 201);
    }
    let (_, proto) = proto.await.unwrap();
    let (_, json) = json.await.unwrap();
    let json_events: Vec<(String, ConfigMap)> = json
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_slice(l).unwrap();
            (
                v["type"].as_str().unwrap().to_string(),
                serde_json::from_value(v["object"].clone()).unwrap(),
            )
        })
        .collect();
    let mut proto_events = Vec::new();
    let mut rest = proto.as_slice();
    while let Some((frame, tail)) = split_frame(rest, 1 << 24).unwrap() {
        let event = WatchEvent::read(frame).unwrap();
        proto_events.push((
            event.event_type.clone(),
            decode::<ConfigMap>(event.object).unwrap(),
        ));
        rest = tail;
    }
    assert!(rest.is_empty(), "the stream ends on a frame boundary");
    assert_eq!(json_events.len(), 3);
    assert_eq!(proto_events, json_events);
}
