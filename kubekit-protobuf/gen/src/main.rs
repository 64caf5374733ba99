//! `cargo run -p kubekit-protobuf-gen [-- --check]`: writes `kubekit-protobuf/src/generated.rs`
//! from the pinned inputs (see the library's docs), or with `--check` exits 1 if the file
//! is not what they give.

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let check = std::env::args().any(|a| a == "--check");
    let result =
        kubekit_protobuf_gen::Sources::read(&repo).and_then(|s| kubekit_protobuf_gen::render(&s));
    let (code, report) = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("kubekit-protobuf-gen: {e}");
            return ExitCode::FAILURE;
        }
    };
    let out = kubekit_protobuf_gen::output_path(&repo);
    eprintln!(
        "kubekit-protobuf-gen: {} messages; {} without a k8s-openapi type; {} fields no k8s-openapi version has",
        report.messages,
        report.skipped.len(),
        report.skipped_fields.len()
    );
    for f in &report.skipped_fields {
        eprintln!("  field not in k8s-openapi: {f}");
    }
    if check {
        let current = std::fs::read_to_string(&out).unwrap_or_default();
        if current != code {
            eprintln!(
                "kubekit-protobuf-gen: {} is stale; run `cargo run -p kubekit-protobuf-gen`",
                out.display()
            );
            return ExitCode::FAILURE;
        }
        return ExitCode::SUCCESS;
    }
    if let Err(e) = std::fs::write(&out, code) {
        eprintln!("kubekit-protobuf-gen: writing {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
