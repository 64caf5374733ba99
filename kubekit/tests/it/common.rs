//! Helpers shared by the integration tests.

use k8s_openapi::api::core::v1::ConfigMap;
use kubekit::rest::{Config, Request, RestClient};

/// A kubekit client for the shared control plane's admin user, with client-side rate
/// limiting raised so bulk tests are not throttled.
pub async fn admin_client() -> RestClient {
    let cp = testenv::control_plane();
    let config = Config::from_kubeconfig(cp.kubeconfig_path())
        .await
        .expect("admin kubeconfig")
        .with_rate_limit(500.0, 1000);
    RestClient::new(&config).expect("rest client")
}

/// A fresh namespace for one test.
pub async fn namespace(prefix: &str) -> String {
    let cp = testenv::control_plane();
    cp.create_namespace(&cp.client().await, prefix).await
}

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
