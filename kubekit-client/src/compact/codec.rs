//! The compression behind [`Compact`](crate::compact::Compact): zstd with a dictionary per Rust
//! type, trained on the first objects of that type.
//!
//! # Contract
//!
//! - Objects of one type (every `Compact<Pod>` of the process, whatever the informer) are
//!   much alike: the same keys, the same images, the same managed-fields shapes. zstd
//!   compresses a single ~7 KiB Pod about 3.5x on its own, and 10x or more with a
//!   dictionary of what Pods have in common. So the first objects of a type are kept as
//!   training samples ([`SAMPLE_OBJECTS`] of them, or fewer when they reach
//!   [`SAMPLE_BYTES`]; each object is still compressed, without a dictionary, and stored at
//!   once); when they are complete, a thread of its own trains a dictionary of at most
//!   [`DICTIONARY_BYTES`] from them and every object of the type compressed after it is
//!   trained uses it. Objects compressed before keep their frame: a [`Frame`] names the
//!   dictionary it needs, so every frame decompresses whichever way it was made.
//! - Training happens once per type and blocks no thread that compresses: it takes tenths
//!   of a second (about as long as an informer takes to decode 10,000 small objects), during
//!   which objects are compressed without the dictionary. If it fails (samples too alike or
//!   too few), the type goes on without a dictionary.
//! - One compression and one decompression context per thread, made on first use.

use std::cell::RefCell;
use std::fmt;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use zstd_safe::{CCtx, CDict, DCtx, DDict};

use crate::per_type::per_type;

/// zstd level: 1 is several times faster than the default 3 for JSON of this size, at a
/// few percent of size.
const LEVEL: i32 = 1;

/// At most this many bytes of objects are kept per type to train its dictionary on: about
/// 170 Deployments, 400 ConfigMaps of 2.6 KB. Training takes time in proportion to them
/// (about 0.16 s a MiB), on a core the informer's decoding and the API server share.
pub(crate) const SAMPLE_BYTES: usize = 1 << 20;

/// At most this many objects are kept per type to train its dictionary on: for small
/// objects (Events, short ConfigMaps), well before [`SAMPLE_BYTES`], so that the dictionary
/// comes early in the first list and training (which takes time in proportion to the
/// samples' bytes) is short.
pub(crate) const SAMPLE_OBJECTS: usize = 1000;

/// The largest dictionary trained.
pub(crate) const DICTIONARY_BYTES: usize = 32 << 10;

/// A trained dictionary, prepared for both directions.
pub(crate) struct Dictionary {
    cdict: CDict<'static>,
    ddict: DDict<'static>,
    len: usize,
}

impl fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dictionary")
            .field("len", &self.len)
            .finish()
    }
}

/// Samples gathered until there are enough to train on.
#[derive(Default)]
struct Samples {
    data: Vec<u8>,
    sizes: Vec<usize>,
}

/// The compression state of one type.
struct Codec {
    dictionary: OnceLock<Option<Arc<Dictionary>>>,
    /// `None` once the samples were handed to training.
    samples: Mutex<Option<Samples>>,
}

/// A handle on the compression state of one type ([`Frame::compression_of`]).
#[derive(Clone, Copy)]
pub(crate) struct Compression(&'static Codec);

impl Default for Codec {
    fn default() -> Self {
        Self {
            dictionary: OnceLock::new(),
            samples: Mutex::new(Some(Samples::default())),
        }
    }
}

impl Codec {
    /// The dictionary to compress `json` with, once trained; `json` becomes a sample while
    /// samples are being gathered, and the last sample starts the training.
    fn dictionary_for(&'static self, json: &[u8]) -> Option<Arc<Dictionary>> {
        if let Some(trained) = self.dictionary.get() {
            return trained.clone();
        }
        let complete = {
            let mut samples = self.samples.lock();
            let gathering = samples.as_mut()?; // being trained on
            gathering.data.extend_from_slice(json);
            gathering.sizes.push(json.len());
            if gathering.data.len() < SAMPLE_BYTES && gathering.sizes.len() < SAMPLE_OBJECTS {
                return None;
            }
            samples.take()?
        };
        let training = move || {
            let _ = self.dictionary.set(train(&complete));
        };
        if let Err(e) = std::thread::Builder::new()
            .name("kubekit-zstd-dict".into())
            .spawn(training)
        {
            // No thread to be had: objects go on without a dictionary rather than wait.
            tracing::debug!("no thread to train a compression dictionary on: {e}");
            let _ = self.dictionary.set(None);
        }
        None
    }

    /// Waits for the dictionary's training to end (its samples complete).
    #[cfg(test)]
    fn trained(&self) -> Option<Arc<Dictionary>> {
        self.dictionary.wait().clone()
    }
}

fn train(samples: &Samples) -> Option<Arc<Dictionary>> {
    let mut buffer = Vec::with_capacity(DICTIONARY_BYTES);
    match zstd_safe::train_from_buffer(&mut buffer, &samples.data, &samples.sizes) {
        Ok(_) => {
            tracing::debug!(
                samples = samples.sizes.len(),
                bytes = buffer.len(),
                "trained a compression dictionary"
            );
            Some(Arc::new(Dictionary {
                cdict: CDict::create(&buffer, LEVEL),
                ddict: DDict::create(&buffer),
                len: buffer.len(),
            }))
        }
        Err(code) => {
            tracing::debug!(
                "no compression dictionary ({}): objects are compressed alone",
                zstd_safe::get_error_name(code)
            );
            None
        }
    }
}

/// One object's compressed bytes (JSON or a protobuf message).
#[derive(Clone)]
pub(crate) struct Frame {
    /// The zstd frame.
    data: Box<[u8]>,
    /// The dictionary it was compressed with.
    dictionary: Option<Arc<Dictionary>>,
    /// Length of the JSON.
    len: u32,
}

thread_local! {
    /// Making a context costs more than compressing a Pod: one of each per thread.
    static CONTEXTS: RefCell<Option<(CCtx<'static>, DCtx<'static>)>> = const { RefCell::new(None) };
    /// Room for one compressed frame before it is copied into an allocation of its size.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn with_contexts<R>(f: impl FnOnce(&mut CCtx<'static>, &mut DCtx<'static>) -> R) -> R {
    CONTEXTS.with_borrow_mut(|contexts| {
        let (cctx, dctx) = contexts.get_or_insert_with(|| (CCtx::create(), DCtx::create()));
        f(cctx, dctx)
    })
}

impl Frame {
    /// Compresses one object's JSON of type `T` (the type picks the dictionary).
    #[cfg(test)]
    fn compress<T: 'static>(json: &[u8]) -> Result<Self, String> {
        Self::compress_with(Self::compression_of::<T>(), json)
    }

    /// The compression state of the objects of type `T`: its dictionary, trained on the
    /// first of them.
    pub(crate) fn compression_of<T: 'static>() -> Compression {
        Compression(per_type::<T, Codec>())
    }

    /// Compresses one object with the compression state of its type: not generic, so
    /// compiled once for every type.
    pub(crate) fn compress_with(compression: Compression, json: &[u8]) -> Result<Self, String> {
        let len = u32::try_from(json.len()).map_err(|_| "object larger than 4 GiB".to_string())?;
        let dictionary = compression.0.dictionary_for(json);
        let data = SCRATCH.with_borrow_mut(|scratch| {
            scratch.clear();
            scratch.reserve(zstd_safe::compress_bound(json.len()));
            with_contexts(|cctx, _| match &dictionary {
                Some(d) => cctx.compress_using_cdict(scratch, json, &d.cdict),
                None => cctx.compress(scratch, json, LEVEL),
            })
            .map_err(|code| format!("compressing: {}", zstd_safe::get_error_name(code)))?;
            Ok::<_, String>(Box::<[u8]>::from(scratch.as_slice()))
        })?;
        Ok(Self {
            data,
            dictionary,
            len,
        })
    }

    /// The JSON, decompressed.
    pub(crate) fn decompress(&self) -> Result<Vec<u8>, String> {
        let mut json = Vec::with_capacity(self.len as usize);
        with_contexts(|_, dctx| match &self.dictionary {
            Some(d) => dctx.decompress_using_ddict(&mut json, &self.data, &d.ddict),
            None => dctx.decompress(&mut json, &self.data),
        })
        .map_err(|code| format!("decompressing: {}", zstd_safe::get_error_name(code)))?;
        if json.len() != self.len as usize {
            return Err(format!(
                "decompressing: {} bytes instead of {}",
                json.len(),
                self.len
            ));
        }
        Ok(json)
    }

    /// Bytes of the compressed frame.
    pub(crate) fn compressed_len(&self) -> usize {
        self.data.len()
    }

    /// Bytes of the data before compression.
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the frame was compressed with its type's dictionary.
    #[cfg(test)]
    fn has_dictionary(&self) -> bool {
        self.dictionary.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A type of its own per test, so each test trains its own dictionary.
    struct Alike;
    struct Tiny;

    fn object(i: usize) -> Vec<u8> {
        format!(
            r#"{{"metadata":{{"name":"web-{i}","namespace":"ns-{}","uid":"0000-{i:08}"}},"spec":{{"containers":[{{"name":"nginx","image":"nginx:1.27","ports":[{{"containerPort":80}}],"env":[{{"name":"MODE","value":"production"}},{{"name":"REGION","value":"eu-west-{}"}}]}}],"restartPolicy":"Always","dnsPolicy":"ClusterFirst","terminationGracePeriodSeconds":30}}}}"#,
            i % 7,
            i % 3
        )
        .into_bytes()
    }

    #[test]
    fn objects_after_the_samples_use_the_trained_dictionary_and_all_decompress() {
        let codec = Frame::compression_of::<Alike>().0;
        let mut frames = Vec::new();
        let mut i = 0;
        // These objects are small: the object count completes the samples.
        while codec.samples.lock().is_some() {
            assert!(
                codec.dictionary.get().is_none(),
                "trained before the samples were complete"
            );
            frames.push(Frame::compress::<Alike>(&object(i)).unwrap());
            i += 1;
        }
        assert_eq!(i, SAMPLE_OBJECTS);
        assert!(codec.trained().is_some(), "a dictionary was trained");
        for _ in 0..10 {
            frames.push(Frame::compress::<Alike>(&object(i)).unwrap());
            i += 1;
        }
        let plain = &frames[0];
        let with_dictionary = frames.last().unwrap();
        assert!(!plain.has_dictionary() && with_dictionary.has_dictionary());
        assert!(
            with_dictionary.compressed_len() * 2 < plain.compressed_len(),
            "{} vs {}",
            with_dictionary.compressed_len(),
            plain.compressed_len()
        );
        for (i, frame) in frames.iter().enumerate() {
            assert_eq!(frame.decompress().unwrap(), object(i));
            assert_eq!(frame.len(), object(i).len());
        }
    }

    #[test]
    fn large_objects_complete_the_samples_by_their_bytes() {
        struct Large;
        let codec = Frame::compression_of::<Large>().0;
        let large = |i: usize| [object(i), vec![b' '; 8 << 10]].concat();
        let mut sampled = 0;
        let mut i = 0;
        while codec.samples.lock().is_some() {
            sampled += large(i).len();
            Frame::compress::<Large>(&large(i)).unwrap();
            i += 1;
        }
        assert!(sampled >= SAMPLE_BYTES && sampled - large(i - 1).len() < SAMPLE_BYTES);
        assert!(i < SAMPLE_OBJECTS);
        let frame = Frame::compress::<Large>(&large(i)).unwrap();
        assert_eq!(frame.decompress().unwrap(), large(i));
    }

    #[test]
    fn a_frame_decompresses_on_another_thread() {
        let frame = Frame::compress::<Tiny>(b"{\"a\":1}").unwrap();
        let json = std::thread::spawn(move || frame.decompress().unwrap())
            .join()
            .unwrap();
        assert_eq!(json, b"{\"a\":1}");
    }

    #[test]
    fn a_corrupt_frame_is_an_error() {
        let mut frame = Frame::compress::<Tiny>(b"{\"a\":1}").unwrap();
        frame.data = Box::from(&b"not zstd"[..]);
        assert!(frame.decompress().unwrap_err().starts_with("decompressing"));
    }
}
