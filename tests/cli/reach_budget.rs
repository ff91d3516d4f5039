//! The reachability scan that finds gemini-cli's chunk is bounded (issue 29,
//! item 11): thousands of names (symlinks) of one large chunk are read once,
//! so `status` answers in seconds. Real gemini-cli 0.61.0 from the npm registry.

use super::gemini::{json, original_of};
use super::*;

#[test]
fn thousands_of_symlinks_to_one_large_chunk_are_read_once() {
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let (_, chunk, _) = original_of("0.61.0");
    let bundle = pkg.join("bundle");
    // The largest chunk that declares no McpClient (several do, unloaded).
    let big = std::fs::read_dir(&bundle)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_type().unwrap().is_file()
                && !String::from_utf8_lossy(&std::fs::read(e.path()).unwrap())
                    .contains("var McpClient = class {")
        })
        .max_by_key(|e| e.metadata().unwrap().len())
        .unwrap()
        .file_name();
    assert!(std::fs::metadata(bundle.join(&big)).unwrap().len() > 3 << 20);
    let mut imports = String::new();
    for i in 0..2000 {
        std::os::unix::fs::symlink(&big, bundle.join(format!("s{i}.js"))).unwrap();
        imports.push_str(&format!("import(\"./s{i}.js\");\n"));
    }
    let entry = bundle.join("gemini.js");
    edit_file(&entry, |t| format!("{t}\n{imports}"));
    let mut cmd = sb.command(&["status", "--json", "--path"]);
    cmd.arg(&pkg);
    let started = std::time::Instant::now();
    let o = output_within(cmd, std::time::Duration::from_secs(60), "mcpatch status");
    let v = json(&o);
    assert_eq!(v["installs"][0]["state"], "affected", "{v:#}");
    assert_eq!(v["installs"][0]["file"], pkg.join(&chunk).to_str().unwrap());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}
