//! [`RangeSet`]: a set of hashes as sorted, disjoint, non-adjacent half-open ranges of
//! the hash space `[0, 2^64)`, and its text in a member's Lease annotation.
//!
//! The text is the ranges joined by `,`, each `0x<start>-0x<end>` with the bounds as
//! [`ShardSelector`](kubekit_runtime::cache::ShardSelector) writes them (`0x10000000000000000` for
//! the end of the space); the empty string is the empty set. [`RangeSet::parse`] refuses
//! anything else (the caller decides what an unreadable set means) and never panics.

use std::fmt;

use kubekit_runtime::cache::{HASH_SPACE_END, ShardRange};

/// A set of hashes; see the [module docs](self).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RangeSet {
    /// Sorted, disjoint, non-adjacent, none empty.
    spans: Vec<(u128, u128)>,
}

impl RangeSet {
    /// The whole hash space.
    pub(crate) fn full() -> Self {
        Self::from_spans([(0, HASH_SPACE_END)])
    }

    /// The set of the given `[start, end)` spans (empty ones ignored, overlaps merged).
    fn from_spans(spans: impl IntoIterator<Item = (u128, u128)>) -> Self {
        let mut sorted: Vec<(u128, u128)> = spans.into_iter().filter(|(s, e)| s < e).collect();
        sorted.sort_unstable();
        let mut merged: Vec<(u128, u128)> = Vec::with_capacity(sorted.len());
        for (start, end) in sorted {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        Self { spans: merged }
    }

    /// Whether the set is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Whether `hash` is in the set.
    pub(crate) fn contains(&self, hash: u64) -> bool {
        let hash = u128::from(hash);
        self.spans.iter().any(|(s, e)| *s <= hash && hash < *e)
    }

    /// The hashes in either set.
    pub(crate) fn union(&self, other: &Self) -> Self {
        Self::from_spans(self.spans.iter().chain(&other.spans).copied())
    }

    /// The hashes in both sets.
    pub(crate) fn intersect(&self, other: &Self) -> Self {
        let mut out = Vec::new();
        for (a0, a1) in &self.spans {
            for (b0, b1) in &other.spans {
                out.push(((*a0).max(*b0), (*a1).min(*b1)));
            }
        }
        Self::from_spans(out)
    }

    /// The hashes of `self` not in `other`.
    pub(crate) fn subtract(&self, other: &Self) -> Self {
        let mut out = Vec::new();
        for &(start, end) in &self.spans {
            let mut cursor = start;
            for &(b0, b1) in &other.spans {
                if b1 <= cursor || b0 >= end {
                    continue;
                }
                if b0 > cursor {
                    out.push((cursor, b0));
                }
                cursor = cursor.max(b1);
            }
            if cursor < end {
                out.push((cursor, end));
            }
        }
        Self::from_spans(out)
    }

    /// The set as shard ranges (empty for the empty set).
    pub(crate) fn ranges(&self) -> Vec<ShardRange> {
        self.spans
            .iter()
            .filter_map(|(s, e)| ShardRange::new(u64::try_from(*s).ok()?, *e).ok())
            .collect()
    }

    /// How many contiguous ranges the set has.
    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }

    /// The share of the hash space the set covers, in `[0, 1]`.
    pub(crate) fn fraction(&self) -> f64 {
        let covered: u128 = self.spans.iter().map(|(s, e)| e - s).sum();
        // f64 loses low bits of 2^64-sized numbers, not the ratio.
        covered as f64 / HASH_SPACE_END as f64
    }

    /// The set's text in a Lease annotation (see the [module docs](self)).
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(Self::default());
        }
        let bound = |b: &str| -> Result<u128, String> {
            let digits = b
                .trim()
                .strip_prefix("0x")
                .ok_or_else(|| format!("bound {b:?} lacks the 0x prefix"))?;
            let value = u128::from_str_radix(digits, 16)
                .map_err(|e| format!("bound {b:?} is not hexadecimal: {e}"))?;
            if value > HASH_SPACE_END {
                return Err(format!("bound {b:?} is past the end of the hash space"));
            }
            Ok(value)
        };
        let spans = text
            .split(',')
            .map(|range| {
                let (start, end) = range
                    .split_once('-')
                    .ok_or_else(|| format!("range {range:?} is not <start>-<end>"))?;
                let (start, end) = (bound(start)?, bound(end)?);
                if start >= end {
                    return Err(format!("range {range:?} is empty"));
                }
                Ok((start, end))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Self::from_spans(spans))
    }
}

impl From<ShardRange> for RangeSet {
    fn from(range: ShardRange) -> Self {
        Self::from_spans([(u128::from(range.start()), range.end())])
    }
}

impl fmt::Display for RangeSet {
    /// The annotation text: `0x…-0x…` ranges joined by `,`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (start, end)) in self.spans.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{start:#018x}-{end:#018x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(spans: &[(u128, u128)]) -> RangeSet {
        RangeSet::from_spans(spans.iter().copied())
    }

    #[test]
    fn set_operations_keep_spans_sorted_disjoint_and_merged() {
        let a = set(&[(0, 10), (20, 30)]);
        let b = set(&[(5, 25)]);
        assert_eq!(a.union(&b), set(&[(0, 30)]));
        assert_eq!(a.intersect(&b), set(&[(5, 10), (20, 25)]));
        assert_eq!(a.subtract(&b), set(&[(0, 5), (25, 30)]));
        assert_eq!(b.subtract(&a), set(&[(10, 20)]));
        assert!(set(&[(0, 10)]).intersect(&set(&[(10, 20)])).is_empty());
        assert_eq!(set(&[(0, 10), (10, 20)]).len(), 1, "adjacent spans merge");
        assert!(a.contains(29) && !a.contains(30) && !a.contains(15));
        assert_eq!(
            RangeSet::full().subtract(&RangeSet::full()),
            RangeSet::default()
        );
    }

    #[test]
    fn annotation_text_round_trips_and_bad_text_is_an_error_not_a_panic() {
        let thirds: Vec<RangeSet> = ShardRange::even_parts(3)
            .into_iter()
            .map(Into::into)
            .collect();
        let outer = thirds[0].union(&thirds[2]);
        let text = outer.to_string();
        assert_eq!(
            text,
            "0x0000000000000000-0x5555555555555555,0xaaaaaaaaaaaaaaaa-0x10000000000000000"
        );
        assert_eq!(RangeSet::parse(&text), Ok(outer));
        assert_eq!(RangeSet::parse(""), Ok(RangeSet::default()));
        assert!((RangeSet::full().fraction() - 1.0).abs() < 1e-12);
        for bad in [
            "x",
            "0x1",
            "0x5-0x1",
            "1-2",
            "0xzz-0x10",
            "0x0-0x100000000000000000",
            "0x0-0x1,",
        ] {
            assert!(RangeSet::parse(bad).is_err(), "{bad:?}");
        }
    }
}
