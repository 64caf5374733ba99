//! [`CachedDiscoveryClient`]: discovery asked once and remembered, in memory and
//! optionally on disk (client-go's `memory.NewMemCacheClient` and
//! `disk.NewCachedDiscoveryClientForConfig`).
//!
//! # Contract
//!
//! - [`discovery`](CachedDiscoveryClient::discovery) answers from memory when it can; else,
//!   with a disk cache, from the file if it is younger than the TTL; else from the server,
//!   writing the file for the next process. Concurrent callers that miss share one fetch.
//! - [`invalidate`](CachedDiscoveryClient::invalidate) forgets the memory copy and deletes
//!   the file: the next call asks the server.
//! - [`rest_mapping`](CachedDiscoveryClient::rest_mapping) behaves like client-go's
//!   deferred REST mapper: a kind the cached data does not know (a CRD installed since)
//!   makes it refresh once from the server before reporting no match.
//! - A cache file that cannot be read or written, or is corrupt, is logged and treated as
//!   a miss; it never fails a call that the server can answer.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::client::DiscoveryClient;
use super::model::ApiDiscovery;
use super::restmapper::{NoMatchError, RestMapper, RestMapping};
use crate::meta::GroupVersionKind;

/// Default TTL of the disk cache (kubectl's).
pub const DEFAULT_DISK_CACHE_TTL: Duration = Duration::from_secs(6 * 60 * 60);

/// Where discovery answers came from so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Answers from memory.
    pub memory_hits: u64,
    /// Answers from the disk cache.
    pub disk_hits: u64,
    /// Answers fetched from the server.
    pub server_fetches: u64,
}

/// Error of a cached discovery lookup.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server could not be asked.
    #[error(transparent)]
    Rest(#[from] crate::rest::Error),
    /// The kind is not served, even after a refresh.
    #[error(transparent)]
    NoMatch(#[from] NoMatchError),
}

#[derive(Debug)]
struct Cached {
    discovery: Arc<ApiDiscovery>,
    mapper: Arc<RestMapper>,
    /// Fetched from the server by this client (not read from disk).
    fresh: bool,
}

/// Discovery with a memory cache and an optional disk cache; see the [module docs](self).
#[derive(Debug)]
pub struct CachedDiscoveryClient {
    client: DiscoveryClient,
    file: Option<(PathBuf, Duration)>,
    cached: Mutex<Option<Arc<Cached>>>,
    fetch: tokio::sync::Mutex<()>,
    memory_hits: AtomicU64,
    disk_hits: AtomicU64,
    server_fetches: AtomicU64,
}

impl CachedDiscoveryClient {
    /// Caches in memory only.
    pub fn memory(client: DiscoveryClient) -> Self {
        Self::build(client, None)
    }

    /// Caches in memory and in `dir/<server host_port>/discovery.json`, trusting the file
    /// for `ttl`.
    pub fn disk(client: DiscoveryClient, dir: &Path, host: &http::Uri, ttl: Duration) -> Self {
        let host_dir: String = host
            .authority()
            .map(|a| a.as_str())
            .unwrap_or("default")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Self::build(
            client,
            Some((dir.join(host_dir).join("discovery.json"), ttl)),
        )
    }

    fn build(client: DiscoveryClient, file: Option<(PathBuf, Duration)>) -> Self {
        Self {
            client,
            file,
            cached: Mutex::new(None),
            fetch: tokio::sync::Mutex::new(()),
            memory_hits: AtomicU64::new(0),
            disk_hits: AtomicU64::new(0),
            server_fetches: AtomicU64::new(0),
        }
    }

    /// The uncached client underneath.
    pub fn client(&self) -> &DiscoveryClient {
        &self.client
    }

    /// The disk cache file, if any.
    pub fn cache_file(&self) -> Option<&Path> {
        self.file.as_ref().map(|(p, _)| p.as_path())
    }

    fn memory_copy(&self) -> Option<Arc<Cached>> {
        self.cached
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    async fn cached(&self) -> crate::rest::Result<Arc<Cached>> {
        if let Some(c) = self.memory_copy() {
            self.memory_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(c);
        }
        let _single_flight = self.fetch.lock().await;
        if let Some(c) = self.memory_copy() {
            self.memory_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(c);
        }
        let (discovery, fresh) = match self.read_file() {
            Some(d) => {
                self.disk_hits.fetch_add(1, Ordering::Relaxed);
                (d, false)
            }
            None => {
                let d = self.client.server_groups_and_resources().await?;
                self.server_fetches.fetch_add(1, Ordering::Relaxed);
                self.write_file(&d);
                (d, true)
            }
        };
        let cached = Arc::new(Cached {
            mapper: Arc::new(RestMapper::new(&discovery)),
            discovery: Arc::new(discovery),
            fresh,
        });
        *self.cached.lock().unwrap_or_else(|e| e.into_inner()) = Some(cached.clone());
        Ok(cached)
    }

    /// Every group and resource, from the cache when it can.
    pub async fn discovery(&self) -> crate::rest::Result<Arc<ApiDiscovery>> {
        Ok(self.cached().await?.discovery.clone())
    }

    /// A REST mapper over the cached discovery.
    pub async fn rest_mapper(&self) -> crate::rest::Result<Arc<RestMapper>> {
        Ok(self.cached().await?.mapper.clone())
    }

    /// The resource serving `kind`, refreshing once from the server if the cached data
    /// does not know it.
    pub async fn rest_mapping(&self, kind: &GroupVersionKind) -> Result<RestMapping, Error> {
        let cached = self.cached().await?;
        match cached.mapper.rest_mapping(kind) {
            Ok(m) => Ok(m),
            Err(_) if !cached.fresh => {
                self.invalidate();
                Ok(self.cached().await?.mapper.rest_mapping(kind)?)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Whether the cached data was fetched from the server by this client (client-go's
    /// `Fresh`); `false` before the first call or when it came from disk.
    pub fn fresh(&self) -> bool {
        self.memory_copy().is_some_and(|c| c.fresh)
    }

    /// Forgets the cached data, in memory and on disk.
    pub fn invalidate(&self) {
        *self.cached.lock().unwrap_or_else(|e| e.into_inner()) = None;
        if let Some((path, _)) = &self.file
            && let Err(e) = std::fs::remove_file(path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %path.display(), error = %e, "cannot remove the discovery cache file");
        }
    }

    /// Where answers came from so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            memory_hits: self.memory_hits.load(Ordering::Relaxed),
            disk_hits: self.disk_hits.load(Ordering::Relaxed),
            server_fetches: self.server_fetches.load(Ordering::Relaxed),
        }
    }

    fn read_file(&self) -> Option<ApiDiscovery> {
        let (path, ttl) = self.file.as_ref()?;
        let age = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())?;
        if age > *ttl {
            return None;
        }
        let bytes = std::fs::read(path).ok()?;
        match serde_json::from_slice(&bytes) {
            Ok(d) => Some(d),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "ignoring a corrupt discovery cache file");
                None
            }
        }
    }

    fn write_file(&self, discovery: &ApiDiscovery) {
        let Some((path, _)) = &self.file else { return };
        let result = (|| {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
            std::fs::write(&tmp, serde_json::to_vec(discovery)?)?;
            std::fs::rename(&tmp, path)
        })();
        if let Err(e) = result {
            tracing::warn!(path = %path.display(), error = %e, "cannot write the discovery cache file");
        }
    }
}
