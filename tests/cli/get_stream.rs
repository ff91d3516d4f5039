//! The `get-stream-loss` scenario on copies of real npm projects: the fake
//! server keeps the client's GET stream, drops the session while no call is
//! made and cuts the stream. The patched SDK 1.32.2 opens a new session and
//! its stream on it by itself (both builds), the unpatched one is STUCK, and
//! the catalogue's mutant 18 (the GET only reports the loss) is caught. A
//! target whose patch leaves the GET stream's loss to the next call says so.

use super::ai_sdk_mcp::patched_2_0_99;
use super::mcp_sdk::{mutate_builds, project_copy, strict_scenario, CJS, ESM, SDK};
use super::sdk_scenarios::numbers_as_n;
use super::*;

const SCENARIO: &str = "get-stream-loss";

/// `strict_scenario` of get-stream-loss with the numbers of each note written N.
fn runs(sb: &Sandbox, project: &Path) -> (i32, Vec<(String, String, String)>) {
    let (rc, runs) = strict_scenario(sb, "mcp-sdk", project, SCENARIO);
    let runs = runs
        .into_iter()
        .map(|(b, v, n)| (b, v, numbers_as_n(&n)))
        .collect();
    (rc, runs)
}

fn both(verdict: &str, note: &str) -> Vec<(String, String, String)> {
    ["esm", "cjs"]
        .iter()
        .map(|b| (b.to_string(), verdict.to_string(), note.to_string()))
        .collect()
}

#[test]
fn a_patched_sdk_reopens_its_get_stream_on_a_new_session_with_no_call_and_mutant_18_is_stuck() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "sdk-1.32.2");
    assert_eq!(
        runs(&sb, &project),
        (
            1,
            both(
                "STUCK",
                "the GET stream met the loss at N ms (HTTP N), but no new session started before the next call (N ms)"
            )
        ),
        "the unpatched SDK"
    );
    let o = sb.run(&["apply", "--yes", "--path", project.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        runs(&sb, &project),
        (
            0,
            both(
                "SEAMLESS",
                "the GET stream met the loss; one fresh initialize without the dead id and a GET stream on the new session N ms later, with no call made; calls succeeded"
            )
        ),
        "the patched SDK"
    );
    let pkg = project.join("node_modules").join(SDK);
    mutate_builds(&pkg, &[ESM, CJS], "mcp-sdk", "18-get-not-reopened");
    assert_eq!(
        runs(&sb, &project),
        (
            1,
            both(
                "STUCK",
                "the GET stream met the loss at N ms (HTTP N), but no new session started before the next call (N ms)"
            )
        ),
        "mutant 18"
    );
}

#[test]
fn a_target_whose_patch_leaves_the_get_streams_loss_to_the_next_call_says_why_it_is_left_out() {
    let sb = Sandbox::new();
    let project = patched_2_0_99(&sb);
    let o = sb.run(&[
        "verify",
        "--target",
        "ai-sdk-mcp",
        "--scenario",
        SCENARIO,
        "--path",
        project.to_str().unwrap(),
    ]);
    assert_eq!((code(&o), stdout(&o)), (2, String::new()), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!("node {} ({})\nerror: no scenario asked for runs against ai-sdk-mcp:\n  - get-stream-loss: the patch heals the transport's POST path only: a loss its inbound GET stream meets is only reported, and the next call starts the new session (seen STUCK on 2.0.99 patched)\nhelp: leave out --scenario, or name a scenario ai-sdk-mcp can run\n", node22_version(), node22_dir().join("node").display())
    );
}
