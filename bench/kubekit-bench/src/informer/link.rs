//! A network link between the peers and a real API server (`--link RATE/RTT`): a TCP proxy
//! on 127.0.0.1 that passes the bytes of every connection on unchanged (TLS goes through
//! it end to end), each direction paced to RATE, shared by every connection as one link's
//! bandwidth is, and every chunk delayed by half the round trip RTT.
//!
//! The kernel's `netem` qdisc would do the same below TCP; where it is missing (a kernel
//! built without it has `tc`'s `tbf` and `htb` but no delay), the proxy is the link. It differs
//! from a real link in two ways, both stated with its figures: tokio's timer wakes at
//! millisecond granularity, so a delay below 1 ms becomes about 1 ms, and the peers' TCP
//! connection to the proxy is loopback, so the sender's congestion window never meets the
//! link (a real 20 ms link starts slow; the proxy's does not).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use std::path::{Path, PathBuf};

use bytes::Bytes;
use kube::config::Kubeconfig;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The most bytes read from a socket at once: at 100 Mbit/s, 1.3 ms on the link.
const CHUNK: usize = 16 * 1024;
/// Chunks on their way through one direction of one connection (4 MiB): more than a link's
/// bandwidth-delay product (1 Gbit/s by 0.5 ms is 62 KiB, 100 Mbit/s by 20 ms 250 KiB).
const IN_FLIGHT: usize = 256;
/// A sender runs ahead of the link's pace by at most this before it waits.
const SLACK: Duration = Duration::from_millis(1);

/// A link's bandwidth and round-trip time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// Bits per second, in each direction.
    pub bits_per_second: u64,
    /// The round trip: each direction delays by half of it.
    pub round_trip: Duration,
}

impl Link {
    /// Parses `RATE/RTT`: RATE a number with `kbit`, `mbit` or `gbit` (per second), RTT a
    /// number with `us` or `ms`, e.g. `100mbit/20ms`, `1gbit/0.5ms`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("--link {text:?}: {why} (e.g. 100mbit/20ms, 1gbit/0.5ms)");
        let (rate, rtt) = text
            .split_once('/')
            .ok_or_else(|| bad("expected RATE/RTT"))?;
        let bits = [("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)]
            .iter()
            .find_map(|(unit, scale)| Some(number(rate.strip_suffix(unit)?)? * scale))
            .filter(|bits| *bits >= 1.0)
            .ok_or_else(|| bad("RATE must be a positive number of kbit, mbit or gbit"))?;
        let seconds = [("ms", 1e-3), ("us", 1e-6)]
            .iter()
            .find_map(|(unit, scale)| Some(number(rtt.strip_suffix(unit)?)? * scale))
            .ok_or_else(|| bad("RTT must be a number of ms or us"))?;
        Ok(Self {
            bits_per_second: bits as u64,
            round_trip: Duration::from_secs_f64(seconds),
        })
    }

    /// How long `bytes` take on the link.
    fn serialization(&self, bytes: usize) -> Duration {
        Duration::from_secs_f64(bytes as f64 * 8.0 / self.bits_per_second as f64)
    }
}

/// A finite number of at least 0.
fn number(text: &str) -> Option<f64> {
    text.parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n >= 0.0)
}

/// Starts the proxy of `link` to `upstream` on a free port of 127.0.0.1 and returns its
/// address; it serves until the runtime ends.
pub async fn start(link: Link, upstream: SocketAddr) -> Result<SocketAddr, String> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("listening for the link's proxy: {e}"))?;
    let address = listener
        .local_addr()
        .map_err(|e| format!("the link proxy's address: {e}"))?;
    // One pace per direction for the whole link: its connections share the bandwidth.
    let paces = [Pace::default(), Pace::default()].map(Arc::new);
    tokio::spawn(async move {
        loop {
            let Ok((client, _)) = listener.accept().await else {
                continue;
            };
            let paces = paces.clone();
            tokio::spawn(async move {
                match TcpStream::connect(upstream).await {
                    Ok(server) => relay(link, client, server, paces).await,
                    Err(e) => eprintln!("link: connecting to {upstream}: {e}"),
                }
            });
        }
    });
    Ok(address)
}

/// Writes a copy of `kubeconfig` (as JSON, which every client reads as YAML) whose
/// clusters are reached through a proxy of `link` each, and returns its path.
pub async fn linked_kubeconfig(kubeconfig: &Path, link: Link) -> Result<PathBuf, String> {
    let mut config = Kubeconfig::read_from(kubeconfig)
        .map_err(|e| format!("reading {}: {e}", kubeconfig.display()))?;
    for named in &mut config.clusters {
        let Some(cluster) = named.cluster.as_mut() else {
            continue;
        };
        let Some(server) = cluster.server.as_deref() else {
            continue;
        };
        let (scheme, rest) = server
            .split_once("://")
            .ok_or_else(|| format!("cluster {}: server {server:?} has no scheme", named.name))?;
        let authority = rest.split('/').next().unwrap_or(rest);
        let upstream = tokio::net::lookup_host(authority)
            .await
            .ok()
            .and_then(|mut addresses| addresses.next())
            .ok_or_else(|| format!("cluster {}: cannot resolve {authority:?}", named.name))?;
        let proxy = start(link, upstream).await?;
        // The proxy listens on 127.0.0.1, which the local control plane's certificate names.
        cluster.server = Some(format!("{scheme}://{proxy}"));
    }
    let path = std::env::temp_dir().join(format!(
        "kubekit-bench-link-{}.kubeconfig",
        std::process::id()
    ));
    let json = serde_json::to_vec_pretty(&config)
        .map_err(|e| format!("writing the linked kubeconfig: {e}"))?;
    std::fs::write(&path, json).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(path)
}

/// When a direction of the link is next free.
#[derive(Default)]
struct Pace(Mutex<Option<Instant>>);

impl Pace {
    /// Puts `bytes` on the link at `now` or once it is free: the instant their last bit
    /// has left.
    fn send(&self, link: &Link, bytes: usize, now: Instant) -> Instant {
        let mut free = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let start = free.map_or(now, |f| f.max(now));
        let sent = start + link.serialization(bytes);
        *free = Some(sent);
        sent
    }
}

/// Relays both directions between `client` and `server` until both have ended.
async fn relay(link: Link, client: TcpStream, server: TcpStream, paces: [Arc<Pace>; 2]) {
    let _ = (client.set_nodelay(true), server.set_nodelay(true));
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let [up, down] = paces;
    tokio::join!(
        direction(link, client_read, server_write, up),
        direction(link, server_read, client_write, down),
    );
}

/// Carries the bytes of `from` to `to` over one direction of the link.
async fn direction(
    link: Link,
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    pace: Arc<Pace>,
) {
    let one_way = link.round_trip / 2;
    let (tx, mut rx) = mpsc::channel::<(Instant, Bytes)>(IN_FLIGHT);
    let sender = async move {
        let mut buf = vec![0; CHUNK];
        while let Ok(n @ 1..) = from.read(&mut buf).await {
            let sent = pace.send(&link, n, Instant::now());
            if sent > Instant::now() + SLACK {
                tokio::time::sleep_until(sent).await;
            }
            let chunk = Bytes::copy_from_slice(&buf[..n]);
            if tx.send((sent + one_way, chunk)).await.is_err() {
                break;
            }
        }
    };
    let receiver = async move {
        while let Some((arrival, chunk)) = rx.recv().await {
            tokio::time::sleep_until(arrival).await;
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(sender, receiver);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_round_trips_parse_with_their_units_and_bad_ones_are_refused() {
        let link = Link::parse("100mbit/20ms").unwrap();
        assert_eq!(link.bits_per_second, 100_000_000);
        assert_eq!(link.round_trip, Duration::from_millis(20));
        let link = Link::parse("1gbit/0.5ms").unwrap();
        assert_eq!(link.bits_per_second, 1_000_000_000);
        assert_eq!(link.round_trip, Duration::from_micros(500));
        assert_eq!(
            Link::parse("512kbit/300us").unwrap().bits_per_second,
            512_000
        );
        for bad in [
            "100mbit",
            "100/20ms",
            "0mbit/1ms",
            "1gbit/20",
            "-1mbit/1ms",
            "xmbit/1ms",
        ] {
            let e = Link::parse(bad).unwrap_err();
            assert!(e.contains("e.g. 100mbit/20ms"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_link_takes_as_long_as_its_rate_says() {
        let link = Link::parse("8mbit/0ms").unwrap();
        assert_eq!(link.serialization(1_000_000), Duration::from_secs(1));
        let pace = Pace::default();
        let now = Instant::now();
        assert_eq!(pace.send(&link, 1000, now), now + Duration::from_millis(1));
        // A second chunk waits for the first: the link's time adds up.
        assert_eq!(pace.send(&link, 1000, now), now + Duration::from_millis(2));
        // A link left idle starts afresh.
        let later = now + Duration::from_secs(1);
        assert_eq!(
            pace.send(&link, 500, later),
            later + Duration::from_micros(500)
        );
    }

    #[tokio::test]
    async fn bytes_cross_the_link_unchanged_both_ways_and_an_end_is_passed_on() {
        let server = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream = server.local_addr().unwrap();
        let echo = tokio::spawn(async move {
            let (mut socket, _) = server.accept().await.unwrap();
            let mut received = Vec::new();
            socket.read_to_end(&mut received).await.unwrap();
            socket.write_all(&received).await.unwrap();
            received.len()
        });
        let proxy = start(Link::parse("1gbit/1ms").unwrap(), upstream)
            .await
            .unwrap();
        let mut client = TcpStream::connect(proxy).await.unwrap();
        let sent: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        client.write_all(&sent).await.unwrap();
        client.shutdown().await.unwrap();
        let mut echoed = Vec::new();
        client.read_to_end(&mut echoed).await.unwrap();
        assert_eq!(echo.await.unwrap(), sent.len());
        assert_eq!(echoed, sent);
    }
}
