//! Helpers shared by the integration tests.

use kubekit::rest::{RestClient, RestConfig};

/// A kubekit client for the shared control plane's admin user, with client-side rate
/// limiting raised so bulk tests are not throttled.
pub async fn admin_client() -> RestClient {
    let cp = testenv::control_plane();
    let config = RestConfig::from_kubeconfig(cp.kubeconfig_path())
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
