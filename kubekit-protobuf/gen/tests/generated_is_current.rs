//! The checked-in codec is what the pinned protos and k8s-openapi give: a bump of either
//! without `cargo run -p kubekit-protobuf-gen` fails here.

use std::path::Path;

#[test]
fn generated_codec_matches_the_pinned_protos_and_k8s_openapi() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let sources = kubekit_protobuf_gen::Sources::read(&repo).expect("the generator's inputs");
    let (code, _) = kubekit_protobuf_gen::render(&sources).expect("generation");
    let current = std::fs::read_to_string(kubekit_protobuf_gen::output_path(&repo))
        .expect("the generated file");
    assert!(
        current == code,
        "kubekit-protobuf/src/generated.rs is stale: run `cargo run -p kubekit-protobuf-gen`"
    );
}
