//! The queue controllers use: a [`DelayingQueue`] whose retries are paced by a
//! [`RateLimiter`].
//!
//! # Contract
//!
//! - [`add_rate_limited`](RateLimitingQueue::add_rate_limited) asks the limiter how long
//!   the item should wait (which records one failure of the item), then
//!   [`add_after`](DelayingQueue::add_after)s it for that long.
//! - [`forget`](RateLimitingQueue::forget) clears the item's failure history in the limiter.
//!   It does not touch the queue: you still call [`done`](RateLimitingQueue::done). Forget
//!   every item that succeeds, or its next failure starts from a long backoff.
//! - [`num_requeues`](RateLimitingQueue::num_requeues) is the limiter's failure count for
//!   the item.
//! - Everything else is the [`DelayingQueue`]'s, unchanged.
//!
//! # Concurrency
//!
//! A cheap cloneable handle, like the other queues; every method may be called from any
//! task. Creating one needs a tokio runtime (its delaying queue starts a timer task).

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use super::delaying::DelayingQueue;
use super::queue::QueueConfig;
use super::rate_limiter::RateLimiter;

/// A delaying queue with per-item retry pacing: what client-go calls a
/// `RateLimitingInterface`, and what a controller's workers loop on.
///
/// See the [module docs](super) for the complete worker loop.
///
/// ```
/// use std::time::Duration;
/// use kubekit::workqueue::{RateLimitingQueue, default_controller_rate_limiter};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let queue = RateLimitingQueue::new(default_controller_rate_limiter());
/// queue.add("default/web".to_string());
///
/// let key = queue.get().await.unwrap();
/// // Processing failed: retry later (5 ms, then 10 ms, 20 ms, ...).
/// queue.add_rate_limited(key.clone());
/// queue.done(&key);
/// assert_eq!(queue.num_requeues(&key), 1);
///
/// let start = tokio::time::Instant::now();
/// let key = queue.get().await.unwrap();
/// assert_eq!(start.elapsed(), Duration::from_millis(5));
/// // Processing succeeded: clear the history.
/// queue.forget(&key);
/// queue.done(&key);
/// assert_eq!(queue.num_requeues(&key), 0);
/// queue.shut_down();
/// # }
/// ```
pub struct RateLimitingQueue<T> {
    queue: DelayingQueue<T>,
    limiter: Arc<dyn RateLimiter<T>>,
}

impl<T> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            limiter: Arc::clone(&self.limiter),
        }
    }
}

impl<T> fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitingQueue")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}

impl<T> RateLimitingQueue<T>
where
    T: Hash + Eq + Clone + Send + 'static,
{
    /// Creates an unnamed queue (no metrics) paced by `limiter`.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (the delaying queue starts a timer task).
    pub fn new(limiter: impl RateLimiter<T> + 'static) -> Self {
        Self::with_config(limiter, QueueConfig::new())
    }

    /// Creates a queue paced by `limiter`, named and measured as `config` says.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (the delaying queue starts a timer task).
    pub fn with_config(limiter: impl RateLimiter<T> + 'static, config: QueueConfig) -> Self {
        Self {
            queue: DelayingQueue::with_config(config),
            limiter: Arc::new(limiter),
        }
    }

    /// Adds `item` after the delay the rate limiter gives it (recording one failure).
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.limiter.when(&item);
        self.queue.add_after(item, delay);
    }

    /// Clears `item`'s failure history in the rate limiter. Call it when the item
    /// succeeds or when you give up on it; you still call [`done`](Self::done).
    pub fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    /// How many times `item` has been rate-limited since it was last forgotten.
    pub fn num_requeues(&self, item: &T) -> usize {
        self.limiter.num_requeues(item)
    }

    /// See [`DelayingQueue::add_after`].
    pub fn add_after(&self, item: T, delay: Duration) {
        self.queue.add_after(item, delay);
    }

    /// See [`DelayingQueue::cancel_waiting`]: a pending [`add_after`](Self::add_after) or
    /// [`add_rate_limited`](Self::add_rate_limited) of `item` is dropped. Its failure
    /// history is not touched ([`forget`](Self::forget) it as well to clear that).
    pub fn cancel_waiting(&self, item: &T) -> bool {
        self.queue.cancel_waiting(item)
    }

    /// See [`Queue::add`](super::Queue::add).
    pub fn add(&self, item: T) {
        self.queue.add(item);
    }

    /// See [`Queue::add_low_priority`](super::Queue::add_low_priority).
    pub fn add_low_priority(&self, item: T) {
        self.queue.add_low_priority(item);
    }

    /// See [`Queue::get`](super::Queue::get).
    pub async fn get(&self) -> Option<T> {
        self.queue.get().await
    }

    /// See [`Queue::done`](super::Queue::done).
    pub fn done(&self, item: &T) {
        self.queue.done(item);
    }

    /// See [`Queue::len`](super::Queue::len).
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// See [`Queue::is_empty`](super::Queue::is_empty).
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// See [`DelayingQueue::shut_down`].
    pub fn shut_down(&self) {
        self.queue.shut_down();
    }

    /// See [`DelayingQueue::shut_down_with_drain`].
    pub async fn shut_down_with_drain(&self) {
        self.queue.shut_down_with_drain().await;
    }

    /// See [`Queue::shutting_down`](super::Queue::shutting_down).
    pub fn shutting_down(&self) -> bool {
        self.queue.shutting_down()
    }
}

#[cfg(test)]
mod tests {
    use tokio::time::Instant;

    use super::*;
    use crate::workqueue::{ItemExponentialFailureRateLimiter, default_controller_rate_limiter};

    const MS: Duration = Duration::from_millis(1);

    #[tokio::test(start_paused = true)]
    async fn add_rate_limited_waits_the_limiters_delay() {
        let queue = RateLimitingQueue::new(ItemExponentialFailureRateLimiter::new(
            MS,
            Duration::from_secs(1),
        ));
        let start = Instant::now();
        queue.add_rate_limited("a");
        assert_eq!(queue.len(), 0);
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(start.elapsed(), MS);
        queue.add_rate_limited("a");
        queue.done(&"a");
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(start.elapsed(), 3 * MS, "1 ms then 2 ms");
        queue.shut_down();
    }

    #[tokio::test(start_paused = true)]
    async fn num_requeues_counts_rate_limited_adds_until_forget() {
        let queue = RateLimitingQueue::new(default_controller_rate_limiter());
        queue.add_rate_limited("a");
        queue.add_rate_limited("a");
        queue.add_rate_limited("b");
        assert_eq!(queue.num_requeues(&"a"), 2);
        assert_eq!(queue.num_requeues(&"b"), 1);
        queue.forget(&"a");
        assert_eq!(queue.num_requeues(&"a"), 0);
        assert_eq!(queue.num_requeues(&"b"), 1);
        queue.shut_down();
    }

    #[tokio::test(start_paused = true)]
    async fn forget_does_not_remove_the_item_from_the_queue() {
        let queue = RateLimitingQueue::new(default_controller_rate_limiter());
        queue.add_rate_limited("a");
        queue.forget(&"a");
        assert_eq!(queue.get().await, Some("a"));
        queue.shut_down();
    }

    #[tokio::test(start_paused = true)]
    async fn add_rate_limited_after_shut_down_still_consults_the_limiter_but_adds_nothing() {
        let queue = RateLimitingQueue::new(default_controller_rate_limiter());
        queue.shut_down();
        queue.add_rate_limited("a");
        assert_eq!(queue.num_requeues(&"a"), 1);
        assert_eq!(queue.get().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn worker_loop_retries_up_to_the_limit_then_drops_the_item() {
        const MAX_RETRIES: usize = 5;
        let queue = RateLimitingQueue::new(default_controller_rate_limiter());
        queue.add("broken");
        let mut attempts = 0;
        let start = Instant::now();
        while let Some(key) = queue.get().await {
            attempts += 1;
            // Always fails.
            if queue.num_requeues(&key) < MAX_RETRIES {
                queue.add_rate_limited(key);
            } else {
                queue.forget(&key);
                queue.shut_down();
            }
            queue.done(&key);
        }
        assert_eq!(attempts, 1 + MAX_RETRIES);
        // 5 + 10 + 20 + 40 + 80 ms of backoff.
        assert_eq!(start.elapsed(), 155 * MS);
        assert_eq!(queue.num_requeues(&"broken"), 0);
    }
}
