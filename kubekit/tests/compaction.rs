//! Tests that compact etcd. A compaction affects every watch and list of the control plane
//! it runs on, so these tests run in their own test binary, with their own control plane,
//! away from the tests in `it/` that watch ConfigMaps.

#[path = "it/common.rs"]
mod common;

use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kubekit::rest::{PatchType, WatchEvent};
use serde_json::json;

use common::{admin_client, configmaps, create_configmap, namespace};

#[tokio::test]
async fn watch_from_a_compacted_resource_version_reports_gone() {
    let client = admin_client().await;
    let ns = namespace("rest-gone").await;
    let first = create_configmap(&client, &ns, "a").await;
    let old_rv = first.metadata.resource_version.unwrap();
    let mut latest = String::new();
    for i in 0..3 {
        let c: ConfigMap = configmaps(client.patch(PatchType::Merge), &ns)
            .name("a")
            .body(&json!({"data": {"k": format!("v{i}")}}))
            .send()
            .await
            .unwrap()
            .decode()
            .unwrap();
        latest = c.metadata.resource_version.unwrap();
    }
    testenv::control_plane().compact_etcd(latest.parse().unwrap());

    // The server reports the expiry either as the watch's HTTP status or as its first event.
    let gone = match configmaps(client.get(), &ns)
        .param("resourceVersion", &old_rv)
        .watch::<ConfigMap>()
        .await
    {
        Err(e) => e.is_gone() || e.is_resource_expired(),
        Ok(stream) => {
            let mut stream = Box::pin(stream);
            match tokio::time::timeout(Duration::from_secs(20), stream.next())
                .await
                .expect("an event")
            {
                Some(Ok(WatchEvent::Error(status))) => status.code == Some(410),
                other => panic!("expected an ERROR event with 410, got {other:?}"),
            }
        }
    };
    assert!(
        gone,
        "watching from compacted resourceVersion {old_rv} must report 410 Gone"
    );
}
