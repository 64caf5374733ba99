//! kubekit against a control plane whose Pods run (testenv's control plane with nodes:
//! kube-scheduler and kwok's simulated nodes). A Pod's logs, exec, attach and port-forward
//! go through the real kube-apiserver to kwok's kubelet endpoint: logs are
//! `testenv::POD_LOG_LINES`, exec runs the command on this machine, and every Pod port
//! echoes what it receives. Scaling a Deployment changes how many of its Pods run.

use std::io::Write as _;
use std::net::Ipv4Addr;
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kubekit::clientset::{Clientset, ListOptions, PatchBody, ResourceClient};
use kubekit::pods::{ExecOptions, LogOptions, PortMapping, Process};
use kubekit::rest::RestConfig;
use kubekit::scale::{GroupResource, ScaleClient};
use testenv::POD_LOG_LINES;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long any one step may take before the test fails (generous: a loaded 2-core CI).
const DEADLINE: Duration = Duration::from_secs(60);

/// A clientset for the control plane with nodes, and a fresh namespace.
async fn setup(prefix: &str) -> (Clientset, String) {
    let cp = testenv::control_plane_with_nodes();
    let ns = cp.create_namespace(&cp.client().await, prefix).await;
    let config = RestConfig::from_kubeconfig(cp.kubeconfig_path())
        .await
        .expect("admin kubeconfig");
    (Clientset::new(&config).expect("clientset"), ns)
}

/// A Pod client for a fresh namespace with one Running Pod named `pod` in it.
async fn running_pod(prefix: &str, pod: &str) -> ResourceClient<Pod> {
    let (clientset, ns) = setup(prefix).await;
    let cp = testenv::control_plane_with_nodes();
    cp.run_pod(&cp.client().await, &ns, pod).await;
    clientset.core_v1().pods(&ns)
}

/// A fresh Running Pod `shell` and `command` run in it with the streams of `opts`.
async fn exec_in_new_pod(
    prefix: &str,
    command: &[&str],
    opts: &ExecOptions,
) -> (ResourceClient<Pod>, Process) {
    let pods = running_pod(prefix, "shell").await;
    let process = pods
        .exec("shell", command.iter().copied(), opts)
        .await
        .unwrap();
    (pods, process)
}

/// [`exec_in_new_pod`] with stdin connected too.
async fn exec_with_stdin(prefix: &str, command: &[&str]) -> (ResourceClient<Pod>, Process) {
    let opts = ExecOptions {
        stdin: true,
        ..Default::default()
    };
    exec_in_new_pod(prefix, command, &opts).await
}

async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no result within {DEADLINE:?}"))
}

fn lines(text: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(text)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Appends `line` to the log every Pod of this binary's control plane shows (kwok serves
/// this file as every container's log and attach output, in the kubelet's CRI log format).
fn container_writes(line: &str) {
    let path = testenv::control_plane_with_nodes().pod_log_path();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    let stamp = k8s_openapi::jiff::Timestamp::now();
    writeln!(file, "{stamp} stdout F {line}").unwrap();
}

/// Every log and attach assertion is in this one test: it appends to the log file every
/// Pod of this binary's control plane shares, which would change what the others read.
#[tokio::test]
async fn logs_are_read_whole_cut_with_tail_followed_and_attached_as_written() {
    let pods = running_pod("logs", "logger").await;

    let whole = pods.logs("logger", &LogOptions::default()).await.unwrap();
    assert_eq!(lines(&whole), POD_LOG_LINES);

    let tail = LogOptions {
        tail_lines: Some(1),
        ..Default::default()
    };
    let last = pods.logs("logger", &tail).await.unwrap();
    assert_eq!(lines(&last), [POD_LOG_LINES[2]]);

    let follow = LogOptions {
        follow: true,
        tail_lines: Some(1),
        ..Default::default()
    };
    let mut stream = Box::pin(pods.log_stream("logger", &follow).await.unwrap());
    let mut seen = Vec::new();
    let mut read_until = async |want: &str, seen: &mut Vec<u8>| {
        within(&format!("the followed log showing {want:?}"), async {
            while !String::from_utf8_lossy(seen).contains(want) {
                let chunk = stream
                    .next()
                    .await
                    .expect("the followed log ended")
                    .unwrap();
                seen.extend_from_slice(&chunk);
            }
        })
        .await;
    };
    read_until(POD_LOG_LINES[2], &mut seen).await;
    // A line the container writes now arrives on the open stream.
    let written = "written while followed";
    container_writes(written);
    read_until(written, &mut seen).await;
    assert_eq!(lines(&seen), [POD_LOG_LINES[2], written]);

    // Attached, the container's output from now on is read. The attach may be ready on
    // the node a moment after the connection is upgraded, so lines are written until one
    // arrives.
    let opts = ExecOptions {
        stderr: false,
        ..Default::default()
    };
    let mut process = pods.attach("logger", &opts).await.unwrap();
    let mut stdout = process.stdout().expect("stdout was asked for");
    let mut attached = Vec::new();
    within("the attached output", async {
        let mut buf = [0u8; 4096];
        for i in 0.. {
            container_writes(&format!("written while attached {i}"));
            match tokio::time::timeout(Duration::from_millis(500), stdout.read(&mut buf)).await {
                Ok(read) => {
                    let n = read.unwrap();
                    assert!(n > 0, "attach ended after {attached:?}");
                    attached.extend_from_slice(&buf[..n]);
                    break;
                }
                Err(_) => continue,
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&attached);
    assert!(text.starts_with("written while attached "), "{text:?}");
    assert!(
        !text.contains(POD_LOG_LINES[0]),
        "attach shows only new output: {text:?}"
    );
}

#[tokio::test]
async fn log_of_a_missing_pod_is_not_found() {
    let pods = running_pod("logs-missing", "present").await;
    let err = pods
        .logs("absent", &LogOptions::default())
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err}");
    let err = pods
        .exec("absent", ["true"], &ExecOptions::default())
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err}");
}

#[tokio::test]
async fn exec_passes_stdin_to_the_command_and_returns_output_and_exit_code() {
    let script = ["sh", "-c", "cat; echo to-stderr >&2; exit 3"];
    let (pods, process) = exec_with_stdin("exec", &script).await;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let input: &[u8] = b"first line\nsecond line\n";
    let status = within(
        "exec",
        process.stream(Some(input), Some(&mut out), Some(&mut err)),
    )
    .await
    .unwrap();
    assert_eq!(status.code(), 3);
    assert!(!status.success());
    assert_eq!(out, input);
    assert_eq!(err, b"to-stderr\n");

    let ok = pods
        .exec("shell", ["echo", "fine"], &ExecOptions::default())
        .await
        .unwrap();
    let mut out = Vec::new();
    let status = within(
        "exec",
        ok.stream(None::<&[u8]>, Some(&mut out), None::<Vec<u8>>),
    )
    .await
    .unwrap();
    assert!(status.success());
    assert_eq!(out, b"fine\n");
}

#[tokio::test]
async fn exec_streams_can_be_used_directly_while_the_command_runs() {
    let pods = running_pod("exec-direct", "shell").await;
    let opts = ExecOptions {
        stdin: true,
        stderr: false,
        ..Default::default()
    };
    let mut process = pods.exec("shell", ["cat"], &opts).await.unwrap();
    let mut stdin = process.stdin().expect("stdin was asked for");
    let mut stdout = process.stdout().expect("stdout was asked for");
    assert!(process.stderr().is_none(), "stderr was not asked for");
    // A round trip while the command is still running: it echoes before its input ends.
    stdin.write_all(b"ping\n").await.unwrap();
    let mut echoed = [0u8; 5];
    within("the echo", stdout.read_exact(&mut echoed))
        .await
        .unwrap();
    assert_eq!(&echoed, b"ping\n");
    stdin.shutdown().await.unwrap();
    let status = within("cat's exit", process.wait()).await.unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn wait_discards_output_nobody_read_instead_of_blocking_the_command() {
    // Far more output than the pipes hold, never read.
    let (pods, process) = exec_in_new_pod(
        "exec-unread",
        &["sh", "-c", "seq 1 100000; exit 5"],
        &ExecOptions::default(),
    )
    .await;
    let status = within("the exit status", process.wait()).await.unwrap();
    assert_eq!(status.code(), 5);

    let mut process = pods
        .exec(
            "shell",
            ["sh", "-c", "seq 1 100000"],
            &ExecOptions::default(),
        )
        .await
        .unwrap();
    drop(process.stdout().expect("stdout was asked for"));
    let status = within("the exit status", process.wait()).await.unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn dropping_stdin_ends_the_commands_input() {
    let (_, mut process) = exec_with_stdin("exec-drop-stdin", &["cat"]).await;
    drop(process.stdin().expect("stdin was asked for"));
    let status = within("cat's exit", process.wait()).await.unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn stream_returns_when_the_command_ends_without_reading_all_its_input() {
    let script = ["sh", "-c", "head -c 10 >/dev/null; exit 2"];
    let (_, process) = exec_with_stdin("exec-partial-stdin", &script).await;
    let input = vec![b'x'; 200_000];
    let status = within(
        "the exit status",
        process.stream(Some(&input[..]), None::<Vec<u8>>, None::<Vec<u8>>),
    )
    .await
    .unwrap();
    assert_eq!(status.code(), 2);
}

/// A local writer that refuses every write, like a closed pipe.
struct Broken;

impl tokio::io::AsyncWrite for Broken {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        _: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::task::Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn a_failing_local_output_is_reported_after_the_command_ends() {
    let (_, process) = exec_in_new_pod(
        "exec-broken-out",
        &["sh", "-c", "seq 1 100000"],
        &ExecOptions::default(),
    )
    .await;
    let err = within(
        "the end of the command",
        process.stream(None::<&[u8]>, Some(Broken), None::<Vec<u8>>),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains("writing the command's stdout"),
        "{err}"
    );
}

#[tokio::test]
async fn exec_with_a_tty_sees_the_terminal_size_it_is_given() {
    let pods = running_pod("exec-tty", "shell").await;
    let opts = ExecOptions {
        stdin: true,
        tty: true,
        ..Default::default()
    };
    // Prints the terminal's size for every line read, until it reads `q`.
    let script = r#"while read x; do [ "$x" = q ] && exit 0; stty size; done"#;
    let mut process = pods
        .exec("shell", ["sh", "-c", script], &opts)
        .await
        .unwrap();
    assert!(
        process.stderr().is_none(),
        "a terminal has one output stream"
    );
    let mut resize = process.terminal_size().expect("a TTY was asked for");
    let mut stdin = process.stdin().unwrap();
    let mut stdout = process.stdout().unwrap();
    resize.resize(123, 45).await.unwrap();
    // The size and the lines travel on different channels: ask until the new size shows.
    let mut seen = Vec::new();
    within("stty showing 45 rows and 123 columns", async {
        let mut buf = [0u8; 1024];
        while !String::from_utf8_lossy(&seen).contains("45 123") {
            stdin.write_all(b"size\n").await.unwrap();
            if let Ok(read) =
                tokio::time::timeout(Duration::from_millis(500), stdout.read(&mut buf)).await
            {
                let n = read.unwrap();
                assert!(
                    n > 0,
                    "the terminal closed: {:?}",
                    String::from_utf8_lossy(&seen)
                );
                seen.extend_from_slice(&buf[..n]);
            }
        }
    })
    .await;
    stdin.write_all(b"q\n").await.unwrap();
    let mut sink = tokio::io::sink();
    let drain = tokio::io::copy(&mut stdout, &mut sink);
    let (status, _) = within("the shell's exit", async {
        tokio::join!(process.wait(), drain)
    })
    .await;
    assert!(status.unwrap().success());
}

#[tokio::test]
async fn a_port_forward_stream_carries_bytes_both_ways() {
    let pods = running_pod("pf-stream", "echo").await;
    let mut stream = pods.port_forward_stream("echo", 8080).await.unwrap();
    let sent: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let (mut reader, mut writer) = tokio::io::split(&mut stream);
    let send = async {
        writer.write_all(&sent).await.unwrap();
    };
    let receive = async {
        let mut got = vec![0u8; sent.len()];
        reader.read_exact(&mut got).await.unwrap();
        got
    };
    let ((), got) = within("the echo", async { tokio::join!(send, receive) }).await;
    assert!(
        got == sent,
        "the bytes that came back differ from those sent"
    );
    // Closing the connection ends it without an error report, and asking again says so
    // again.
    drop((reader, writer));
    stream.shutdown().await.unwrap();
    assert_eq!(within("the error report", stream.error()).await, None);
    assert_eq!(within("the error report", stream.error()).await, None);
}

#[tokio::test]
async fn port_forward_listens_locally_and_forwards_each_connection() {
    let pods = running_pod("pf-listen", "echo").await;
    let forward = pods
        .port_forward(
            "echo",
            Ipv4Addr::LOCALHOST.into(),
            &[
                ":8080".parse::<PortMapping>().unwrap(),
                ":9090".parse().unwrap(),
            ],
        )
        .await
        .unwrap();
    assert_eq!(forward.ports().len(), 2);
    assert_ne!(forward.ports()[0].local.port(), 0, "a free port was chosen");
    let local = forward.local_addr(9090).expect("9090 is forwarded");

    // Two connections at once, each carrying its own bytes both ways.
    let one_connection = |seed: u8| async move {
        let mut conn = tokio::net::TcpStream::connect(local).await.unwrap();
        let sent: Vec<u8> = (0..50_000u32)
            .map(|i| (i as u8).wrapping_mul(seed))
            .collect();
        let (mut r, mut w) = conn.split();
        let mut got = vec![0u8; sent.len()];
        let (written, read) = tokio::join!(w.write_all(&sent), r.read_exact(&mut got));
        written.unwrap();
        read.unwrap();
        got == sent
    };
    let (a, b) = within("two forwarded connections", async {
        tokio::join!(one_connection(3), one_connection(7))
    })
    .await;
    assert!(a && b, "a forwarded connection returned other bytes");

    forward.stop().await;
    assert!(
        tokio::net::TcpStream::connect(local).await.is_err(),
        "the listener is closed once stopped"
    );
}

#[tokio::test]
async fn port_forward_to_a_pod_that_is_not_running_is_refused() {
    let (clientset, ns) = setup("pf-pending").await;
    let pods = clientset.core_v1().pods(&ns);
    // No node has this label: the Pod stays Pending.
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "pending" },
        "spec": {
            "nodeSelector": { "kubekit.invalid/none": "true" },
            "containers": [{ "name": "main", "image": "kubekit.invalid/main" }]
        }
    }))
    .unwrap();
    pods.create(&pod, &Default::default()).await.unwrap();
    let err = pods
        .port_forward(
            "pending",
            Ipv4Addr::LOCALHOST.into(),
            &["0:80".parse().unwrap()],
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("not running (phase Pending)"),
        "{err}"
    );
}

#[tokio::test]
async fn scaling_a_deployment_changes_how_many_of_its_pods_run() {
    let (clientset, ns) = setup("scale-run").await;
    let deployment = testenv::deployment("web", 1);
    clientset
        .apps_v1()
        .deployments(&ns)
        .create(&deployment, &Default::default())
        .await
        .unwrap();
    let scales = ScaleClient::discover(clientset.rest_client().clone())
        .await
        .unwrap();
    let deployments = GroupResource::new("apps", "deployments");
    let pods = clientset.core_v1().pods(&ns);
    for replicas in [1, 3, 1] {
        let patch = PatchBody::Merge(serde_json::json!({ "spec": { "replicas": replicas } }));
        scales
            .patch(&deployments, &ns, "web", &patch)
            .await
            .unwrap();
        let what = format!("{replicas} running Pods and as many available replicas");
        testenv::eventually_ok(120, &what, || async {
            let list = pods
                .list(&ListOptions::default())
                .await
                .map_err(|e| e.to_string())?;
            // Pods being deleted are not counted: they are on their way out.
            let running = list
                .items
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
                .count();
            let scale = scales
                .get(&deployments, &ns, "web")
                .await
                .map_err(|e| e.to_string())?;
            let current = scale.status.map(|s| s.replicas).unwrap_or_default();
            let available = clientset
                .apps_v1()
                .deployments(&ns)
                .get("web", &Default::default())
                .await
                .map_err(|e| e.to_string())?
                .status
                .and_then(|s| s.available_replicas)
                .unwrap_or_default();
            if running == replicas as usize && current == replicas && available == replicas {
                Ok(())
            } else {
                Err(format!(
                    "{running} running, scale status {current}, {available} available"
                ))
            }
        })
        .await;
    }
}
