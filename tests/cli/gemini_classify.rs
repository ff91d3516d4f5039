//! gemini-cli's classification proven from the content (issue 29, items 9
//! and 10): `patched` only when every replacement is there as the anchors
//! would produce it (the marker text alone, in a comment, proves nothing),
//! and a chunk that is not UTF-8 never shown as one the anchors fit. Real
//! gemini-cli 0.61.0 from the npm registry (scripts/fetch-fixtures.sh).

use serde_json::Value;

use super::gemini::{json, original_of};
use super::*;

const MARKER: &str = "(mcpatch: gemini-cli-session-loss)";

fn status(sb: &Sandbox, pkg: &Path) -> Value {
    let o = sb.run(&["status", "--json", "--path", pkg.to_str().unwrap()]);
    json(&o)["installs"][0].clone()
}

#[test]
fn the_marker_in_a_comment_of_an_unpatched_chunk_is_not_patched_and_apply_patches_it() {
    let sb = Sandbox::new();
    let (_, chunk, _) = original_of("0.61.0");
    // How many markers a patched chunk holds.
    let clean = sb.gemini_install("0.61.0", "clean").canonicalize().unwrap();
    let o = sb.run(&["apply", "--no-verify", "--path", clean.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let patched_text = std::fs::read_to_string(clean.join(&chunk)).unwrap();
    let markers = patched_text.matches(MARKER).count();
    assert!(markers > 0);

    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let file = pkg.join(&chunk);
    edit_file(&file, |t| format!("{t}\n/* patched? {MARKER} */\n"));
    let i = status(&sb, &pkg);
    assert_ne!(i["state"], "patched", "{i:#}");
    assert_eq!(i["target"], "gemini-cli", "{i:#}");

    let o = sb.run(&[
        "apply",
        "--yes",
        "--no-verify",
        "--json",
        "--path",
        pkg.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(json(&o)["changed"], true, "{}", stdout(&o));
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.matches(MARKER).count(), markers + 1);
    assert_eq!(text, format!("{patched_text}\n/* patched? {MARKER} */\n"));
    assert_eq!(status(&sb, &pkg)["state"], "patched");
}

#[test]
fn a_patched_chunk_whose_replacement_was_edited_is_not_patched() {
    let sb = Sandbox::new();
    let (_, chunk, _) = original_of("0.61.0");
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let o = sb.run(&["apply", "--no-verify", "--path", pkg.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(status(&sb, &pkg)["state"], "patched");
    // The recovery's retry taken out of the replacement; the marker stays.
    let file = pkg.join(&chunk);
    edit_file(&file, |t| {
        assert!(t.contains("this.mcpatchRecovery"));
        t.replacen("this.mcpatchRecovery", "this.mcpatchRecoveryX", 1)
    });
    let i = status(&sb, &pkg);
    assert_ne!(i["state"], "patched", "{i:#}");
}

#[test]
fn a_chunk_that_is_not_utf8_is_not_shown_as_fitting_the_anchors() {
    let sb = Sandbox::new();
    let (_, chunk, _) = original_of("0.61.0");
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let file = pkg.join(&chunk);
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len();
    bytes.extend_from_slice(b"\n/* \xff */\n");
    std::fs::remove_file(&file).unwrap();
    std::fs::write(&file, &bytes).unwrap();
    let i = status(&sb, &pkg);
    assert_eq!(i["state"], "modified", "{i:#}");
    assert_eq!(
        i["note"],
        format!("unknown revision; it is not UTF-8 text (byte {} is not), so the patch's content anchors cannot be put in", at + 4),
        "{i:#}"
    );
    assert_eq!(
        i["next_step"],
        "reinstall gemini-cli (`npm install -g @google/gemini-cli`, or however it was installed), then run `mcpatch apply`"
    );
}
