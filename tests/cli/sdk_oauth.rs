//! The SDK host's view inside the client, on copies of real npm projects with
//! the real patched MCP SDK 1.32.2 (both builds): with an OAuth authProvider
//! (auth-session-401, auth-token-401, the host asked for one by `mcpatch/auth`)
//! a 401 naming the session is session loss and any other 401 goes to the
//! SDK's auth flow; and on every run the Client never gets an answer to a
//! request it did not send (`mcpatch/report`). Each test passes the patched
//! release, then catches the catalogue's mutant that breaks the rule.

use super::mcp_sdk::{mutate_builds, project_copy, CJS, ESM, SDK};
use super::sdk_scenarios::{all_runs, strict_runs};
use super::*;

/// A patched copy of the sdk-1.32.2 project.
fn patched_1_32_2(sb: &Sandbox) -> PathBuf {
    let project = project_copy(sb, "sdk-1.32.2");
    let o = sb.run(&["apply", "--yes", "--path", project.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    project
}

/// Both builds of `project`'s SDK get mutant `name` of the mcp-sdk catalogue.
fn mutate(project: &Path, name: &str) {
    mutate_builds(
        &project.join("node_modules").join(SDK),
        &[ESM, CJS],
        "mcp-sdk",
        name,
    );
}

#[test]
fn with_an_authprovider_a_401_naming_the_session_is_recovered_and_a_patch_that_leaves_it_to_the_auth_flow_is_stuck(
) {
    let sb = Sandbox::new();
    let project = patched_1_32_2(&sb);
    let scenarios = ["auth-session-401"];
    let (rc, runs, _) = strict_runs(&sb, "mcp-sdk", &project, &scenarios);
    assert_eq!(
        (rc, runs),
        (0, all_runs(&["esm", "cjs"], &scenarios, "SEAMLESS"))
    );
    mutate(&project, "23-auth-takes-session-401");
    let (rc, runs, _) = strict_runs(&sb, "mcp-sdk", &project, &scenarios);
    assert_eq!(
        (rc, runs),
        (1, all_runs(&["esm", "cjs"], &scenarios, "STUCK"))
    );
}

#[test]
fn with_an_authprovider_a_bad_token_401_goes_to_the_auth_flow_and_a_patch_that_takes_every_401_skips_it(
) {
    let sb = Sandbox::new();
    let project = patched_1_32_2(&sb);
    let scenarios = ["auth-token-401"];
    let (rc, runs, notes) = strict_runs(&sb, "mcp-sdk", &project, &scenarios);
    assert_eq!(
        (rc, runs),
        (0, all_runs(&["esm", "cjs"], &scenarios, "AUTH-KEPT"))
    );
    assert_eq!(
        notes,
        ["the refused call failed once, no new session; calls before and after it worked"; 2]
    );
    mutate(&project, "24-auth-401-any-body");
    let (rc, runs, notes) = strict_runs(&sb, "mcp-sdk", &project, &scenarios);
    assert_eq!(
        (rc, runs),
        (1, all_runs(&["esm", "cjs"], &scenarios, "AUTH-SKIPPED"))
    );
    assert_eq!(
        notes,
        ["the 401 \"Unauthorized: invalid token\" never reached the client's auth flow: its authProvider was not asked to sign in"; 2]
    );
}

#[test]
fn a_patch_whose_new_initialize_answer_reaches_the_client_is_broken() {
    let sb = Sandbox::new();
    let project = patched_1_32_2(&sb);
    let scenarios = ["expired-404"];
    let (rc, runs, _) = strict_runs(&sb, "mcp-sdk", &project, &scenarios);
    assert_eq!(
        (rc, runs),
        (0, all_runs(&["esm", "cjs"], &scenarios, "SEAMLESS"))
    );
    mutate(&project, "21-initialize-answer-leaks");
    let (rc, runs, notes) = strict_runs(&sb, "mcp-sdk", &project, &scenarios);
    assert_eq!(
        (rc, runs),
        (1, all_runs(&["esm", "cjs"], &scenarios, "BROKEN"))
    );
    let answer = "{\"jsonrpc\":\"2.0\",\"id\":\"mcpatch-reinitialize-1\",\"result\":{\"capabilities\":{\"tools\":{\"listChanged\":false}},\"protocolVersion\":\"2025-11-25\",\"serverInfo\":{\"name\":\"mcpatch-fake-server\",\"version\":\"";
    for note in &notes {
        assert!(
            note.starts_with(&format!("the client got 1 answer(s) to a request it never sent, e.g. Received a response for an unknown message ID: {answer}")),
            "{note}"
        );
        assert!(
            note.ends_with(
                "\"}}}: an answer the patch's own requests get must stay in the transport"
            ),
            "{note}"
        );
    }
}

#[test]
fn client_2_4_0_with_an_authprovider_is_stuck_on_a_401_naming_the_session_until_patched_and_keeps_its_auth_flow_on_a_bad_token(
) {
    let sb = Sandbox::new();
    let project = super::mcp_sdk_clients::project_copy(&sb, "client-2.4.0");
    let scenarios = ["auth-session-401", "auth-token-401"];
    let runs = |session: &str| {
        ["esm", "cjs"]
            .iter()
            .flat_map(|b| {
                [
                    (b.to_string(), scenarios[0].to_string(), session.to_string()),
                    (
                        b.to_string(),
                        scenarios[1].to_string(),
                        "AUTH-KEPT".to_string(),
                    ),
                ]
            })
            .collect::<Vec<_>>()
    };
    let (rc, before, _) = strict_runs(&sb, "mcp-sdk", &project, &scenarios);
    assert_eq!((rc, before), (1, runs("STUCK")));
    let o = sb.run(&["apply", "--yes", "--path", project.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let (rc, after, _) = strict_runs(&sb, "mcp-sdk", &project, &scenarios);
    assert_eq!((rc, after), (0, runs("SEAMLESS")));
}

#[test]
fn on_a_release_whose_transport_takes_no_fetch_function_the_session_401_behind_oauth_is_left_out_saying_why(
) {
    // sdk 1.10.0 to 1.14.0: the transport calls the global fetch, so the
    // patch cannot read a 401's body before the SDK's auth flow takes it.
    let sb = Sandbox::new();
    let project = project_copy(&sb, "sdk-1.10.0");
    let p = project.to_str().unwrap();
    let o = sb.run(&["apply", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let o = sb.run(&[
        "verify",
        "--json",
        "--strict",
        "--scenario",
        "auth-session-401",
        "--scenario",
        "auth-token-401",
        "--path",
        p,
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let install = &v["installs"][0];
    assert_eq!(install["overall"], "HELD", "{install:#}");
    assert_eq!(
        install["left_out"],
        serde_json::json!([{"name": "auth-session-401", "why": "this client's transport takes no fetch function, so no patch can read a 401's body before the client's auth flow takes it: with an authProvider, a 401 naming the session goes to the auth flow, as unpatched"}]),
        "{install:#}"
    );
    let verdicts: Vec<(&str, &str)> = install["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["build"].as_str().unwrap(), s["verdict"].as_str().unwrap()))
        .collect();
    assert_eq!(verdicts, [("esm", "AUTH-KEPT"), ("cjs", "AUTH-KEPT")]);
}
