//! How a manager's replicas divide the work: one answer to "may this replica reconcile
//! this key, and until when", given three ways.
//!
//! - [`Coordination::Alone`]: every key, always (one replica, or replicas that do not
//!   coordinate).
//! - [`Coordination::Leader`]: every key while this replica leads (client-go's leader
//!   election): the controllers run while it leads and stop at once when it loses the
//!   lease.
//! - [`Coordination::Member`]: the keys whose shard hash is in the ranges this replica
//!   holds, while its Lease is renewed (see [`sharding`](crate::sharding)): the
//!   controllers always run, and the member's gate admits or drops each key.
//!
//! The manager asks it everything that differs between the three, and nothing else does:
//! at build, the RBAC of its lock and the [fence](Coordination::fence) its clientset
//! writes behind; when a controller is registered, the [gate](Coordination::shard_gate)
//! its informers are narrowed by and its keys admitted by; at start,
//! [`run`](Coordination::run) runs the controllers under it.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::join_all;
use k8s_openapi::api::coordination::v1::Lease;
use kubekit_client::clientset::Clientset;
use kubekit_client::rest::{RestConfig, WriteGuard};
use kubekit_runtime::informers::SharedInformerFactory;
use kubekit_runtime::leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock, RunOutcome,
};
use tokio_util::sync::CancellationToken;

use crate::sharding::{self, LeaseStore, ShardGate, Sharding, ShardingError};
use crate::{ManagerError, Metrics, Rbac, RegisteredController, Rule, Verb};

/// Makes a leader election configuration from the manager's clientset.
pub(crate) type LeaderElectionFn = Box<dyn FnOnce(&Clientset) -> LeaderElectionConfig<LeaseLock>>;

/// Which keys this replica reconciles, and until when; see the [module docs](self).
#[derive(Debug)]
pub(crate) enum Coordination {
    /// Every key, always.
    Alone,
    /// Every key while `elector` leads.
    Leader {
        /// The elector.
        elector: LeaderElector,
        /// Whether a lost lease ends [`run`](Coordination::run) with
        /// [`ManagerError::LeadershipLost`] instead of making the replica a candidate again.
        exit_on_lost_leadership: bool,
    },
    /// The keys of the shard ranges this member holds.
    Member(Box<sharding::Member<LeaseStore>>),
}

/// What a [`ManagerBuilder`](crate::ManagerBuilder) was asked for.
#[derive(Default)]
pub(crate) struct Requested {
    /// Its leader election.
    pub(crate) leader_election: Option<LeaderElectionFn>,
    /// Its sharding.
    pub(crate) sharding: Option<Sharding>,
    /// Its `exit_on_lost_leadership`.
    pub(crate) exit_on_lost_leadership: bool,
}

impl fmt::Debug for Requested {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Requested")
            .field("leader_election", &self.leader_election.is_some())
            .field("sharding", &self.sharding)
            .field("exit_on_lost_leadership", &self.exit_on_lost_leadership)
            .finish()
    }
}

impl Coordination {
    /// The coordination `requested` (leader election and sharding exclude each other),
    /// its lock's rules added to `rbac`. `clientset` is the manager's (a leader election
    /// configuration is made from it); a shard member renews its Lease through a client
    /// of its own made from `config`, whose rate limit never makes a renewal wait behind
    /// the controllers' writes (a renewal waiting past the renew deadline would stop all
    /// work).
    pub(crate) fn new(
        requested: Requested,
        clientset: &Clientset,
        config: &RestConfig,
        metrics: &Metrics,
        rbac: &mut Rbac,
    ) -> Result<Self, ManagerError> {
        let Requested {
            leader_election,
            sharding,
            exit_on_lost_leadership,
        } = requested;
        match (leader_election, sharding) {
            (None, None) => Ok(Self::Alone),
            (Some(_), Some(_)) => Err(ShardingError::WithLeaderElection.into()),
            (Some(config), None) => {
                let config = config(clientset).metrics(&metrics.leader);
                let lock = config.lock();
                let lease = Rule::of::<Lease>()
                    .namespace(lock.leases().namespace().unwrap_or_default())
                    .names([lock.name()]);
                rbac.add(lease.verbs([Verb::Get, Verb::Create, Verb::Update]));
                Ok(Self::Leader {
                    elector: LeaderElector::new(config)?,
                    exit_on_lost_leadership,
                })
            }
            (None, Some(sharding)) => {
                sharding.validate()?;
                let leases = Rule::of::<Lease>().namespace(sharding.namespace_name());
                rbac.add(leases.verbs([
                    Verb::List,
                    Verb::Watch,
                    Verb::Create,
                    Verb::Update,
                    Verb::Delete,
                ]));
                let own = Clientset::new(config)?;
                Ok(Self::Member(Box::new(member(&own, sharding, metrics))))
            }
        }
    }

    /// The guard the manager's clientset writes behind, so that a replica writes only
    /// while it leads (or its membership holds) by its own clock; `None` alone.
    pub(crate) fn fence(&self) -> Option<WriteGuard> {
        match self {
            Self::Alone => None,
            Self::Leader { elector, .. } => Some(elector.fence()),
            Self::Member(member) => Some(member.gate().fence()),
        }
    }

    /// The gate of a shard member, which narrows its controllers' informers, sweeps the
    /// ranges it takes and admits each key; `None` unless sharded.
    pub(crate) fn shard_gate(&self) -> Option<&Arc<ShardGate>> {
        match self {
            Self::Member(member) => Some(member.gate()),
            _ => None,
        }
    }

    /// The leader elector, under leader election.
    pub(crate) fn elector(&self) -> Option<&LeaderElector> {
        match self {
            Self::Leader { elector, .. } => Some(elector),
            _ => None,
        }
    }

    /// Readies the informers before they start: a member's list only what it holds.
    pub(crate) fn prepare_informers(&mut self) {
        if let Self::Member(member) = self {
            member.narrow_informers();
        }
    }

    /// Runs `controllers` (with `factory`'s informers, started) under this coordination
    /// until `cancel`, and until their reconciles in flight have finished or been dropped;
    /// an `Err` only for a lost lease that ends the run (see the [crate docs](crate)).
    pub(crate) async fn run(
        self,
        controllers: Vec<RegisteredController>,
        factory: &Arc<SharedInformerFactory>,
        cancel: &CancellationToken,
    ) -> Result<(), ManagerError> {
        match self {
            Self::Alone => {
                let never = CancellationToken::new();
                run_controllers(&controllers, factory, cancel.clone(), never).await;
                Ok(())
            }
            Self::Leader {
                elector,
                exit_on_lost_leadership,
            } => {
                lead(
                    elector,
                    controllers,
                    factory,
                    cancel,
                    exit_on_lost_leadership,
                )
                .await
            }
            Self::Member(member) => {
                shard(*member, controllers, factory, cancel).await;
                Ok(())
            }
        }
    }
}

/// Runs the controllers while `elector` leads, and after a lost lease (unless
/// `exit_on_lost_leadership`, or after `cancel`) waits to lead again; see the
/// [crate docs](crate).
async fn lead(
    elector: LeaderElector,
    controllers: Vec<RegisteredController>,
    factory: &Arc<SharedInformerFactory>,
    cancel: &CancellationToken,
    exit_on_lost_leadership: bool,
) -> Result<(), ManagerError> {
    let identity = elector.identity().to_string();
    loop {
        tracing::info!(%identity, "waiting for leadership");
        // Fired when this replica stops leading: at once when the lease is lost (even while
        // draining after `cancel`), only after the work returned otherwise.
        let stopped = CancellationToken::new();
        let on_stopped = stopped.clone();
        let (identity, controllers) = (&identity, &controllers);
        // The controllers' shutdown follows `cancel`, not the elector's token (which a lost
        // lease fires too): a lost lease aborts them, leaving their queues for the next term.
        let callbacks = LeaderCallbacks::new(|_leading: CancellationToken| async move {
            tracing::info!(%identity, "started leading: starting controllers");
            let abort = CancellationToken::new();
            let run = run_controllers(controllers, factory, cancel.clone(), abort.clone());
            run_to_end(run, &stopped, || abort.cancel()).await;
            tracing::info!(%identity, "stopped leading: controllers stopped");
        })
        .on_stopped_leading(move || on_stopped.cancel());
        match elector.run(cancel.clone(), callbacks).await {
            RunOutcome::LeadershipLost if exit_on_lost_leadership || cancel.is_cancelled() => {
                return Err(ManagerError::LeadershipLost);
            }
            RunOutcome::LeadershipLost => {
                tracing::warn!(%identity, "lost the lease: a candidate again");
            }
            RunOutcome::Cancelled | RunOutcome::WorkFinished => return Ok(()),
        }
    }
}

/// The membership of a sharded manager, renewing its Lease through `clientset`.
fn member(
    clientset: &Clientset,
    sharding: Sharding,
    metrics: &Metrics,
) -> sharding::Member<LeaseStore> {
    let gate = Arc::new(ShardGate::new(sharding.key()));
    let leases = clientset
        .coordination_v1()
        .leases(sharding.namespace_name());
    let store = LeaseStore::new(leases, sharding.ring(), sharding.lease_name());
    let metrics = Some(metrics.sharding.clone());
    sharding::Member::new(store, gate, &sharding, metrics)
}

/// Runs the controllers while `member` takes part in its ring: on `cancel`, the gate
/// closes (no reconcile starts any more: queued keys are dropped, as the next owners of
/// these ranges sweep their objects), the reconciles in flight finish, then the member
/// releases its Lease.
async fn shard(
    member: sharding::Member<LeaseStore>,
    controllers: Vec<RegisteredController>,
    factory: &Arc<SharedInformerFactory>,
    cancel: &CancellationToken,
) {
    let release = CancellationToken::new();
    let gate = Arc::clone(member.gate());
    let work = async {
        let never = CancellationToken::new();
        let run = run_controllers(&controllers, factory, cancel.clone(), never);
        run_to_end(run, cancel, || gate.close()).await;
        release.cancel();
    };
    tokio::join!(member.run(release.clone()), work);
}

/// Runs `work` to its end; if `token` fires first, calls `then` and still waits for it.
async fn run_to_end(
    work: impl Future<Output = ()>,
    token: &CancellationToken,
    then: impl FnOnce(),
) {
    tokio::pin!(work);
    tokio::select! {
        () = &mut work => {}
        () = token.cancelled() => {
            then();
            work.await;
        }
    }
}

/// Runs every controller until `cancel` (a bounded shutdown) or `abort` fires.
async fn run_controllers(
    controllers: &[RegisteredController],
    factory: &Arc<SharedInformerFactory>,
    cancel: CancellationToken,
    abort: CancellationToken,
) {
    let runs = controllers.iter().map(|c| {
        let run = (c.run)(factory.clone(), cancel.clone(), abort.clone());
        async move {
            if let Err(e) = run.await {
                tracing::error!(controller = %c.name, "{e}");
            }
        }
    });
    join_all(runs).await;
}
