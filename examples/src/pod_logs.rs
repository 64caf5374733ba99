//! Prints a container's log, like `kubectl logs`: client-go's `GetLogs(name, opts).Stream`.
//!
//! ```text
//! cargo run -p kubekit-examples --bin pod-logs -- \
//!     [--kubeconfig PATH] [--master URL] [--namespace NS] POD [follow] [tail=N] [container=NAME]
//! ```
//!
//! `follow` keeps printing what the container writes until it ends (or Ctrl-C); `tail=N`
//! starts with its last N lines; `container=NAME` picks a container of a Pod with several.

use anyhow::{Context, bail};
use futures_util::StreamExt;
use kubekit::clientset::Clientset;
use kubekit::pods::LogOptions;
use tokio::io::AsyncWriteExt;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = kubekit_examples::Flags::parse()?;
    let Some((pod, words)) = flags.args.split_first() else {
        bail!("usage: pod-logs [flags] POD [follow] [tail=N] [container=NAME]");
    };
    let mut opts = LogOptions::default();
    for word in words {
        match word.split_once('=') {
            None if word == "follow" => opts.follow = true,
            Some(("tail", n)) => {
                opts.tail_lines = Some(n.parse().with_context(|| format!("tail={n}"))?);
            }
            Some(("container", c)) => opts.container = Some(c.to_string()),
            _ => bail!("unknown option {word:?}; known: follow, tail=N, container=NAME"),
        }
    }
    let config = flags.config().await?;
    let namespace = flags.namespace_or_default(&config);
    let pods = Clientset::new(&config)?.core_v1().pods(&namespace);

    let mut log = Box::pin(pods.log_stream(pod, &opts).await?);
    let mut out = tokio::io::stdout();
    loop {
        tokio::select! {
            chunk = log.next() => match chunk {
                Some(chunk) => {
                    out.write_all(&chunk?).await?;
                    out.flush().await?;
                }
                None => return Ok(()),
            },
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
    }
}
