//! Rate limiters: how long an item waits before it is retried.
//!
//! # Contract
//!
//! A [`RateLimiter`] answers one question, [`when`](RateLimiter::when): how long should this
//! item wait before it is added again? Each call counts as one failure (one requeue) of the
//! item. [`forget`](RateLimiter::forget) clears an item's history (call it once the item
//! succeeds, or when you give up on it), and [`num_requeues`](RateLimiter::num_requeues)
//! reports how many failures are on record.
//!
//! The limiters here are client-go's:
//!
//! | limiter | delay for the n-th failure of an item (n from 1) |
//! |---|---|
//! | [`ItemExponentialFailureRateLimiter`] | `base · 2^(n-1)`, capped at `max` (never overflows) |
//! | [`ItemFastSlowRateLimiter`] | `fast` for the first `max_fast_attempts`, `slow` afterwards |
//! | [`BucketRateLimiter`] | overall token bucket, not per item: 0 while tokens last, then one token's worth of time per call |
//! | [`MaxOfRateLimiter`] | the largest delay of its limiters (all of them record the failure) |
//! | [`WithMaxWaitRateLimiter`] | its limiter's delay, capped at a maximum |
//!
//! [`default_controller_rate_limiter`] combines a per-item exponential backoff (5 ms to
//! 1000 s) with an overall bucket (10 per second, burst 100): one item failing over and over
//! backs off exponentially, and many items failing at once are let through at 10 per
//! second after the first 100.
//!
//! # Concurrency
//!
//! Every limiter is `Send + Sync` and takes `&self`; its state sits behind a short lock, so
//! one limiter may serve many workers (and, wrapped in an `Arc`, many queues). Time is
//! tokio's clock, so `tokio::time::pause` controls the token bucket in tests.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use kubekit::workqueue::{ItemExponentialFailureRateLimiter, RateLimiter};
//!
//! let limiter = ItemExponentialFailureRateLimiter::new(
//!     Duration::from_millis(5),
//!     Duration::from_secs(1000),
//! );
//! let key = "default/web".to_string();
//! assert_eq!(limiter.when(&key), Duration::from_millis(5));
//! assert_eq!(limiter.when(&key), Duration::from_millis(10));
//! assert_eq!(limiter.when(&key), Duration::from_millis(20));
//! assert_eq!(limiter.num_requeues(&key), 3);
//! limiter.forget(&key);
//! assert_eq!(limiter.when(&key), Duration::from_millis(5));
//! ```

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use hashbrown::HashMap;
use kubekit_client::flowcontrol::TokenBucket;
use parking_lot::Mutex;

/// The delay a token bucket returns when it can never grant a token (burst 0, or a rate of
/// 0): about 292 years, like Go's `rate.InfDuration`.
pub const INFINITE_DELAY: Duration = Duration::from_nanos(i64::MAX as u64);

/// Decides how long an item waits before it is retried, and remembers its failures.
///
/// Implement it to plug your own policy into a
/// [`RateLimitingQueue`](super::RateLimitingQueue).
///
/// ```
/// use std::time::Duration;
/// use kubekit::workqueue::RateLimiter;
///
/// /// Always waits one second, remembers nothing.
/// struct OneSecond;
///
/// impl<T> RateLimiter<T> for OneSecond {
///     fn when(&self, _item: &T) -> Duration {
///         Duration::from_secs(1)
///     }
///     fn forget(&self, _item: &T) {}
///     fn num_requeues(&self, _item: &T) -> usize {
///         0
///     }
/// }
///
/// assert_eq!(OneSecond.when(&"x"), Duration::from_secs(1));
/// ```
pub trait RateLimiter<T>: Send + Sync {
    /// Records one more failure of `item` and returns how long it should wait.
    fn when(&self, item: &T) -> Duration;
    /// Clears the history of `item` (after success, or when giving up on it).
    fn forget(&self, item: &T);
    /// How many failures of `item` are on record.
    fn num_requeues(&self, item: &T) -> usize;
}

impl<T, L: RateLimiter<T> + ?Sized> RateLimiter<T> for Box<L> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item);
    }
    fn num_requeues(&self, item: &T) -> usize {
        (**self).num_requeues(item)
    }
}

impl<T, L: RateLimiter<T> + ?Sized> RateLimiter<T> for Arc<L> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item);
    }
    fn num_requeues(&self, item: &T) -> usize {
        (**self).num_requeues(item)
    }
}

/// The failure counts of a per-item limiter.
struct Failures<T> {
    counts: Mutex<HashMap<T, u32>>,
}

impl<T: Hash + Eq + Clone> Failures<T> {
    fn new() -> Self {
        Self {
            counts: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one more failure of `item`; returns the count before it.
    fn record(&self, item: &T) -> u32 {
        let mut counts = self.counts.lock();
        if let Some(count) = counts.get_mut(item) {
            let before = *count;
            *count = count.saturating_add(1);
            before
        } else {
            counts.insert(item.clone(), 1);
            0
        }
    }

    fn get(&self, item: &T) -> usize {
        self.counts
            .lock()
            .get(item)
            .map_or(0, |&count| count as usize)
    }

    fn forget(&self, item: &T) {
        self.counts.lock().remove(item);
    }
}

/// Per-item exponential backoff: the n-th failure of an item waits `base · 2^(n-1)`,
/// capped at `max`.
///
/// The computation saturates: any number of failures returns at most `max`.
///
/// ```
/// use std::time::Duration;
/// use kubekit::workqueue::{ItemExponentialFailureRateLimiter, RateLimiter};
///
/// let limiter = ItemExponentialFailureRateLimiter::new(
///     Duration::from_millis(1),
///     Duration::from_millis(4),
/// );
/// let delays: Vec<_> = (0..4).map(|_| limiter.when(&"a")).collect();
/// assert_eq!(delays, [1, 2, 4, 4].map(Duration::from_millis));
/// assert_eq!(limiter.when(&"b"), Duration::from_millis(1)); // per item
/// ```
pub struct ItemExponentialFailureRateLimiter<T> {
    failures: Failures<T>,
    base: Duration,
    max: Duration,
}

impl<T> fmt::Debug for ItemExponentialFailureRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialFailureRateLimiter")
            .field("base", &self.base)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl<T: Hash + Eq + Clone> ItemExponentialFailureRateLimiter<T> {
    /// Backs off from `base`, doubling per failure, up to `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            failures: Failures::new(),
            base,
            max,
        }
    }
}

/// `base · 2^exp`, or `max` if that is larger (or not representable).
fn exponential(base: Duration, max: Duration, exp: u32) -> Duration {
    // Past 2^1100 every f64 product is infinite anyway.
    let factor = 2_f64.powi(exp.min(1100) as i32);
    let nanos = base.as_nanos() as f64 * factor;
    if nanos < max.as_nanos() as f64 {
        Duration::from_nanos(nanos as u64)
    } else {
        max
    }
}

impl<T: Hash + Eq + Clone + Send> RateLimiter<T> for ItemExponentialFailureRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let exp = self.failures.record(item);
        exponential(self.base, self.max, exp)
    }

    fn forget(&self, item: &T) {
        self.failures.forget(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.failures.get(item)
    }
}

/// Per-item two-speed retry: `fast` for the first `max_fast_attempts` failures of an item,
/// `slow` afterwards.
///
/// ```
/// use std::time::Duration;
/// use kubekit::workqueue::{ItemFastSlowRateLimiter, RateLimiter};
///
/// let limiter = ItemFastSlowRateLimiter::new(Duration::from_millis(5), Duration::from_secs(10), 2);
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(10));
/// ```
pub struct ItemFastSlowRateLimiter<T> {
    failures: Failures<T>,
    fast: Duration,
    slow: Duration,
    max_fast_attempts: u32,
}

impl<T> fmt::Debug for ItemFastSlowRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemFastSlowRateLimiter")
            .field("fast", &self.fast)
            .field("slow", &self.slow)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .finish_non_exhaustive()
    }
}

impl<T: Hash + Eq + Clone> ItemFastSlowRateLimiter<T> {
    /// Waits `fast` for the first `max_fast_attempts` failures, then `slow`.
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: u32) -> Self {
        Self {
            failures: Failures::new(),
            fast,
            slow,
            max_fast_attempts,
        }
    }
}

impl<T: Hash + Eq + Clone + Send> RateLimiter<T> for ItemFastSlowRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let failures = self.failures.record(item).saturating_add(1);
        if failures <= self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }

    fn forget(&self, item: &T) {
        self.failures.forget(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.failures.get(item)
    }
}

/// An overall token bucket (not per item): `burst` tokens, refilled at `qps` per second.
///
/// Each [`when`](RateLimiter::when) reserves one token and returns how long until that
/// token exists: zero while the bucket has tokens, then `1/qps` more for each call made
/// ahead of the refill. The arithmetic is that of Go's `golang.org/x/time/rate`
/// reservations (the bucket starts full; a reservation may drive it below zero). It keeps
/// no per-item history: `num_requeues` is always 0 and `forget` does nothing.
///
/// A `qps` of `f64::INFINITY` never waits; a `qps` of zero (or less) or a `burst` of zero
/// can never grant a token and returns [`INFINITE_DELAY`].
///
/// ```
/// use std::time::Duration;
/// use kubekit::workqueue::{BucketRateLimiter, RateLimiter};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let limiter = BucketRateLimiter::new(10.0, 2);
/// assert_eq!(RateLimiter::<&str>::when(&limiter, &"a"), Duration::ZERO);
/// assert_eq!(RateLimiter::<&str>::when(&limiter, &"b"), Duration::ZERO);
/// assert_eq!(RateLimiter::<&str>::when(&limiter, &"c"), Duration::from_millis(100));
/// assert_eq!(RateLimiter::<&str>::when(&limiter, &"d"), Duration::from_millis(200));
/// # }
/// ```
pub struct BucketRateLimiter {
    bucket: TokenBucket,
}

impl fmt::Debug for BucketRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BucketRateLimiter")
            .field("qps", &self.bucket.qps())
            .field("burst", &self.bucket.burst())
            .finish_non_exhaustive()
    }
}

impl BucketRateLimiter {
    /// A bucket of `burst` tokens refilled at `qps` tokens per second.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            bucket: TokenBucket::new(qps, burst),
        }
    }

    /// Reserves one token; returns how long until it is available.
    fn reserve(&self) -> Duration {
        self.bucket
            .reserve()
            .map_or(INFINITE_DELAY, |wait| wait.min(INFINITE_DELAY))
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.reserve()
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> usize {
        0
    }
}

/// Asks every limiter and returns the largest delay; `num_requeues` is the largest count,
/// and `forget` goes to all of them.
///
/// Combined with a token bucket, the bucket's burst may be exceeded when particular items
/// were delayed longer by another limiter (as in client-go).
///
/// ```
/// use std::time::Duration;
/// use kubekit::workqueue::{
///     ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter,
/// };
///
/// let limiter = MaxOfRateLimiter::new()
///     .with(ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1)))
///     .with(ItemFastSlowRateLimiter::new(Duration::from_millis(3), Duration::from_secs(1), 1));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(3)); // max(1 ms, 3 ms)
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(1)); // max(2 ms, 1 s)
/// assert_eq!(limiter.num_requeues(&"a"), 2);
/// ```
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> fmt::Debug for MaxOfRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOfRateLimiter")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<T> Default for MaxOfRateLimiter<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> MaxOfRateLimiter<T> {
    /// An empty combination (always zero delay); add limiters with [`with`](Self::with).
    pub fn new() -> Self {
        Self {
            limiters: Vec::new(),
        }
    }

    /// Adds one more limiter to ask.
    pub fn with(mut self, limiter: impl RateLimiter<T> + 'static) -> Self {
        self.limiters.push(Box::new(limiter));
        self
    }

    /// Combines already boxed limiters.
    pub fn from_limiters(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }
}

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        // Every limiter must see the failure, so no short-circuit.
        self.limiters
            .iter()
            .map(|limiter| limiter.when(item))
            .fold(Duration::ZERO, Duration::max)
    }

    fn forget(&self, item: &T) {
        for limiter in &self.limiters {
            limiter.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.limiters
            .iter()
            .map(|limiter| limiter.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// Caps the delay of another limiter at `max_wait`.
///
/// ```
/// use std::time::Duration;
/// use kubekit::workqueue::{ItemFastSlowRateLimiter, RateLimiter, WithMaxWaitRateLimiter};
///
/// let slow = ItemFastSlowRateLimiter::new(Duration::from_secs(60), Duration::from_secs(600), 1);
/// let limiter = WithMaxWaitRateLimiter::new(slow, Duration::from_secs(30));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(30));
/// assert_eq!(limiter.num_requeues(&"a"), 1);
/// ```
#[derive(Debug)]
pub struct WithMaxWaitRateLimiter<L> {
    limiter: L,
    max_wait: Duration,
}

impl<L> WithMaxWaitRateLimiter<L> {
    /// Wraps `limiter`, never returning more than `max_wait`.
    pub fn new(limiter: L, max_wait: Duration) -> Self {
        Self { limiter, max_wait }
    }
}

impl<T, L: RateLimiter<T>> RateLimiter<T> for WithMaxWaitRateLimiter<L> {
    fn when(&self, item: &T) -> Duration {
        self.limiter.when(item).min(self.max_wait)
    }

    fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.limiter.num_requeues(item)
    }
}

/// client-go's default for controllers: the larger of a per-item exponential backoff
/// (5 ms doubling to 1000 s) and an overall token bucket (10 per second, burst 100).
///
/// ```
/// use std::time::Duration;
/// use kubekit::workqueue::{RateLimiter, default_controller_rate_limiter};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let limiter = default_controller_rate_limiter();
/// assert_eq!(limiter.when(&"a".to_string()), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a".to_string()), Duration::from_millis(10));
/// # }
/// ```
pub fn default_controller_rate_limiter<T>() -> MaxOfRateLimiter<T>
where
    T: Hash + Eq + Clone + Send + 'static,
{
    MaxOfRateLimiter::new()
        .with(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        ))
        .with(BucketRateLimiter::new(10.0, 100))
}

/// client-go's default per-item limiter: exponential backoff from 1 ms doubling to 1000 s.
///
/// ```
/// use std::time::Duration;
/// use kubekit::workqueue::{RateLimiter, default_item_based_rate_limiter};
///
/// let limiter = default_item_based_rate_limiter();
/// assert_eq!(limiter.when(&1_u32), Duration::from_millis(1));
/// assert_eq!(limiter.when(&1_u32), Duration::from_millis(2));
/// ```
pub fn default_item_based_rate_limiter<T>() -> ItemExponentialFailureRateLimiter<T>
where
    T: Hash + Eq + Clone + Send,
{
    ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn exponential_doubles_per_failure_from_base() {
        let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));
        let delays: Vec<_> = (0..5).map(|_| limiter.when(&"one")).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16].map(|n| n * MS));
        assert_eq!(limiter.num_requeues(&"one"), 5);
    }

    #[test]
    fn exponential_is_capped_at_max() {
        let limiter = ItemExponentialFailureRateLimiter::new(MS, 5 * MS);
        let delays: Vec<_> = (0..5).map(|_| limiter.when(&"one")).collect();
        assert_eq!(delays, [1, 2, 4, 5, 5].map(|n| n * MS));
    }

    #[test]
    fn exponential_never_overflows() {
        let max = Duration::from_secs(1000);
        let limiter = ItemExponentialFailureRateLimiter::new(MS, max);
        for _ in 0..2000 {
            assert!(limiter.when(&"one") <= max);
        }
        assert_eq!(limiter.when(&"one"), max);
        assert_eq!(exponential(MS, Duration::MAX, u32::MAX), Duration::MAX);
        assert_eq!(exponential(Duration::MAX, Duration::MAX, 3), Duration::MAX);
    }

    #[test]
    fn exponential_counts_each_item_separately_and_forget_resets() {
        let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));
        assert_eq!(limiter.when(&"one"), MS);
        assert_eq!(limiter.when(&"one"), 2 * MS);
        assert_eq!(limiter.when(&"two"), MS);
        assert_eq!(limiter.num_requeues(&"two"), 1);
        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), MS);
    }

    #[test]
    fn fast_slow_switches_after_max_fast_attempts() {
        let limiter = ItemFastSlowRateLimiter::new(5 * MS, 10 * MS, 3);
        let delays: Vec<_> = (0..5).map(|_| limiter.when(&"one")).collect();
        assert_eq!(delays, [5, 5, 5, 10, 10].map(|n| n * MS));
        assert_eq!(limiter.num_requeues(&"one"), 5);
        assert_eq!(limiter.when(&"two"), 5 * MS);
        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), 5 * MS);
    }

    fn bucket_when(limiter: &BucketRateLimiter) -> Duration {
        RateLimiter::<()>::when(limiter, &())
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_allows_burst_then_spaces_reservations_by_one_over_qps() {
        let limiter = BucketRateLimiter::new(10.0, 3);
        for _ in 0..3 {
            assert_eq!(bucket_when(&limiter), Duration::ZERO);
        }
        assert_eq!(bucket_when(&limiter), 100 * MS);
        assert_eq!(bucket_when(&limiter), 200 * MS);
        assert_eq!(bucket_when(&limiter), 300 * MS);
        assert_eq!(RateLimiter::<()>::num_requeues(&limiter, &()), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_refills_with_time_up_to_burst() {
        let limiter = BucketRateLimiter::new(10.0, 2);
        assert_eq!(bucket_when(&limiter), Duration::ZERO);
        assert_eq!(bucket_when(&limiter), Duration::ZERO);
        assert_eq!(bucket_when(&limiter), 100 * MS); // tokens now -1
        tokio::time::advance(250 * MS).await; // -1 + 2.5 = 1.5
        assert_eq!(bucket_when(&limiter), Duration::ZERO); // 0.5
        assert_eq!(bucket_when(&limiter), 50 * MS); // -0.5
        tokio::time::advance(Duration::from_secs(60)).await; // capped at 2
        assert_eq!(bucket_when(&limiter), Duration::ZERO);
        assert_eq!(bucket_when(&limiter), Duration::ZERO);
        assert_eq!(bucket_when(&limiter), 100 * MS);
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_with_no_tokens_or_rate_never_grants() {
        assert_eq!(
            bucket_when(&BucketRateLimiter::new(10.0, 0)),
            INFINITE_DELAY
        );
        assert_eq!(bucket_when(&BucketRateLimiter::new(0.0, 5)), INFINITE_DELAY);
        assert_eq!(
            bucket_when(&BucketRateLimiter::new(f64::INFINITY, 0)),
            Duration::ZERO
        );
    }

    #[test]
    fn max_of_returns_the_largest_delay_and_records_in_all() {
        let limiter = MaxOfRateLimiter::new()
            .with(ItemExponentialFailureRateLimiter::new(
                MS,
                Duration::from_secs(1),
            ))
            .with(ItemFastSlowRateLimiter::new(3 * MS, 10 * MS, 2));
        let delays: Vec<_> = (0..5).map(|_| limiter.when(&"one")).collect();
        // exponential 1 2 4 8 16, fast-slow 3 3 10 10 10
        assert_eq!(delays, [3, 3, 10, 10, 16].map(|n| n * MS));
        assert_eq!(limiter.num_requeues(&"one"), 5);
        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), 3 * MS);
    }

    #[test]
    fn max_of_nothing_is_zero() {
        let limiter = MaxOfRateLimiter::<u8>::new();
        assert_eq!(limiter.when(&1), Duration::ZERO);
        assert_eq!(limiter.num_requeues(&1), 0);
    }

    #[test]
    fn with_max_wait_caps_the_delay() {
        let limiter = WithMaxWaitRateLimiter::new(
            ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1)),
            5 * MS,
        );
        let delays: Vec<_> = (0..5).map(|_| limiter.when(&"one")).collect();
        assert_eq!(delays, [1, 2, 4, 5, 5].map(|n| n * MS));
        assert_eq!(limiter.num_requeues(&"one"), 5);
        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn default_controller_limiter_is_exponential_per_item_and_bucket_overall() {
        let limiter = default_controller_rate_limiter::<String>();
        // Per item: 5 ms, 10 ms, ...
        assert_eq!(limiter.when(&"x".to_string()), 5 * MS);
        assert_eq!(limiter.when(&"x".to_string()), 10 * MS);
        assert_eq!(limiter.num_requeues(&"x".to_string()), 2);
        // Overall: 98 tokens left, then 100 ms per extra item.
        for i in 0..98 {
            assert_eq!(limiter.when(&format!("item-{i}")), 5 * MS);
        }
        assert_eq!(limiter.when(&"late-1".to_string()), 100 * MS);
        assert_eq!(limiter.when(&"late-2".to_string()), 200 * MS);
        // A long exponential delay wins over the bucket.
        let key = "x".to_string();
        for _ in 0..30 {
            limiter.when(&key);
        }
        assert_eq!(limiter.when(&key), Duration::from_secs(1000));
    }

    #[test]
    fn default_item_based_limiter_starts_at_one_millisecond_and_caps_at_1000_seconds() {
        let limiter = default_item_based_rate_limiter::<u32>();
        assert_eq!(limiter.when(&7), MS);
        assert_eq!(limiter.when(&7), 2 * MS);
        for _ in 0..40 {
            limiter.when(&7);
        }
        assert_eq!(limiter.when(&7), Duration::from_secs(1000));
    }

    #[test]
    fn limiters_can_be_shared_through_arc_and_box() {
        let shared = Arc::new(ItemFastSlowRateLimiter::new(MS, 2 * MS, 1));
        let boxed: Box<dyn RateLimiter<&str>> = Box::new(Arc::clone(&shared));
        assert_eq!(boxed.when(&"a"), MS);
        assert_eq!(shared.when(&"a"), 2 * MS);
        assert_eq!(boxed.num_requeues(&"a"), 2);
    }
}
