//! The floor of the informer benchmark (`kubekit-informer floor-peer --json|--protobuf`): a
//! reader that makes the informers' request — a streaming list of all Pods, or of the
//! kind `--resource` names (`watch=true&sendInitialEvents=true`), asking for JSON or for protobuf — and decodes
//! nothing. It splits the stream into events (lines, or length-prefixed frames) and reads
//! only each event's type, so its sync time is what the server and the transport cost:
//! no informer can sync faster from the same server. It reports as `reader-json` or
//! `reader-protobuf`, in the protocol of [`informer_protocol`]: `synced` once the
//! bookmark that ends the initial events came, with the number of ADDED events as its
//! objects; with `--updates M`, `updated` once M MODIFIED events followed.

use std::time::Instant;

use futures_util::StreamExt;
use informer_protocol::{PeerOptions, UpdateTimer, report_synced, report_updated};
use kubekit::rest::RestClient;

/// What the reader asks the server for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// JSON: one event per line.
    Json,
    /// Protobuf: length-prefixed frames.
    Protobuf,
}

impl Encoding {
    /// The name the reader reports.
    pub fn client_name(self) -> &'static str {
        match self {
            Encoding::Json => "reader-json",
            Encoding::Protobuf => "reader-protobuf",
        }
    }

    /// The flag of the peer's command line that selects it.
    pub fn flag(self) -> &'static str {
        match self {
            Encoding::Json => "--json",
            Encoding::Protobuf => "--protobuf",
        }
    }

    fn accept(self) -> &'static str {
        match self {
            Encoding::Json => "application/json",
            Encoding::Protobuf => "application/vnd.kubernetes.protobuf;stream=watch",
        }
    }
}

/// Parses the reader's arguments: `--json` or `--protobuf`, and the common peer options.
pub fn parse(args: impl Iterator<Item = String>) -> Result<(Encoding, PeerOptions), String> {
    let (flags, rest): (Vec<String>, Vec<String>) =
        args.partition(|a| a == "--json" || a == "--protobuf");
    let encoding = match flags.as_slice() {
        [flag] if flag == "--json" => Encoding::Json,
        [_] => Encoding::Protobuf,
        _ => return Err(format!("give one of --json and --protobuf, got {flags:?}")),
    };
    Ok((encoding, PeerOptions::parse(rest.into_iter())?))
}

/// The type of one event, read without decoding its object.
#[derive(Debug, PartialEq, Eq)]
enum EventType {
    Added,
    Modified,
    Bookmark,
    Other,
}

impl EventType {
    fn of(name: &[u8]) -> Self {
        match name {
            b"ADDED" => EventType::Added,
            b"MODIFIED" => EventType::Modified,
            b"BOOKMARK" => EventType::Bookmark,
            _ => EventType::Other,
        }
    }
}

/// The type of a JSON watch line: kube-apiserver writes `{"type":"…","object":…}`.
fn json_event_type(line: &[u8]) -> Result<EventType, String> {
    let rest = line
        .strip_prefix(b"{\"type\":\"")
        .ok_or_else(|| format!("not a watch event: {}", String::from_utf8_lossy(line)))?;
    let end = rest.iter().position(|&b| b == b'"').unwrap_or(rest.len());
    Ok(EventType::of(&rest[..end]))
}

/// Splits a growing buffer into events and gives each one's type.
struct Splitter {
    encoding: Encoding,
    buf: Vec<u8>,
    /// Bytes of `buf` already split off.
    start: usize,
}

impl Splitter {
    /// The next complete event's type, if `buf` holds one.
    fn next(&mut self) -> Result<Option<EventType>, String> {
        let pending = &self.buf[self.start..];
        match self.encoding {
            Encoding::Json => {
                let Some(end) = pending.iter().position(|&b| b == b'\n') else {
                    return Ok(None);
                };
                let event = json_event_type(&pending[..end])?;
                self.start += end + 1;
                Ok(Some(event))
            }
            Encoding::Protobuf => {
                let split = kubekit_protobuf::split_frame(pending, usize::MAX)
                    .map_err(|e| e.to_string())?;
                let Some((frame, rest)) = split else {
                    return Ok(None);
                };
                let event = kubekit_protobuf::WatchEvent::read(frame)
                    .map_err(|e| format!("a watch frame: {e}"))?;
                self.start = self.buf.len() - rest.len();
                Ok(Some(EventType::of(event.event_type.as_bytes())))
            }
        }
    }

    fn extend(&mut self, chunk: &[u8]) {
        self.buf.drain(..self.start);
        self.start = 0;
        self.buf.extend_from_slice(chunk);
    }
}

/// Runs the reader until it has reported.
pub fn run((encoding, options): (Encoding, PeerOptions)) -> Result<(), String> {
    let target = options.target.clone();
    crate::informer_peer::run_with_config(&target, |config| async move {
        let rest = RestClient::new(&config).map_err(|e| e.to_string())?;
        let client = encoding.client_name();
        let (group, version) = options.kind.group_version();
        let started = Instant::now();
        let mut body = rest
            .get()
            .group_version(group, version)
            .resource(options.kind.resource())
            .param("watch", "true")
            .param("sendInitialEvents", "true")
            .param("resourceVersionMatch", "NotOlderThan")
            .param("allowWatchBookmarks", "true")
            .accept(encoding.accept())
            .stream()
            .await
            .map_err(|e| format!("the streaming list: {e}"))?;
        let mut splitter = Splitter {
            encoding,
            buf: Vec::new(),
            start: 0,
        };
        let (mut added, mut bytes, mut synced) = (0usize, 0usize, false);
        let mut timer = UpdateTimer::new(options.updates);
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| format!("reading the stream: {e}"))?;
            bytes += chunk.len();
            splitter.extend(&chunk);
            while let Some(event) = splitter.next()? {
                match event {
                    EventType::Added if !synced => added += 1,
                    EventType::Bookmark if !synced => {
                        synced = true;
                        let seconds = started.elapsed().as_secs_f64();
                        eprintln!("{client}: {bytes} bytes until the initial events' end");
                        report_synced(client, seconds, || added)?;
                        if options.updates == 0 {
                            return Ok(());
                        }
                    }
                    EventType::Modified if synced => {
                        if let Some(seconds) = timer.record(Instant::now()) {
                            return report_updated(client, options.updates, seconds);
                        }
                    }
                    _ => {}
                }
            }
        }
        Err("the server ended the stream before the reader was done".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_are_split_and_typed_without_decoding() {
        let mut s = Splitter {
            encoding: Encoding::Json,
            buf: Vec::new(),
            start: 0,
        };
        s.extend(b"{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"BOOK");
        assert_eq!(s.next().unwrap(), Some(EventType::Added));
        assert_eq!(s.next().unwrap(), None, "half a line waits");
        s.extend(b"MARK\",\"object\":{}}\n");
        assert_eq!(s.next().unwrap(), Some(EventType::Bookmark));
        s.extend(b"[]\n");
        assert!(s.next().is_err());
    }

    #[test]
    fn protobuf_frames_are_split_and_typed_without_decoding() {
        let mut out = Vec::new();
        for kind in ["ADDED", "MODIFIED"] {
            kubekit_protobuf::WatchEvent {
                event_type: kind.into(),
                object: b"k8s\0",
            }
            .write_frame(&mut out);
        }
        let mut s = Splitter {
            encoding: Encoding::Protobuf,
            buf: Vec::new(),
            start: 0,
        };
        s.extend(&out[..out.len() - 1]);
        assert_eq!(s.next().unwrap(), Some(EventType::Added));
        assert_eq!(s.next().unwrap(), None);
        s.extend(&out[out.len() - 1..]);
        assert_eq!(s.next().unwrap(), Some(EventType::Modified));
    }
}
