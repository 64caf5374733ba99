//! Raw REST requests on ConfigMaps, shared by the REST and compaction tests.

use k8s_openapi::api::core::v1::ConfigMap;
use kubekit::rest::{Request, RestClient};

/// `request` (a verb already chosen) aimed at the ConfigMaps of namespace `ns`.
pub fn configmaps(request: Request, ns: &str) -> Request {
    request
        .group_version("", "v1")
        .namespace(ns)
        .resource("configmaps")
}

/// Creates ConfigMap `name` in `ns` with data `k: v0`.
pub async fn create_configmap(client: &RestClient, ns: &str, name: &str) -> ConfigMap {
    configmaps(client.post(), ns)
        .body(&serde_json::json!({"metadata": {"name": name}, "data": {"k": "v0"}}))
        .send()
        .await
        .expect("create configmap")
        .decode()
        .expect("decode configmap")
}
