//! Tests of the local control plane's simulated nodes (kube-scheduler and kwok, started by
//! `scripts/local-cluster.sh up --nodes 2`): workloads get Running pods, and the real
//! `kubectl` reaches kwok's kubelet endpoint through kube-apiserver for logs, exec and
//! port-forward.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};

use testenv::{NODES, POD_LOG_LINES, eventually_ok};

/// Generous deadline for a kubectl command or a stream to answer.
const DEADLINE: Duration = Duration::from_secs(60);

/// Runs `cmd` with `stdin` as its standard input and returns its output; panics if it has
/// not ended within [`DEADLINE`].
fn run(mut cmd: Command, stdin: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kubectl");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin).expect("write kubectl's stdin");
    drop(input);
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    rx.recv_timeout(DEADLINE)
        .unwrap_or_else(|_| {
            // The child was moved to the waiting thread: kill it by its pid.
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("{cmd:?} did not end within {DEADLINE:?}")
        })
        .expect("wait for kubectl")
}

/// Kills and reaps a long-running kubectl when a test is done with it (or panics).
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads lines from `reader` on a thread and sends them on the returned channel.
fn lines_of(reader: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

#[tokio::test]
async fn deployment_of_two_replicas_gets_two_running_pods_on_kwok_nodes() {
    let cp = testenv::control_plane_with_nodes();
    let client = cp.client().await;
    let ns = cp.create_namespace(&client, "nodes-deploy").await;
    let deployment = testenv::deployment("web", 2);
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns);
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("create deployment");

    eventually_ok(120, "deployment web to report 2 available replicas", || {
        let deployments = deployments.clone();
        async move {
            let d = deployments.get("web").await.map_err(|e| e.to_string())?;
            let available = d.status.and_then(|s| s.available_replicas);
            if available == Some(2) {
                Ok(())
            } else {
                Err(format!("availableReplicas {available:?}"))
            }
        }
    })
    .await;

    let pods = Api::<Pod>::namespaced(client, &ns)
        .list(&ListParams::default().labels("app=web"))
        .await
        .expect("list pods");
    assert_eq!(pods.items.len(), 2, "pods: {:?}", pods.items);
    let nodes: Vec<String> = (0..NODES).map(|i| format!("kwok-node-{i}")).collect();
    for pod in &pods.items {
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        assert!(
            node.as_ref().is_some_and(|n| nodes.contains(n)),
            "pod {name} is on node {node:?}, not one of {nodes:?}"
        );
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        assert_eq!(phase, Some("Running"), "pod {name}");
        let ip = pod.status.as_ref().and_then(|s| s.pod_ip.as_deref());
        assert!(ip.is_some(), "pod {name} has no IP");
    }
}

#[tokio::test]
async fn kubectl_logs_shows_the_tail_and_follows() {
    let cp = testenv::control_plane_with_nodes();
    let client = cp.client().await;
    let ns = cp.create_namespace(&client, "nodes-logs").await;
    cp.run_pod(&client, &ns, "logger").await;

    let mut logs = cp.kubectl();
    logs.args(["logs", "-n", &ns, "logger", "--tail", "2"]);
    let out = run(logs, b"");
    assert!(out.status.success(), "kubectl logs: {out:?}");
    let expected: String = POD_LOG_LINES[1..]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);

    // Following shows every line, then keeps the stream open (kubectl does not exit).
    let mut follow = cp.kubectl();
    follow
        .args(["logs", "-n", &ns, "logger", "--follow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = KillOnDrop(follow.spawn().expect("spawn kubectl logs --follow"));
    let lines = lines_of(child.0.stdout.take().expect("stdout"));
    for want in POD_LOG_LINES {
        let got = lines
            .recv_timeout(DEADLINE)
            .unwrap_or_else(|_| panic!("kubectl logs --follow did not show {want:?}"));
        assert_eq!(got, want);
    }
    assert!(
        child.0.try_wait().expect("poll kubectl").is_none(),
        "kubectl logs --follow ended instead of following"
    );
}

#[tokio::test]
async fn kubectl_exec_passes_stdin_output_and_exit_code() {
    let cp = testenv::control_plane_with_nodes();
    let client = cp.client().await;
    let ns = cp.create_namespace(&client, "nodes-exec").await;
    cp.run_pod(&client, &ns, "shell").await;

    let mut exec = cp.kubectl();
    exec.args(["exec", "-i", "-n", &ns, "shell", "--"]).args([
        "sh",
        "-c",
        "cat; echo to-stderr >&2; exit 3",
    ]);
    let out = run(exec, b"line one\nline two\n");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "line one\nline two\n",
        "{out:?}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("to-stderr"), "stderr: {stderr}");
    assert_eq!(out.status.code(), Some(3), "{out:?}");

    let mut ok = cp.kubectl();
    ok.args(["exec", "-n", &ns, "shell", "--", "echo", "fine"]);
    let out = run(ok, b"");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "fine\n");
}

#[tokio::test]
async fn kubectl_port_forward_carries_bytes_both_ways() {
    let cp = testenv::control_plane_with_nodes();
    let client = cp.client().await;
    let ns = cp.create_namespace(&client, "nodes-pf").await;
    cp.run_pod(&client, &ns, "echo").await;

    // ":8080" lets kubectl pick the local port; it prints
    // "Forwarding from 127.0.0.1:<port> -> 8080".
    let mut forward = cp.kubectl();
    forward
        .args(["port-forward", "-n", &ns, "pod/echo", ":8080"])
        .args(["--address", "127.0.0.1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = KillOnDrop(forward.spawn().expect("spawn kubectl port-forward"));
    let lines = lines_of(child.0.stdout.take().expect("stdout"));
    let line = lines
        .recv_timeout(DEADLINE)
        .expect("kubectl port-forward printed no Forwarding line");
    let port: u16 = line
        .strip_prefix("Forwarding from 127.0.0.1:")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected kubectl port-forward output: {line:?}"));

    // Two connections, each carrying more than one stream frame's worth of bytes.
    for round in 0..2u8 {
        let sent: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8 ^ round).collect();
        let mut conn = TcpStream::connect(("127.0.0.1", port)).expect("connect to forward");
        conn.set_read_timeout(Some(DEADLINE)).expect("read timeout");
        let mut writer = conn.try_clone().expect("clone connection");
        let to_send = sent.clone();
        let send = std::thread::spawn(move || {
            writer.write_all(&to_send).expect("send through forward");
            writer.shutdown(Shutdown::Write).expect("half-close");
        });
        let mut got = Vec::new();
        while got.len() < sent.len() {
            let mut buf = [0u8; 65536];
            let n = conn.read(&mut buf).expect("read echoed bytes");
            assert!(
                n > 0,
                "forward closed after {} of {} bytes",
                got.len(),
                sent.len()
            );
            got.extend_from_slice(&buf[..n]);
        }
        send.join().expect("sender");
        assert!(
            got == sent,
            "round {round}: echoed bytes differ from those sent"
        );
    }
}
