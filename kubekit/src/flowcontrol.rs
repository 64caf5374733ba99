//! Client-side rate limiting (client-go's `util/flowcontrol`).
//!
//! [`TokenBucket`] holds up to `burst` tokens and refills at `qps` tokens per second; each
//! request takes one. A request that finds the bucket empty is not refused: it reserves the
//! next token and waits until that token is due, so requests are spaced `1/qps` apart once
//! the burst is spent, in the order they asked. `N` requests at once therefore take
//! `(N - burst) / qps` seconds.
//!
//! Time is tokio's clock, so tests can run the bucket under `tokio::time::pause`.
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
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A bucket refilled at `qps` tokens per second holding at most `burst` (at least one),
    /// starting full.
    ///
    /// # Panics
    ///
    /// Panics if `qps` is not a positive finite number.
    pub fn new(qps: f64, burst: u32) -> Self {
        assert!(
            qps.is_finite() && qps > 0.0,
            "token bucket qps must be positive and finite, got {qps}"
        );
        let burst = f64::from(burst.max(1));
        Self {
            qps,
            burst,
            state: Mutex::new(State {
                tokens: burst,
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
        self.burst as u32
    }

    /// Takes one token and returns how long the caller must wait before that token is due
    /// (zero when one was available). The token is reserved either way: the caller must
    /// wait that long, not ask again.
    pub fn reserve(&self) -> Duration {
        let now = Instant::now();
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let elapsed = now.saturating_duration_since(s.last).as_secs_f64();
        s.tokens = (s.tokens + elapsed * self.qps).min(self.burst) - 1.0;
        s.last = now;
        if s.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-s.tokens / self.qps)
        }
    }

    /// Takes a token without waiting, if one is available now.
    pub fn try_acquire(&self) -> bool {
        let now = Instant::now();
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let elapsed = now.saturating_duration_since(s.last).as_secs_f64();
        let tokens = (s.tokens + elapsed * self.qps).min(self.burst);
        s.last = now;
        if tokens >= 1.0 {
            s.tokens = tokens - 1.0;
            true
        } else {
            s.tokens = tokens;
            false
        }
    }

    /// Waits until a token is available and takes it; returns how long it waited.
    pub async fn acquire(&self) -> Duration {
        let wait = self.reserve();
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        wait
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
    async fn concurrent_waiters_are_spaced_one_token_apart() {
        let bucket = std::sync::Arc::new(TokenBucket::new(4.0, 1));
        let waits: Vec<_> = (0..5).map(|_| bucket.reserve()).collect();
        assert_eq!(
            waits,
            [0, 250, 500, 750, 1000].map(Duration::from_millis).to_vec()
        );
    }
}
