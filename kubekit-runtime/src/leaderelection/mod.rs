//! Leader election on a Lease (client-go's `tools/leaderelection`): of the replicas of a
//! controller, one does the work and the others wait to take over.
//!
//! # Contract
//!
//! What is guaranteed, given that every candidate runs this algorithm (or client-go's, which
//! it reproduces) on the same lock, with distinct identities, and that the clocks of their
//! machines run at about the same *rate* (they need not agree on the time of day):
//!
//! - **At most one leader at a time, up to the work stopping promptly.** A candidate takes
//!   the lease only when it is free (no holder) or expired, and *expired* is judged by the
//!   candidate's own monotonic clock: `lease_duration` after the moment this candidate last
//!   saw the record change. The holder's `renewTime` (another machine's wall clock) is
//!   never trusted.
//! - **Every write is conditional.** Each update carries the resourceVersion the candidate
//!   last read or wrote; a 409 Conflict means someone else wrote, and the candidate reads
//!   the Lease again and decides afresh. A record is never overwritten blind.
//! - **The leader stops before anyone else may start.** The leader renews every
//!   `retry_period`. Its leadership ends, and the token given to its work is cancelled:
//!   - as soon as a read shows another holder (or no holder, or no Lease), or
//!   - when `renew_deadline` has passed since it *sent* its last successful renewal,
//!     whatever requests are still in flight.
//!
//!   Every other candidate waits `lease_duration` from when it saw that renewal, which it
//!   cannot have seen before it was sent; as `renew_deadline < lease_duration`, the work is
//!   told to stop at least `lease_duration - renew_deadline` (5 s by default) before
//!   another candidate can take the lease.
//! - **Release on cancel.** With [`release_on_cancel`](LeaderElectionConfig::release_on_cancel),
//!   a leader that stops on its own (its `cancel` token fired, or its work returned) first
//!   waits for its work to return, still renewing, and then clears `holderIdentity` (with
//!   the resourceVersion precondition), so a waiting candidate takes over at its next
//!   retry instead of waiting for the lease to expire.
//! - `leaderTransitions` counts the times the lease changed hands.
//!
//! - **A paused leader does not write again.** A client guarded by
//!   [`fence`](LeaderElector::fence) (the `kubekit::manager` guards the one its
//!   controllers use) checks the renew deadline by the local monotonic clock right before
//!   each write is sent. A leader paused (SIGSTOP, swapped out, a long stall) past its
//!   renew deadline and resumed has its writes refused even before its own timers run,
//!   which is before anyone else may acquire the lease.
//!
//! What is **not** guaranteed: this is not server-side fencing. The API server does not
//! check that writes come from the leader, so nothing stops a write made through a client
//! without the fence, a leader that ignores its token and writes through one, or a write
//! that passed the check and was then paused on its way. Use leader election to avoid
//! duplicate work, not as the only protection of an invariant; where a write must never
//! come from two replicas, make that write itself conditional (a resourceVersion
//! precondition on the object it changes).
//!
//! # Timing
//!
//! | setting | default | meaning |
//! |---|---|---|
//! | `lease_duration` | 15 s | how long the others wait after last seeing the record change (whole seconds: it is written to the Lease in seconds) |
//! | `renew_deadline` | 10 s | how long the leader keeps trying to renew before it gives up |
//! | `retry_period` | 2 s | time between attempts (candidates add client-go's jitter, up to 1.2 ×) |
//!
//! [`LeaderElector::new`] refuses a configuration unless
//! `lease_duration > renew_deadline > 1.2 × retry_period > 0`.
//!
//! # Example
//!
//! ```no_run
//! use kubekit::clientset::Clientset;
//! use kubekit::controller::shutdown_signal;
//! use kubekit::leaderelection::{
//!     LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock, RunOutcome,
//! };
//! use tokio_util::sync::CancellationToken;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let clientset = Clientset::new(&kubekit::rest::RestConfig::infer().await?)?;
//! let lock = LeaseLock::from_clientset(&clientset, "kube-system", "my-controller");
//! let elector = LeaderElector::new(LeaderElectionConfig::new(lock).release_on_cancel(true))?;
//!
//! let callbacks = LeaderCallbacks::new(|leading: CancellationToken| async move {
//!     // Start informers and workers here, and stop them when `leading` is cancelled
//!     // (e.g. `runner.run(reconciler, 2, synced, leading).await`).
//!     leading.cancelled().await;
//! })
//! .on_new_leader(|identity| println!("the leader is now {identity}"))
//! .on_stopped_leading(|| println!("stopped leading"));
//!
//! match elector.run(shutdown_signal(), callbacks).await {
//!     RunOutcome::LeadershipLost => std::process::exit(1), // as client-go controllers do
//!     RunOutcome::Cancelled | RunOutcome::WorkFinished => {}
//! }
//! # Ok(())
//! # }
//! ```

pub mod lock;
pub mod metrics;
#[cfg(test)]
mod tests;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;
use prometheus_client::metrics::gauge::Gauge;
use tokio::time::{Instant, sleep, sleep_until};
use tokio_util::sync::CancellationToken;

pub use lock::{LeaderElectionRecord, LeaseLock, Lock, VersionedRecord};
pub use metrics::LeaderElectionMetrics;

/// client-go's default lease duration.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// client-go's default renew deadline.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// client-go's default retry period.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);
/// client-go's `JitterFactor`: a candidate waits between 1 and 2.2 retry periods between
/// attempts to acquire.
pub(crate) const JITTER_FACTOR: f64 = 1.2;

/// Why a [`LeaderElectionConfig`] was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The identity is empty.
    #[error("leader election: the identity must not be empty")]
    EmptyIdentity,
    /// A duration is zero.
    #[error("leader election: {0} must be greater than zero")]
    Zero(&'static str),
    /// The lease duration is not a whole number of seconds.
    #[error(
        "leader election: lease duration {0:?} must be a whole number of seconds (the Lease \
         stores it in seconds)"
    )]
    LeaseDurationNotWholeSeconds(Duration),
    /// The lease duration does not exceed the renew deadline.
    #[error(
        "leader election: lease duration ({lease_duration:?}) must be greater than the renew \
         deadline ({renew_deadline:?})"
    )]
    LeaseNotLongerThanRenewDeadline {
        /// The lease duration given.
        lease_duration: Duration,
        /// The renew deadline given.
        renew_deadline: Duration,
    },
    /// The renew deadline does not exceed 1.2 × the retry period.
    #[error(
        "leader election: renew deadline ({renew_deadline:?}) must be greater than 1.2 × the \
         retry period ({retry_period:?} × 1.2 = {:?})",
        .retry_period.mul_f64(JITTER_FACTOR)
    )]
    RenewDeadlineTooShort {
        /// The renew deadline given.
        renew_deadline: Duration,
        /// The retry period given.
        retry_period: Duration,
    },
}

/// The configuration of a [`LeaderElector`]: the lock, this candidate's identity, the
/// timing, and what to do on cancellation. Validated by [`LeaderElector::new`].
///
/// ```
/// use std::time::Duration;
/// use kubekit::clientset::Clientset;
/// use kubekit::leaderelection::{ConfigError, LeaderElectionConfig, LeaderElector, LeaseLock};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// # let config = kube::Config::new("https://127.0.0.1:1".parse().unwrap());
/// # let clientset = Clientset::new(&kubekit::rest::RestConfig::from_kube(config)).unwrap();
/// let lock = || LeaseLock::from_clientset(&clientset, "default", "my-controller");
///
/// let config = LeaderElectionConfig::new(lock())
///     .identity("pod-a")
///     .lease_duration(Duration::from_secs(3))
///     .renew_deadline(Duration::from_secs(2))
///     .retry_period(Duration::from_millis(500))
///     .release_on_cancel(true);
/// assert!(LeaderElector::new(config).is_ok());
///
/// let config = LeaderElectionConfig::new(lock()).renew_deadline(Duration::from_secs(20));
/// let err = LeaderElector::new(config).unwrap_err();
/// assert!(matches!(err, ConfigError::LeaseNotLongerThanRenewDeadline { .. }));
/// assert_eq!(
///     err.to_string(),
///     "leader election: lease duration (15s) must be greater than the renew deadline (20s)"
/// );
/// # }
/// ```
pub struct LeaderElectionConfig<L> {
    lock: L,
    identity: Option<String>,
    name: Option<String>,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    release_on_cancel: bool,
    metrics: Option<LeaderElectionMetrics>,
}

impl<L: fmt::Debug> fmt::Debug for LeaderElectionConfig<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElectionConfig")
            .field("lock", &self.lock)
            .field("identity", &self.identity)
            .field("name", &self.name)
            .field("lease_duration", &self.lease_duration)
            .field("renew_deadline", &self.renew_deadline)
            .field("retry_period", &self.retry_period)
            .field("release_on_cancel", &self.release_on_cancel)
            .finish_non_exhaustive()
    }
}

impl<L: Lock> LeaderElectionConfig<L> {
    /// A configuration on `lock` with client-go's defaults: 15 s lease, 10 s renew
    /// deadline, 2 s retry period, no release on cancel, identity
    /// [`default_identity()`](default_identity), no metrics.
    pub fn new(lock: L) -> Self {
        Self {
            lock,
            identity: None,
            name: None,
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            release_on_cancel: false,
            metrics: None,
        }
    }

    /// The lock the candidates contend for.
    pub fn lock(&self) -> &L {
        &self.lock
    }

    /// This candidate's identity, written to the Lease as its holder. It must be unique
    /// among the candidates (the pod name, say): two candidates with one identity both
    /// believe they hold the lease.
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = Some(identity.into());
        self
    }

    /// The `name` label of the metric (default: the lock's name, i.e. the Lease's).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// How long the other candidates wait after they last saw the record change
    /// (default 15 s; whole seconds).
    pub fn lease_duration(mut self, duration: Duration) -> Self {
        self.lease_duration = duration;
        self
    }

    /// How long the leader keeps trying to renew, from its last successful renewal,
    /// before it gives up (default 10 s).
    pub fn renew_deadline(mut self, deadline: Duration) -> Self {
        self.renew_deadline = deadline;
        self
    }

    /// Time between attempts to acquire or renew (default 2 s).
    pub fn retry_period(mut self, period: Duration) -> Self {
        self.retry_period = period;
        self
    }

    /// Whether a leader that stops on its own (cancelled, or its work returned) clears the
    /// Lease's holder once its work has returned, so that another candidate takes over at
    /// once (default false: the others wait for the lease to expire).
    pub fn release_on_cancel(mut self, release: bool) -> Self {
        self.release_on_cancel = release;
        self
    }

    /// Reports leadership in `metrics` (`leader_election_master_status{name}`).
    pub fn metrics(mut self, metrics: &LeaderElectionMetrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// Checks the identity and the timing: `lease_duration > renew_deadline >
    /// 1.2 × retry_period > 0`, and the lease duration in whole seconds.
    pub fn validate(&self) -> Result<(), ConfigError> {
        validate_timing(
            self.identity.as_deref(),
            self.lease_duration,
            self.renew_deadline,
            self.retry_period,
        )
    }
}

/// The rules of [`LeaderElectionConfig::validate`], shared with the sharded manager's
/// membership: a non-empty identity (when given) and `lease_duration > renew_deadline >
/// 1.2 × retry_period > 0`, the lease duration in whole seconds.
pub fn validate_timing(
    identity: Option<&str>,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
) -> Result<(), ConfigError> {
    if identity == Some("") {
        return Err(ConfigError::EmptyIdentity);
    }
    for (what, d) in [
        ("the lease duration", lease_duration),
        ("the renew deadline", renew_deadline),
        ("the retry period", retry_period),
    ] {
        if d.is_zero() {
            return Err(ConfigError::Zero(what));
        }
    }
    if lease_duration.subsec_nanos() != 0 || i32::try_from(lease_duration.as_secs()).is_err() {
        return Err(ConfigError::LeaseDurationNotWholeSeconds(lease_duration));
    }
    if lease_duration <= renew_deadline {
        return Err(ConfigError::LeaseNotLongerThanRenewDeadline {
            lease_duration,
            renew_deadline,
        });
    }
    if renew_deadline <= retry_period.mul_f64(JITTER_FACTOR) {
        return Err(ConfigError::RenewDeadlineTooShort {
            renew_deadline,
            retry_period,
        });
    }
    Ok(())
}

/// A default identity: the host name (in a pod, the pod's name), `_`, and ten random
/// alphanumeric characters, so that two processes on one host differ.
pub fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "kubekit".to_owned());
    let suffix: String = std::iter::repeat_with(fastrand::alphanumeric)
        .take(10)
        .collect();
    format!("{host}_{suffix}")
}

type StoppedFn = Box<dyn FnOnce() + Send>;
type NewLeaderFn = Box<dyn FnMut(&str) + Send>;

/// What a [`LeaderElector`] calls (client-go's `LeaderCallbacks`).
///
/// - `on_started_leading(token)` makes the work future, once leadership is acquired; the
///   elector polls it (in the task running [`LeaderElector::run`]) and cancels `token`
///   when leadership ends or `run`'s own token fires. The work must stop soon after the
///   token is cancelled (see the [module docs](self)).
/// - `on_stopped_leading()` is called once, when this candidate stops being the leader
///   (not if it never led, unlike client-go).
/// - `on_new_leader(identity)` is called each time the holder this candidate observes
///   changes to another non-empty identity, this candidate's own included.
///
/// The two plain callbacks run on the elector's task: they must not block.
pub struct LeaderCallbacks<F> {
    on_started_leading: F,
    on_stopped_leading: Option<StoppedFn>,
    on_new_leader: Option<NewLeaderFn>,
}

impl<F> fmt::Debug for LeaderCallbacks<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderCallbacks")
            .field("on_stopped_leading", &self.on_stopped_leading.is_some())
            .field("on_new_leader", &self.on_new_leader.is_some())
            .finish_non_exhaustive()
    }
}

impl<F, Fut> LeaderCallbacks<F>
where
    F: FnOnce(CancellationToken) -> Fut,
    Fut: Future<Output = ()>,
{
    /// Callbacks whose work, once leading, is `on_started_leading(token)`.
    pub fn new(on_started_leading: F) -> Self {
        Self {
            on_started_leading,
            on_stopped_leading: None,
            on_new_leader: None,
        }
    }

    /// Calls `f` once when this candidate stops being the leader.
    pub fn on_stopped_leading(mut self, f: impl FnOnce() + Send + 'static) -> Self {
        self.on_stopped_leading = Some(Box::new(f));
        self
    }

    /// Calls `f` with the identity of each new leader this candidate observes.
    pub fn on_new_leader(mut self, f: impl FnMut(&str) + Send + 'static) -> Self {
        self.on_new_leader = Some(Box::new(f));
        self
    }
}

/// How [`LeaderElector::run`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOutcome {
    /// The `cancel` token fired: before leadership was acquired, or while leading (the work
    /// then returned and, with `release_on_cancel`, the lease was released).
    Cancelled,
    /// Leadership was lost (renew deadline passed, or another holder observed); the work
    /// was cancelled at that moment and has returned.
    LeadershipLost,
    /// The work returned on its own while leading; with `release_on_cancel`, the lease was
    /// released.
    WorkFinished,
}

/// The result of one attempt to acquire or renew.
enum Attempt {
    /// This candidate holds the lease (acquired or renewed).
    Held,
    /// Someone else holds it (`""`: nobody, while this candidate was leading).
    HeldBy(String),
}

/// What this candidate last read or wrote, and when (its own clock).
struct Observed {
    current: Option<VersionedRecord>,
    /// When the record last changed, as seen from here: the start of its lease.
    at: Instant,
}

impl Observed {
    /// Whether the observed lease is still running by the local clock.
    fn valid_at(&self, now: Instant) -> bool {
        let secs = self
            .current
            .as_ref()
            .map_or(0, |c| c.record.lease_duration_seconds.max(0));
        self.at + Duration::from_secs(secs.unsigned_abs().into()) > now
    }
}

struct Inner<L> {
    lock: L,
    identity: String,
    name: String,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    release_on_cancel: bool,
    observed: Mutex<Observed>,
    leading: AtomicBool,
    /// Until when writes are allowed: see [`LeaderElector::fence`].
    fence: Arc<Fence>,
    running: AtomicBool,
    master_status: Option<Gauge>,
}

/// The local instant until which this candidate's leadership holds, while it leads: the
/// renew deadline counted from when its last successful renewal (or its acquisition) was
/// sent.
struct Fence {
    lock: String,
    until: Mutex<Option<Instant>>,
}

impl Fence {
    fn check(&self) -> Result<(), String> {
        match *self.until.lock() {
            Some(until) if Instant::now() < until => Ok(()),
            Some(_) => Err(format!(
                "the renew deadline of leader lease {} has passed by this replica's clock",
                self.lock
            )),
            None => Err(format!(
                "this replica does not hold leader lease {}",
                self.lock
            )),
        }
    }
}

/// A candidate in a leader election (client-go's `LeaderElector`); see the
/// [module docs](self) for the guarantees.
///
/// Cheap to clone: clones share the candidate (call [`run`](Self::run) on one, ask
/// [`is_leader`](Self::is_leader) on another).
pub struct LeaderElector<L = LeaseLock> {
    inner: Arc<Inner<L>>,
}

impl<L> Clone for LeaderElector<L> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<L> fmt::Debug for LeaderElector<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElector")
            .field("identity", &self.inner.identity)
            .field("name", &self.inner.name)
            .field("leading", &self.inner.leading.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Resets the elector's state when `run` ends or is dropped, and cancels the work's token.
struct RunGuard<'a, L> {
    inner: &'a Inner<L>,
    leading: Option<CancellationToken>,
}

impl<L> Drop for RunGuard<'_, L> {
    fn drop(&mut self) {
        if let Some(token) = self.leading.take() {
            token.cancel();
        }
        self.inner.set_leading(false);
        self.inner.running.store(false, Ordering::Release);
    }
}

impl<L> Inner<L> {
    fn set_leading(&self, leading: bool) {
        if !leading {
            *self.fence.until.lock() = None;
        }
        self.leading.store(leading, Ordering::Release);
        if let Some(gauge) = &self.master_status {
            gauge.set(i64::from(leading));
        }
    }
}

/// Now, to the microsecond (what a Lease keeps), so a record read back equals the one
/// written.
pub fn now_micros() -> Timestamp {
    let now = Timestamp::now();
    Timestamp::from_microsecond(now.as_microsecond()).unwrap_or(now)
}

/// `now`, or a microsecond after `last` if the wall clock has not passed it: every renewal
/// by one holder changes the record (its `renewTime`), so every candidate watching restarts
/// its wait, even when the wall clock is coarse or stepped back.
pub fn strictly_after(now: Timestamp, last: Option<Timestamp>) -> Timestamp {
    match last {
        Some(last) if now <= last => {
            Timestamp::from_microsecond(last.as_microsecond().saturating_add(1)).unwrap_or(now)
        }
        _ => now,
    }
}

impl<L: Lock> LeaderElector<L> {
    /// A candidate with `config`, or why the configuration is refused (see
    /// [`LeaderElectionConfig::validate`]).
    pub fn new(config: LeaderElectionConfig<L>) -> Result<Self, ConfigError> {
        config.validate()?;
        let identity = config.identity.unwrap_or_else(default_identity);
        let name = config.name.unwrap_or_else(|| config.lock.name().to_owned());
        let master_status = config.metrics.map(|m| {
            let gauge = m.master_status_for(&name);
            gauge.set(0);
            gauge
        });
        let fence = Arc::new(Fence {
            lock: config.lock.describe(),
            until: Mutex::new(None),
        });
        Ok(Self {
            inner: Arc::new(Inner {
                lock: config.lock,
                identity,
                name,
                lease_duration: config.lease_duration,
                renew_deadline: config.renew_deadline,
                retry_period: config.retry_period,
                release_on_cancel: config.release_on_cancel,
                observed: Mutex::new(Observed {
                    current: None,
                    at: Instant::now(),
                }),
                leading: AtomicBool::new(false),
                fence,
                running: AtomicBool::new(false),
                master_status,
            }),
        })
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        &self.inner.identity
    }

    /// The lock underneath.
    pub fn lock(&self) -> &L {
        &self.inner.lock
    }

    /// Whether this candidate is leading now: from the moment it acquired the lease to the
    /// moment its leadership ended (lost, or released after its work returned).
    pub fn is_leader(&self) -> bool {
        self.inner.leading.load(Ordering::Acquire)
    }

    /// A guard for [`RestClient::with_write_guard`](kubekit_client::rest::RestClient::with_write_guard)
    /// that allows a write only while this candidate leads *by its own clock, at the
    /// moment the write is sent*: from the acquisition until the renew deadline counted
    /// from when the last successful renewal was sent. This is the check the elector's
    /// own timers make, made again right before each write, so it holds even when those
    /// timers have not run: a leader paused (SIGSTOP, swapped out, a long stall) past its
    /// renew deadline and resumed has its writes refused ([`Error::Fenced`](kubekit_client::rest::Error::Fenced))
    /// before another candidate may have acquired the lease, and before the elector has
    /// noticed. A write that passed the check and was then paused on its way is not
    /// covered (the API server does not check who writes).
    pub fn fence(&self) -> kubekit_client::rest::WriteGuard {
        let fence = Arc::clone(&self.inner.fence);
        Arc::new(move || fence.check())
    }

    /// The holder of the lease as last observed by this candidate (client-go's
    /// `GetLeader`); `None` before the first read or when nobody holds it.
    pub fn get_leader(&self) -> Option<String> {
        self.inner
            .observed
            .lock()
            .current
            .as_ref()
            .map(|c| c.record.holder_identity.clone())
            .filter(|h| !h.is_empty())
    }

    /// Takes part in the election until `cancel` fires or leadership ends.
    ///
    /// Tries to acquire the lease every `retry_period` (with jitter); once acquired, sets
    /// [`is_leader`](Self::is_leader), makes the work with `callbacks`'s
    /// `on_started_leading(token)` and polls it while renewing the lease every
    /// `retry_period`. Returns:
    ///
    /// - [`RunOutcome::Cancelled`] when `cancel` fires before leadership, or, while leading,
    ///   once the work (whose token is cancelled with `cancel`) has returned and the lease
    ///   was released (with `release_on_cancel`);
    /// - [`RunOutcome::LeadershipLost`] once the work has returned after leadership was lost
    ///   (the token was cancelled the moment it was lost);
    /// - [`RunOutcome::WorkFinished`] when the work returned on its own (the lease is then
    ///   released, with `release_on_cancel`).
    ///
    /// `run` may be called again after it returned. Dropping its future cancels the work's
    /// token and stops everything at once (without releasing the lease).
    ///
    /// # Panics
    ///
    /// If another `run` of this elector (or a clone) is in progress.
    pub async fn run<F, Fut>(
        &self,
        cancel: CancellationToken,
        callbacks: LeaderCallbacks<F>,
    ) -> RunOutcome
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = ()>,
    {
        let inner = &*self.inner;
        assert!(
            !inner.running.swap(true, Ordering::AcqRel),
            "LeaderElector::run called while another run of the same elector is in progress"
        );
        let mut guard = RunGuard {
            inner,
            leading: None,
        };
        let LeaderCallbacks {
            on_started_leading,
            on_stopped_leading,
            mut on_new_leader,
        } = callbacks;
        let mut reported = String::new();
        let describe = inner.lock.describe();

        // Acquire.
        tracing::info!(lock = %describe, identity = %inner.identity, "attempting to acquire leader lease");
        let acquired_sent = loop {
            let sent = Instant::now();
            // An attempt that hangs is abandoned after the renew deadline, like a renewal.
            let attempt =
                tokio::time::timeout(inner.renew_deadline, self.try_acquire_or_renew(false));
            let result = tokio::select! {
                biased;
                _ = cancel.cancelled() => return RunOutcome::Cancelled,
                r = attempt => r.unwrap_or_else(|_| Err(kubekit_client::rest::Error::Timeout {
                    verb: "acquire".into(),
                    url: describe.clone(),
                    after: inner.renew_deadline,
                })),
            };
            self.report_new_leader(&mut reported, &mut on_new_leader);
            match result {
                Ok(Attempt::Held) => break sent,
                Ok(Attempt::HeldBy(holder)) => {
                    tracing::debug!(lock = %describe, %holder, "lease is held and has not expired");
                }
                Err(e) => {
                    tracing::warn!(lock = %describe, error = %e, "failed to acquire leader lease");
                }
            }
            let wait = kubekit_client::retry::jitter(inner.retry_period, JITTER_FACTOR);
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return RunOutcome::Cancelled,
                _ = sleep(wait) => {}
            }
        };

        // Lead.
        tracing::info!(lock = %describe, identity = %inner.identity, "acquired leader lease");
        let leading = cancel.child_token();
        guard.leading = Some(leading.clone());
        let mut deadline = acquired_sent + inner.renew_deadline;
        *inner.fence.until.lock() = Some(deadline);
        inner.set_leading(true);
        let mut work = std::pin::pin!(on_started_leading(leading.clone()));
        let mut next_renew = Instant::now() + inner.retry_period;
        let mut attempt: Option<(
            Instant,
            BoxFuture<'_, kubekit_client::rest::Result<Attempt>>,
        )> = None;
        let mut cancelled = false;
        let lost_to = loop {
            tokio::select! {
                biased;
                _ = sleep_until(deadline) => {
                    tracing::warn!(lock = %describe, deadline = ?inner.renew_deadline,
                        "could not renew the leader lease within the renew deadline");
                    break None;
                }
                _ = cancel.cancelled(), if !cancelled => {
                    // `leading` is a child of `cancel`: the work is already told to stop.
                    tracing::info!(lock = %describe, "cancelled: waiting for the work to return");
                    cancelled = true;
                }
                () = &mut work => {
                    drop(attempt.take());
                    let outcome = if cancelled { RunOutcome::Cancelled } else { RunOutcome::WorkFinished };
                    leading.cancel();
                    if inner.release_on_cancel {
                        self.release().await;
                    }
                    inner.set_leading(false);
                    tracing::info!(lock = %describe, ?outcome, "stopped leading");
                    if let Some(f) = on_stopped_leading {
                        f();
                    }
                    return outcome;
                }
                r = async { attempt.as_mut().expect("guarded by is_some").1.as_mut().await },
                    if attempt.is_some() =>
                {
                    let (sent, _) = attempt.take().expect("an attempt was in flight");
                    self.report_new_leader(&mut reported, &mut on_new_leader);
                    match r {
                        Ok(Attempt::Held) => {
                            deadline = sent + inner.renew_deadline;
                            *inner.fence.until.lock() = Some(deadline);
                        }
                        Ok(Attempt::HeldBy(holder)) => break Some(holder),
                        Err(e) => tracing::warn!(lock = %describe, error = %e,
                            "failed to renew the leader lease; retrying"),
                    }
                    next_renew = Instant::now() + inner.retry_period;
                }
                _ = sleep_until(next_renew), if attempt.is_none() => {
                    attempt = Some((Instant::now(), Box::pin(self.try_acquire_or_renew(true))));
                }
            }
        };

        // Leadership lost: stop the work at once, then wait for it to return.
        drop(attempt);
        leading.cancel();
        inner.set_leading(false);
        tracing::warn!(lock = %describe, new_holder = ?lost_to, "leadership lost");
        if let Some(f) = on_stopped_leading {
            f();
        }
        let margin = inner.lease_duration.saturating_sub(inner.renew_deadline);
        tokio::select! {
            () = &mut work => {}
            _ = sleep(margin) => {
                tracing::error!(lock = %describe,
                    "the work has not returned {margin:?} after leadership was lost: another \
                     candidate may be leading now");
                work.await;
            }
        }
        RunOutcome::LeadershipLost
    }

    /// Calls `on_new_leader` if the observed holder changed to another non-empty identity.
    fn report_new_leader(&self, reported: &mut String, on_new_leader: &mut Option<NewLeaderFn>) {
        let Some(holder) = self.get_leader() else {
            return;
        };
        if holder != *reported {
            tracing::info!(lock = %self.inner.lock.describe(), leader = %holder, "new leader observed");
            if let Some(f) = on_new_leader.as_mut() {
                f(&holder);
            }
            *reported = holder;
        }
    }

    /// Records a record read from the lock: the observation time restarts only if the
    /// record changed (a new resourceVersion alone does not renew anyone's lease). Returns
    /// whether the lease is valid by the local clock.
    fn observe_read(&self, read: VersionedRecord) -> bool {
        let now = Instant::now();
        let mut observed = self.inner.observed.lock();
        let changed = observed.current.as_ref().map(|c| &c.record) != Some(&read.record);
        if changed {
            observed.at = now;
        }
        observed.current = Some(read);
        observed.valid_at(now)
    }

    /// Records a record this candidate wrote.
    fn observe_written(&self, written: VersionedRecord) {
        let mut observed = self.inner.observed.lock();
        observed.current = Some(written);
        observed.at = Instant::now();
    }

    /// client-go's `tryAcquireOrRenew`, with one difference: a `leading` candidate that reads
    /// another holder (or none) reports it at once instead of retrying until its deadline.
    async fn try_acquire_or_renew(&self, leading: bool) -> kubekit_client::rest::Result<Attempt> {
        let inner = &*self.inner;
        let now = {
            let observed = inner.observed.lock();
            let own_last = observed
                .current
                .as_ref()
                .filter(|c| c.record.holder_identity == inner.identity)
                .and_then(|c| c.record.renew_time);
            strictly_after(now_micros(), own_last)
        };
        let mut desired = LeaderElectionRecord {
            holder_identity: inner.identity.clone(),
            lease_duration_seconds: i32::try_from(inner.lease_duration.as_secs())
                .unwrap_or(i32::MAX),
            acquire_time: Some(now),
            renew_time: Some(now),
            leader_transitions: 0,
        };

        // 1. Fast path: the holder renews on the resourceVersion it last wrote.
        let fast = {
            let observed = inner.observed.lock();
            observed
                .current
                .as_ref()
                .filter(|c| {
                    c.record.holder_identity == inner.identity && observed.valid_at(Instant::now())
                })
                .cloned()
        };
        if let Some(old) = fast {
            desired.acquire_time = old.record.acquire_time;
            desired.leader_transitions = old.record.leader_transitions;
            match inner.lock.update(&desired, &old.resource_version).await {
                Ok(written) => {
                    self.observe_written(written);
                    return Ok(Attempt::Held);
                }
                Err(e) => {
                    tracing::debug!(lock = %inner.lock.describe(), error = %e,
                        "optimistic renewal failed; reading the lease again");
                }
            }
        }

        // 2. Read (or create) the record.
        let Some(current) = inner.lock.get().await? else {
            if leading {
                // Deleted under us: someone else may be creating it right now.
                return Ok(Attempt::HeldBy(String::new()));
            }
            desired.acquire_time = Some(now);
            let created = inner.lock.create(&desired).await?;
            self.observe_written(created);
            return Ok(Attempt::Held);
        };

        // 3. Who holds it, and is it still valid by our clock?
        let holder = current.record.holder_identity.clone();
        let transitions = current.record.leader_transitions;
        let acquired_at = current.record.acquire_time;
        let resource_version = current.resource_version.clone();
        let valid = self.observe_read(current);
        if holder != inner.identity {
            if leading || (!holder.is_empty() && valid) {
                return Ok(Attempt::HeldBy(holder));
            }
            // Free or expired: take it, one more transition.
            desired.leader_transitions = transitions.saturating_add(1);
        } else {
            desired.acquire_time = acquired_at;
            desired.leader_transitions = transitions;
        }

        // 4. Write, on the resourceVersion just read: a 409 means someone else wrote first.
        let written = inner.lock.update(&desired, &resource_version).await?;
        self.observe_written(written);
        Ok(Attempt::Held)
    }

    /// Gives the lease up (client-go's `release`): reads it and, if this candidate still
    /// holds it, clears the holder on the resourceVersion read; a conflict reads again.
    /// Bounded by the renew deadline. Returns whether the lease is no longer ours.
    async fn release(&self) -> bool {
        let inner = &*self.inner;
        let describe = inner.lock.describe();
        let attempt = async {
            for _ in 0..3 {
                let current = match inner.lock.get().await {
                    Ok(Some(current)) => current,
                    Ok(None) => return true,
                    Err(e) => {
                        tracing::warn!(lock = %describe, error = %e, "release: cannot read the lease");
                        return false;
                    }
                };
                if current.record.holder_identity != inner.identity {
                    self.observe_read(current);
                    return true;
                }
                let now = now_micros();
                let released = LeaderElectionRecord {
                    holder_identity: String::new(),
                    lease_duration_seconds: 1,
                    acquire_time: Some(now),
                    renew_time: Some(now),
                    leader_transitions: current.record.leader_transitions,
                };
                match inner
                    .lock
                    .update(&released, &current.resource_version)
                    .await
                {
                    Ok(written) => {
                        self.observe_written(written);
                        tracing::info!(lock = %describe, "released the leader lease");
                        return true;
                    }
                    Err(e) if e.is_conflict() => continue,
                    Err(e) => {
                        tracing::warn!(lock = %describe, error = %e, "failed to release the lease");
                        return false;
                    }
                }
            }
            false
        };
        tokio::time::timeout(inner.renew_deadline, attempt)
            .await
            .unwrap_or(false)
    }
}
