//! The `Upstream` custom resource (`examples.kubekit.dev`) in two versions, for the
//! `upstream-webhook` example: a CRD whose versions convert through a hub, and a defaulter.
//!
//! - `v1` (the storage version) names an upstream by `host` and `port`.
//! - `v2` (the hub) names it by one `address` (`host:port`) and adds `tls`, which `v1`
//!   cannot say: converted to `v1`, it is kept in the annotation [`TLS_ANNOTATION`], and
//!   converted back from it, so an object read and written in either version loses
//!   nothing (controller-runtime's pattern for fields an older version lacks).
//! - [`UpstreamDefaulter`] sets `timeoutSeconds` to 30 when it is missing, whatever the
//!   version the client used (kube-apiserver converts the object to `v2` for it).

use std::collections::BTreeMap;

use kube::CustomResource;
use kube::core::CustomResourceExt;
use kubekit::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kubekit::webhook::{AdmissionRequest, Conversion, Defaulter, Verdict, Webhooks};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The annotation holding `v2`'s `spec.tls` while an object is in `v1`.
pub const TLS_ANNOTATION: &str = "upstreams.examples.kubekit.dev/tls";

/// The timeout the defaulter sets when an Upstream has none.
pub const DEFAULT_TIMEOUT_SECONDS: u32 = 30;

/// Version `v1`, stored.
pub mod v1 {
    use super::*;

    /// An upstream server by host and port.
    #[derive(
        CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema,
    )]
    #[kube(
        group = "examples.kubekit.dev",
        version = "v1",
        kind = "Upstream",
        doc = "An upstream server, by host and port (v1).",
        namespaced
    )]
    #[serde(rename_all = "camelCase")]
    pub struct UpstreamSpec {
        /// The server's host name or address.
        pub host: String,
        /// The server's port (0: none).
        #[serde(default)]
        pub port: u16,
        /// How long a request to it may take.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub timeout_seconds: Option<u32>,
    }
}

/// Version `v2`, the hub.
pub mod v2 {
    use super::*;

    /// An upstream server by address, and whether it speaks TLS.
    #[derive(
        CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema,
    )]
    #[kube(
        group = "examples.kubekit.dev",
        version = "v2",
        kind = "Upstream",
        doc = "An upstream server, by address (v2).",
        namespaced
    )]
    #[serde(rename_all = "camelCase")]
    pub struct UpstreamSpec {
        /// `host:port`, or a host alone.
        pub address: String,
        /// Whether the server speaks TLS.
        #[serde(default)]
        pub tls: bool,
        /// How long a request to it may take.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub timeout_seconds: Option<u32>,
    }
}

impl From<v1::Upstream> for v2::Upstream {
    fn from(old: v1::Upstream) -> Self {
        let mut metadata = old.metadata;
        let tls = metadata
            .annotations
            .as_mut()
            .and_then(|annotations| annotations.remove(TLS_ANNOTATION))
            .is_some_and(|tls| tls == "true");
        if metadata
            .annotations
            .as_ref()
            .is_some_and(BTreeMap::is_empty)
        {
            metadata.annotations = None;
        }
        let address = match old.spec.port {
            0 => old.spec.host,
            port => format!("{}:{port}", old.spec.host),
        };
        v2::Upstream {
            metadata,
            spec: v2::UpstreamSpec {
                address,
                tls,
                timeout_seconds: old.spec.timeout_seconds,
            },
        }
    }
}

impl From<v2::Upstream> for v1::Upstream {
    fn from(new: v2::Upstream) -> Self {
        let mut metadata = new.metadata;
        if new.spec.tls {
            metadata
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(TLS_ANNOTATION.into(), "true".into());
        }
        // Only a port that prints back the same splits off: "a:08" or "a:b" stay whole.
        let (host, port) = match new.spec.address.rsplit_once(':') {
            Some((host, port)) => match port.parse::<u16>() {
                Ok(n) if n != 0 && n.to_string() == port => (host.to_string(), n),
                _ => (new.spec.address, 0),
            },
            None => (new.spec.address, 0),
        };
        v1::Upstream {
            metadata,
            spec: v1::UpstreamSpec {
                host,
                port,
                timeout_seconds: new.spec.timeout_seconds,
            },
        }
    }
}

/// Sets an Upstream's missing `timeoutSeconds` to [`DEFAULT_TIMEOUT_SECONDS`].
#[derive(Clone, Copy, Debug, Default)]
pub struct UpstreamDefaulter;

impl Defaulter<v2::Upstream> for UpstreamDefaulter {
    async fn set_defaults(&self, upstream: &mut v2::Upstream, _: &AdmissionRequest) -> Verdict {
        upstream
            .spec
            .timeout_seconds
            .get_or_insert(DEFAULT_TIMEOUT_SECONDS);
        Verdict::allow()
    }
}

/// Registers the converter (hub `v2`, spoke `v1`) and the defaulter into `webhooks`.
pub fn add_to(webhooks: &mut Webhooks) {
    webhooks
        .add::<v2::Upstream>()
        .converter(Conversion::hub().spoke::<v1::Upstream>())
        .defaulter(UpstreamDefaulter);
}

/// The CRD of both versions, `v1` stored, with the conversion stanza generated from
/// [`add_to`]'s registrations for a server at `endpoint`.
pub fn crd(endpoint: &kubekit::webhook::WebhookEndpoint) -> CustomResourceDefinition {
    let mut crd = kube::core::crd::merge_crds(vec![v1::Upstream::crd(), v2::Upstream::crd()], "v1")
        .unwrap_or_else(|_| v1::Upstream::crd());
    let mut webhooks = Webhooks::default();
    add_to(&mut webhooks);
    webhooks
        .manifests("upstream-webhook", endpoint)
        .set_conversion(&mut crd);
    crd
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2(address: &str, tls: bool) -> v2::Upstream {
        let spec = v2::UpstreamSpec {
            address: address.into(),
            tls,
            timeout_seconds: Some(5),
        };
        v2::Upstream::new("u", spec)
    }

    #[test]
    fn every_v2_upstream_goes_to_v1_and_back_unchanged() {
        for (address, tls) in [
            ("db:5432", true),
            ("db", false),
            ("db:0", false),
            ("db:08", true),
            ("db:x", false),
            ("[::1]:443", true),
            ("", false),
        ] {
            let upstream = v2(address, tls);
            let back = v2::Upstream::from(v1::Upstream::from(upstream.clone()));
            assert_eq!(back.spec, upstream.spec, "{address}");
            assert_eq!(back.metadata, upstream.metadata, "{address}");
        }
        let old = v1::Upstream::from(v2("db:5432", true));
        assert_eq!((old.spec.host.as_str(), old.spec.port), ("db", 5432));
        assert_eq!(old.metadata.annotations.unwrap()[TLS_ANNOTATION], "true");
    }

    #[test]
    fn the_crd_serves_both_versions_stores_v1_and_converts_through_the_webhook() {
        let crd = crd(&kubekit::webhook::WebhookEndpoint::Url(
            "https://127.0.0.1:9443".into(),
        ));
        let versions: Vec<_> = crd
            .spec
            .versions
            .iter()
            .map(|v| (v.name.as_str(), v.served, v.storage))
            .collect();
        assert_eq!(versions, [("v1", true, true), ("v2", true, false)]);
        let conversion = crd.spec.conversion.unwrap();
        assert_eq!(conversion.strategy, "Webhook");
        let url = conversion.webhook.unwrap().client_config.unwrap().url;
        assert_eq!(
            url.as_deref(),
            Some("https://127.0.0.1:9443/convert-examples-kubekit-dev-upstream")
        );
    }
}
