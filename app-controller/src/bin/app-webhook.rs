//! The App's validating and defaulting webhooks (`app_controller::webhook`) on a kubekit
//! [`WebhookServer`], with a certificate authority it generates at start: it issues the
//! serving certificate for `--host`, applies the `ValidatingWebhookConfiguration` and
//! `MutatingWebhookConfiguration` named `app-controller` (calling
//! `https://HOST:PORT/validate-…` and `/mutate-…`) and writes the authority's bundle into
//! their `caBundle`. With kube-apiserver on the same machine (the local control plane),
//! `--host 127.0.0.1` is all it needs. SIGINT or SIGTERM stops it; `RUST_LOG` sets the
//! log level (default `info`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use app_controller::App;
use app_controller::webhook::{AppDefaulter, AppValidator};
use clap::Parser;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::core::{ClusterResourceScope, Resource};
use kubekit::clientset::{Patch, PatchOptions, ResourceClient};
use kubekit::controller::shutdown_signal;
use kubekit::rest::{Config, RestClient};
use kubekit::webhook::{
    CaBundleTarget, CertificateAuthority, Certificates, WebhookServer, mutate_path, validate_path,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

/// The name of both webhook configurations, and the field manager applying them.
const NAME: &str = "app-controller";

/// The App's admission webhooks, with a generated certificate authority.
#[derive(Debug, Parser)]
#[command(version)]
struct Flags {
    /// Path to a kubeconfig (default: in-cluster, else $KUBECONFIG or ~/.kube/config).
    #[arg(long, env = "APP_WEBHOOK_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// The API server's address, overriding the kubeconfig's.
    #[arg(long, env = "APP_WEBHOOK_MASTER")]
    master: Option<String>,
    /// HOST:PORT the webhook server listens on.
    #[arg(
        long,
        env = "APP_WEBHOOK_BIND_ADDRESS",
        default_value = "127.0.0.1:9443"
    )]
    bind_address: SocketAddr,
    /// The name or IP address kube-apiserver calls the server at (in its certificate).
    #[arg(long, env = "APP_WEBHOOK_HOST", default_value = "127.0.0.1")]
    host: String,
}

/// One webhook on Apps calling `url`.
fn webhook(name: &str, url: &str) -> serde_json::Value {
    json!({
        "name": name,
        "clientConfig": { "url": url },
        "rules": [{ "apiGroups": [App::group(&())], "apiVersions": [App::version(&())],
                    "operations": ["CREATE", "UPDATE"], "resources": [App::plural(&())] }],
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    })
}

/// Server-side applies the webhook configuration `K` named [`NAME`] with `webhooks`.
async fn apply<K>(rest: &RestClient, webhooks: serde_json::Value) -> anyhow::Result<()>
where
    K: Resource<Scope = ClusterResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Serialize
        + Send
        + Sync
        + 'static,
{
    let config = json!({
        "apiVersion": K::api_version(&()), "kind": K::kind(&()),
        "metadata": { "name": NAME }, "webhooks": [webhooks],
    });
    let options = PatchOptions {
        force: true,
        ..PatchOptions::apply(NAME)
    };
    ResourceClient::<K>::cluster(rest.clone())
        .patch(NAME, &Patch::Apply(config), &options)
        .await?;
    Ok(())
}

async fn run(flags: Flags) -> anyhow::Result<()> {
    let config = Config::from_flags(flags.master.as_deref(), flags.kubeconfig.as_deref()).await?;
    let rest = RestClient::new(&config)?;
    let ca = CertificateAuthority::generate("app-controller-webhook-ca")?;
    let cancel = shutdown_signal();
    let served = WebhookServer::new(Certificates::issued_by(&ca, &[&flags.host])?)
        .validator::<App, _>(AppValidator)
        .defaulter::<App, _>(AppDefaulter)
        .serve(flags.bind_address, cancel)
        .await?;
    let base = format!("https://{}:{}", flags.host, served.address().port());
    let validate = webhook(
        "validate.apps.appcontroller.k8s.io",
        &format!("{base}{}", validate_path::<App>()),
    );
    let mutate = webhook(
        "default.apps.appcontroller.k8s.io",
        &format!("{base}{}", mutate_path::<App>()),
    );
    apply::<ValidatingWebhookConfiguration>(&rest, validate).await?;
    apply::<MutatingWebhookConfiguration>(&rest, mutate).await?;
    for target in [
        CaBundleTarget::ValidatingWebhookConfiguration(NAME.into()),
        CaBundleTarget::MutatingWebhookConfiguration(NAME.into()),
    ] {
        ca.write_ca_bundle(&rest, &target).await?;
    }
    tracing::info!("serving the App webhooks at {base}");
    served.stopped().await;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    app_controller::run_program("app-webhook", run(Flags::parse())).await
}
