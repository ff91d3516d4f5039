//! The target folders under `patches/`, built into mcpatch: every manifest,
//! diff, fragment and host script a target loads, by its name in the folder.

/// One embedded target folder: its name and its files (name, text).
pub(super) type Folder = (&'static str, &'static [(&'static str, &'static str)]);

/// Every folder under `patches/`, embedded. A unit test checks this table
/// against the folders on disk, so a new target cannot be left out.
pub(super) const EMBEDDED: &[Folder] = &[
    (
        "dsh-mcp-client-session-loss",
        &[
            (
                "manifest.json",
                include_str!("../../patches/dsh-mcp-client-session-loss/manifest.json"),
            ),
            (
                "session-loss.patch",
                include_str!("../../patches/dsh-mcp-client-session-loss/session-loss.patch"),
            ),
            (
                "session-loss-r1.patch",
                include_str!("../../patches/dsh-mcp-client-session-loss/session-loss-r1.patch"),
            ),
            (
                "session-loss-r2.patch",
                include_str!("../../patches/dsh-mcp-client-session-loss/session-loss-r2.patch"),
            ),
        ],
    ),
    (
        "mcp-remote",
        &[
            (
                "manifest.json",
                include_str!("../../patches/mcp-remote/manifest.json"),
            ),
            (
                "session-loss-reinit.patch",
                include_str!("../../patches/mcp-remote/session-loss-reinit.patch"),
            ),
            (
                "session-loss-forward.patch",
                include_str!("../../patches/mcp-remote/session-loss-forward.patch"),
            ),
            (
                "session-loss-unanswered.patch",
                include_str!("../../patches/mcp-remote/session-loss-unanswered.patch"),
            ),
            (
                "session-loss-reinit-r1.patch",
                include_str!("../../patches/mcp-remote/session-loss-reinit-r1.patch"),
            ),
            (
                "session-loss-forward-r1.patch",
                include_str!("../../patches/mcp-remote/session-loss-forward-r1.patch"),
            ),
            (
                "session-loss-unanswered-r1.patch",
                include_str!("../../patches/mcp-remote/session-loss-unanswered-r1.patch"),
            ),
        ],
    ),
    (
        "gemini-cli",
        &[
            (
                "manifest.json",
                include_str!("../../patches/gemini-cli/manifest.json"),
            ),
            (
                "fragments/mcp-client-fields.js",
                include_str!("../../patches/gemini-cli/fragments/mcp-client-fields.js"),
            ),
            (
                "fragments/callable-call-tool.js",
                include_str!("../../patches/gemini-cli/fragments/callable-call-tool.js"),
            ),
            (
                "fragments/revision-1/mcp-client-fields.js",
                include_str!("../../patches/gemini-cli/fragments/revision-1/mcp-client-fields.js"),
            ),
            (
                "fragments/revision-1/callable-call-tool.js",
                include_str!("../../patches/gemini-cli/fragments/revision-1/callable-call-tool.js"),
            ),
        ],
    ),
    // Several packages, so several specs: keep it after the one-spec folders
    // (`from_folder` finds those by position).
    (
        "mcp-sdk",
        &[
            (
                "manifest.json",
                include_str!("../../patches/mcp-sdk/manifest.json"),
            ),
            (
                "sdk-host.mjs",
                include_str!("../../patches/mcp-sdk/sdk-host.mjs"),
            ),
            (
                "fragments/transport-send.js",
                include_str!("../../patches/mcp-sdk/fragments/transport-send.js"),
            ),
            (
                "fragments/transport-get.js",
                include_str!("../../patches/mcp-sdk/fragments/transport-get.js"),
            ),
        ],
    ),
    (
        "ai-sdk-mcp",
        &[
            (
                "manifest.json",
                include_str!("../../patches/ai-sdk-mcp/manifest.json"),
            ),
            (
                "ai-sdk-host.mjs",
                include_str!("../../patches/ai-sdk-mcp/ai-sdk-host.mjs"),
            ),
            (
                "fragments/http-post-session-loss.js",
                include_str!("../../patches/ai-sdk-mcp/fragments/http-post-session-loss.js"),
            ),
        ],
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn is_target(dir: &std::path::Path) -> bool {
        std::fs::read_to_string(dir.join("manifest.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|v| v["format"] == 2)
    }

    #[test]
    fn every_target_folder_and_its_files_under_patches_are_embedded() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("patches");
        let mut on_disk: Vec<(String, Vec<String>)> = std::fs::read_dir(&root)
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir() && is_target(&e.path()))
            .map(|e| {
                let mut files: Vec<String> = std::fs::read_dir(e.path())
                    .unwrap()
                    .flatten()
                    .map(|f| f.file_name().to_string_lossy().into_owned())
                    // A verify host script (`verify.host_script`) is a `.mjs`.
                    .filter(|n| {
                        n == "manifest.json" || n.ends_with(".patch") || n.ends_with(".mjs")
                    })
                    .collect();
                // Anchor replacements live in `fragments/`, an earlier
                // revision's in a folder of their own there.
                files.extend(
                    walkdir::WalkDir::new(e.path().join("fragments"))
                        .into_iter()
                        .flatten()
                        .filter(|f| f.file_type().is_file())
                        .map(|f| {
                            let rel = f.path().strip_prefix(e.path()).unwrap();
                            rel.to_string_lossy().into_owned()
                        }),
                );
                files.sort();
                (e.file_name().to_string_lossy().into_owned(), files)
            })
            .collect();
        on_disk.sort();
        let mut embedded: Vec<(String, Vec<String>)> = EMBEDDED
            .iter()
            .map(|(folder, files)| {
                let mut names: Vec<String> = files.iter().map(|(n, _)| n.to_string()).collect();
                names.sort();
                (folder.to_string(), names)
            })
            .collect();
        embedded.sort();
        assert_eq!(
            embedded, on_disk,
            "src/registry/embedded.rs EMBEDDED is out of date"
        );
    }
}
