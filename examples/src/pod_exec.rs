//! Runs a command in a Pod's container, like `kubectl exec`: client-go's
//! `remotecommand` executor. Exits with the command's exit code.
//!
//! ```text
//! cargo run -p kubekit-examples --bin pod-exec -- \
//!     [--kubeconfig PATH] [--master URL] [--namespace NS] POD [stdin] [container=NAME] -- COMMAND [ARG...]
//! ```
//!
//! `stdin` passes this program's standard input to the command (as `kubectl exec -i`),
//! ending it with EOF; without it the command gets no input. Its stdout and stderr are
//! printed as they arrive.

use anyhow::bail;
use kubekit::clientset::Clientset;
use kubekit::pods::ExecOptions;

const USAGE: &str = "usage: pod-exec [flags] POD [stdin] [container=NAME] -- COMMAND [ARG...]";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Everything after `--` is the command; the flags parser keeps it positional.
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let Some(split) = raw.iter().position(|a| a == "--") else {
        bail!("{USAGE}");
    };
    let command = raw[split + 1..].to_vec();
    let flags = kubekit_examples::Flags::parse_from(raw[..split].iter().cloned())?;
    let (Some((pod, words)), false) = (flags.args.split_first(), command.is_empty()) else {
        bail!("{USAGE}");
    };
    let mut opts = ExecOptions::default();
    for word in words {
        match word.split_once('=') {
            None if word == "stdin" => opts.stdin = true,
            Some(("container", c)) => opts.container = Some(c.to_string()),
            _ => bail!("unknown option {word:?}; known: stdin, container=NAME"),
        }
    }
    let config = flags.config().await?;
    let namespace = flags.namespace_or_default(&config);
    let pods = Clientset::new(&config)?.core_v1().pods(&namespace);

    let process = pods.exec(pod, command, &opts).await?;
    let stdin = opts.stdin.then(tokio::io::stdin);
    let status = process
        .stream(stdin, Some(tokio::io::stdout()), Some(tokio::io::stderr()))
        .await?;
    std::process::exit(status.code());
}
