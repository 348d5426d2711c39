// build.rs - links liblayernorm: $LAYERNORM_LIB_DIR, else the repository's build/ directory.
use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=LAYERNORM_LIB_DIR");
    let dir = match env::var_os("LAYERNORM_LIB_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../build"),
    };
    if !dir.join("liblayernorm.so").exists() {
        panic!(
            "liblayernorm.so not found in {}: build the library (cmake --build build) or \
             set LAYERNORM_LIB_DIR to the directory holding it",
            dir.display()
        );
    }
    let dir = dir.canonicalize().unwrap();
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=layernorm");
    // Tests and examples then run without LD_LIBRARY_PATH.
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    println!(
        "cargo:rerun-if-changed={}",
        dir.join("liblayernorm.so").display()
    );
}
