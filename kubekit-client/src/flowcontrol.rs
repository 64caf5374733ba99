//! Client-side rate limiting (client-go's `util/flowcontrol`).
//!
//! [`TokenBucket`] holds up to `burst` tokens and refills at `qps` tokens per second; each
//! request takes one. A request that finds the bucket empty is not refused: it reserves the
//! next token and waits until that token is due, so requests are spaced `1/qps` apart once
//! the burst is spent, in the order they asked. `N` requests at once therefore take
//! `(N - burst) / qps` seconds.
//!
//! Time is tokio's clock, so tests can run the bucket under `tokio::time::pause`. The REST
//! client's rate limiting and the work queue's overall `BucketRateLimiter`
//! (`kubekit::workqueue`) both use it.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use kubekit::flowcontrol::TokenBucket;
//! use std::time::Duration;
//!
//! let bucket = TokenBucket::new(5.0, 10);
//! let start = tokio::time::Instant::now();
//! for _ in 0..20 {
//!     bucket.acquire().await;
//! }
//! // 10 requests use the burst, the other 10 are spaced 200 ms apart.
//! assert_eq!(start.elapsed(), Duration::from_secs(2));
//! # }
//! ```

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// A token bucket rate limiter: `qps` tokens per second, at most `burst` stored.
///
/// Safe to share between tasks (`&self` methods; wrap in an `Arc` to share ownership).
/// Degenerate settings are allowed: an infinite `qps` never makes anyone wait; a `qps` that
/// is zero, negative or NaN, or a `burst` of zero (with finite `qps`), never grants a token.
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: u32,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A bucket refilled at `qps` tokens per second holding at most `burst`, starting full.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            qps,
            burst,
            state: Mutex::new(State {
                tokens: f64::from(burst),
                last: Instant::now(),
            }),
        }
    }

    /// Tokens added per second.
    pub fn qps(&self) -> f64 {
        self.qps
    }

    /// Most tokens the bucket holds.
    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// The tokens available at `now`; or, for a degenerate bucket, the fixed answer of
    /// [`reserve`](Self::reserve): `Some(zero)` if it never limits, `None` if it never grants.
    fn refill(&self, s: &State, now: Instant) -> Result<f64, Option<Duration>> {
        if self.qps == f64::INFINITY {
            return Err(Some(Duration::ZERO));
        }
        if self.qps.is_nan() || self.qps <= 0.0 || self.burst == 0 {
            return Err(None);
        }
        let elapsed = now.saturating_duration_since(s.last).as_secs_f64();
        Ok((s.tokens + elapsed * self.qps).min(f64::from(self.burst)))
    }

    /// Takes one token and returns how long the caller must wait before that token is due
    /// (zero when one was available). The token is reserved either way: the caller must
    /// wait that long, not ask again. `None` means no token will ever be available (see the
    /// type's docs); nothing is reserved then.
    pub fn reserve(&self) -> Option<Duration> {
        let now = Instant::now();
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let available = match self.refill(&s, now) {
            Ok(tokens) => tokens,
            Err(fixed) => return fixed,
        };
        let tokens = available - 1.0;
        let wait = if tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::try_from_secs_f64(-tokens / self.qps).ok()?
        };
        s.tokens = tokens;
        s.last = now;
        Some(wait)
    }

    /// Takes a token without waiting, if one is available now.
    pub fn try_acquire(&self) -> bool {
        let now = Instant::now();
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let tokens = match self.refill(&s, now) {
            Ok(tokens) => tokens,
            Err(fixed) => return fixed.is_some(),
        };
        s.last = now;
        if tokens >= 1.0 {
            s.tokens = tokens - 1.0;
            true
        } else {
            s.tokens = tokens;
            false
        }
    }

    /// Waits until a token is available and takes it; returns how long it waited. Waits
    /// forever on a bucket that never grants.
    pub async fn acquire(&self) -> Duration {
        match self.reserve() {
            Some(wait) => {
                if !wait.is_zero() {
                    tokio::time::sleep(wait).await;
                }
                wait
            }
            None => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn time_for(bucket: &TokenBucket, n: usize) -> Duration {
        let start = Instant::now();
        for _ in 0..n {
            bucket.acquire().await;
        }
        start.elapsed()
    }

    #[tokio::test(start_paused = true)]
    async fn n_requests_at_qps_q_with_burst_b_take_n_minus_b_over_q() {
        for (qps, burst, n) in [(5.0, 10, 30), (10.0, 1, 11), (2.0, 100, 150), (50.0, 3, 3)] {
            let bucket = TokenBucket::new(qps, burst);
            let expected = Duration::from_secs_f64((n as f64 - f64::from(burst)).max(0.0) / qps);
            let took = time_for(&bucket, n).await;
            let diff = took.abs_diff(expected);
            assert!(
                diff < Duration::from_millis(2),
                "qps {qps} burst {burst} n {n}: took {took:?}, expected {expected:?}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_refills_at_qps_up_to_burst_while_idle() {
        let bucket = TokenBucket::new(10.0, 5);
        time_for(&bucket, 5).await;
        assert!(!bucket.try_acquire(), "burst spent");
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(bucket.try_acquire() && bucket.try_acquire() && bucket.try_acquire());
        assert!(!bucket.try_acquire(), "only 3 tokens refilled in 300 ms");
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(
            time_for(&bucket, 5).await,
            Duration::ZERO,
            "refill capped at burst"
        );
        assert!(!bucket.try_acquire());
    }

    #[tokio::test(start_paused = true)]
    async fn degenerate_buckets_never_limit_or_never_grant() {
        let unlimited = TokenBucket::new(f64::INFINITY, 0);
        assert!((0..1000).all(|_| unlimited.reserve() == Some(Duration::ZERO)));
        for never in [
            TokenBucket::new(0.0, 5),
            TokenBucket::new(-1.0, 5),
            TokenBucket::new(f64::NAN, 5),
            TokenBucket::new(10.0, 0),
        ] {
            assert_eq!(never.reserve(), None, "{never:?}");
            assert!(!never.try_acquire());
        }
        let glacial = TokenBucket::new(1e-300, 1);
        assert_eq!(glacial.reserve(), Some(Duration::ZERO));
        assert_eq!(
            glacial.reserve(),
            None,
            "a wait beyond Duration's range is never"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_waiters_are_spaced_one_token_apart() {
        let bucket = std::sync::Arc::new(TokenBucket::new(4.0, 1));
        let waits: Vec<_> = (0..5).map(|_| bucket.reserve().unwrap()).collect();
        assert_eq!(
            waits,
            [0, 250, 500, 750, 1000].map(Duration::from_millis).to_vec()
        );
    }
}
