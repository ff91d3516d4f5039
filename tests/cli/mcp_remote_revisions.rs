//! mcp-remote's patch revision 2: revision 1 left the bridge with no session
//! id after a new session the server refused, so no later call was seen as a
//! loss (`verify --scenario refused-once` STUCK on every patched release).
//! On the real release of each patch family (0.15.1, 0.1.44, 0.1.38): a
//! chunk carrying revision 1 is `outdated`, STUCK in `refused-once`; `apply`
//! upgrades it and `revert` restores the original byte for byte; the patched
//! releases pass `verify --strict` with `refused-once` in the default run.

use std::path::Path;

use serde_json::Value;

use super::mcp_remote::{
    chunk_of, json, original_of, output_within_five_minutes, project, summary, tree, verdicts,
    verify_named, RELEASES,
};
use super::*;

/// What `status` says of a chunk carrying revision 1 (the manifest's words).
const R1_NOTE: &str = "patched by an earlier mcpatch revision (1): after a new session the server refused, the bridge has no session id left, so no later call is seen as a loss and every one fails until the bridge restarts; run `mcpatch apply` to upgrade";

/// Write patch revision 1 (what an earlier mcpatch left) into the chunk of the
/// mcp-remote `version` under `pkg`: the `-r1` diff of the family the
/// release's original revision names; returns the chunk's new sha256.
fn patch_with_revision_1(pkg: &Path, version: &str) -> String {
    let spec = target_spec("mcp-remote");
    let family = original_revision("mcp-remote", version)
        .patch
        .as_deref()
        .unwrap();
    let name = family.replace(".patch", "-r1.patch");
    let r1 = spec
        .earlier
        .iter()
        .find(|e| e.file == name)
        .unwrap_or_else(|| panic!("no earlier patch {name}"));
    assert_eq!(r1.revision, 1);
    edit_file(&pkg.join(chunk_of(version)), |text| {
        diffy::apply(&text, &r1.parsed_diff()).unwrap()
    })
}

#[test]
fn a_chunk_patched_by_revision_1_is_outdated_and_apply_upgrades_it_and_revert_restores_the_original(
) {
    let sb = Sandbox::new();
    for version in RELEASES {
        let dir = project(&sb, version, &format!("p-{version}"));
        let pkg = dir.join("node_modules/mcp-remote");
        let path = dir.to_str().unwrap();
        let (original, chunk, patched) = original_of(version);
        let before = tree(&pkg);
        let r1 = patch_with_revision_1(&pkg, version);

        let o = sb.run(&["status", "--json", "--path", path]);
        assert_eq!(code(&o), 1, "{version}: {}", stderr(&o));
        let v = json(&o);
        let i = &v["installs"][0];
        assert_eq!(
            (&i["state"], &i["revision"], &i["sha256"], &i["note"]),
            (
                &"outdated".into(),
                &"outdated".into(),
                &Value::from(r1.as_str()),
                &R1_NOTE.into()
            ),
            "{version}: {v:#}"
        );
        assert_eq!(
            i["next_step"], "run `mcpatch apply` to upgrade to the current patch revision",
            "{version}"
        );

        let o = sb.run(&["apply", "--path", path]);
        assert_eq!(code(&o), 0, "{version}: {}{}", stdout(&o), stderr(&o));
        let out = sb.normalize(&o.stdout);
        assert!(
            out.starts_with(&format!(
                "upgraded [SANDBOX]/p-{version}/node_modules/mcp-remote ({version}) from patch revision 1\n"
            )),
            "{out}"
        );
        assert_eq!(sha256_file(&pkg.join(&chunk)), patched, "{version}");
        let o = sb.run(&["status", "--json", "--path", path]);
        assert_eq!(code(&o), 0, "{version}: {}", stderr(&o));
        assert_eq!(
            summary(&json(&o)),
            [("mcp-remote".into(), "patched".into(), version.into())]
        );

        // The backup holds the original the upgrade took revision 1 off.
        let o = sb.run(&["revert", "--path", path]);
        assert_eq!(code(&o), 0, "{version}: {}{}", stdout(&o), stderr(&o));
        assert_eq!(sha256_file(&pkg.join(&chunk)), original, "{version}");
        assert_eq!(tree(&pkg), before, "{version}: revert left a file changed");
    }
}

#[test]
fn refused_once_runs_for_patched_mcp_remote_and_recovers_where_revision_1_is_stuck() {
    let sb = Sandbox::new();
    let dir = project(&sb, "0.15.1", "p");
    let path = dir.to_str().unwrap();
    let o = sb.run(&["apply", "--path", path]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let (o, v) = verify_named(&sb, path, &["expired-404", "refused-once"]);
    assert_eq!(code(&o), 0, "{v:#}");
    let install = &v["installs"][0];
    // The call that met the refusal fails with the server's words; the next
    // one meets the loss again and starts a new session.
    assert_eq!(
        verdicts(install),
        [
            ("expired-404".to_string(), "SEAMLESS".to_string(), 0),
            ("refused-once".to_string(), "RECOVERED".to_string(), 1)
        ],
        "{v:#}"
    );
    assert_eq!(install["overall"], "SEAMLESS", "{v:#}");
    assert_eq!(
        install["left_out"],
        serde_json::json!([
            {"name": "expired-404 (default policy)", "why": "the second expired-404 run under the DSH plugin's default reconnect policy has no counterpart: a bridge has one behaviour, checked against the same deadline as every scenario"}
        ])
    );

    // Revision 1: after the refused new session the transport has no session
    // id, so no call is seen as a loss again.
    let old = project(&sb, "0.15.1", "r1");
    patch_with_revision_1(&old.join("node_modules/mcp-remote"), "0.15.1");
    let (o, v) = verify_named(&sb, old.to_str().unwrap(), &["refused-once"]);
    assert_eq!(code(&o), 1, "{v:#}");
    let s = &v["installs"][0]["scenarios"][0];
    assert_eq!(
        (&s["name"], &s["verdict"], &s["note"]),
        (
            &"refused-once".into(),
            &"STUCK".into(),
            &"no new initialize after the session was lost; 1 request(s) kept the dead session id"
                .into()
        ),
        "{v:#}"
    );
}

#[test]
fn verify_strict_passes_every_scenario_on_a_patched_release_of_each_family() {
    let sb = Sandbox::new();
    let expected: Vec<(String, String, u64)> = [
        ("expired-404", "SEAMLESS", 0),
        ("expired-400", "SEAMLESS", 0),
        ("expired-401", "SEAMLESS", 0),
        ("idle-timeout", "SEAMLESS", 0),
        ("restart", "SEAMLESS", 0),
        ("restart-persisted", "HELD", 0),
        ("ordinary-errors", "HELD", 4),
        ("sse-404", "HELD", 0),
        ("strict-reinit", "SEAMLESS", 0),
        ("concurrent-loss", "SEAMLESS", 0),
        ("call-during-renewal", "SEAMLESS", 0),
        ("forgetful", "BOUNDED", 8),
        ("cut-mid-call", "NOT-RETRIED", 1),
        ("refused-once", "RECOVERED", 1),
        ("late-answers", "SEAMLESS", 0),
    ]
    .into_iter()
    .map(|(n, v, f)| (n.to_string(), v.to_string(), f))
    .collect();
    // Each family's release in a project of its own, side by side (a
    // bridge's table waits on its scenarios' pauses more than on the CPU).
    std::thread::scope(|s| {
        for version in RELEASES {
            let (sb, expected) = (&sb, &expected);
            s.spawn(move || {
                let dir = project(sb, version, &format!("p-{version}"));
                let path = dir.to_str().unwrap();
                let o = sb.run(&["apply", "--path", path]);
                assert_eq!(code(&o), 0, "{version}: {}{}", stdout(&o), stderr(&o));
                let o = output_within_five_minutes(
                    sb.command(&["verify", "--json", "--strict", "--path", path]),
                );
                let v = json(&o);
                assert_eq!(code(&o), 0, "{version}: {v:#}");
                let install = &v["installs"][0];
                assert_eq!(install["overall"], "SEAMLESS", "{version}: {v:#}");
                assert_eq!(&verdicts(install), expected, "{version}: {v:#}");
                // The whole table brings the short exploration with it, every rule kept.
                assert_eq!(
                    install["exploration"],
                    serde_json::json!({"seed": 2026, "runs": 3, "ok": true, "failures": []}),
                    "{version}: {v:#}"
                );
            });
        }
    });
}
