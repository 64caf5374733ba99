//! [`Manager::start`] in its phases: serve the endpoints and the webhooks, start the
//! informers and run the controllers under the manager's coordination, then stop
//! everything (see the [crate docs](crate) for the contract).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use kubekit_client::rest::RestClient;
use kubekit_runtime::informers::SharedInformerFactory;
use kubekit_webhook::{WebhookServer, Webhooks};
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::coordination::Coordination;
use crate::{
    Endpoints, Manager, ManagerError, Metrics, RegisteredController, Served, WebhookSettings,
};

impl Manager {
    /// Runs everything until `cancel` fires or leadership is lost; see the
    /// [module docs](crate).
    pub async fn start(self, cancel: CancellationToken) -> Result<(), ManagerError> {
        let Manager {
            factory,
            broadcaster,
            registry,
            coordination,
            metrics_address,
            health_address,
            controllers,
            webhooks,
            webhook,
            webhook_client,
            metrics,
            ..
        } = self;
        let synced = Arc::new(AtomicBool::new(false));
        let stop_serving = CancellationToken::new();
        let mut served = Vec::new();
        let result = async {
            let webhook_server = webhook_server(webhook, webhooks, &metrics, webhook_client)?;
            let serving_webhooks = webhook_server.is_some();
            let endpoints = endpoints(registry, &synced, &webhook_server, &controllers);
            let addresses = [metrics_address, health_address].into_iter().flatten();
            served = serve(endpoints, addresses, webhook_server, &stop_serving).await?;
            let running = Running {
                factory: &factory,
                synced: &synced,
                serving_webhooks,
            };
            running.run(coordination, controllers, &cancel).await
        }
        .await;
        factory.shutdown().await;
        broadcaster.shutdown().await;
        stop_serving.cancel();
        for s in served {
            s.stopped().await;
        }
        tracing::info!("manager stopped");
        result
    }
}

/// The webhook server and its address, when configured; an error for webhooks registered
/// without one.
fn webhook_server(
    settings: WebhookSettings,
    webhooks: Webhooks,
    metrics: &Metrics,
    client: RestClient,
) -> Result<Option<(SocketAddr, WebhookServer)>, ManagerError> {
    let Some((address, certificates)) = settings.server else {
        return match webhooks.is_empty() {
            true => Ok(None),
            false => Err(ManagerError::NoWebhookServer(webhooks.paths())),
        };
    };
    let mut server = WebhookServer::new(certificates)
        .webhooks(webhooks)
        .metrics(&metrics.webhook)
        .client(client);
    if let Some((name, endpoint)) = settings.install {
        server = server.install_manifests(&name, endpoint);
    }
    if let Some(timeout) = settings.timeout {
        server = server.timeout(timeout);
    }
    Ok(Some((address, server)))
}

/// The metrics and health endpoints: `/readyz` checks that the informers synced (set in
/// `synced`) and that the webhook server serves, `/healthz` that no controller lost a
/// worker.
fn endpoints(
    registry: Registry,
    synced: &Arc<AtomicBool>,
    webhook_server: &Option<(SocketAddr, WebhookServer)>,
    controllers: &[RegisteredController],
) -> Endpoints {
    let synced = Arc::clone(synced);
    let mut endpoints = Endpoints::new(registry).readyz("informers", move || {
        match synced.load(Ordering::Acquire) {
            true => Ok(()),
            false => Err("caches not synced".into()),
        }
    });
    if let Some((_, server)) = webhook_server {
        let readiness = server.readiness();
        endpoints = endpoints.readyz("webhook", move || readiness.check());
    }
    for c in controllers {
        let stats = c.stats.clone();
        endpoints = endpoints.healthz(format!("controller-{}", c.name), move || {
            match stats.workers_died() {
                0 => Ok(()),
                died => Err(format!("{died} worker task(s) died")),
            }
        });
    }
    endpoints
}

/// Serves `endpoints` on every address, then the webhook server, until `stop`; on an
/// error, what was served already is stopped before it is returned.
async fn serve(
    endpoints: Endpoints,
    addresses: impl Iterator<Item = SocketAddr>,
    webhook_server: Option<(SocketAddr, WebhookServer)>,
    stop: &CancellationToken,
) -> Result<Vec<Served>, ManagerError> {
    let mut served = Vec::new();
    let mut result = Ok(());
    for address in addresses {
        match endpoints.clone().serve(address, stop.clone()).await {
            Ok(s) => {
                tracing::info!(address = %s.address(), "serving /metrics, /healthz and /readyz");
                served.push(s);
            }
            Err(source) => {
                result = Err(ManagerError::Serve { address, source });
                break;
            }
        }
    }
    if let (Ok(()), Some((address, server))) = (&result, webhook_server) {
        match server.serve(address, stop.clone()).await {
            Ok(s) => {
                tracing::info!(address = %s.address(), "serving the webhooks");
                served.push(s);
            }
            Err(e) => result = Err(e.into()),
        }
    }
    if let Err(e) = result {
        stop.cancel();
        for s in served {
            s.stopped().await;
        }
        return Err(e);
    }
    Ok(served)
}

/// What the run phase needs besides the controllers and their coordination.
struct Running<'a> {
    factory: &'a Arc<SharedInformerFactory>,
    /// Set once every served informer has synced.
    synced: &'a AtomicBool,
    /// Whether the webhook server serves: the run then lasts until `cancel` whether
    /// controllers run or not.
    serving_webhooks: bool,
}

impl Running<'_> {
    /// Starts the informers and runs `controllers` under `coordination` until `cancel`
    /// (see [`Coordination::run`]).
    async fn run(
        self,
        mut coordination: Coordination,
        controllers: Vec<RegisteredController>,
        cancel: &CancellationToken,
    ) -> Result<(), ManagerError> {
        let factory = self.factory;
        coordination.prepare_informers();
        factory.start();
        let running = cancel.child_token();
        let sync = async {
            if factory.wait_for_served_caches(&running).await {
                tracing::info!("informer caches synced (those of resources not served aside)");
                self.synced.store(true, Ordering::Release);
            }
        };
        let run = async {
            let result = coordination.run(controllers, factory, cancel).await;
            if self.serving_webhooks && result.is_ok() {
                cancel.cancelled().await;
            }
            running.cancel();
            result
        };
        tokio::join!(sync, run).1
    }
}
