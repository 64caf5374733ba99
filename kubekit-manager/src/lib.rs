//! The manager layer (controller-runtime's `manager` and `builder`): what a controller
//! process runs around its controllers.
//!
//! - [`Manager`]: one clientset (its informers list and watch through a client of their
//!   own, with its own rate limit), one shared informer factory, the event broadcaster, one
//!   metrics registry, the metrics and health endpoints and optional leader election,
//!   for any number of controllers.
//! - [`ControllerBuilder`]: a controller from a plain `async fn`, its primary type, owned
//!   and watched types, [`Predicate`]s, error policy and resync period.
//! - [`Sharding`]: replicas splitting the objects between them by their namespace or uid,
//!   coordinated by one Lease each.
//! - [`Endpoints`]: the metrics (`/metrics`) and health (`/healthz`, `/readyz`) endpoints.
//! - [`rbac`]: the RBAC the program needs, derived from what the manager was built with
//!   ([`Manager::rbac`]), rendered as roles and bindings for `kubectl apply`.
//!
//! # Contract of [`Manager::start`]
//!
//! - The endpoints are served first (a port in use is an error at once). `/readyz` has an
//!   `informers` check that passes once every informer's cache has synced; a replica
//!   waiting for leadership is ready. `/healthz` has one check per controller, failing
//!   once one of its worker tasks has died.
//! - Informers start at once, leader or not, so a new leader's caches are warm; the
//!   controllers run while this replica leads (always, without leader election), each
//!   waiting before its workers start for its own informers (its type's, and those of
//!   `owns` and `watches`) to sync and for every other one to sync or to find its resource
//!   not served: a controller of a kind whose CRD is not installed yet waits for it alone,
//!   and starts once it is. `/readyz`'s `informers` check passes once every informer of a
//!   served resource has synced.
//! - The **webhook server** ([`ManagerBuilder::webhook_server`]), when configured, is
//!   served after the endpoints and before the informers start, on every replica (leader
//!   or not), until `cancel`, even with no controller; `/readyz` has a `webhook` check
//!   that passes while it serves (after its manifests are installed and its `caBundle`
//!   written, when so configured; a refusal of the install that may pass, a 403 before
//!   the RBAC that grants it is applied say, is retried with a warning, and the informers
//!   wait). Webhooks registered ([`Manager::webhook`]) without a server are an error at
//!   start.
//! - **Read-your-own-writes** (on by default, [`ManagerBuilder::read_your_writes`]): a
//!   key's reconcile starts only once the informers have delivered what its last
//!   reconcile wrote through the manager's clientset, to its object or to any kind a
//!   controller of the manager reads; a key waiting is put back on the queue without
//!   holding a worker, for at most [`ManagerBuilder::read_your_writes_timeout`] (see
//!   [`read_your_writes`]).
//! - On `cancel`: no reconcile starts any more and the queued keys are dropped (the next
//!   leader lists them again); the reconciles in flight get the
//!   [graceful shutdown timeout](ManagerBuilder::graceful_shutdown_timeout) (30 s by
//!   default) and are dropped after it; then the lease is released (if so configured),
//!   the informers, the event broadcaster and the endpoints stop, and `start` returns
//!   `Ok`.
//! - On **lost leadership**, the controllers stop at once (queued keys are left, the
//!   reconciles in flight dropped and their keys queued again) and the replica is a
//!   candidate again, its informers running: once it leads again its controllers start
//!   with what is queued. With
//!   [`exit_on_lost_leadership`](ManagerBuilder::exit_on_lost_leadership), and always
//!   while draining after `cancel`, everything stops as above instead and `start` returns
//!   [`ManagerError::LeadershipLost`]: exit non-zero, as client-go controllers do, and let
//!   the process be restarted as a fresh candidate.
//! - With leader election, the manager's [`clientset`](Manager::clientset) (which its
//!   controllers and informers use) is guarded by the elector's
//!   [`fence`](LeaderElector::fence): a write is sent only while this replica leads by
//!   its own clock, so a leader paused past its renew deadline and resumed cannot write
//!   again before it notices it has lost the lease ([`Error::Fenced`](kubekit_client::rest::Error::Fenced)).
//!   The event recorder writes through an unfenced client of its own (its own client-side
//!   rate limit, so Events never delay a reconcile's writes): an Event records what
//!   happened, also in a reconcile the fence stopped.
//! - With [`sharding`](ManagerBuilder::sharding) instead, the controllers run from the
//!   start, but reconcile only the objects whose shard hash is in the ranges this replica
//!   works on (see [`sharding`]); on `cancel` no reconcile starts any more (queued keys
//!   are dropped: whoever takes the ranges sweeps their objects), the reconciles in flight
//!   get the graceful shutdown timeout, then the replica's Lease is released. A replica that cannot renew stops its
//!   reconciles and writes on its own clock and carries on as a member; `start` does not
//!   return an error for it.
//!
//! ```no_run
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kubekit::controller::{ReconcileAction, shutdown_signal};
//! use kubekit::leaderelection::{LeaderElectionConfig, LeaseLock};
//! use kubekit::manager::Manager;
//!
//! async fn reconcile(cm: Arc<ConfigMap>, _ctx: Arc<()>) -> Result<ReconcileAction, kubekit::rest::Error> {
//!     println!("{:?}", cm.metadata.name);
//!     Ok(ReconcileAction::Done)
//! }
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let config = kubekit::rest::RestConfig::infer().await?;
//! let mut mgr = Manager::builder(config)
//!     .namespace("demo")
//!     .metrics_bind_address("127.0.0.1:8080".parse()?)
//!     .health_probe_bind_address("0.0.0.0:8081".parse()?)
//!     .leader_election(|clientset| {
//!         LeaderElectionConfig::new(LeaseLock::from_clientset(clientset, "demo", "my-controller"))
//!             .release_on_cancel(true)
//!     })
//!     .build()?;
//! mgr.controller::<ConfigMap>("configmaps").build(reconcile, Arc::new(()))?;
//! mgr.start(shutdown_signal()).await?;
//! # Ok(())
//! # }
//! ```

pub mod builder;
mod coordination;
pub mod endpoints;
pub mod predicate;
pub mod rbac;
pub mod read_your_writes;
pub mod sharding;
mod start;

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

pub use builder::{ControllerBuilder, Object, ObjectKey, PERMANENT_ERROR_REASON};
pub use endpoints::{Check, Endpoints, Served};
pub use predicate::{Change, Predicate};
pub use rbac::{Rbac, Rule, Verb};
pub use sharding::{HELD_ANNOTATION, RING_LABEL, Sharding, ShardingError};

use coordination::Coordination;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kubekit_client::clientset::{Clientset, KnownScope};
use kubekit_client::rest::{RestClient, RestClientMetrics, RestConfig};
use kubekit_runtime::cache::ReflectorMetrics;
use kubekit_runtime::controller::{ControllerMetrics, RunError, RunStats};
use kubekit_runtime::informers::SharedInformerFactory;
use kubekit_runtime::leaderelection::{
    ConfigError, LeaderElectionConfig, LeaderElectionMetrics, LeaderElector, LeaseLock,
};
use kubekit_runtime::record::{ClientsetSink, EventBroadcaster, EventRecorder, EventSource};
use kubekit_runtime::workqueue::WorkqueueMetrics;
use kubekit_webhook::{
    CaBundleTarget, Certificates, WebhookBuilder, WebhookEndpoint, WebhookMetrics, Webhooks,
};
use read_your_writes::Tracker;

/// Why a manager could not be built or stopped running.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// The client could not be made from the configuration.
    #[error("building the client: {0}")]
    Client(#[from] kubekit_client::rest::Error),
    /// The leader election configuration was refused.
    #[error(transparent)]
    LeaderElection(#[from] ConfigError),
    /// An index could not be added to a shared informer's cache (another one has its
    /// name).
    #[error("adding an index to a shared informer: {0}")]
    Index(#[from] kubekit_runtime::cache::Error),
    /// Two controllers were given the same name.
    #[error("a controller named {0:?} is already registered")]
    DuplicateController(String),
    /// An endpoint address could not be bound.
    #[error("serving the metrics and health endpoints on {address}: {source}")]
    Serve {
        /// The address.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Webhooks were registered but no [`webhook_server`](ManagerBuilder::webhook_server)
    /// configured to serve them.
    #[error("webhooks are registered at {0:?} but the manager has no webhook server")]
    NoWebhookServer(Vec<String>),
    /// The webhook server could not start (its address, its certificate, its manifests).
    #[error(transparent)]
    Webhook(#[from] kubekit_webhook::Error),
    /// The sharding configuration was refused.
    #[error(transparent)]
    Sharding(#[from] ShardingError),
    /// This replica lost its leadership; its controllers were stopped.
    #[error("leader election lost")]
    LeadershipLost,
}

/// Every metric family the manager registers.
#[derive(Debug, Clone, Default)]
struct Metrics {
    workqueue: WorkqueueMetrics,
    controller: ControllerMetrics,
    reflector: ReflectorMetrics,
    rest: RestClientMetrics,
    leader: LeaderElectionMetrics,
    webhook: WebhookMetrics,
    sharding: sharding::ShardingMetrics,
    read_your_writes: read_your_writes::ReadYourWritesMetrics,
}

type RunFn = Box<
    dyn Fn(
            Arc<SharedInformerFactory>,
            CancellationToken,
            CancellationToken,
        ) -> BoxFuture<'static, Result<(), RunError>>
        + Send
        + Sync,
>;

/// A controller built into the manager: its run (factory, cancel, abort) and its counters.
struct RegisteredController {
    name: String,
    stats: Arc<RunStats>,
    run: RunFn,
}

/// Builds a [`Manager`]; made by [`Manager::builder`].
#[must_use = "a manager builder does nothing until `build` is called"]
pub struct ManagerBuilder {
    config: RestConfig,
    namespace: String,
    metrics_address: Option<SocketAddr>,
    health_address: Option<SocketAddr>,
    coordination: coordination::Requested,
    resync_period: Duration,
    graceful_shutdown_timeout: Duration,
    /// The wait limit of read-your-own-writes; `None`: off.
    read_your_writes: Option<Duration>,
    webhook: WebhookSettings,
}

/// How long the reconciles in flight get on `cancel`: controller-runtime's default.
pub const DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// How the manager serves its webhooks.
#[derive(Debug, Default)]
struct WebhookSettings {
    server: Option<(SocketAddr, Certificates)>,
    install: Option<(String, WebhookEndpoint)>,
    timeout: Option<Duration>,
}

impl fmt::Debug for ManagerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagerBuilder")
            .field("namespace", &self.namespace)
            .field("metrics_address", &self.metrics_address)
            .field("health_address", &self.health_address)
            .field("coordination", &self.coordination)
            .field("resync_period", &self.resync_period)
            .field("graceful_shutdown_timeout", &self.graceful_shutdown_timeout)
            .field("read_your_writes", &self.read_your_writes)
            .field("webhook", &self.webhook)
            .finish_non_exhaustive()
    }
}

impl ManagerBuilder {
    /// Serves the webhooks registered with [`Manager::webhook`] on `address` (HTTPS, with
    /// `certificates`), on every replica, leader or not (controller-runtime's webhook
    /// server). `/readyz` gets a `webhook` check, passing while it serves; its metrics are
    /// in the manager's registry; generated certificates write their `caBundle` with a
    /// client that leader election does not fence.
    pub fn webhook_server(mut self, address: SocketAddr, certificates: Certificates) -> Self {
        self.webhook.server = Some((address, certificates));
        self
    }

    /// Installs the manifests generated from the registered webhooks, named `name` and
    /// calling the server at `endpoint` (a URL's port 0 is the port it listens on), when
    /// the webhook server starts, retrying refusals that may pass (a 403, say) until the
    /// manager is cancelled: see
    /// [`WebhookServer::install_manifests`](kubekit_webhook::WebhookServer::install_manifests).
    /// Default: not installed (ship [`Manager::webhook_manifests`] instead).
    pub fn install_webhook_manifests(mut self, name: &str, endpoint: WebhookEndpoint) -> Self {
        self.webhook.install = Some((name.to_string(), endpoint));
        self
    }

    /// How long the webhook server lets a request and its handler take (see
    /// [`WebhookServer::timeout`](kubekit_webhook::WebhookServer::timeout); 9 s unless set).
    pub fn webhook_timeout(mut self, timeout: Duration) -> Self {
        self.webhook.timeout = Some(timeout);
        self
    }

    /// Watches only `namespace` (`""`, the default: all namespaces).
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = namespace.to_string();
        self
    }

    /// Serves the endpoints on `address` (default: not served). The endpoints are one
    /// server: `/healthz` and `/readyz` answer here too.
    pub fn metrics_bind_address(mut self, address: SocketAddr) -> Self {
        self.metrics_address = Some(address);
        self
    }

    /// Serves the endpoints on `address` as well, for the kubelet's probes (default: not
    /// served). `/metrics` answers here too.
    pub fn health_probe_bind_address(mut self, address: SocketAddr) -> Self {
        self.health_address = Some(address);
        self
    }

    /// Every `period`, each controller enqueues every cached object of its primary type
    /// again, changed or not (controller-runtime's `SyncPeriod`, client-go's informer
    /// resync), unless the controller sets its own
    /// [`resync_period`](ControllerBuilder::resync_period). Default: zero, no resync
    /// (controller-runtime's default is 10 hours).
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = period;
        self
    }

    /// How long the reconciles in flight get to finish on `cancel` (controller-runtime's
    /// `GracefulShutdownTimeout`), after which they are dropped and the lease released.
    /// Queued keys are dropped at once: the next leader lists them again. Default:
    /// [`DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT`], 30 s, the kubelet's default grace period, so
    /// keep it below a Pod's `terminationGracePeriodSeconds` less the time to release.
    pub fn graceful_shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.graceful_shutdown_timeout = timeout;
        self
    }

    /// Whether a key's reconcile waits until the informers have delivered what its last
    /// reconcile wrote, to the primary object and to any other kind a controller of this
    /// manager reads (see [`read_your_writes`]). Default: on.
    pub fn read_your_writes(mut self, on: bool) -> Self {
        self.read_your_writes = on.then(|| {
            self.read_your_writes
                .unwrap_or(read_your_writes::DEFAULT_TIMEOUT)
        });
        self
    }

    /// How long a key waits for its informers before it is reconciled anyway (with a
    /// warning): [`read_your_writes::DEFAULT_TIMEOUT`], 5 s, by default. Turns
    /// read-your-own-writes on.
    pub fn read_your_writes_timeout(mut self, timeout: Duration) -> Self {
        self.read_your_writes = Some(timeout);
        self
    }

    /// Whether `start` returns [`ManagerError::LeadershipLost`] when the lease is lost, as
    /// client-go controllers exit (`true`), or the replica stops its controllers and is a
    /// candidate again (`false`, the default, as kube-controller-manager's KEP-5366): its
    /// informers keep running, the keys left queued and those of the reconciles dropped
    /// wait in their queues, and the controllers start again once it leads.
    pub fn exit_on_lost_leadership(mut self, exit: bool) -> Self {
        self.coordination.exit_on_lost_leadership = exit;
        self
    }

    /// Runs the controllers only while leading, with the configuration `config` makes from
    /// the manager's clientset (its metrics are set by the manager).
    pub fn leader_election(
        mut self,
        config: impl FnOnce(&Clientset) -> LeaderElectionConfig<LeaseLock> + 'static,
    ) -> Self {
        self.coordination.leader_election = Some(Box::new(config));
        self
    }

    /// Makes this replica a member of a sharded ring: its controllers reconcile only the
    /// objects whose shard hash is in the ranges it holds, handed over between members
    /// without overlap (see [`sharding`]). Exclusive with
    /// [`leader_election`](Self::leader_election). The manager's clientset then writes only
    /// while this member's Lease is renewed by its own clock.
    pub fn sharding(mut self, sharding: Sharding) -> Self {
        self.coordination.sharding = Some(sharding);
        self
    }

    /// The manager: its clientset, factory and event broadcaster, with every metric
    /// family registered.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (the event broadcaster starts its tasks).
    pub fn build(self) -> Result<Manager, ManagerError> {
        let metrics = Metrics::default();
        let mut registry = Registry::default();
        metrics.workqueue.register(&mut registry);
        metrics.controller.register(&mut registry);
        metrics.reflector.register(&mut registry);
        metrics.rest.register(&mut registry);
        metrics.leader.register(&mut registry);
        metrics.webhook.register(&mut registry);
        metrics.sharding.register(&mut registry);
        metrics.read_your_writes.register(&mut registry);
        let config = self.config.with_metrics(&metrics.rest);
        let clientset = Clientset::new(&config)?;
        let webhook_client = clientset.rest_client().clone();
        // Events record what happened, also in a reconcile the fence stopped and after the
        // last reconcile of a replica that released its lease: written unfenced, through a
        // client of their own, so that their rate limit (after the broadcaster's spam
        // filter and aggregation) never makes a reconcile's writes wait.
        let event_sink = ClientsetSink::new(Clientset::new(&config)?);
        let mut rbac = Rbac::new();
        let coordination =
            Coordination::new(self.coordination, &clientset, &config, &metrics, &mut rbac)?;
        // Everything but the coordination's own lock writes only while this replica leads
        // (or its membership holds).
        let clientset = match coordination.fence() {
            Some(fence) => {
                Clientset::from_rest_client(clientset.rest_client().with_write_guard(fence))
            }
            None => clientset,
        };
        let read_your_writes = self.read_your_writes.map(|timeout| {
            Tracker::new(&self.namespace, metrics.read_your_writes.clone(), timeout)
        });
        let clientset = match &read_your_writes {
            Some(tracker) => Clientset::from_rest_client(
                clientset
                    .rest_client()
                    .with_write_observer(tracker.observer()),
            ),
            None => clientset,
        };
        // The informers list and watch through a client of their own, as
        // kube-controller-manager's shared informers do: a relist (a sharded replica's
        // after it takes a range) never waits behind the controllers' writes for the
        // client-side rate limit. They only read: the fence does not concern them.
        let informer_client = Clientset::new(&config)?;
        let factory = SharedInformerFactory::builder(informer_client)
            .namespace(&self.namespace)
            .metrics(&metrics.reflector)
            .build();
        let broadcaster = EventBroadcaster::new();
        broadcaster.start_structured_logging();
        broadcaster.start_recording_to_sink(event_sink);
        Ok(Manager {
            clientset,
            namespace: self.namespace,
            rbac,
            records_events: AtomicBool::new(false),
            factory: Arc::new(factory),
            broadcaster,
            registry,
            metrics,
            coordination,
            metrics_address: self.metrics_address,
            health_address: self.health_address,
            resync_period: self.resync_period,
            graceful_shutdown_timeout: self.graceful_shutdown_timeout,
            read_your_writes,
            controllers: Vec::new(),
            webhooks: Webhooks::default(),
            webhook: self.webhook,
            webhook_client,
        })
    }
}

/// Runs controllers with what they share; see the [module docs](self).
pub struct Manager {
    clientset: Clientset,
    /// The namespace it watches (`""`: all).
    namespace: String,
    /// The rules declared or implied so far; [`Manager::rbac`] adds the informers',
    /// the events' and the webhooks'.
    rbac: Rbac,
    /// Whether [`Manager::event_recorder`] was called.
    records_events: AtomicBool,
    factory: Arc<SharedInformerFactory>,
    broadcaster: EventBroadcaster,
    registry: Registry,
    metrics: Metrics,
    coordination: Coordination,
    metrics_address: Option<SocketAddr>,
    health_address: Option<SocketAddr>,
    resync_period: Duration,
    graceful_shutdown_timeout: Duration,
    read_your_writes: Option<Arc<Tracker>>,
    controllers: Vec<RegisteredController>,
    webhooks: Webhooks,
    webhook: WebhookSettings,
    /// The client of the webhook server, unfenced by leader election.
    webhook_client: RestClient,
}

impl fmt::Debug for Manager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.controllers.iter().map(|c| c.name.as_str()).collect();
        f.debug_struct("Manager")
            .field("factory", &self.factory)
            .field("coordination", &self.coordination)
            .field("metrics_address", &self.metrics_address)
            .field("health_address", &self.health_address)
            .field("resync_period", &self.resync_period)
            .field("graceful_shutdown_timeout", &self.graceful_shutdown_timeout)
            .field("read_your_writes", &self.read_your_writes)
            .field("controllers", &names)
            .field("webhooks", &self.webhooks)
            .field("webhook", &self.webhook)
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// A builder of a manager whose client is made from `config`.
    pub fn builder(config: RestConfig) -> ManagerBuilder {
        ManagerBuilder {
            config,
            namespace: String::new(),
            metrics_address: None,
            health_address: None,
            coordination: coordination::Requested::default(),
            resync_period: Duration::ZERO,
            graceful_shutdown_timeout: DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT,
            read_your_writes: Some(read_your_writes::DEFAULT_TIMEOUT),
            webhook: WebhookSettings::default(),
        }
    }

    /// The clientset every controller shares (its requests are counted in
    /// `rest_client_*`; with leader election, it writes only while this replica leads).
    pub fn clientset(&self) -> &Clientset {
        &self.clientset
    }

    /// The shared informer factory: take listers from it for a reconciler's context.
    pub fn factory(&self) -> &SharedInformerFactory {
        &self.factory
    }

    /// An event recorder reporting as `component`, through the manager's broadcaster
    /// (to the API and the log).
    pub fn event_recorder(&self, component: &str) -> EventRecorder {
        self.records_events.store(true, Ordering::Relaxed);
        self.broadcaster.new_recorder(EventSource {
            component: component.to_string(),
            host: None,
        })
    }

    /// The registry `/metrics` serves, to register a program's own metrics in.
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// The leader elector, when leader election is on.
    pub fn elector(&self) -> Option<&LeaderElector> {
        self.coordination.elector()
    }

    /// A builder of a controller of `K` named `name` (its queue, metrics and logs say so).
    pub fn controller<K: Object>(&mut self, name: &str) -> ControllerBuilder<'_, K> {
        ControllerBuilder::new(self, name)
    }

    /// A builder registering the admission webhooks of `K` (a [`Validator`], a
    /// [`Defaulter`]) or its CRD's converter (with `K` the hub), served by the
    /// [webhook server](ManagerBuilder::webhook_server):
    /// `mgr.webhook::<App>().validator(AppValidator).defaulter(AppDefaulter)`.
    ///
    /// [`Validator`]: kubekit_webhook::Validator
    /// [`Defaulter`]: kubekit_webhook::Defaulter
    pub fn webhook<K: kube::Resource<DynamicType = ()>>(&mut self) -> WebhookBuilder<'_, K> {
        self.webhooks.add::<K>()
    }

    /// The registered webhooks, for code that registers into any [`Webhooks`].
    pub fn webhooks_mut(&mut self) -> &mut Webhooks {
        &mut self.webhooks
    }

    /// The manifests of the registered webhooks (see [`Webhooks::manifests`]).
    pub fn webhook_manifests(
        &self,
        name: &str,
        endpoint: &WebhookEndpoint,
    ) -> kubekit_webhook::WebhookManifests {
        self.webhooks.manifests(name, endpoint)
    }

    /// Adds `rule`, on `R`'s objects, to [`rbac`](Self::rbac): in the manager's namespace
    /// if `R` is namespaced.
    fn grant<R: Object>(&mut self, rule: Rule) {
        let rule = match <R::Scope as KnownScope>::NAMESPACED {
            true => rule.namespace(&self.namespace),
            false => rule,
        };
        self.rbac.add(rule);
    }

    /// Grants `rule` in [`rbac`](Self::rbac): for requests the manager cannot see coming
    /// (a reconcile's `get` of a Secret, say). A controller's writes are declared on its
    /// builder ([`writes`](ControllerBuilder::writes)).
    pub fn permit(&mut self, rule: Rule) {
        self.rbac.add(rule);
    }

    /// The RBAC this manager's program needs, as built so far: see [`rbac`] for where
    /// each rule comes from. Call it once every controller, lister and webhook is
    /// registered; [`Rbac::manifests`] renders it for `kubectl apply`.
    pub fn rbac(&self) -> Rbac {
        let mut rbac = self.rbac.clone();
        for (gvr, namespace) in self.factory.informed() {
            let rule = Rule::new(&gvr.group, &gvr.resource)
                .namespace(namespace.as_deref().unwrap_or_default());
            rbac.add(rule.verbs(Verb::READ));
        }
        if self.records_events.load(Ordering::Relaxed) {
            let events = Rule::new("", "events").namespace(&self.namespace);
            rbac.add(events.verbs([Verb::Create, Verb::Patch]));
        }
        if let Some((_, certificates)) = &self.webhook.server {
            let installed = match &self.webhook.install {
                Some((name, endpoint)) => {
                    self.webhooks.manifests(name, endpoint).ca_bundle_targets()
                }
                None => Vec::new(),
            };
            for target in &installed {
                // A configuration is applied; a CRD's conversion merged into it.
                let verbs: &[Verb] = match target {
                    CaBundleTarget::CustomResourceDefinition(_) => &[Verb::Patch],
                    _ => &Verb::APPLY,
                };
                rbac.add(target_rule(target).verbs(verbs.iter().copied()));
            }
            if let Some(own) = certificates.generated_targets() {
                for target in installed.iter().chain(own) {
                    rbac.add(target_rule(target).verbs([Verb::Get, Verb::Update]));
                }
            }
        }
        rbac
    }
}

/// A rule on the object whose `caBundle` a webhook server writes, by name.
fn target_rule(target: &CaBundleTarget) -> Rule {
    match target {
        CaBundleTarget::ValidatingWebhookConfiguration(name) => {
            Rule::of::<ValidatingWebhookConfiguration>().names([name])
        }
        CaBundleTarget::MutatingWebhookConfiguration(name) => {
            Rule::of::<MutatingWebhookConfiguration>().names([name])
        }
        CaBundleTarget::CustomResourceDefinition(name) => {
            Rule::of::<CustomResourceDefinition>().names([name])
        }
    }
}
