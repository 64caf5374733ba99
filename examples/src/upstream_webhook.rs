//! Conversion and defaulting webhooks for a CRD with two versions, on a manager's webhook
//! server: the `Upstream` of [`kubekit_examples::upstream`], stored as `v1`, served as
//! `v1` and `v2` (the hub), converted by the server, its `timeoutSeconds` defaulted.
//!
//! ```text
//! cargo run -p kubekit-examples --bin upstream-webhook -- \
//!     [--kubeconfig PATH] [--master URL] [BIND_ADDRESS (127.0.0.1:9443) [HOST (127.0.0.1)]]
//! ```
//!
//! It applies the CRD (with the conversion stanza calling `https://HOST:PORT`), then runs
//! the server with an authority it generates, installing the
//! `MutatingWebhookConfiguration` `upstream-webhook` and writing the authority's bundle
//! into it and into the CRD, until Ctrl-C. kube-apiserver must reach HOST:PORT (the local
//! control plane does at 127.0.0.1). Try it with
//!
//! ```text
//! kubectl apply -f - <<EOF
//! apiVersion: examples.kubekit.dev/v1
//! kind: Upstream
//! metadata: {name: db}
//! spec: {host: db.internal, port: 5432}
//! EOF
//! kubectl get upstreams.v2.examples.kubekit.dev db -o jsonpath='{.spec}'
//! # {"address":"db.internal:5432","timeoutSeconds":30,"tls":false}
//! ```

use std::net::SocketAddr;

use kubekit::clientset::{PatchBody, PatchOptions, ResourceClient};
use kubekit::controller::shutdown_signal;
use kubekit::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kubekit::manager::Manager;
use kubekit::webhook::{Certificates, WebhookEndpoint};
use kubekit_examples::upstream;

/// The field manager and the name of the webhook configuration.
const NAME: &str = "upstream-webhook";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = kubekit_examples::Flags::parse()?;
    let address: SocketAddr = match flags.args.first() {
        Some(address) => address.parse()?,
        None => "127.0.0.1:9443".parse()?,
    };
    let host = flags.args.get(1).map_or("127.0.0.1", String::as_str);
    let config = flags.config().await?;
    let endpoint = WebhookEndpoint::Url(format!("https://{host}:{}", address.port()));

    let mut mgr = Manager::builder(config)
        .webhook_server(
            address,
            Certificates::generated("upstream-webhook-ca", &[host]),
        )
        .install_webhook_manifests(NAME, endpoint.clone())
        .build()?;
    // The CRD first: the server writes its conversion stanza's caBundle.
    let crd = upstream::crd(&endpoint);
    let crd_name = crd.metadata.name.clone().unwrap_or_default();
    ResourceClient::<CustomResourceDefinition>::cluster(mgr.clientset().rest_client().clone())
        .patch(
            &crd_name,
            &PatchBody::Apply(crd),
            &PatchOptions::apply(NAME).force(),
        )
        .await?;
    println!("installed {crd_name}");
    upstream::add_to(mgr.webhooks_mut());
    mgr.start(shutdown_signal()).await?;
    Ok(())
}
