//! Helpers shared by the integration tests.

use std::time::Duration;

use kubekit::rest::{Config, RestClient};

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

/// Polls `check` every 100 ms until it returns `Some`, for at most `secs` seconds.
pub async fn eventually<T, F, Fut>(secs: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
