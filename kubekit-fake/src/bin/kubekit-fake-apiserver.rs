//! `kubekit-fake-apiserver`: starts a fake Kubernetes API server on a free loopback port,
//! prints the path of a kubeconfig for it as the last line of its standard output once it
//! serves, and runs until SIGINT or SIGTERM.
//!
//! ```sh
//! cargo run -p kubekit-fake --bin kubekit-fake-apiserver
//! ```

use kubekit_fake::FakeApiServer;
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut term = signal(SignalKind::terminate())?;
    let server = FakeApiServer::start().await?;
    eprintln!("kubekit-fake-apiserver serving on {}", server.url());
    println!("{}", server.kubeconfig_path().display());
    tokio::select! {
        r = tokio::signal::ctrl_c() => r?,
        _ = term.recv() => {}
    }
    server.shutdown().await;
    Ok(())
}
