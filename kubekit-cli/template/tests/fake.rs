//! The controller against kubekit-fake: an API server in this process, started in
//! milliseconds.

mod common;

#[tokio::test]
async fn a_sample_gets_its_config_map_ready_condition_and_cleanup_on_the_fake() {
    let server = kubekit_fake::FakeApiServer::start()
        .await
        .expect("the fake starts");
    common::scenario(server.config(), "sample").await;
    server.shutdown().await;
}
