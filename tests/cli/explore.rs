//! `mcpatch verify --explore`: plans generated from a seed drive the real
//! client, each run judged by the rules every run keeps. A broken patch (the
//! catalogue's mutant 37: a 400 that merely mentions a session taken for a
//! lost one) is found by exploration alone, shrunk to a minimal plan, and
//! replayed from the seed it prints.

use serde_json::{json, Value};

use super::strict::{mutate, patched};
use super::verify::verify_json;
use super::*;

/// Explored runs from the default seed that reach mutant 37's rule.
const RUNS: &str = "4";

fn exploration(v: &Value) -> &Value {
    &v["installs"][0]["exploration"]
}

#[test]
fn mcpatchs_own_patched_file_keeps_every_rule_over_the_explored_runs() {
    let sb = Sandbox::new();
    let client = patched(&sb);
    let p = client.to_str().unwrap();
    let (rc, v) = verify_json(
        &sb,
        &["--strict", "--explore-only", "--explore", RUNS, "--path", p],
    );
    assert_eq!(rc, 0, "{v:#}");
    let install = &v["installs"][0];
    assert_eq!(install["overall"], "EXPLORED");
    assert_eq!(install["scenarios"], json!([]));
    assert_eq!(
        exploration(&v),
        &json!({"seed": 2026, "runs": 4, "ok": true, "failures": []})
    );
}

#[test]
fn a_broken_patch_is_found_by_exploration_alone_shrunk_and_replayed_from_its_seed() {
    let sb = Sandbox::new();
    let client = patched(&sb);
    mutate(&client, "predicate-counts-any-session-mention");
    let p = client.to_str().unwrap();

    // Exploration alone (no table: its ordinary-errors scenario catches this
    // mutant too, see dsh_rules.rs) finds it, and shrinks the plan to the one
    // call that shows it.
    let (rc, v) = verify_json(
        &sb,
        &["--strict", "--explore-only", "--explore", RUNS, "--path", p],
    );
    assert_eq!(rc, 1, "{v:#}");
    let e = exploration(&v);
    assert_eq!(
        (e["seed"].as_u64(), e["ok"].as_bool()),
        (Some(2026), Some(false))
    );
    let f = &e["failures"][0];
    assert_eq!(f["invariant"], "tool-runs-once", "{f:#}");
    assert_eq!(f["verdict"], "REPEATED", "{f:#}");
    let shrunk: Vec<&str> = f["shrunk"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(
        shrunk[shrunk.len() - 2..],
        [
            "1. call fail (http400session), waits for it",
            "then: every call ends, pause 1500 ms, call echo (the last call)"
        ],
        "{f:#}"
    );
    assert_eq!(
        f["shrunk_note"],
        "invariant tool-runs-once: call c1 ran 2 times: a tool call was sent again after it ran"
    );

    // The printed seed replays the same plan and the same failure, in the words a user reads.
    let seed = f["seed"].as_u64().unwrap().to_string();
    let o = sb.run(&[
        "verify",
        "--strict",
        "--explore-only",
        "--explore",
        "1",
        "--seed",
        &seed,
        "--path",
        p,
    ]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    let (rc, replayed) = verify_json(
        &sb,
        &[
            "--strict",
            "--explore-only",
            "--explore",
            "1",
            "--seed",
            &seed,
            "--path",
            p,
        ],
    );
    assert_eq!(rc, 1, "{replayed:#}");
    let r = &exploration(&replayed)["failures"][0];
    assert_eq!(r["seed"], f["seed"]);
    assert_eq!(r["plan"], f["plan"]);
    assert_eq!(r["invariant"], "tool-runs-once");
    assert_eq!(r["shrunk"], f["shrunk"]);
    let mut expected = format!(
        "explored 1 run from seed {seed}: 1 broke a rule\n  seed {seed} (REPEATED; replay: --explore 1 --seed {seed}): {}\n    shrunk plan:\n",
        r["note"].as_str().unwrap()
    );
    for line in r["shrunk"].as_array().unwrap() {
        expected.push_str(&format!("      {}\n", line.as_str().unwrap()));
    }
    assert!(out.contains(&expected), "expected\n{expected}\nin\n{out}");
    assert!(out.ends_with("FAILED\n"), "{out}");
}

#[test]
fn a_bridge_command_refuses_a_seed_with_no_explored_runs_and_a_path_even_when_exploring() {
    let sb = Sandbox::new();
    for (args, flag) in [
        (&["--seed", "5"][..], "--seed"),
        (&["--explore", "0", "--seed", "5"][..], "--seed"),
        (&["--jobs", "2"][..], "--jobs"),
        (&["--explore", "2", "--path", "x"][..], "--path"),
    ] {
        let mut all = vec!["verify", "--command", "true"];
        all.extend_from_slice(args);
        let o = sb.run(&all);
        assert_eq!(code(&o), 2, "{args:?}");
        assert_eq!(
            stderr(&o),
            format!("error: --command cannot be used with {flag}\nhelp: --command checks a stdio bridge against the fake server; {flag} belongs to the check of the clients mcpatch finds installed: run one or the other\n"),
            "{args:?}"
        );
    }
}
