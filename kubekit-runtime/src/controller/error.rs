//! Reconcile errors and what becomes of their keys: [`ErrorPolicy`], [`ReconcileError`]
//! and [`ReconcileResultExt`].

use std::error::Error as StdError;
use std::fmt;
use std::ops::Deref;
use std::time::Duration;

use crate::finalizer::FinalizerError;

/// What becomes of a key whose reconcile failed (kube-rs's `error_policy` answer,
/// controller-runtime's `TerminalError` and `Result.RequeueAfter` for errors). See the
/// [module docs](super) for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorPolicy {
    /// Retry through the queue's rate limiter (per-key exponential backoff), up to
    /// [`Runner::max_retries`](super::Runner::max_retries) times.
    #[default]
    Retry,
    /// Reconcile the key again after this delay, instead of the rate limiter's.
    RequeueAfter(Duration),
    /// Retrying cannot help (an invalid spec, a refused permission): do not retry; the
    /// key is reconciled again when its object changes. Logged, counted, and (in a
    /// manager's controller) recorded as a Warning Event on the object.
    Permanent,
}

/// The error a reconcile returns: any error, and the [`ErrorPolicy`] it asks for.
///
/// `?` on any [`std::error::Error`] (and `.into()` of a `&str`, a `String` or a
/// `Box<dyn Error + Send + Sync>`) makes one that is retried; [`permanent`](Self::permanent)
/// and [`requeue_after`](Self::requeue_after) change that, and
/// [`ReconcileResultExt`] does the same on a `Result`. It dereferences to the error it
/// holds (`err.to_string()`, `err.downcast_ref::<kubekit::rest::Error>()`,
/// `err.source()`), which [`into_inner`](Self::into_inner) gives back.
///
/// Code written for a `Box<dyn Error + Send + Sync>` error carries over: one made with
/// `.into()` or `?` makes a `ReconcileError` the same way, and `Box::new(e)` is written
/// `e.into()` or `ReconcileError::new(e)`. Where a `std::error::Error` is wanted,
/// [`as_ref`](AsRef::as_ref) lends the one it holds as `&(dyn Error + Send + Sync)` and
/// [`into_inner`](Self::into_inner) gives it back boxed
/// (`.map_err(ReconcileError::into_inner)?` in a function returning
/// `Box<dyn Error + Send + Sync>`). It is not itself a `std::error::Error`, as
/// `anyhow::Error` is not: Rust's coherence rules would then forbid the conversion, from
/// any error, a `&str` or a `String`, that lets `?` and `.into()` make one.
///
/// ```
/// use std::time::Duration;
/// use kubekit::controller::{ErrorPolicy, ReconcileError};
///
/// let err: ReconcileError = "the API server is down".into();
/// assert_eq!(err.policy(), ErrorPolicy::Retry);
/// let err = ReconcileError::new("spec.replicas is negative").permanent();
/// assert_eq!(err.policy(), ErrorPolicy::Permanent);
/// let err = ReconcileError::new("waiting for the volume").requeue_after(Duration::from_secs(10));
/// assert_eq!(err.policy(), ErrorPolicy::RequeueAfter(Duration::from_secs(10)));
/// assert_eq!(err.to_string(), "waiting for the volume");
/// ```
pub struct ReconcileError {
    error: Box<dyn StdError + Send + Sync>,
    policy: ErrorPolicy,
}

impl ReconcileError {
    /// `error`, to be retried ([`ErrorPolicy::Retry`]) — unless `error`, or one of its
    /// [sources](StdError::source), is a [`FinalizerError`] around a `ReconcileError`:
    /// then that one's policy, so `.permanent()` or `.requeue_after(d)` inside a
    /// finalizer's `Apply` or `Cleanup` survives `?` on the finalizer's result.
    ///
    /// ```
    /// use kubekit::controller::{ErrorPolicy, ReconcileError};
    /// use kubekit::finalizer::FinalizerError;
    ///
    /// let inner = ReconcileError::new("spec.port is out of range").permanent();
    /// let err = ReconcileError::new(FinalizerError::ApplyFailed(inner));
    /// assert_eq!(err.policy(), ErrorPolicy::Permanent);
    /// assert_eq!(err.to_string(), "apply failed: spec.port is out of range");
    /// ```
    pub fn new(error: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        let error = error.into();
        let policy = carried_policy(&*error).unwrap_or_default();
        Self { error, policy }
    }

    /// The same error, not to be retried until its object changes
    /// ([`ErrorPolicy::Permanent`]).
    #[must_use]
    pub fn permanent(self) -> Self {
        self.with_policy(ErrorPolicy::Permanent)
    }

    /// The same error, to be reconciled again after `delay`
    /// ([`ErrorPolicy::RequeueAfter`]).
    #[must_use]
    pub fn requeue_after(self, delay: Duration) -> Self {
        self.with_policy(ErrorPolicy::RequeueAfter(delay))
    }

    /// The same error, with `policy`.
    #[must_use]
    pub fn with_policy(mut self, policy: ErrorPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// What the error asks for.
    pub fn policy(&self) -> ErrorPolicy {
        self.policy
    }

    /// The error itself.
    pub fn into_inner(self) -> Box<dyn StdError + Send + Sync> {
        self.error
    }
}

/// The policy of the first [`FinalizerError`] around a [`ReconcileError`] in `error`'s
/// chain (itself, then its sources) that has one.
fn carried_policy(error: &(dyn StdError + 'static)) -> Option<ErrorPolicy> {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(policy) = error
            .downcast_ref::<FinalizerError<ReconcileError>>()
            .and_then(FinalizerError::policy)
        {
            return Some(policy);
        }
        next = error.source();
    }
    None
}

impl<E: Into<Box<dyn StdError + Send + Sync>>> From<E> for ReconcileError {
    fn from(error: E) -> Self {
        Self::new(error)
    }
}

impl Deref for ReconcileError {
    type Target = dyn StdError + Send + Sync;

    fn deref(&self) -> &Self::Target {
        &*self.error
    }
}

impl AsRef<dyn StdError + Send + Sync> for ReconcileError {
    fn as_ref(&self) -> &(dyn StdError + Send + Sync + 'static) {
        &*self.error
    }
}

impl fmt::Display for ReconcileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl fmt::Debug for ReconcileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReconcileError")
            .field("error", &self.error)
            .field("policy", &self.policy)
            .finish()
    }
}

/// Sets the [`ErrorPolicy`] of a `Result`'s error:
/// `client.get(name).await.permanent()?`.
pub trait ReconcileResultExt<T> {
    /// The error, if any, as a permanent [`ReconcileError`].
    fn permanent(self) -> Result<T, ReconcileError>;
    /// The error, if any, as a [`ReconcileError`] to reconcile again after `delay`.
    fn requeue_after(self, delay: Duration) -> Result<T, ReconcileError>;
}

impl<T, E: Into<ReconcileError>> ReconcileResultExt<T> for Result<T, E> {
    fn permanent(self) -> Result<T, ReconcileError> {
        self.map_err(|e| e.into().permanent())
    }

    fn requeue_after(self, delay: Duration) -> Result<T, ReconcileError> {
        self.map_err(|e| e.into().requeue_after(delay))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_mark_on_any_error_retries_and_the_result_extension_sets_the_policy() {
        fn parse(s: &str) -> Result<u32, ReconcileError> {
            Ok(s.parse::<u32>()?)
        }
        let err = parse("x").unwrap_err();
        assert_eq!(err.policy(), ErrorPolicy::Retry);
        assert!(
            err.is::<std::num::ParseIntError>(),
            "dereferences to the error"
        );
        let err = "x".parse::<u32>().permanent().unwrap_err();
        assert_eq!(err.policy(), ErrorPolicy::Permanent);
        let err = "x"
            .parse::<u32>()
            .requeue_after(Duration::from_secs(3))
            .unwrap_err();
        assert_eq!(
            err.policy(),
            ErrorPolicy::RequeueAfter(Duration::from_secs(3))
        );
        let boxed: Box<dyn std::error::Error + Send + Sync> = "boxed".into();
        let err = ReconcileError::from(boxed).with_policy(ErrorPolicy::Permanent);
        assert_eq!(err.to_string(), "boxed");
        assert_eq!(err.into_inner().to_string(), "boxed");
        let from_string: ReconcileError = format!("{} failed", "sync").into();
        assert_eq!(format!("{from_string}"), "sync failed");
    }

    #[test]
    fn a_reconcile_error_lends_and_gives_back_the_std_error_it_holds() {
        fn reconcile() -> Result<(), ReconcileError> {
            Err(ReconcileError::new(std::fmt::Error).permanent())
        }
        fn run() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
            reconcile().map_err(ReconcileError::into_inner)?;
            Ok(())
        }
        assert!(run().unwrap_err().is::<std::fmt::Error>());
        let err = reconcile().unwrap_err();
        let lent: &(dyn std::error::Error + Send + Sync) = err.as_ref();
        assert!(lent.is::<std::fmt::Error>());
        assert_eq!(
            err.policy(),
            ErrorPolicy::Permanent,
            "lending keeps the policy"
        );
    }
}
