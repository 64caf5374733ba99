//! [`Webhooks`]: the handlers a webhook server serves, each with what kube-apiserver must be
//! told to call it (rules, `failurePolicy`, `timeoutSeconds`, selector), and the manifests
//! generated from them ([`WebhookManifests`]).

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;

use k8s_openapi::api::admissionregistration::v1 as admission;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::admission::{Admit, Defaulting, Validating};
use super::conversion::{Conversion, Convert};
use super::{CaBundleTarget, Defaulter, Validator, mutate_path, validate_path};

/// What kube-apiserver does when a webhook cannot be called or fails (the configuration's
/// `failurePolicy`); kubekit's server answers a panic or a timeout of the handler the
/// same way (see [`Webhooks`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailurePolicy {
    /// The request is refused (the default, as in Kubernetes).
    #[default]
    Fail,
    /// The request goes on as if the webhook had admitted it.
    Ignore,
}

impl FailurePolicy {
    fn as_str(self) -> &'static str {
        match self {
            Self::Fail => "Fail",
            Self::Ignore => "Ignore",
        }
    }
}

/// The settings of an admission webhook's configuration entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct HookOptions {
    pub(crate) failure_policy: FailurePolicy,
    timeout_seconds: Option<i32>,
    namespace_selector: Option<LabelSelector>,
    validate_deletes: bool,
}

/// What a path does, for the manifests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HookKind {
    Validating,
    Mutating,
    Conversion,
}

/// The resource a handler is for.
#[derive(Clone, Debug)]
struct Target {
    group: String,
    version: String,
    plural: String,
}

impl Target {
    fn of<K: Resource<DynamicType = ()>>() -> Self {
        Self {
            group: K::group(&()).into_owned(),
            version: K::version(&()).into_owned(),
            plural: K::plural(&()).into_owned(),
        }
    }

    /// `<plural>.<group>`: the name of the CRD, and the tail of webhook names.
    fn crd_name(&self) -> String {
        format!("{}.{}", self.plural, self.group)
    }
}

/// What a path serves.
pub(crate) enum Route {
    Admission(Box<dyn Admit>),
    Conversion(Arc<dyn Convert>),
}

/// One served path: its handler and what the manifests say of it.
pub(crate) struct Entry {
    pub(crate) route: Route,
    kind: HookKind,
    target: Target,
    pub(crate) options: HookOptions,
}

/// The handlers of a webhook server and their configuration.
///
/// # Contract
///
/// - One registration per handler: [`WebhookBuilder::validator`], [`defaulter`] and
///   [`converter`] each serve a path and add one webhook to the generated manifests: a
///   validator one entry of the `ValidatingWebhookConfiguration` (named
///   `validate.<plural>.<group>`), a defaulter one of the `MutatingWebhookConfiguration`
///   (`default.<plural>.<group>`), a converter the `spec.conversion` stanza of the CRD
///   `<plural>.<group>`. Registering a second handler of a kind for one type replaces the
///   first.
/// - A builder's settings ([`failure_policy`], [`timeout_seconds`], [`namespace_selector`],
///   [`validate_deletes`]) apply to every admission handler it registers, before or after
///   the setting.
/// - The `failurePolicy` also decides what a handler that panics or runs past the server's
///   time limit answers: under `Fail` a denial saying what happened, under `Ignore` an
///   admission with that as a warning, so such a handler behaves as the configuration
///   says whether kube-apiserver or the server notices the failure.
/// - Manifests are deterministic (ordered by path), so they can be shipped and checked
///   against the code, as a CRD is.
///
/// [`defaulter`]: WebhookBuilder::defaulter
/// [`converter`]: WebhookBuilder::converter
/// [`failure_policy`]: WebhookBuilder::failure_policy
/// [`timeout_seconds`]: WebhookBuilder::timeout_seconds
/// [`namespace_selector`]: WebhookBuilder::namespace_selector
/// [`validate_deletes`]: WebhookBuilder::validate_deletes
///
/// ```
/// use app_controller::App;
/// use kubekit::webhook::{AdmissionRequest, FailurePolicy, Validator, Verdict, WebhookEndpoint, Webhooks};
///
/// struct AppValidator;
/// impl Validator<App> for AppValidator {
///     async fn validate_create(&self, _: &App, _: &AdmissionRequest) -> Verdict {
///         Verdict::allow()
///     }
/// }
///
/// let mut webhooks = Webhooks::default();
/// webhooks.add::<App>().failure_policy(FailurePolicy::Fail).validator(AppValidator);
/// let manifests = webhooks.manifests(
///     "app-controller",
///     &WebhookEndpoint::service("app-system", "app-controller-webhook", 443),
/// );
/// assert!(manifests.to_yaml().contains("validate.apps.appcontroller.k8s.io"));
/// ```
#[derive(Default)]
pub struct Webhooks {
    pub(crate) entries: BTreeMap<String, Entry>,
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhooks")
            .field("paths", &self.entries.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Webhooks {
    /// A builder registering the handlers of `K` (for a converter, `K` is the hub).
    pub fn add<K: Resource<DynamicType = ()>>(&mut self) -> WebhookBuilder<'_, K> {
        WebhookBuilder {
            webhooks: self,
            options: HookOptions::default(),
            paths: Vec::new(),
            kind: PhantomData,
        }
    }

    /// The paths served, in order.
    pub fn paths(&self) -> Vec<String> {
        self.entries.keys().cloned().collect()
    }

    /// Whether no handler is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Moves every handler of `other` in (replacing those at the same paths).
    pub fn merge(&mut self, other: Webhooks) {
        self.entries.extend(other.entries);
    }

    fn insert(&mut self, path: String, route: Route, kind: HookKind, target: Target) {
        let entry = Entry {
            route,
            kind,
            target,
            options: HookOptions::default(),
        };
        self.entries.insert(path, entry);
    }

    /// Serves `conversion` at `path` (the CRD's conversion points there).
    pub(crate) fn add_conversion<H>(&mut self, path: String, conversion: Conversion<H>)
    where
        H: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        let route = Route::Conversion(Arc::new(conversion));
        self.insert(path, route, HookKind::Conversion, Target::of::<H>());
    }

    /// The configurations that make kube-apiserver call these handlers at `endpoint`: a
    /// `ValidatingWebhookConfiguration` and a `MutatingWebhookConfiguration` named `name`
    /// (each only when a handler of its kind is registered), and the conversion stanza of
    /// each CRD with a converter. No `caBundle` is set: a generated authority
    /// ([`Certificates::generated`](super::Certificates::generated)) or cert-manager's CA
    /// injector writes it.
    pub fn manifests(&self, name: &str, endpoint: &WebhookEndpoint) -> WebhookManifests {
        let mut validating = Vec::new();
        let mut mutating = Vec::new();
        let mut conversions = BTreeMap::new();
        for (path, entry) in &self.entries {
            let Entry {
                kind,
                target,
                options,
                ..
            } = entry;
            let mut operations = vec!["CREATE".to_string(), "UPDATE".to_string()];
            if *kind == HookKind::Validating && options.validate_deletes {
                operations.push("DELETE".into());
            }
            let rules = Some(vec![admission::RuleWithOperations {
                api_groups: Some(vec![target.group.clone()]),
                api_versions: Some(vec![target.version.clone()]),
                operations: Some(operations),
                resources: Some(vec![target.plural.clone()]),
                scope: None,
            }]);
            let (url, service) = endpoint.at(path);
            let client_config = admission::WebhookClientConfig {
                ca_bundle: None,
                url: url.clone(),
                service: service.clone().map(|s| admission::ServiceReference {
                    name: s.name,
                    namespace: s.namespace,
                    path: s.path,
                    port: s.port,
                }),
            };
            let review_versions = vec!["v1".to_string()];
            let failure_policy = Some(options.failure_policy.as_str().to_string());
            match kind {
                HookKind::Validating => validating.push(admission::ValidatingWebhook {
                    admission_review_versions: review_versions,
                    client_config,
                    failure_policy,
                    name: format!("validate.{}", target.crd_name()),
                    namespace_selector: options.namespace_selector.clone(),
                    rules,
                    side_effects: "None".into(),
                    timeout_seconds: options.timeout_seconds,
                    ..Default::default()
                }),
                HookKind::Mutating => mutating.push(admission::MutatingWebhook {
                    admission_review_versions: review_versions,
                    client_config,
                    failure_policy,
                    name: format!("default.{}", target.crd_name()),
                    namespace_selector: options.namespace_selector.clone(),
                    rules,
                    side_effects: "None".into(),
                    timeout_seconds: options.timeout_seconds,
                    ..Default::default()
                }),
                HookKind::Conversion => {
                    let stanza = apiextensions::CustomResourceConversion {
                        strategy: "Webhook".into(),
                        webhook: Some(apiextensions::WebhookConversion {
                            client_config: Some(apiextensions::WebhookClientConfig {
                                ca_bundle: None,
                                url,
                                service,
                            }),
                            conversion_review_versions: review_versions,
                        }),
                    };
                    conversions.insert(target.crd_name(), stanza);
                }
            }
        }
        let metadata = || ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        };
        WebhookManifests {
            validating: (!validating.is_empty()).then(|| {
                admission::ValidatingWebhookConfiguration {
                    metadata: metadata(),
                    webhooks: Some(validating),
                }
            }),
            mutating: (!mutating.is_empty()).then(|| admission::MutatingWebhookConfiguration {
                metadata: metadata(),
                webhooks: Some(mutating),
            }),
            conversions,
        }
    }
}

/// Registers the handlers of `K` into [`Webhooks`] (or a manager's:
/// `kubekit::manager::Manager::webhook`); see [`Webhooks`].
/// Each method registers at once and returns the builder for the next, so the value of
/// the chain may be dropped.
pub struct WebhookBuilder<'a, K> {
    webhooks: &'a mut Webhooks,
    options: HookOptions,
    paths: Vec<String>,
    kind: PhantomData<fn() -> K>,
}

impl<K> std::fmt::Debug for WebhookBuilder<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookBuilder")
            .field("paths", &self.paths)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<K: Resource<DynamicType = ()>> WebhookBuilder<'_, K> {
    /// Changes the options of this builder and of every handler it registered.
    fn set(mut self, change: impl Fn(&mut HookOptions)) -> Self {
        change(&mut self.options);
        for path in &self.paths {
            if let Some(entry) = self.webhooks.entries.get_mut(path) {
                change(&mut entry.options);
            }
        }
        self
    }

    /// Registers `route` at `path` with this builder's options.
    fn register(mut self, path: String, route: Route, kind: HookKind) -> Self {
        self.webhooks
            .insert(path.clone(), route, kind, Target::of::<K>());
        if let Some(entry) = self.webhooks.entries.get_mut(&path) {
            entry.options = self.options.clone();
        }
        self.paths.push(path);
        self
    }

    /// The `failurePolicy` of the admission webhooks ([`FailurePolicy::Fail`] unless set).
    pub fn failure_policy(self, policy: FailurePolicy) -> Self {
        self.set(|o| o.failure_policy = policy)
    }

    /// The `timeoutSeconds` of the admission webhooks (1 to 30; kube-apiserver's default
    /// of 10 unless set). Keep the server's own [`timeout`](super::WebhookServer::timeout)
    /// below it, so that the handler's failure is answered as the policy says.
    pub fn timeout_seconds(self, seconds: i32) -> Self {
        self.set(|o| o.timeout_seconds = Some(seconds.clamp(1, 30)))
    }

    /// Calls the admission webhooks only for objects in the namespaces `selector` selects.
    pub fn namespace_selector(self, selector: LabelSelector) -> Self {
        self.set(|o| o.namespace_selector = Some(selector.clone()))
    }

    /// Also calls the validator on deletes (off unless set: with `failurePolicy: Fail`, a
    /// webhook on deletes makes the objects undeletable while it is down).
    pub fn validate_deletes(self, on: bool) -> Self {
        self.set(|o| o.validate_deletes = on)
    }

    /// Serves `validator` at [`validate_path::<K>()`](validate_path).
    pub fn validator<V>(self, validator: V) -> Self
    where
        K: DeserializeOwned + Send + Sync + 'static,
        V: Validator<K>,
    {
        let route = Route::Admission(Box::new(Validating {
            validator,
            kind: PhantomData::<fn() -> K>,
        }));
        self.register(validate_path::<K>(), route, HookKind::Validating)
    }

    /// Serves `defaulter` at [`mutate_path::<K>()`](mutate_path).
    pub fn defaulter<D>(self, defaulter: D) -> Self
    where
        K: DeserializeOwned + Serialize + Send + Sync + 'static,
        D: Defaulter<K>,
    {
        let route = Route::Admission(Box::new(Defaulting {
            defaulter,
            kind: PhantomData::<fn() -> K>,
        }));
        self.register(mutate_path::<K>(), route, HookKind::Mutating)
    }

    /// Serves `conversion` (whose hub is `K`) at [`convert_path::<K>()`](convert_path),
    /// which the CRD's generated conversion stanza names.
    pub fn converter(mut self, conversion: Conversion<K>) -> Self
    where
        K: Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        let path = convert_path::<K>();
        self.webhooks.add_conversion(path.clone(), conversion);
        self.paths.push(path);
        self
    }
}

/// The path a converter whose hub is `K` is served at when registered with
/// [`WebhookBuilder::converter`]: `/convert-<group with dashes>-<kind>`, one per CRD.
pub fn convert_path<K: Resource<DynamicType = ()>>() -> String {
    format!(
        "/convert-{}-{}",
        K::group(&()).replace('.', "-"),
        K::kind(&()).to_lowercase()
    )
}

/// Where kube-apiserver calls the webhook server, as the generated manifests say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WebhookEndpoint {
    /// `<base><path>`, the base a URL such as `https://127.0.0.1:9443`. A server that
    /// installs its own manifests replaces a port 0 with the port it listens on.
    Url(String),
    /// The Service `name` in `namespace`, on `port`: `https://<name>.<namespace>.svc:<port><path>`.
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
        /// The Service's port.
        port: u16,
    },
}

impl WebhookEndpoint {
    /// [`WebhookEndpoint::Service`].
    pub fn service(namespace: &str, name: &str, port: u16) -> Self {
        Self::Service {
            namespace: namespace.into(),
            name: name.into(),
            port,
        }
    }

    /// The URL or the service reference of `path` (in apiextensions' type; the admission
    /// one has the same fields).
    fn at(&self, path: &str) -> (Option<String>, Option<apiextensions::ServiceReference>) {
        match self {
            Self::Url(base) => (Some(format!("{}{path}", base.trim_end_matches('/'))), None),
            Self::Service {
                namespace,
                name,
                port,
            } => (
                None,
                Some(apiextensions::ServiceReference {
                    name: name.clone(),
                    namespace: namespace.clone(),
                    path: Some(path.to_string()),
                    port: Some((*port).into()),
                }),
            ),
        }
    }

    /// This endpoint with a URL's port 0 replaced by `port`.
    pub(crate) fn listening_on(&self, port: u16) -> Self {
        match self {
            Self::Url(base) => match base.parse::<http::Uri>() {
                Ok(uri) if uri.port_u16() == Some(0) => {
                    let host = uri.host().unwrap_or_default();
                    let host = match host.parse::<std::net::Ipv6Addr>() {
                        Ok(_) => format!("[{host}]"),
                        Err(_) => host.to_string(),
                    };
                    let scheme = uri.scheme_str().unwrap_or("https");
                    Self::Url(format!("{scheme}://{host}:{port}"))
                }
                _ => self.clone(),
            },
            Self::Service { .. } => self.clone(),
        }
    }
}

/// The manifests generated from [`Webhooks`]; see [`Webhooks::manifests`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WebhookManifests {
    /// The validating webhooks, if any validator is registered.
    pub validating: Option<admission::ValidatingWebhookConfiguration>,
    /// The mutating webhooks, if any defaulter is registered.
    pub mutating: Option<admission::MutatingWebhookConfiguration>,
    /// The conversion stanza (`spec.conversion`) of each CRD with a converter, by the
    /// CRD's name.
    pub conversions: BTreeMap<String, apiextensions::CustomResourceConversion>,
}

impl WebhookManifests {
    /// The webhook configurations as a YAML stream (`---` between documents), with
    /// `apiVersion` and `kind`, ready for `kubectl apply -f`. Conversion stanzas belong in
    /// their CRDs: see [`set_conversion`](Self::set_conversion).
    pub fn to_yaml(&self) -> String {
        let mut documents = Vec::new();
        if let Some(config) = &self.validating {
            documents.push(with_type_meta(config));
        }
        if let Some(config) = &self.mutating {
            documents.push(with_type_meta(config));
        }
        documents
            .iter()
            .filter_map(|doc| serde_saphyr::to_string(doc).ok())
            .collect::<Vec<_>>()
            .join("---\n")
    }

    /// Sets `crd`'s conversion stanza to the generated one, if a converter is registered
    /// for it (and leaves it alone otherwise): the CRD to ship.
    pub fn set_conversion(&self, crd: &mut apiextensions::CustomResourceDefinition) {
        let name = crd.metadata.name.as_deref().unwrap_or_default();
        if let Some(stanza) = self.conversions.get(name) {
            crd.spec.conversion = Some(stanza.clone());
        }
    }

    /// The objects these manifests make, as the targets of a `caBundle`.
    pub fn ca_bundle_targets(&self) -> Vec<CaBundleTarget> {
        let name = |meta: &ObjectMeta| meta.name.clone().unwrap_or_default();
        let mut targets = Vec::new();
        if let Some(config) = &self.validating {
            targets.push(CaBundleTarget::ValidatingWebhookConfiguration(name(
                &config.metadata,
            )));
        }
        if let Some(config) = &self.mutating {
            targets.push(CaBundleTarget::MutatingWebhookConfiguration(name(
                &config.metadata,
            )));
        }
        targets.extend(
            self.conversions
                .keys()
                .map(|crd| CaBundleTarget::CustomResourceDefinition(crd.clone())),
        );
        targets
    }

    /// Applies the configurations (server-side, as `field_manager`, forced) and merges
    /// each conversion stanza into its CRD, which must exist. `caBundle`s already there
    /// are kept (another field manager owns them).
    pub async fn install(
        &self,
        rest: &kubekit_client::rest::RestClient,
        field_manager: &str,
    ) -> Result<(), super::Error> {
        use kubekit_client::clientset::{PatchBody, PatchOptions, ResourceClient};
        let apply = PatchOptions {
            force: true,
            ..PatchOptions::apply(field_manager)
        };
        if let Some(config) = &self.validating {
            let name = config.metadata.name.clone().unwrap_or_default();
            ResourceClient::<admission::ValidatingWebhookConfiguration>::cluster(rest.clone())
                .patch(&name, &PatchBody::Apply(with_type_meta(config)), &apply)
                .await?;
        }
        if let Some(config) = &self.mutating {
            let name = config.metadata.name.clone().unwrap_or_default();
            ResourceClient::<admission::MutatingWebhookConfiguration>::cluster(rest.clone())
                .patch(&name, &PatchBody::Apply(with_type_meta(config)), &apply)
                .await?;
        }
        let merge = PatchOptions::default().field_manager(field_manager);
        for (crd, stanza) in &self.conversions {
            let patch = serde_json::json!({ "spec": { "conversion": stanza } });
            ResourceClient::<apiextensions::CustomResourceDefinition>::cluster(rest.clone())
                .patch(crd, &PatchBody::Merge(patch), &merge)
                .await?;
        }
        Ok(())
    }
}

/// `object` as JSON with its `apiVersion` and `kind`.
fn with_type_meta<K: Resource<DynamicType = ()> + Serialize>(object: &K) -> serde_json::Value {
    let mut value = serde_json::to_value(object).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        let api_version = serde_json::Value::String(K::api_version(&()).into_owned());
        let kind = serde_json::Value::String(K::kind(&()).into_owned());
        map.insert("apiVersion".into(), api_version);
        map.insert("kind".into(), kind);
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AdmissionRequest, Verdict};
    use k8s_openapi::api::core::v1::ConfigMap;

    struct Allow;
    impl Validator<ConfigMap> for Allow {
        async fn validate_create(&self, _: &ConfigMap, _: &AdmissionRequest) -> Verdict {
            Verdict::allow()
        }
    }
    impl Defaulter<ConfigMap> for Allow {
        async fn set_defaults(&self, _: &mut ConfigMap, _: &AdmissionRequest) -> Verdict {
            Verdict::allow()
        }
    }

    #[test]
    fn a_builders_settings_apply_to_the_handlers_it_registered_before_and_after_them() {
        let mut webhooks = Webhooks::default();
        webhooks
            .add::<ConfigMap>()
            .validator(Allow)
            .failure_policy(FailurePolicy::Ignore)
            .timeout_seconds(2)
            .validate_deletes(true)
            .defaulter(Allow);
        let manifests = webhooks.manifests("demo", &WebhookEndpoint::service("ns", "svc", 443));
        let validating = &manifests.validating.unwrap().webhooks.unwrap()[0];
        let mutating = &manifests.mutating.unwrap().webhooks.unwrap()[0];
        assert_eq!(validating.name, "validate.configmaps.");
        assert_eq!(mutating.name, "default.configmaps.");
        for (policy, timeout) in [
            (&validating.failure_policy, validating.timeout_seconds),
            (&mutating.failure_policy, mutating.timeout_seconds),
        ] {
            assert_eq!((policy.as_deref(), timeout), (Some("Ignore"), Some(2)));
        }
        let operations = |rules: &Option<Vec<admission::RuleWithOperations>>| {
            rules.as_ref().unwrap()[0].operations.clone().unwrap()
        };
        assert_eq!(
            operations(&validating.rules),
            ["CREATE", "UPDATE", "DELETE"]
        );
        assert_eq!(operations(&mutating.rules), ["CREATE", "UPDATE"]);
        let service = validating.client_config.service.as_ref().unwrap();
        assert_eq!(service.path.as_deref(), Some("/validate--v1-configmap"));
        assert_eq!(
            (service.namespace.as_str(), service.port),
            ("ns", Some(443))
        );
        assert!(manifests.conversions.is_empty());
    }

    #[test]
    fn manifests_list_only_the_kinds_registered_and_their_yaml_carries_type_meta() {
        let mut webhooks = Webhooks::default();
        webhooks.add::<ConfigMap>().validator(Allow);
        let manifests = webhooks.manifests(
            "demo",
            &WebhookEndpoint::Url("https://127.0.0.1:9443/".into()),
        );
        assert!(manifests.mutating.is_none());
        let yaml = manifests.to_yaml();
        assert!(yaml.starts_with("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"), "{yaml}");
        assert!(
            yaml.contains("url: https://127.0.0.1:9443/validate--v1-configmap"),
            "{yaml}"
        );
        assert_eq!(
            manifests.ca_bundle_targets(),
            [CaBundleTarget::ValidatingWebhookConfiguration(
                "demo".into()
            )]
        );
        assert!(
            Webhooks::default()
                .manifests("x", &WebhookEndpoint::Url(String::new()))
                .to_yaml()
                .is_empty()
        );
    }

    #[test]
    fn a_url_with_port_zero_takes_the_listening_port_and_others_stay() {
        let zero = WebhookEndpoint::Url("https://127.0.0.1:0".into());
        assert_eq!(
            zero.listening_on(9443),
            WebhookEndpoint::Url("https://127.0.0.1:9443".into())
        );
        let fixed = WebhookEndpoint::Url("https://127.0.0.1:8443".into());
        assert_eq!(fixed.listening_on(9443), fixed);
        let service = WebhookEndpoint::service("ns", "svc", 443);
        assert_eq!(service.listening_on(9443), service);
    }
}
