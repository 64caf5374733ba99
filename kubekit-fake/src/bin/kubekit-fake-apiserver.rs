//! `kubekit-fake-apiserver`: starts a fake Kubernetes API server on a free loopback port,
//! prints the path of a kubeconfig for it as the last line of its standard output once it
//! serves, and runs until SIGINT or SIGTERM. With `--rbac`, requests are authorized by
//! RBAC (`FakeApiServer::with_rbac`); the printed kubeconfig is the admin's, and
//! `kubectl --as <user>` acts as another user.
//!
//! ```sh
//! cargo run -p kubekit-fake --bin kubekit-fake-apiserver [-- --rbac]
//! ```

use kubekit_fake::FakeApiServer;
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let rbac = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--rbac") => true,
        Some(other) => {
            eprintln!(
                "kubekit-fake-apiserver: unknown argument {other:?} (usage: kubekit-fake-apiserver [--rbac])"
            );
            std::process::exit(2);
        }
    };
    let mut term = signal(SignalKind::terminate())?;
    let server = if rbac {
        FakeApiServer::with_rbac().await?
    } else {
        FakeApiServer::start().await?
    };
    eprintln!("kubekit-fake-apiserver serving on {}", server.url());
    println!("{}", server.kubeconfig_path().display());
    tokio::select! {
        r = tokio::signal::ctrl_c() => r?,
        _ = term.recv() => {}
    }
    server.shutdown().await;
    Ok(())
}
