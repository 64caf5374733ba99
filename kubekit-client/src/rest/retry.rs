//! Retries of what the server asks to be retried: a 429, or a 5xx with `Retry-After`,
//! after the delay it names ([`MAX_RETRY_AFTER`] at most), and a read whose connection
//! failed, after 1 s.

use std::time::Duration;

use http::StatusCode;
use http::header::RETRY_AFTER;

use super::error::{Error, Result};

/// Calls `send` until its response needs no retry or `max_retries` retries are spent,
/// sleeping as [`retry_after`] says between attempts. A transport error is retried (after
/// 1 s) only when `retry_transport` is set, i.e. for idempotent reads.
pub(super) async fn with_retries<B, F, Fut>(
    max_retries: u32,
    retry_transport: bool,
    mut send: F,
) -> Result<http::Response<B>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<http::Response<B>>>,
{
    let mut attempt = 0;
    loop {
        let result = send().await;
        let delay = match &result {
            Ok(res) => retry_after(res),
            Err(Error::Transport { .. }) if retry_transport => Some(Duration::from_secs(1)),
            Err(_) => None,
        };
        match delay {
            Some(delay) if attempt < max_retries => {
                attempt += 1;
                tracing::debug!(attempt, ?delay, "retrying a throttled or failed request");
                tokio::time::sleep(delay).await;
            }
            _ => return result,
        }
    }
}

/// The longest `Retry-After` honoured: a server asking for more gets this (logged).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// When the response asks to be retried: a 429, or a 5xx with `Retry-After`, after the
/// delay the server named (1 s for a 429 that named none), at most [`MAX_RETRY_AFTER`];
/// a wait over 5 s is logged when it begins.
fn retry_after<B>(res: &http::Response<B>) -> Option<Duration> {
    let status = res.status();
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let header = res
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match header {
        Some(secs) if secs > MAX_RETRY_AFTER.as_secs() => {
            tracing::warn!(
                "the server asked to retry after {secs} s; waiting {MAX_RETRY_AFTER:?}, kubekit's cap"
            );
            Some(MAX_RETRY_AFTER)
        }
        Some(secs) if secs > 5 => {
            tracing::info!("the server asked to retry after {secs} s; waiting");
            Some(Duration::from_secs(secs))
        }
        Some(secs) => Some(Duration::from_secs(secs.max(1))),
        None if status == StatusCode::TOO_MANY_REQUESTS => Some(Duration::from_secs(1)),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_only_on_429_or_5xx_with_retry_after() {
        let res = response;
        assert_eq!(
            retry_after(&res(429, Some("3"))),
            Some(Duration::from_secs(3))
        );
        assert_eq!(retry_after(&res(429, None)), Some(Duration::from_secs(1)));
        assert_eq!(
            retry_after(&res(503, Some("2"))),
            Some(Duration::from_secs(2))
        );
        assert_eq!(retry_after(&res(500, None)), None);
        assert_eq!(retry_after(&res(409, Some("2"))), None);
        assert_eq!(retry_after(&res(200, Some("2"))), None);
        assert_eq!(
            retry_after(&res(429, Some("1000000000"))),
            Some(MAX_RETRY_AFTER),
            "31 years asked, the cap waited"
        );
        assert_eq!(
            retry_after(&res(429, Some("30"))),
            Some(Duration::from_secs(30))
        );
    }

    fn response(code: u16, retry_after: Option<&str>) -> http::Response<()> {
        let mut b = http::Response::builder().status(code);
        if let Some(a) = retry_after {
            b = b.header(RETRY_AFTER, a);
        }
        b.body(()).unwrap()
    }

    /// Runs [`with_retries`] over scripted responses; returns the outcome's HTTP code, the
    /// number of attempts and the (paused) time it took.
    async fn run_retries(max: u32, script: Vec<http::Response<()>>) -> (u16, usize, Duration) {
        let script = std::sync::Mutex::new(script.into_iter());
        let attempts = std::sync::atomic::AtomicUsize::new(0);
        let start = tokio::time::Instant::now();
        let res = with_retries(max, true, || {
            attempts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let next = script.lock().unwrap().next().expect("script long enough");
            async move { Ok(next) }
        })
        .await
        .unwrap();
        (
            res.status().as_u16(),
            attempts.into_inner(),
            start.elapsed(),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn throttled_request_is_retried_after_retry_after_until_it_succeeds() {
        let script = vec![
            response(429, Some("2")),
            response(503, Some("3")),
            response(429, None),
            response(200, None),
        ];
        assert_eq!(
            run_retries(10, script).await,
            (200, 4, Duration::from_secs(2 + 3 + 1))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retries_stop_at_max_retries_and_return_the_last_refusal() {
        let script = (0..20).map(|_| response(429, Some("1"))).collect();
        assert_eq!(
            run_retries(10, script).await,
            (429, 11, Duration::from_secs(10))
        );
        let script = vec![response(500, None), response(200, None)];
        assert_eq!(
            run_retries(10, script).await,
            (500, 1, Duration::ZERO),
            "5xx without Retry-After is final"
        );
    }
}
