//! The webhook server's certificate: read from files and reloaded when they change
//! (controller-runtime's `certwatcher`, what cert-manager's rotation needs), or issued by a
//! [`CertificateAuthority`] that kubekit generates itself, whose bundle it writes into the
//! `caBundle` of webhook configurations and CRD conversion ([`CaBundleTarget`]).
//!
//! # Contract
//!
//! - A handshake always gets the newest certificate that loaded completely: files are
//!   re-read every [`Certificates::reload_every`] period (2 s unless set) and swapped in
//!   only when the certificate and the key parse and match. A half-written pair (the
//!   certificate renewed, the key not yet) keeps the previous one until the next read;
//!   connections already open keep the certificate they were made with.
//! - Files are polled, not watched: kubelet updates Secret volumes by swapping a symlink,
//!   which some file notification APIs miss, and reading two small files per period costs
//!   nothing measurable.
//! - A generated authority lives in memory only: each process that generates one has its
//!   own, so use it with one replica (or for development); with several replicas, use
//!   files written by cert-manager.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Resource;
use kube::core::ClusterResourceScope;
use parking_lot::RwLock;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use super::Error;
use kubekit_client::clientset::{GetOptions, ResourceClient, UpdateOptions};
use kubekit_client::rest::RestClient;
use kubekit_client::retry::{Backoff, retry_on_conflict};

/// Where the webhook server's certificate comes from.
///
/// ```no_run
/// use kubekit::webhook::{CertificateAuthority, Certificates};
///
/// // As cert-manager writes them into a mounted Secret; reloaded when they change.
/// let from_files = Certificates::from_files("/tmp/k8s-webhook-server/serving-certs/tls.crt",
///                                           "/tmp/k8s-webhook-server/serving-certs/tls.key");
/// // Or issued by an authority kubekit generates (opt-in).
/// let ca = CertificateAuthority::generate("my-operator-webhook-ca").unwrap();
/// let issued = Certificates::issued_by(&ca, &["my-operator.my-ns.svc", "127.0.0.1"]).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Certificates {
    source: Source,
    reload_every: Duration,
}

#[derive(Clone, Debug)]
enum Source {
    Files { cert: PathBuf, key: PathBuf },
    Pem { cert: String, key: String },
    Generated(Generated),
}

/// The settings of [`Certificates::generated`].
#[derive(Clone, Debug)]
struct Generated {
    common_name: String,
    hosts: Vec<String>,
    validity: Duration,
    overlap: Option<Duration>,
    targets: Vec<CaBundleTarget>,
}

impl Generated {
    /// How long the bundle holds both authorities before and after the serving
    /// certificate changes: a sixth of the validity, at most a minute, unless set.
    fn overlap(&self) -> Duration {
        self.overlap
            .unwrap_or((self.validity / 6).min(Duration::from_secs(60)))
            .min(self.validity / 4)
    }

    /// A new authority and the serving certificate it issues, both valid for the validity.
    fn issue(&self) -> Result<(CertificateAuthority, CertifiedKey), Error> {
        let ca = CertificateAuthority::generate_valid_for(&self.common_name, self.validity)?;
        let hosts: Vec<&str> = self.hosts.iter().map(String::as_str).collect();
        let (cert, key) = ca.issue_valid_for(&hosts, self.validity)?;
        Ok((ca, certified_key(cert.as_bytes(), key.as_bytes())?))
    }
}

impl Certificates {
    /// The PEM certificate chain (server certificate first) and private key in these files,
    /// read again every [`reload_every`](Self::reload_every) period.
    pub fn from_files(cert: impl AsRef<Path>, key: impl AsRef<Path>) -> Self {
        Self {
            source: Source::Files {
                cert: cert.as_ref().to_owned(),
                key: key.as_ref().to_owned(),
            },
            reload_every: Duration::from_secs(2),
        }
    }

    /// A certificate for `hosts` (DNS names or IP addresses, such as `127.0.0.1` or
    /// `svc.ns.svc`) issued now by `ca`, valid for a year.
    pub fn issued_by(ca: &CertificateAuthority, hosts: &[&str]) -> Result<Self, Error> {
        let (cert, key) = ca.issue(hosts)?;
        Ok(Self {
            source: Source::Pem { cert, key },
            reload_every: Duration::from_secs(2),
        })
    }

    /// Certificates kubekit generates and rotates itself (opt-in): an authority named
    /// `common_name` and a serving certificate it issues for `hosts`, both valid for a year
    /// unless [`validity`](Self::validity) says otherwise. The server writes the
    /// authority's bundle into the [`ca_bundle_targets`](Self::ca_bundle_targets) (and
    /// into the manifests it [installs](super::WebhookServer::install_manifests)) before
    /// it serves, with its [`client`](super::WebhookServer::client).
    ///
    /// Rotation: two thirds into the validity, a new authority and certificate are made;
    /// the bundle written becomes old and new authority; after the
    /// [overlap](Self::rotation_overlap) the server presents the new certificate; after
    /// another, the bundle becomes the new authority alone. kube-apiserver trusts the
    /// certificate presented at every moment, so no request fails. The authority lives in
    /// this process only: use it with one replica.
    pub fn generated(common_name: &str, hosts: &[&str]) -> Self {
        Self {
            source: Source::Generated(Generated {
                common_name: common_name.to_string(),
                hosts: hosts.iter().map(|h| h.to_string()).collect(),
                validity: 365 * DAY,
                overlap: None,
                targets: Vec::new(),
            }),
            reload_every: Duration::from_secs(2),
        }
    }

    /// How long [generated](Self::generated) certificates are valid (a year unless set; at
    /// least 3 s). Ignored by the other sources.
    pub fn validity(mut self, validity: Duration) -> Self {
        if let Source::Generated(generated) = &mut self.source {
            generated.validity = validity.max(Duration::from_secs(3));
        }
        self
    }

    /// How long a [generated](Self::generated) authority's rotation keeps both
    /// authorities in the bundle before and after the certificate changes: the time
    /// kube-apiserver has to see a new bundle (a sixth of the validity, at most a minute,
    /// unless set; at most a quarter of the validity). Ignored by the other sources.
    pub fn rotation_overlap(mut self, overlap: Duration) -> Self {
        if let Source::Generated(generated) = &mut self.source {
            generated.overlap = Some(overlap);
        }
        self
    }

    /// The objects whose `caBundle` a [generated](Self::generated) authority is written
    /// into, at start and at each rotation. Ignored by the other sources.
    pub fn ca_bundle_targets(mut self, targets: impl IntoIterator<Item = CaBundleTarget>) -> Self {
        if let Source::Generated(generated) = &mut self.source {
            generated.targets.extend(targets);
        }
        self
    }

    /// The objects a [generated](Self::generated) authority writes its bundle into
    /// besides the installed manifests' (see [`ca_bundle_targets`](Self::ca_bundle_targets));
    /// `None` for the other sources, which write nothing.
    pub fn generated_targets(&self) -> Option<&[CaBundleTarget]> {
        match &self.source {
            Source::Generated(generated) => Some(&generated.targets),
            _ => None,
        }
    }

    /// How often files are read again to see whether they changed (2 s unless set).
    pub fn reload_every(mut self, period: Duration) -> Self {
        self.reload_every = period.max(Duration::from_millis(10));
        self
    }

    /// Loads the certificate now; with files, starts the task that reloads them, and
    /// with a generated authority, writes its bundle into its targets and `targets` with
    /// `client`, and starts the task that rotates it. The task ends when `cancel` fires.
    pub(crate) async fn load(
        &self,
        cancel: CancellationToken,
        client: Option<&RestClient>,
        targets: Vec<CaBundleTarget>,
    ) -> Result<Arc<Reloading>, Error> {
        match &self.source {
            Source::Generated(generated) => {
                let mut unique = Vec::new();
                for target in targets.into_iter().chain(generated.targets.iter().cloned()) {
                    if !unique.contains(&target) {
                        unique.push(target);
                    }
                }
                let targets = unique;
                let client = match (client, targets.is_empty()) {
                    (Some(client), _) => Some(client.clone()),
                    (None, true) => None,
                    (None, false) => return Err(Error::NoClient("writing a generated caBundle")),
                };
                let (ca, key) = generated.issue()?;
                if let Some(client) = &client {
                    for target in &targets {
                        write_bundle(client, target, ca.ca_bundle()).await?;
                    }
                }
                let loaded = Arc::new(Reloading {
                    current: RwLock::new(Arc::new(key)),
                });
                let rotation = Rotation {
                    generated: generated.clone(),
                    client,
                    targets,
                    serving: loaded.clone(),
                };
                tokio::spawn(rotation.run(ca, cancel));
                Ok(loaded)
            }
            Source::Pem { cert, key } => Ok(Arc::new(Reloading {
                current: RwLock::new(Arc::new(certified_key(cert.as_bytes(), key.as_bytes())?)),
            })),
            Source::Files { cert, key } => {
                let mut seen = read_pair(cert, key).await?;
                let loaded = Arc::new(Reloading {
                    current: RwLock::new(Arc::new(certified_key(&seen.0, &seen.1)?)),
                });
                let (reloading, cert, key, period) =
                    (loaded.clone(), cert.clone(), key.clone(), self.reload_every);
                tokio::spawn(async move {
                    loop {
                        tokio::select! {
                            () = cancel.cancelled() => return,
                            () = tokio::time::sleep(period) => {}
                        }
                        let pair = match read_pair(&cert, &key).await {
                            Ok(pair) if pair != seen => pair,
                            Ok(_) => continue,
                            Err(e) => {
                                tracing::warn!("webhook certificate: {e}; keeping the one loaded");
                                continue;
                            }
                        };
                        match certified_key(&pair.0, &pair.1) {
                            Ok(new) => {
                                *reloading.current.write() = Arc::new(new);
                                tracing::info!(
                                    "webhook certificate reloaded from {}",
                                    cert.display()
                                );
                                seen = pair;
                            }
                            Err(e) => tracing::warn!(
                                "webhook certificate: {e}; keeping the one loaded until the files change again"
                            ),
                        }
                    }
                });
                Ok(loaded)
            }
        }
    }
}

/// Both files' bytes.
async fn read_pair(cert: &Path, key: &Path) -> Result<(Vec<u8>, Vec<u8>), Error> {
    let read = |path: &Path| {
        let path = path.to_owned();
        async move {
            tokio::fs::read(&path)
                .await
                .map_err(|e| Error::Certificate(format!("reading {}: {e}", path.display())))
        }
    };
    Ok((read(cert).await?, read(key).await?))
}

/// The crypto provider of kubekit's TLS (ring, as kube's client uses).
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A certificate chain and its key from PEM, checked to match.
fn certified_key(cert_pem: &[u8], key_pem: &[u8]) -> Result<CertifiedKey, Error> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Certificate(format!("the certificate PEM: {e}")))?;
    if chain.is_empty() {
        return Err(Error::Certificate(
            "the certificate PEM holds no certificate".into(),
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| Error::Certificate(format!("the private key PEM: {e}")))?;
    CertifiedKey::from_der(chain, key, &provider())
        .map_err(|e| Error::Certificate(format!("the certificate and key: {e}")))
}

/// The server certificate handshakes get: the newest one loaded.
#[derive(Debug)]
pub(crate) struct Reloading {
    current: RwLock<Arc<CertifiedKey>>,
}

impl ResolvesServerCert for Reloading {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().clone())
    }
}

/// Rotates a generated authority and its serving certificate; see
/// [`Certificates::generated`].
struct Rotation {
    generated: Generated,
    client: Option<RestClient>,
    targets: Vec<CaBundleTarget>,
    serving: Arc<Reloading>,
}

impl Rotation {
    /// Rotates `current` (issued now) and its successors until `cancel` fires.
    async fn run(self, mut current: CertificateAuthority, cancel: CancellationToken) {
        let (validity, overlap) = (self.generated.validity, self.generated.overlap());
        let mut issued = tokio::time::Instant::now();
        let cancel = &cancel;
        let sleep = |until| async move {
            tokio::select! {
                () = cancel.cancelled() => false,
                () = tokio::time::sleep_until(until) => true,
            }
        };
        loop {
            if !sleep(issued + validity * 2 / 3).await {
                return;
            }
            let (next, key) = match self.generated.issue() {
                Ok(next) => next,
                Err(e) => {
                    tracing::error!(
                        "webhook certificate rotation: {e}; trying again in {overlap:?}"
                    );
                    issued += overlap;
                    continue;
                }
            };
            let next_issued = tokio::time::Instant::now();
            let both = format!("{}{}", current.ca_bundle(), next.ca_bundle());
            if !self.write_everywhere(&both, cancel).await
                || !sleep(tokio::time::Instant::now() + overlap).await
            {
                return;
            }
            *self.serving.current.write() = Arc::new(key);
            issued = next_issued;
            tracing::info!("webhook certificate rotated to a new authority");
            if !sleep(tokio::time::Instant::now() + overlap).await
                || !self.write_everywhere(next.ca_bundle(), cancel).await
            {
                return;
            }
            current = next;
        }
    }

    /// Writes `bundle` into every target, trying each again until it is written or found
    /// deleted; `false` when `cancel` fired first.
    async fn write_everywhere(&self, bundle: &str, cancel: &CancellationToken) -> bool {
        let Some(client) = &self.client else {
            return true;
        };
        for target in &self.targets {
            let mut delay = Duration::from_millis(200);
            loop {
                let written = tokio::select! {
                    () = cancel.cancelled() => return false,
                    written = write_bundle(client, target, bundle) => written,
                };
                match written {
                    Ok(()) => break,
                    // Deleted: nothing to keep trusting this server, and no reason to
                    // hold the rotation up.
                    Err(Error::Api(e)) if e.is_not_found() => {
                        tracing::warn!("webhook certificate rotation: {target:?} is gone");
                        break;
                    }
                    Err(e) => tracing::warn!("webhook certificate rotation: {target:?}: {e}"),
                }
                tokio::select! {
                    () = cancel.cancelled() => return false,
                    () = tokio::time::sleep(delay) => {}
                }
                delay = (delay * 2).min(Duration::from_secs(5));
            }
        }
        true
    }
}

/// A certificate authority generated in memory (ECDSA P-256, valid for ten years), which
/// issues the webhook server's certificate and whose certificate is the `caBundle`
/// kube-apiserver verifies it with.
pub struct CertificateAuthority {
    bundle: String,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl std::fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateAuthority")
            .finish_non_exhaustive()
    }
}

/// A validity period from `back` before now to `forward` after it.
fn validity(back: Duration, forward: Duration) -> (SystemTime, SystemTime) {
    let now = SystemTime::now();
    (now - back, now + forward)
}

const DAY: Duration = Duration::from_secs(86_400);

impl CertificateAuthority {
    /// Generates a key and a self-signed CA certificate named `common_name`.
    pub fn generate(common_name: &str) -> Result<Self, Error> {
        Self::generate_valid_for(common_name, 3650 * DAY)
    }

    /// [`generate`](Self::generate), valid for `valid_for` from now.
    fn generate_valid_for(common_name: &str, valid_for: Duration) -> Result<Self, Error> {
        let cert_error = |e: rcgen::Error| Error::Certificate(format!("generating the CA: {e}"));
        let key = rcgen::KeyPair::generate().map_err(cert_error)?;
        let mut params = rcgen::CertificateParams::default();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, common_name);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let (not_before, not_after) = validity(DAY, valid_for);
        (params.not_before, params.not_after) = (not_before.into(), not_after.into());
        let bundle = params.self_signed(&key).map_err(cert_error)?.pem();
        Ok(Self {
            bundle,
            issuer: rcgen::Issuer::new(params, key),
        })
    }

    /// The CA certificate in PEM: the `caBundle` that makes kube-apiserver trust the
    /// certificates this authority issues.
    pub fn ca_bundle(&self) -> &str {
        &self.bundle
    }

    /// A server certificate and key (PEM) for `hosts`, valid for a year.
    pub fn issue(&self, hosts: &[&str]) -> Result<(String, String), Error> {
        self.issue_valid_for(hosts, 365 * DAY)
    }

    /// [`issue`](Self::issue), valid for `valid_for` from now.
    fn issue_valid_for(
        &self,
        hosts: &[&str],
        valid_for: Duration,
    ) -> Result<(String, String), Error> {
        let cert_error =
            |e: rcgen::Error| Error::Certificate(format!("issuing a certificate: {e}"));
        let key = rcgen::KeyPair::generate().map_err(cert_error)?;
        let mut params = rcgen::CertificateParams::default();
        for host in hosts {
            params.subject_alt_names.push(match host.parse::<IpAddr>() {
                Ok(ip) => rcgen::SanType::IpAddress(ip),
                Err(_) => rcgen::SanType::DnsName((*host).try_into().map_err(cert_error)?),
            });
        }
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let (not_before, not_after) = validity(DAY, valid_for);
        (params.not_before, params.not_after) = (not_before.into(), not_after.into());
        let cert = params.signed_by(&key, &self.issuer).map_err(cert_error)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// Writes this authority's bundle into the `caBundle` of `target` (every webhook of a
    /// webhook configuration; the conversion webhook of a CRD), retrying on conflict.
    pub async fn write_ca_bundle(
        &self,
        rest: &RestClient,
        target: &CaBundleTarget,
    ) -> Result<(), Error> {
        write_bundle(rest, target, &self.bundle).await
    }
}

/// Writes `bundle` (PEM) into the `caBundle` of `target`, retrying on conflict.
async fn write_bundle(
    rest: &RestClient,
    target: &CaBundleTarget,
    bundle: &str,
) -> Result<(), Error> {
    let bundle = ByteString(bundle.as_bytes().to_vec());
    match target {
        CaBundleTarget::ValidatingWebhookConfiguration(name) => {
            update_with::<ValidatingWebhookConfiguration>(rest, name, |config| {
                for webhook in config.webhooks.iter_mut().flatten() {
                    webhook.client_config.ca_bundle = Some(bundle.clone());
                }
            })
            .await
        }
        CaBundleTarget::MutatingWebhookConfiguration(name) => {
            update_with::<MutatingWebhookConfiguration>(rest, name, |config| {
                for webhook in config.webhooks.iter_mut().flatten() {
                    webhook.client_config.ca_bundle = Some(bundle.clone());
                }
            })
            .await
        }
        CaBundleTarget::CustomResourceDefinition(name) => {
            update_with::<CustomResourceDefinition>(rest, name, |crd| {
                let webhook = crd
                    .spec
                    .conversion
                    .as_mut()
                    .and_then(|conversion| conversion.webhook.as_mut());
                if let Some(client_config) = webhook.and_then(|w| w.client_config.as_mut()) {
                    client_config.ca_bundle = Some(bundle.clone());
                }
            })
            .await
        }
    }
}

/// Reads the cluster-scoped object `name`, changes it and writes it back, again on conflict.
async fn update_with<K>(rest: &RestClient, name: &str, change: impl Fn(&mut K)) -> Result<(), Error>
where
    K: Resource<Scope = ClusterResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Serialize
        + Send
        + Sync
        + 'static,
{
    let client = ResourceClient::<K>::cluster(rest.clone());
    retry_on_conflict(Backoff::DEFAULT_RETRY, || async {
        let mut obj = client.get(name, &GetOptions::default()).await?;
        change(&mut obj);
        client.update(&obj, &UpdateOptions::default()).await
    })
    .await?;
    Ok(())
}

/// An object whose `caBundle` a [`CertificateAuthority`] writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaBundleTarget {
    /// Every webhook of the `ValidatingWebhookConfiguration` of this name.
    ValidatingWebhookConfiguration(String),
    /// Every webhook of the `MutatingWebhookConfiguration` of this name.
    MutatingWebhookConfiguration(String),
    /// The conversion webhook of the `CustomResourceDefinition` of this name.
    CustomResourceDefinition(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_certificate_loads_with_its_key_and_not_with_another() {
        let ca = CertificateAuthority::generate("test-ca").unwrap();
        let (cert, key) = ca.issue(&["127.0.0.1", "webhook.ns.svc"]).unwrap();
        certified_key(cert.as_bytes(), key.as_bytes()).unwrap();
        let (_, other_key) = ca.issue(&["127.0.0.1"]).unwrap();
        let mismatch = certified_key(cert.as_bytes(), other_key.as_bytes()).unwrap_err();
        assert!(
            mismatch.to_string().contains("certificate and key"),
            "{mismatch}"
        );
        assert!(ca.ca_bundle().starts_with("-----BEGIN CERTIFICATE-----"));
    }

    #[test]
    fn a_pem_without_certificates_is_refused() {
        let ca = CertificateAuthority::generate("test-ca").unwrap();
        let (_, key) = ca.issue(&["127.0.0.1"]).unwrap();
        assert!(certified_key(b"", key.as_bytes()).is_err());
    }
}
