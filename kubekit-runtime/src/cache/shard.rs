//! [`ShardSelector`]: a slice of a resource's objects chosen by the hash of their uid or
//! namespace, as the API server's sharded list and watch (`ShardedListAndWatch`, alpha
//! since Kubernetes 1.36) selects them.
//!
//! # What it promises
//!
//! - [`shard_hash`] is the API server's hash: 64-bit FNV-1a of the field's UTF-8 bytes
//!   (`k8s.io/apimachinery/pkg/sharding.HashField`); a cluster-scoped object's namespace
//!   hashes as the empty string, as the server's does.
//! - A [`ShardSelector`] is one key ([`ShardKey::Uid`] or [`ShardKey::Namespace`], or
//!   kubekit's client-side [`ShardKey::ControllerUid`]) and one or more half-open [`ShardRange`]s `[start, end)` of the hash space
//!   `[0, 2^64)`; an object is in the shard when its hash is in any of them. Its text
//!   ([`Display`](fmt::Display)) is the `shardSelector` parameter exactly as the server
//!   writes it back — `shardRange(object.metadata.uid, '0x0000000000000000',
//!   '0x8000000000000000')`, ranges joined by ` || ` — and [`ShardSelector::parse`]
//!   accepts what the server accepts (16 lowercase hex digits after `0x`, or
//!   `0x10000000000000000` for the end of the space; one key for every range), so a
//!   selector built here is never refused by the server (one by
//!   [`ShardKey::ControllerUid`] is never sent to it). Invalid ranges and text are an
//!   [`ShardSelectorError`], never a panic.
//! - [`ShardSelector::matches`] decides from the object's metadata alone, reading it
//!   through [`meta_ref()`]: a [`Compact`](super::Compact) object is not
//!   decoded.
//!
//! A reflector (and so an informer, or every informer of a factory) given a shard
//! ([`ReflectorOptions::shard`](super::ReflectorOptions::shard)) sends the selector with
//! every list and watch and keeps only the objects it selects, whether the server filtered
//! them (it echoes the selector in the list's `metadata.shardInfo`) or ignored the
//! parameter (a server without the feature sends everything): see
//! [`Reflector`](super::Reflector). kube-apiserver 1.37 filters the lists of custom
//! resources too but never echoes the selector in them (its unstructured lists carry no
//! `shardInfo`), so for those the reflector counts as filtering alone
//! (`reflector_shard_server_filtered` 0) and drops nothing. A selector by
//! [`ShardKey::ControllerUid`] is not sent at all: the reflector lists and watches
//! everything and keeps what it selects.
//!
//! ```
//! use kubekit::cache::{ShardRange, ShardSelector, shard_hash};
//!
//! // The lower half of the hash space, by uid.
//! let lower = ShardSelector::uid(ShardRange::new(0, 0x8000_0000_0000_0000).unwrap());
//! assert_eq!(
//!     lower.to_string(),
//!     "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
//! );
//! assert_eq!(ShardSelector::parse(&lower.to_string()).unwrap(), lower);
//! assert_eq!(shard_hash("default"), 0xebada5168620c5fe);
//! assert!(!lower.contains(shard_hash("default")));
//!
//! // Three replicas split the space evenly; replica 1 takes the middle third.
//! let parts = ShardRange::even_parts(3);
//! let mine = ShardSelector::namespace(parts[1]);
//! assert!(ShardRange::new(5, 5).is_err());
//! # let _ = mine;
//! ```

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use super::metrics::ShardMetrics;
use super::{MetaRef, meta_ref};
use kube::Resource;

/// The end of the hash space, `2^64`: the exclusive end of the last range.
pub const HASH_SPACE_END: u128 = 1 << 64;

/// The API server's shard hash of a field's value: 64-bit FNV-1a of its UTF-8 bytes.
///
/// ```
/// assert_eq!(kubekit::cache::shard_hash(""), 0xcbf29ce484222325);
/// ```
pub fn shard_hash(value: &str) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    value
        .bytes()
        .fold(OFFSET_BASIS, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// What a shard selector is invalid for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardSelectorError {
    /// A range whose start is not below its end.
    #[error("shard range start {start:#018x} must be less than its end {}", hex(*.end))]
    EmptyRange {
        /// The start.
        start: u64,
        /// The end.
        end: u128,
    },
    /// A range ending past `2^64`.
    #[error("shard range end {end:#x} is past the end of the hash space (0x10000000000000000)")]
    EndPastSpace {
        /// The end.
        end: u128,
    },
    /// A selector without any range.
    #[error("a shard selector needs at least one range")]
    NoRanges,
    /// Text that is not a shard selector the API server accepts.
    #[error("invalid shard selector {text:?}: {reason}")]
    Syntax {
        /// The text.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The field whose hash places an object in a shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShardKey {
    /// `object.metadata.uid`: spreads objects evenly, whatever their namespace.
    Uid,
    /// `object.metadata.namespace`: keeps each namespace's objects in one shard (a
    /// cluster-scoped object's namespace is empty).
    Namespace,
    /// The uid of the object's controller (its ownerReference marked `controller`, as
    /// `metav1.GetControllerOf` finds it): a child lands in its controller's shard by
    /// [`Uid`](Self::Uid). An object without a controller is in **every** shard, so a
    /// cache sharded this way still sees the objects nobody controls (a controller checks
    /// them before adopting a name). kube-apiserver cannot hash this field: a reflector
    /// never sends such a selector and filters alone. Its text, `controller.metadata.uid`,
    /// is kubekit's own.
    ControllerUid,
}

impl ShardKey {
    /// The field path the selector names, e.g. `object.metadata.uid`.
    pub fn field_path(self) -> &'static str {
        match self {
            ShardKey::Uid => "object.metadata.uid",
            ShardKey::Namespace => "object.metadata.namespace",
            ShardKey::ControllerUid => "controller.metadata.uid",
        }
    }

    /// Whether kube-apiserver can filter by this key (its `shardRange` hashes the uid and
    /// the namespace only).
    pub fn server_side(self) -> bool {
        !matches!(self, ShardKey::ControllerUid)
    }

    fn from_field_path(path: &str) -> Option<Self> {
        [ShardKey::Uid, ShardKey::Namespace, ShardKey::ControllerUid]
            .into_iter()
            .find(|k| k.field_path() == path)
    }

    /// The value of this field of `obj` (empty when unset, or without a controller).
    pub fn value_of<K: Resource + 'static>(self, obj: &K) -> &str {
        self.value_in(meta_ref(obj))
    }

    /// The value of this field in `meta`.
    fn value_in(self, meta: MetaRef<'_>) -> &str {
        match self {
            ShardKey::Uid => meta.uid(),
            ShardKey::Namespace => meta.namespace(),
            ShardKey::ControllerUid => meta.controller().map(|c| c.uid),
        }
        .unwrap_or_default()
    }
}

/// A half-open range `[start, end)` of the hash space `[0, 2^64)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShardRange {
    start: u64,
    end: u128,
}

impl ShardRange {
    /// The whole hash space.
    pub const FULL: ShardRange = ShardRange {
        start: 0,
        end: HASH_SPACE_END,
    };

    /// `[start, end)`; `end` is at most [`HASH_SPACE_END`] and above `start`.
    pub fn new(start: u64, end: u128) -> Result<Self, ShardSelectorError> {
        if end > HASH_SPACE_END {
            return Err(ShardSelectorError::EndPastSpace { end });
        }
        if u128::from(start) >= end {
            return Err(ShardSelectorError::EmptyRange { start, end });
        }
        Ok(Self { start, end })
    }

    /// The hash space cut into `count` contiguous ranges of (nearly) equal size, in
    /// order; none when `count` is 0.
    pub fn even_parts(count: u32) -> Vec<ShardRange> {
        let bound = |i: u32| HASH_SPACE_END * u128::from(i) / u128::from(count.max(1));
        (0..count)
            .map(|i| ShardRange {
                // Below 2^64: i < count.
                start: u64::try_from(bound(i)).unwrap_or(u64::MAX),
                end: bound(i + 1),
            })
            .collect()
    }

    /// The first hash in the range.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// The first hash past the range (up to [`HASH_SPACE_END`]).
    pub fn end(&self) -> u128 {
        self.end
    }

    /// Whether `hash` is in the range.
    pub fn contains(&self, hash: u64) -> bool {
        hash >= self.start && u128::from(hash) < self.end
    }
}

/// A bound as the server writes it: `0x` and 16 lowercase hex digits, or
/// `0x10000000000000000` for the end of the space.
fn hex(bound: u128) -> String {
    format!("{bound:#018x}")
}

/// Which objects of a resource one shard holds; see the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShardSelector {
    key: ShardKey,
    ranges: Vec<ShardRange>,
}

impl ShardSelector {
    /// The objects whose `key` hashes into any of `ranges` (at least one).
    pub fn new(
        key: ShardKey,
        ranges: impl IntoIterator<Item = ShardRange>,
    ) -> Result<Self, ShardSelectorError> {
        let ranges: Vec<ShardRange> = ranges.into_iter().collect();
        if ranges.is_empty() {
            return Err(ShardSelectorError::NoRanges);
        }
        Ok(Self { key, ranges })
    }

    /// The objects whose uid hashes into `range`.
    pub fn uid(range: ShardRange) -> Self {
        Self {
            key: ShardKey::Uid,
            ranges: vec![range],
        }
    }

    /// The objects whose namespace hashes into `range`.
    pub fn namespace(range: ShardRange) -> Self {
        Self {
            key: ShardKey::Namespace,
            ranges: vec![range],
        }
    }

    /// Parses a selector's text, as the API server does (see the [module docs](self)):
    /// `shardRange(<field>, '<start>', '<end>')` terms joined by `||`, in parentheses or
    /// not, with single or double quotes.
    pub fn parse(text: &str) -> Result<Self, ShardSelectorError> {
        let syntax = |reason: String| ShardSelectorError::Syntax {
            text: text.to_string(),
            reason,
        };
        let mut parser = Parser {
            rest: text.trim_start(),
        };
        let terms = parser.expression().map_err(syntax)?;
        if !parser.rest.trim_start().is_empty() {
            return Err(syntax(format!("unexpected {:?}", parser.rest.trim())));
        }
        let key = terms[0].0;
        if let Some((other, _)) = terms.iter().find(|(k, _)| *k != key) {
            return Err(syntax(format!(
                "all shard ranges must use the same field, got {} and {}",
                key.field_path(),
                other.field_path()
            )));
        }
        Self::new(key, terms.into_iter().map(|(_, range)| range))
    }

    /// The field hashed.
    pub fn key(&self) -> ShardKey {
        self.key
    }

    /// The ranges, in the order given.
    pub fn ranges(&self) -> &[ShardRange] {
        &self.ranges
    }

    /// Whether an object whose key hashes to `hash` is in the shard.
    pub fn contains(&self, hash: u64) -> bool {
        self.ranges.iter().any(|r| r.contains(hash))
    }

    /// The hash of `obj`'s key field.
    pub fn hash_of<K: Resource + 'static>(&self, obj: &K) -> u64 {
        shard_hash(self.key.value_of(obj))
    }

    /// Whether `obj` is in the shard, as the API server decides it (and, for
    /// [`ShardKey::ControllerUid`], as its docs say: always without a controller).
    pub fn matches<K: Resource + 'static>(&self, obj: &K) -> bool {
        self.matches_meta(meta_ref(obj))
    }

    /// Whether the object of `meta` is in the shard ([`matches`](Self::matches)).
    pub(crate) fn matches_meta(&self, meta: MetaRef<'_>) -> bool {
        if self.key == ShardKey::ControllerUid && meta.controller().is_none() {
            return true;
        }
        self.contains(shard_hash(self.key.value_in(meta)))
    }
}

impl fmt::Display for ShardSelector {
    /// The `shardSelector` parameter, as the API server echoes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, range) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(" || ")?;
            }
            write!(
                f,
                "shardRange({}, '{}', '{}')",
                self.key.field_path(),
                hex(range.start.into()),
                hex(range.end)
            )?;
        }
        Ok(())
    }
}

impl FromStr for ShardSelector {
    type Err = ShardSelectorError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

/// A recursive-descent reader of the subset of CEL the API server accepts.
struct Parser<'a> {
    rest: &'a str,
}

type Term = (ShardKey, ShardRange);

impl<'a> Parser<'a> {
    /// `term ('||' term)*`.
    fn expression(&mut self) -> Result<Vec<Term>, String> {
        let mut terms = self.term()?;
        while self.eat("||") {
            terms.extend(self.term()?);
        }
        Ok(terms)
    }

    /// `'(' expression ')'` or `shardRange(field, 'start', 'end')`.
    fn term(&mut self) -> Result<Vec<Term>, String> {
        if self.eat("(") {
            let terms = self.expression()?;
            self.expect(")")?;
            return Ok(terms);
        }
        let function = self.identifier();
        if function != "shardRange" {
            return Err(format!(
                "expected shardRange(...), got {:?}; only shardRange() and || are allowed",
                self.context(function)
            ));
        }
        self.expect("(")?;
        let path = self.field_path()?;
        let key = ShardKey::from_field_path(&path).ok_or_else(|| {
            format!(
                "unsupported field path {path:?}; supported: object.metadata.uid, \
                 object.metadata.namespace (and kubekit's controller.metadata.uid)"
            )
        })?;
        self.expect(",")?;
        let start = self.bound("start")?;
        self.expect(",")?;
        let end = self.bound("end")?;
        self.expect(")")?;
        let start = u64::try_from(start)
            .map_err(|_| format!("shard range start {} is the end of the space", hex(start)))?;
        let range = ShardRange::new(start, end).map_err(|e| e.to_string())?;
        Ok(vec![(key, range)])
    }

    /// `ident ('.' ident)*`.
    fn field_path(&mut self) -> Result<String, String> {
        let mut path = self.identifier().to_string();
        while self.eat(".") {
            path.push('.');
            path.push_str(self.identifier());
        }
        if path.is_empty() || path.ends_with('.') {
            return Err(format!("expected a field path, got {:?}", self.context("")));
        }
        Ok(path)
    }

    /// A quoted `0x`-prefixed bound with the server's rules.
    fn bound(&mut self, name: &str) -> Result<u128, String> {
        self.rest = self.rest.trim_start();
        let quote = self
            .rest
            .chars()
            .next()
            .filter(|c| *c == '\'' || *c == '"')
            .ok_or_else(|| {
                format!("{name} must be a string literal (e.g. '0x00000000000000ff')")
            })?;
        let body = &self.rest[1..];
        let close = body
            .find(quote)
            .ok_or_else(|| format!("unterminated string for {name}"))?;
        let literal = &body[..close];
        self.rest = &body[close + 1..];
        let digits = literal
            .strip_prefix("0x")
            .ok_or_else(|| format!("{name} must have '0x' prefix, got {literal:?}"))?;
        if digits.is_empty() {
            return Err(format!("{name}: hex value is required after '0x'"));
        }
        if let Some(c) = digits.chars().find(|c| !matches!(c, '0'..='9' | 'a'..='f')) {
            return Err(format!(
                "{name}: invalid hex character {c:?} in {literal:?} (lowercase only)"
            ));
        }
        if digits.len() != 16 && literal != "0x10000000000000000" {
            return Err(format!(
                "{name} must be a 0x-prefixed 16-digit hex value (or 0x10000000000000000), got {literal:?}"
            ));
        }
        u128::from_str_radix(digits, 16).map_err(|e| format!("{name}: {e}"))
    }

    fn identifier(&mut self) -> &'a str {
        self.rest = self.rest.trim_start();
        let end = self
            .rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(self.rest.len());
        let (ident, rest) = self.rest.split_at(end);
        self.rest = rest;
        ident
    }

    fn eat(&mut self, token: &str) -> bool {
        self.rest = self.rest.trim_start();
        match self.rest.strip_prefix(token) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    fn expect(&mut self, token: &str) -> Result<(), String> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(format!("expected {token:?}, got {:?}", self.context("")))
        }
    }

    /// What was read (`before`) and what follows, for an error.
    fn context(&self, before: &str) -> String {
        let after: String = self.rest.chars().take(24).collect();
        format!("{before}{after}")
    }
}

/// What a sharded reflector learned of the server's filtering: the metric and the log
/// line that say whether the server applied the selector or the reflector does alone.
pub(crate) struct ShardFilter {
    selector: ShardSelector,
    text: String,
    /// 0: not known yet; 1: the server filters; 2: it does not.
    mode: AtomicU8,
    metrics: Option<ShardMetrics>,
    warnings: Arc<ShardWarnings>,
}

/// The warnings a reflector's shard filters have given: one reflector has a filter per
/// shard it was given, and warns of each reason once, not on every reshard.
#[derive(Debug, Default)]
pub(crate) struct ShardWarnings(AtomicU8);

/// The server sent no `shardInfo`.
const NOT_ECHOED: u8 = 1;
/// The server echoed another selector.
const OTHER_ECHOED: u8 = 2;

impl ShardWarnings {
    /// Whether the warning `reason` is given for the first time (it is marked given).
    fn first(&self, reason: u8) -> bool {
        self.0.fetch_or(reason, Ordering::Relaxed) & reason == 0
    }
}

const SERVER_FILTERS: u8 = 1;
const CLIENT_FILTERS: u8 = 2;

impl ShardFilter {
    pub(crate) fn new(selector: ShardSelector, metrics: Option<ShardMetrics>) -> Self {
        Self {
            text: selector.to_string(),
            selector,
            mode: AtomicU8::new(0),
            metrics,
            warnings: Arc::default(),
        }
    }

    /// Gives each warning only if no filter sharing `warnings` gave it before.
    pub(crate) fn warning_once_with(mut self, warnings: &Arc<ShardWarnings>) -> Self {
        self.warnings = Arc::clone(warnings);
        self
    }

    /// The selector.
    pub(crate) fn selector(&self) -> &ShardSelector {
        &self.selector
    }

    /// The `shardSelector` parameter: none for a key the server cannot hash.
    pub(crate) fn param(&self) -> Option<&str> {
        self.selector
            .key
            .server_side()
            .then_some(self.text.as_str())
    }

    /// Whether `obj` belongs to the shard; one that does not is counted as dropped.
    pub(crate) fn keeps(&self, meta: MetaRef<'_>) -> bool {
        let keep = self.selector.matches_meta(meta);
        if !keep && let Some(m) = &self.metrics {
            m.dropped();
        }
        keep
    }

    /// A list answered with `echo` in its `metadata.shardInfo.selector`: the server
    /// filtered if it echoed this selector. Logged when that changes (the first time
    /// included).
    pub(crate) fn listed(&self, reflector: &str, echo: Option<&str>) {
        let echoed = echo.and_then(|e| ShardSelector::parse(e).ok());
        let server_filters = echoed.as_ref() == Some(&self.selector);
        let mode = if server_filters {
            SERVER_FILTERS
        } else {
            CLIENT_FILTERS
        };
        if let Some(m) = &self.metrics {
            m.server_filtered(server_filters);
        }
        if self.mode.swap(mode, Ordering::Relaxed) == mode {
            return;
        }
        match echo {
            _ if !self.selector.key.server_side() => tracing::info!(
                reflector, selector = %self.text,
                "the reflector filters objects by the shard selector itself (the API server \
                 cannot hash its field, so it is not sent)"
            ),
            _ if server_filters => tracing::info!(
                reflector, selector = %self.text,
                "the API server applies the shard selector (it echoed it in the list)"
            ),
            None if self.warnings.first(NOT_ECHOED) => tracing::warn!(
                reflector, selector = %self.text,
                "the API server did not echo the shard selector (no shardInfo in its list: its \
                 ShardedListAndWatch feature gate is off, or the list is metadata-only or of a \
                 custom resource, which never carry it); the reflector filters objects itself"
            ),
            Some(other) if self.warnings.first(OTHER_ECHOED) => tracing::warn!(
                reflector, selector = %self.text, echoed = other,
                "the API server applied another shard selector than the one asked for; \
                 the reflector filters objects itself"
            ),
            echoed => tracing::debug!(
                reflector, selector = %self.text, echoed,
                "the API server did not apply the shard selector; the reflector filters objects itself"
            ),
        }
    }
}

/// What a reshardable reflector (and so informer) caches: see [`ShardControl`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardTarget {
    /// Every object (no `shardSelector`).
    Everything,
    /// No object: the reflector neither lists nor watches, and its store is emptied.
    Nothing,
    /// The objects of one shard.
    Shard(ShardSelector),
}

struct ControlInner {
    /// The generation and the target asked for.
    target: tokio::sync::watch::Sender<(u64, ShardTarget)>,
    /// The last generation a reflector finished listing (its store replaced); `None`
    /// before the first list.
    listed: tokio::sync::watch::Sender<Option<u64>>,
}

/// Changes what a *running* reflector caches; given to it in
/// [`ReflectorOptions::shard_control`](super::ReflectorOptions::shard_control) (or made by
/// [`SharedIndexInformer::shard_control`](super::SharedIndexInformer::shard_control)).
///
/// # What it promises
///
/// - Every [`set`](Self::set) to a different target is a new *generation*. The reflector
///   drops its watch at once and relists with the new target's selector; the relist
///   replaces the store's content (Replace semantics: objects outside the new target are
///   deleted, objects still in it are kept, updated if they changed, and none is lost:
///   the relist is the server's state at or after the last event the reflector applied).
/// - [`listed`](Self::listed) returns once the reflector finished a relist with that
///   generation or a later one. A reflector whose target is [`ShardTarget::Nothing`]
///   empties its store (a relist of nothing) and then waits for the next target.
/// - Setting the target it already has changes nothing and returns its generation.
///
/// ```
/// use kubekit::cache::{ShardControl, ShardRange, ShardSelector, ShardTarget};
///
/// let control = ShardControl::new(ShardTarget::Nothing);
/// let half = ShardSelector::uid(ShardRange::new(0, 1 << 63).unwrap());
/// let generation = control.set(ShardTarget::Shard(half.clone()));
/// assert_eq!(generation, 1);
/// assert_eq!(control.set(ShardTarget::Shard(half)), 1, "unchanged");
/// ```
#[derive(Clone)]
pub struct ShardControl {
    inner: std::sync::Arc<ControlInner>,
}

impl fmt::Debug for ShardControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (generation, target) = self.target();
        f.debug_struct("ShardControl")
            .field("generation", &generation)
            .field("target", &target)
            .field("listed", &*self.inner.listed.borrow())
            .finish()
    }
}

impl ShardControl {
    /// A control whose first target (generation 0) is `target`.
    pub fn new(target: ShardTarget) -> Self {
        Self {
            inner: std::sync::Arc::new(ControlInner {
                target: tokio::sync::watch::Sender::new((0, target)),
                listed: tokio::sync::watch::Sender::new(None),
            }),
        }
    }

    /// Asks for `target`; returns its generation (unchanged if it is the current target).
    pub fn set(&self, target: ShardTarget) -> u64 {
        let mut generation = 0;
        self.inner.target.send_if_modified(|current| {
            if current.1 == target {
                generation = current.0;
                return false;
            }
            current.0 += 1;
            current.1 = target;
            generation = current.0;
            true
        });
        generation
    }

    /// The generation and target asked for last.
    pub fn target(&self) -> (u64, ShardTarget) {
        self.inner.target.borrow().clone()
    }

    /// The last generation a reflector finished listing (`None` before its first list).
    pub fn listed_generation(&self) -> Option<u64> {
        *self.inner.listed.borrow()
    }

    /// Waits until a reflector finished listing `generation` (or a later one).
    pub async fn listed(&self, generation: u64) {
        let mut rx = self.inner.listed.subscribe();
        // The sender lives in `self`: the channel cannot close while we wait.
        let _ = rx
            .wait_for(|listed| listed.is_some_and(|l| l >= generation))
            .await;
    }

    /// Waits until a generation after `generation` is asked for.
    pub(crate) async fn changed_after(&self, generation: u64) {
        let mut rx = self.inner.target.subscribe();
        let _ = rx.wait_for(|(g, _)| *g > generation).await;
    }

    /// Records that a reflector finished listing `generation`.
    pub(crate) fn mark_listed(&self, generation: u64) {
        self.inner
            .listed
            .send_if_modified(|listed| match listed.is_none_or(|l| l < generation) {
                true => {
                    *listed = Some(generation);
                    true
                }
                false => false,
            });
    }
}

#[cfg(test)]
mod tests;
