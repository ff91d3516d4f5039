//! The DSH plugin's rules of issue 28 item 3, each broken on purpose by a
//! mutant of mcpatch's patched file (test-fixtures/patch-mutants/21, 37 to
//! 42): exploration alone (`verify --strict --explore-only --explore 1 --seed
//! S`, no scenario of the table) finds each through the rule it breaks, from a
//! seed seen to reach it; a scenario of the fixed table (or a check the
//! plugin's table makes on every scenario) fails on it too. The unmutated
//! patch keeps every rule on the same seeds, and passes those scenarios.

use std::collections::BTreeSet;

use serde_json::Value;

use super::strict::{mutate, patched};
use super::verify::verify_json;
use super::*;

/// One rule, the mutant that breaks it, and where it is caught.
struct Rule {
    mutant: &'static str,
    /// A seed whose first explored run breaks the rule on the mutant: a run
    /// seed of an exploration from 2026 whose generated plan is already small
    /// (two to four steps), so the run and its shrinking take seconds.
    seed: &'static str,
    invariant: &'static str,
    verdict: &'static str,
    /// The scenario of the fixed table that fails on the mutant, and its verdict.
    table: (&'static str, &'static str),
}

const HARMLESS_400: Rule = Rule {
    mutant: "predicate-counts-any-session-mention",
    seed: "4255232747",
    invariant: "tool-runs-once",
    verdict: "REPEATED",
    table: ("ordinary-errors", "REPEATED"),
};
const COUNTER_RESETS: Rule = Rule {
    mutant: "outage-counter-never-resets",
    seed: "3518992170",
    invariant: "repeat-after-loss",
    verdict: "STUCK",
    table: ("losses-apart", "STUCK"),
};
const DISABLED_FAILS_AT_ONCE: Rule = Rule {
    mutant: "disabled-reconnect-waits",
    seed: "2962111760",
    invariant: "fail-at-once",
    verdict: "BROKEN",
    table: ("reconnect-disabled", "LATE"),
};
const CLOSED_AFTER_LAST_ANSWER: Rule = Rule {
    mutant: "lost-session-closed-under-calls",
    seed: "807390595",
    invariant: "closed-after-last-answer",
    verdict: "BROKEN",
    table: ("concurrent-loss", "RECOVERED"),
};
const REASON_DOES_NOT_STICK: Rule = Rule {
    mutant: "loss-reason-sticks",
    seed: "2943653841",
    invariant: "logs-tell-the-truth",
    verdict: "BROKEN",
    table: ("refused-once", "BROKEN"),
};
const NEW_SESSIONS_TOOLS: Rule = Rule {
    mutant: "relist-keeps-old-definitions",
    seed: "2771855489",
    invariant: "tools-from-new-session",
    verdict: "BROKEN",
    table: ("expired-404", "BROKEN"),
};

const RULES: [&Rule; 6] = [
    &HARMLESS_400,
    &COUNTER_RESETS,
    &DISABLED_FAILS_AT_ONCE,
    &CLOSED_AFTER_LAST_ANSWER,
    &REASON_DOES_NOT_STICK,
    &NEW_SESSIONS_TOOLS,
];

/// `verify --strict --explore-only --explore 1 --seed SEED` on the package `client`.
fn explored(sb: &Sandbox, client: &Path, seed: &str) -> (i32, Value) {
    verify_json(
        sb,
        &[
            "--strict",
            "--explore-only",
            "--explore",
            "1",
            "--seed",
            seed,
            "--path",
            client.to_str().unwrap(),
        ],
    )
}

/// `verify --strict --scenario NAME` (no exploration) on the package `client`.
fn table(sb: &Sandbox, client: &Path, scenario: &str) -> (i32, Value) {
    verify_json(
        sb,
        &[
            "--strict",
            "--explore",
            "0",
            "--scenario",
            scenario,
            "--path",
            client.to_str().unwrap(),
        ],
    )
}

/// The rule's mutant on mcpatch's patched file: exploration alone finds it
/// through the rule, from the rule's seed; the table's scenario fails on it.
fn caught(rule: &Rule) {
    let sb = Sandbox::new();
    let client = patched(&sb);
    mutate(&client, rule.mutant);
    let ((rc, v), table_run) = std::thread::scope(|s| {
        let t = s.spawn(|| table(&sb, &client, rule.table.0));
        (explored(&sb, &client, rule.seed), t.join().unwrap())
    });
    assert_eq!(rc, 1, "{}: {v:#}", rule.mutant);
    let e = &v["installs"][0]["exploration"];
    assert_eq!(e["ok"], false, "{e:#}");
    let f = &e["failures"][0];
    assert_eq!(
        (f["seed"].to_string(), &f["invariant"], &f["verdict"]),
        (
            rule.seed.to_string(),
            &rule.invariant.into(),
            &rule.verdict.into()
        ),
        "{f:#}"
    );
    let prefix = format!("invariant {}: ", rule.invariant);
    assert!(f["note"].as_str().unwrap().starts_with(&prefix), "{f:#}");
    assert!(
        f["shrunk_note"].as_str().unwrap().starts_with(&prefix),
        "{f:#}"
    );
    let ((name, verdict), (rc, v)) = (rule.table, table_run);
    assert_eq!(rc, 1, "{}: {v:#}", rule.mutant);
    let s = &v["installs"][0]["scenarios"][0];
    assert_eq!(
        (&s["name"], &s["verdict"], &s["ok"]),
        (&name.into(), &verdict.into(), &false.into()),
        "{s:#}"
    );
}

#[test]
fn mcpatchs_own_patch_keeps_every_rule_on_the_seeds_that_find_the_broken_ones() {
    let sb = Sandbox::new();
    let client = patched(&sb);
    let seeds: BTreeSet<&str> = RULES.iter().map(|r| r.seed).collect();
    let scenarios: BTreeSet<&str> = RULES.iter().map(|r| r.table.0).collect();
    std::thread::scope(|s| {
        let explored: Vec<_> = seeds
            .iter()
            .map(|seed| (seed, s.spawn(|| explored(&sb, &client, seed))))
            .collect();
        let tables: Vec<_> = scenarios
            .iter()
            .map(|name| (name, s.spawn(|| table(&sb, &client, name))))
            .collect();
        for (seed, run) in explored {
            let (rc, v) = run.join().unwrap();
            assert_eq!(rc, 0, "seed {seed}: {v:#}");
            assert_eq!(v["installs"][0]["overall"], "EXPLORED", "{v:#}");
        }
        for (name, run) in tables {
            let (rc, v) = run.join().unwrap();
            assert_eq!(rc, 0, "{name}: {v:#}");
            assert_eq!(v["installs"][0]["scenarios"][0]["ok"], true, "{v:#}");
        }
    });
}

#[test]
fn a_400_that_mentions_a_session_harmlessly_stays_an_ordinary_error() {
    caught(&HARMLESS_400);
}

#[test]
fn the_outage_counter_starts_again_after_a_healthy_session() {
    caught(&COUNTER_RESETS);
}

#[test]
fn with_reconnect_disabled_a_call_that_meets_a_loss_fails_at_once() {
    caught(&DISABLED_FAILS_AT_ONCE);
}

#[test]
fn a_lost_session_is_closed_only_once_its_last_call_has_its_answer() {
    caught(&CLOSED_AFTER_LAST_ANSWER);
}

#[test]
fn the_reason_of_a_loss_does_not_stick_to_a_later_ordinary_outage() {
    caught(&REASON_DOES_NOT_STICK);
}

#[test]
fn after_a_re_list_the_registered_tools_are_the_new_sessions_definitions() {
    caught(&NEW_SESSIONS_TOOLS);
}
