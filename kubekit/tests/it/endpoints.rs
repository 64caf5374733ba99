//! The metrics and health endpoints over real HTTP, with the REST client's metrics of
//! requests made to the real API server.

use std::net::SocketAddr;

use k8s_openapi::api::core::v1::ConfigMap;
use kubekit::cache::ReflectorMetrics;
use kubekit::clientset::{Clientset, CreateOptions, GetOptions, ListOptions};
use kubekit::informers::SharedInformerFactory;
use kubekit::manager::Endpoints;
use kubekit::rest::{RestClientMetrics, RestConfig};
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::common::namespace;

/// `GET path` on a fresh connection: the status code and the body.
async fn get(address: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_string());
    (status, body.unwrap_or_default())
}

#[tokio::test]
async fn metrics_endpoint_counts_the_requests_made_to_the_api_server() {
    let cp = testenv::control_plane();
    let metrics = RestClientMetrics::new();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let config = RestConfig::from_kubeconfig(cp.kubeconfig_path())
        .await
        .unwrap()
        .with_metrics(&metrics);
    let host = config.host().clone();
    let clientset = Clientset::new(&config).unwrap();
    let ns = namespace("endpoints").await;
    let client = clientset.core_v1().config_maps(&ns);
    for _ in 0..3 {
        client.list(&ListOptions::default()).await.unwrap();
    }
    let missing = client
        .get("no-such-configmap", &GetOptions::default())
        .await;
    assert!(missing.is_err_and(|e| e.is_not_found()));

    let cancel = CancellationToken::new();
    let served = Endpoints::new(registry)
        .serve("127.0.0.1:0".parse().unwrap(), cancel.clone())
        .await
        .unwrap();
    let (status, body) = get(served.address(), "/metrics").await;
    assert_eq!(status, 200);
    let host = format!("{}:{}", host.host().unwrap(), host.port_u16().unwrap());
    assert!(
        body.contains(&format!(
            r#"rest_client_requests_total{{code="200",method="GET",host="{host}"}} 3"#
        )),
        "{body}"
    );
    assert!(body.contains(&format!(
        r#"rest_client_requests_total{{code="404",method="GET",host="{host}"}} 1"#
    )));
    assert!(body.contains(&format!(
        r#"rest_client_request_duration_seconds_count{{verb="GET",host="{host}"}} 4"#
    )));
    cancel.cancel();
    served.stopped().await;
}

#[tokio::test]
async fn informer_series_and_readiness_follow_the_cache() {
    let cp = testenv::control_plane();
    let config = RestConfig::from_kubeconfig(cp.kubeconfig_path())
        .await
        .unwrap();
    let clientset = Clientset::new(&config).unwrap();
    let ns = namespace("endpoints-informer").await;
    let client = clientset.core_v1().config_maps(&ns);
    for i in 0..5 {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("cm-{i}"));
        cm.metadata.labels = Some([("endpoints".to_string(), "test".to_string())].into());
        client.create(&cm, &CreateOptions::default()).await.unwrap();
    }

    let metrics = ReflectorMetrics::new();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let factory = SharedInformerFactory::builder(clientset)
        .namespace(&ns)
        .tweak_list_options(|o| o.label_selector = Some("endpoints=test".into()))
        .metrics(&metrics)
        .build();
    let informer = factory.core_v1().config_maps().informer().clone();
    let cancel = CancellationToken::new();
    let served = Endpoints::new(registry)
        .readyz("informers", {
            let informer = informer.clone();
            move || match informer.has_synced() {
                true => Ok(()),
                false => Err("caches not synced".into()),
            }
        })
        .serve("127.0.0.1:0".parse().unwrap(), cancel.clone())
        .await
        .unwrap();
    let (status, body) = get(served.address(), "/readyz").await;
    assert_eq!(
        (status, body.contains("[-]informers failed")),
        (500, true),
        "{body}"
    );

    factory.start();
    assert!(
        factory
            .wait_for_cache_sync(&cancel)
            .await
            .values()
            .all(|s| *s)
    );
    let (status, _) = get(served.address(), "/readyz").await;
    assert_eq!(status, 200, "ready once synced");
    let (_, body) = get(served.address(), "/metrics").await;
    let name = format!("configmaps.v1 in namespace {ns}");
    for line in [
        format!(r#"informer_objects{{name="{name}"}} 5"#),
        format!(r#"reflector_lists_total{{name="{name}"}} 1"#),
        format!(r#"reflector_relists_total{{name="{name}"}} 0"#),
    ] {
        assert!(body.contains(&line), "{line} missing from\n{body}");
    }
    cancel.cancel();
    factory.shutdown().await;
    served.stopped().await;
}
