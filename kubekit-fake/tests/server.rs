//! The fake's own contract: its binary, fault injection, bad input, CRDs, shutdown.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use kubekit::rest::{RestClient, RestConfig};
use kubekit_fake::{ApiError, FakeApiServer, RequestMatch};
use serde_json::{Value, json};

use common::kubectl_output;

async fn start() -> (FakeApiServer, RestClient) {
    let server = FakeApiServer::start().await.expect("fake starts");
    let rest = RestClient::new(&server.config()).expect("rest client");
    (server, rest)
}

async fn create_cm(rest: &RestClient, name: &str) -> kubekit::rest::Result<Value> {
    rest.post()
        .group_version("", "v1")
        .namespace("default")
        .resource("configmaps")
        .body(&json!({"metadata": {"name": name}}))
        .send()
        .await?
        .decode()
}

#[tokio::test]
async fn the_binary_prints_a_working_kubeconfig_and_stops_on_sigterm() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubekit-fake-apiserver"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the binary");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("a line");
    let path = std::path::PathBuf::from(line.trim());
    let config = RestConfig::from_kubeconfig(&path)
        .await
        .expect("its kubeconfig loads");
    let version: Value = RestClient::new(&config)
        .expect("client")
        .get()
        .abs_path("/version")
        .send()
        .await
        .expect("it serves")
        .decode()
        .expect("json");
    assert_eq!(version["major"], "1");
    let pid = child.id().to_string();
    Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    let status = child.wait().expect("it exits");
    assert!(status.success(), "{status}");
    assert!(!path.exists(), "the kubeconfig is removed when it stops");
}

#[tokio::test]
async fn an_injected_failure_answers_only_the_next_matching_requests() {
    let (server, rest) = start().await;
    server.fail_next(
        2,
        RequestMatch::any().verb("create").resource("configmaps"),
        ApiError::new(403, "Forbidden", "injected"),
    );
    for name in ["a", "b"] {
        let e = create_cm(&rest, name).await.unwrap_err();
        assert!(e.is_forbidden(), "{e}");
    }
    create_cm(&rest, "c")
        .await
        .expect("the third create is served");
    let names: Vec<String> = list_names(&rest).await;
    assert_eq!(names, ["c"]);
}

async fn list_names(rest: &RestClient) -> Vec<String> {
    let list: Value = rest
        .get()
        .group_version("", "v1")
        .namespace("default")
        .resource("configmaps")
        .send()
        .await
        .expect("list")
        .decode()
        .expect("json");
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn a_delay_holds_matching_requests_until_cleared() {
    let (server, rest) = start().await;
    server.delay(RequestMatch::any().verb("list"), Duration::from_millis(300));
    let started = Instant::now();
    list_names(&rest).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    server.clear_faults();
    let started = Instant::now();
    list_names(&rest).await;
    assert!(started.elapsed() < Duration::from_millis(300));
}

#[tokio::test]
async fn malformed_bodies_and_unknown_paths_are_answered_with_a_status() {
    let (_server, rest) = start().await;
    for body in [&b"{not json"[..], b"[1, 2]"] {
        let e = rest
            .post()
            .group_version("", "v1")
            .namespace("default")
            .resource("configmaps")
            .body_bytes(body.to_vec(), "application/json")
            .send()
            .await
            .unwrap_err();
        assert_eq!(
            (e.code(), e.reason()),
            (Some(400), Some("BadRequest")),
            "{e}"
        );
    }
    let e = rest
        .get()
        .abs_path("/apis/nothing.example/v1/things")
        .send()
        .await
        .unwrap_err();
    assert!(e.is_not_found(), "{e}");
    let e = rest
        .get()
        .group_version("", "v1")
        .namespace("default")
        .resource("configmaps")
        .param("labelSelector", "a in (b")
        .send()
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(400), "{e}");
}

#[tokio::test]
async fn protobuf_bodies_of_built_in_kinds_are_read_and_others_refused() {
    let (_server, rest) = start().await;
    let cms = |req: kubekit::rest::Request| {
        req.group_version("", "v1")
            .namespace("default")
            .resource("configmaps")
    };
    let protobuf = |cm: Value| {
        kubekit_protobuf::json_codec("v1", "ConfigMap")
            .expect("a built-in kind")
            .from_json(&cm)
            .expect("a ConfigMap")
    };
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "settings"}, "data": {"mode": "fast"}});
    let created: Value = cms(rest.post())
        .body_bytes(protobuf(cm.clone()), kubekit_protobuf::CONTENT_TYPE)
        .send()
        .await
        .expect("created from protobuf")
        .decode()
        .unwrap();
    assert_eq!(created["data"], json!({"mode": "fast"}));
    let mut changed = created.clone();
    changed["data"]["mode"] = json!("slow");
    let updated: Value = cms(rest.put())
        .name("settings")
        .body_bytes(protobuf(changed), kubekit_protobuf::CONTENT_TYPE)
        .send()
        .await
        .expect("updated from protobuf")
        .decode()
        .unwrap();
    assert_eq!(updated["data"], json!({"mode": "slow"}));
    assert_ne!(
        updated["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );

    let malformed = cms(rest.post())
        .body_bytes(b"k8s\0\x0a\xff".to_vec(), kubekit_protobuf::CONTENT_TYPE)
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        (malformed.code(), malformed.reason()),
        (Some(400), Some("BadRequest")),
        "{malformed}"
    );
    assert!(
        malformed
            .to_string()
            .contains("not a valid protobuf object"),
        "{malformed}"
    );
    let custom = kubekit_protobuf::encode_raw("example.com/v1", "Gadget", b"");
    let refused = cms(rest.post())
        .body_bytes(custom, kubekit_protobuf::CONTENT_TYPE)
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        (refused.code(), refused.reason()),
        (Some(415), Some("UnsupportedMediaType")),
        "{refused}"
    );
}

#[tokio::test]
async fn a_watch_with_a_timeout_beyond_any_instant_is_served_without_one() {
    let (_server, rest) = start().await;
    let watch = rest
        .get()
        .group_version("", "v1")
        .namespace("default")
        .resource("configmaps")
        .param("timeoutSeconds", &u64::MAX.to_string())
        .watch::<Value>()
        .await
        .expect("watch");
    let mut watch = std::pin::pin!(watch);
    create_cm(&rest, "after").await.unwrap();
    let event = tokio::time::timeout(Duration::from_secs(5), watch.next())
        .await
        .expect("an event")
        .expect("the watch is open")
        .expect("a decoded event");
    let kubekit::rest::WatchEvent::Added(cm) = event else {
        panic!("not an ADDED event: {event:?}");
    };
    assert_eq!(cm["metadata"]["name"], "after");
}

#[tokio::test]
async fn a_crd_is_served_at_once_and_no_longer_once_deleted() {
    let (_server, rest) = start().await;
    let crds = || {
        rest.post()
            .group_version("apiextensions.k8s.io", "v1")
            .resource("customresourcedefinitions")
    };
    crds()
        .body(&json!({
            "metadata": {"name": "gadgets.example.com"},
            "spec": {"group": "example.com", "scope": "Cluster",
                     "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                       "x-kubernetes-preserve-unknown-fields": true}}}]},
        }))
        .send()
        .await
        .expect("crd created");
    let gadgets = || {
        rest.get()
            .group_version("example.com", "v1")
            .resource("gadgets")
    };
    rest.post()
        .group_version("example.com", "v1")
        .resource("gadgets")
        .body(&json!({"metadata": {"name": "g"}}))
        .send()
        .await
        .expect("gadget created");
    let discovery: Value = rest
        .get()
        .abs_path("/apis/example.com/v1")
        .send()
        .await
        .expect("discovery")
        .decode()
        .expect("json");
    assert_eq!(discovery["resources"][0]["name"], "gadgets");
    assert_eq!(discovery["resources"][0]["namespaced"], false);
    rest.delete()
        .group_version("apiextensions.k8s.io", "v1")
        .resource("customresourcedefinitions")
        .name("gadgets.example.com")
        .send()
        .await
        .expect("crd deleted");
    assert!(gadgets().send().await.unwrap_err().is_not_found());
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_objects_then_the_namespace() {
    let (_server, rest) = start().await;
    let ns = || rest.delete().group_version("", "v1").resource("namespaces");
    rest.post()
        .group_version("", "v1")
        .resource("namespaces")
        .body(&json!({"metadata": {"name": "doomed"}}))
        .send()
        .await
        .expect("namespace");
    let cms = || {
        rest.get()
            .group_version("", "v1")
            .namespace("doomed")
            .resource("configmaps")
    };
    rest.post()
        .group_version("", "v1")
        .namespace("doomed")
        .resource("configmaps")
        .body(&json!({"metadata": {"name": "a"}}))
        .send()
        .await
        .expect("configmap");
    ns().name("doomed").send().await.expect("namespace deleted");
    let left: Value = cms().send().await.expect("list").decode().expect("json");
    assert_eq!(left["items"], json!([]));
    let e = rest
        .get()
        .group_version("", "v1")
        .resource("namespaces")
        .name("doomed")
        .send()
        .await
        .unwrap_err();
    assert!(e.is_not_found(), "{e}");
}

#[tokio::test]
async fn shutdown_ends_open_watches_and_every_task() {
    let (server, rest) = start().await;
    let watch = rest
        .get()
        .group_version("", "v1")
        .namespace("default")
        .resource("configmaps")
        .watch::<Value>()
        .await
        .expect("watch");
    let mut watch = std::pin::pin!(watch);
    let kubeconfig = server.kubeconfig_path().to_path_buf();
    tokio::time::timeout(Duration::from_secs(5), server.shutdown())
        .await
        .expect("shutdown returns once every task has ended");
    let end = tokio::time::timeout(Duration::from_secs(5), watch.next()).await;
    assert!(
        matches!(end, Ok(None) | Ok(Some(Err(_)))),
        "the watch ended"
    );
    assert!(!kubeconfig.exists());
}

/// Like `common::kubectl_output`, requiring success; returns the standard output.
fn kubectl(kubeconfig: &std::path::Path, args: &[&str], stdin: &str) -> String {
    let out = kubectl_output(kubeconfig, args, stdin);
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn kubectl_applies_gets_labels_and_deletes_against_the_fake() {
    let server = FakeApiServer::start().await.expect("fake starts");
    let kc = server.kubeconfig_path().to_path_buf();
    let run = move || {
        let manifest = |value: &str| {
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: \"{value}\"\n"
            )
        };
        let apply = ["apply", "-f", "-"];
        assert!(kubectl(&kc, &apply, &manifest("1")).contains("created"));
        assert!(kubectl(&kc, &apply, &manifest("2")).contains("configured"));
        kubectl(&kc, &["label", "configmap", "x", "team=a"], "");
        let got = kubectl(
            &kc,
            &[
                "get",
                "cm",
                "-l",
                "team=a",
                "-o",
                "jsonpath={.items[*].data.a}",
            ],
            "",
        );
        assert_eq!(got, "2");
        assert!(kubectl(&kc, &["get", "namespaces"], "").contains("kube-system"));
        // Server-side apply takes the field over from client-side apply's manager.
        let server_side = kubectl_output(
            &kc,
            &["apply", "--server-side", "--force-conflicts", "-f", "-"],
            &manifest("3"),
        );
        assert!(
            server_side.status.success(),
            "{}",
            String::from_utf8_lossy(&server_side.stderr)
        );
        let fields = "jsonpath={.data.a} {.metadata.managedFields[*].manager}";
        let got = kubectl(&kc, &["get", "cm", "x", "-o", fields], "");
        let mut managers: Vec<&str> = got.split(' ').collect();
        managers.sort();
        // kubectl moves client-side apply's fields to `kubectl-last-applied` first.
        assert_eq!(
            managers,
            ["3", "kubectl", "kubectl-label", "kubectl-last-applied"]
        );
        kubectl(&kc, &["delete", "configmap", "x"], "");
        assert_eq!(kubectl(&kc, &["get", "cm", "-o", "name"], ""), "");
    };
    tokio::task::spawn_blocking(run)
        .await
        .expect("kubectl steps");
    server.shutdown().await;
}

/// Sends 4 merge patches of ConfigMap `cm` at once, each adding its own key, and returns
/// how many failed and the keys the ConfigMap ends with.
async fn concurrent_patches(server: &FakeApiServer, rest: &RestClient) -> (usize, usize) {
    create_cm(rest, "cm").await.expect("the ConfigMap");
    let patches: Vec<_> = (0..4)
        .map(|i| {
            // A client each, so that the patches are sent at once.
            let rest = RestClient::new(&server.config()).expect("a client");
            tokio::spawn(async move {
                rest.patch(kubekit::rest::PatchType::Merge)
                    .group_version("", "v1")
                    .namespace("default")
                    .resource("configmaps")
                    .name("cm")
                    .body(&json!({"data": {format!("k{i}"): "v"}}))
                    .send()
                    .await
            })
        })
        .collect();
    let mut failed = 0;
    for patch in patches {
        if !matches!(patch.await, Ok(Ok(_))) {
            failed += 1;
        }
    }
    let cm: Value = rest
        .get()
        .group_version("", "v1")
        .namespace("default")
        .resource("configmaps")
        .name("cm")
        .send()
        .await
        .expect("get")
        .decode()
        .expect("a ConfigMap");
    let keys = cm["data"].as_object().map_or(0, |d| d.len());
    (failed, keys)
}

/// Allows every ConfigMap after 50 ms, changing nothing: a webhook that only takes time.
struct Allow;

impl kubekit::webhook::Defaulter<k8s_openapi::api::core::v1::ConfigMap> for Allow {
    async fn set_defaults(
        &self,
        _: &mut k8s_openapi::api::core::v1::ConfigMap,
        _: &kubekit::webhook::AdmissionRequest,
    ) -> kubekit::webhook::Verdict {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        kubekit::webhook::Verdict::allow()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_patches_of_one_object_all_apply_with_and_without_admission() {
    use base64::Engine as _;
    use kubekit::webhook::{CertificateAuthority, Certificates, WebhookServer, mutate_path};
    let (server, rest) = start().await;
    let without = concurrent_patches(&server, &rest).await;
    assert_eq!(without, (0, 4), "without admission");

    // A mutating webhook is called between a write's draft and its checks: a write whose
    // object changed meanwhile is done again (at most 5 times, as kube-apiserver retries a
    // patch), not refused.
    let (server, rest) = start().await;
    let ca = CertificateAuthority::generate("kubekit-fake-test").expect("a CA");
    let cancel = tokio_util::sync::CancellationToken::new();
    let served = WebhookServer::new(Certificates::issued_by(&ca, &["127.0.0.1"]).expect("certs"))
        .defaulter::<k8s_openapi::api::core::v1::ConfigMap, _>(Allow)
        .serve("127.0.0.1:0".parse().expect("an address"), cancel.clone())
        .await
        .expect("the webhook server");
    let path = mutate_path::<k8s_openapi::api::core::v1::ConfigMap>();
    let url = format!("https://127.0.0.1:{}{path}", served.address().port());
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca.ca_bundle());
    rest.post()
        .group_version("admissionregistration.k8s.io", "v1")
        .resource("mutatingwebhookconfigurations")
        .body(&json!({"metadata": {"name": "allow"}, "webhooks": [{
            "name": "allow.kubekit.test", "clientConfig": {"url": url, "caBundle": ca_bundle},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                "resources": ["configmaps"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}))
        .send()
        .await
        .expect("the webhook configuration");
    assert_eq!(
        concurrent_patches(&server, &rest).await,
        (0, 4),
        "with a webhook"
    );
    cancel.cancel();
}
