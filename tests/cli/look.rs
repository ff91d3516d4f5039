//! How mcpatch looks: tables that fit the terminal, colour by the usual rules
//! (NO_COLOR, CLICOLOR_FORCE, CLICOLOR, TERM=dumb, `--color`), progress on a
//! terminal, scenario names in help and completions, `diff` as a real unified
//! diff with word highlights, and node errors whose hint fits how node was chosen.

use std::io::Read;
use std::process::Stdio;

use mcpatch::verify::fake_server::LostSessionAnswer;

use super::probe::{shown, Fake};
use super::*;

/// ESC, as the colour escapes in expected output start.
const E: &str = "\u{1b}";

/// The text with the sandbox path as [SANDBOX], column padding kept.
fn exact(sb: &Sandbox, text: &[u8]) -> String {
    String::from_utf8_lossy(text).replace(&sb.root().display().to_string(), "[SANDBOX]")
}

/// Every line fits `columns`.
fn assert_fits(text: &[u8], columns: usize) {
    for line in String::from_utf8_lossy(text).lines() {
        assert!(
            line.chars().count() <= columns,
            "wider than {columns} columns ({}): {line:?}",
            line.chars().count()
        );
    }
}

/// The layouts below depend on how long the sandbox's path is: they are
/// written for a temp folder like /tmp (`/tmp/mcpatch-test-XXXXXX`).
fn short_sandbox(sb: &Sandbox) {
    let root = sb.root().display().to_string();
    assert!(
        root.chars().count() <= 26 && root.matches('/').count() == 2,
        "these layouts are written for a sandbox like /tmp/mcpatch-test-XXXXXX, not {root}: run the tests with TMPDIR=/tmp"
    );
}

/// Timings (`at 1.2 s`) as `at [T] s`.
fn timeless(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(" at ") {
        out.push_str(&rest[..i + 4]);
        rest = &rest[i + 4..];
        let n = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        if n > 0 && rest[n..].starts_with(" s") {
            out.push_str("[T]");
        } else {
            out.push_str(&rest[..n]);
        }
        rest = &rest[n..];
    }
    out.push_str(rest);
    out
}

/// Run `cmd` on a pseudo-terminal (util-linux `script`), after `before` in
/// the same shell (such as `stty cols 70`) and with `after` appended to its
/// command line (such as a redirection). Returns its exit code and the
/// screen, with the terminal's line ends as `\n`.
fn on_a_pty(cmd: &std::process::Command, before: &str, after: &str) -> (i32, String) {
    let script = which::which("script").unwrap_or_else(|_| {
        panic!("`script` (util-linux) is needed to run mcpatch on a pseudo-terminal: apt-get install bsdutils")
    });
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let line = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| quote(&a.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ");
    let mut c = std::process::Command::new(script);
    c.args(["-qec", &format!("{before} {line} {after}"), "/dev/null"]);
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    // stdin stays open until the run ends: script stops at the end of its input.
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut screen = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut screen)
        .unwrap();
    let status = child.wait().unwrap();
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&screen).replace("\r\n", "\n"),
    )
}

// ---- the status table fits the terminal ----

#[test]
fn status_on_80_columns_puts_each_path_on_its_own_line() {
    let sb = Sandbox::new();
    short_sandbox(&sb);
    let a = sb.client_install("0.1.0-rc.8", "a");
    let p = sb.client_install("0.1.0-rc.8", "p");
    let (a, p) = (a.to_str().unwrap(), p.to_str().unwrap());
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let args = ["status", "--path", a, "--path", p];

    let o = sb.cmd(&args).env("COLUMNS", "80").output().unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_fits(&o.stdout, 80);
    assert_eq!(
        exact(&sb, &o.stdout),
        "PATH
    VERSION     STATE     NEXT STEP
[SANDBOX]/a/lib/node_modules/@deepseek-ai/dsh-mcp-client
    0.1.0-rc.8  affected  run `mcpatch apply`
    sha256 b126dcec…7d56 (original)
    note: affected: the patch targets this revision
[SANDBOX]/p/lib/node_modules/@deepseek-ai/dsh-mcp-client
    0.1.0-rc.8  patched   none (`mcpatch verify` to check, `mcpatch revert` to
                          undo)
    sha256 19df5703…2d1a (patched)
    note: patched by mcpatch (dsh-mcp-client-session-loss, revision 3: seamless)
next steps: run each command above with the --path you gave this run, so that it
            works on these installs only
2 install(s): 1 affected, 1 patched, 0 outdated, 0 upstream-fixed, 0 modified,
              0 unsupported
"
    );

    // Wide enough (the next steps carry both paths): one line per install, as in a pipe (no limit there).
    let wide = sb.cmd(&args).env("COLUMNS", "1000").output().unwrap();
    let piped = sb.run(&args);
    assert_eq!(exact(&sb, &wide.stdout), exact(&sb, &piped.stdout));
    assert_eq!(
        sb.normalize(&piped.stdout),
        "PATH  VERSION  STATE  NEXT STEP
[SANDBOX]/a/lib/node_modules/@deepseek-ai/dsh-mcp-client  0.1.0-rc.8  affected  run `mcpatch apply --path [SANDBOX]/a/lib/node_modules/@deepseek-ai/dsh-mcp-client --path [SANDBOX]/p/lib/node_modules/@deepseek-ai/dsh-mcp-client`
  sha256 b126dcec…7d56 (original)
  note: affected: the patch targets this revision
[SANDBOX]/p/lib/node_modules/@deepseek-ai/dsh-mcp-client  0.1.0-rc.8  patched  none (`mcpatch verify --path [SANDBOX]/a/lib/node_modules/@deepseek-ai/dsh-mcp-client --path [SANDBOX]/p/lib/node_modules/@deepseek-ai/dsh-mcp-client` to check, `mcpatch revert --path [SANDBOX]/a/lib/node_modules/@deepseek-ai/dsh-mcp-client --path [SANDBOX]/p/lib/node_modules/@deepseek-ai/dsh-mcp-client` to undo)
  sha256 19df5703…2d1a (patched)
  note: patched by mcpatch (dsh-mcp-client-session-loss, revision 3: seamless)
2 install(s): 1 affected, 1 patched, 0 outdated, 0 upstream-fixed, 0 modified, 0 unsupported
"
    );

    // --json never changes with the width.
    let mut json = vec!["--json"];
    json.extend_from_slice(&args);
    let narrow = sb.cmd(&json).env("COLUMNS", "80").output().unwrap();
    assert_eq!(stdout(&narrow), stdout(&sb.run(&json)));
}

#[test]
fn a_path_too_long_for_the_terminal_is_shortened_from_the_middle() {
    let sb = Sandbox::new();
    short_sandbox(&sb);
    let client = sb.client_install(
        "0.1.0-rc.8",
        "a-folder-whose-long-name-makes-the-path-too-wide",
    );
    let o = sb
        .cmd(&["status", "--path", client.to_str().unwrap()])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_fits(&o.stdout, 80);
    assert_eq!(
        exact(&sb, &o.stdout),
        "PATH
    VERSION     STATE     NEXT STEP
[SANDBOX]/…/lib/node_modules/@deepseek-ai/dsh-mcp-client
    0.1.0-rc.8  affected  run `mcpatch apply`
    sha256 b126dcec…7d56 (original)
    note: affected: the patch targets this revision
next steps: run each command above with the --path you gave this run, so that it
            works on these installs only
1 install(s): 1 affected, 0 patched, 0 outdated, 0 upstream-fixed, 0 modified,
              0 unsupported
"
    );
}

#[test]
fn status_on_a_terminal_fits_the_terminals_own_width() {
    let sb = Sandbox::new();
    short_sandbox(&sb);
    let client = sb.client_install("0.1.0-rc.8", "g");
    let cmd = sb.command(&["status", "--path", client.to_str().unwrap()]);
    let stty = which::which("stty").expect("`stty` (coreutils) sets the terminal's width");
    let (rc, screen) = on_a_pty(&cmd, &format!("'{}' cols 76 &&", stty.display()), "");
    assert_eq!(rc, 1, "{screen}");
    assert_fits(screen.as_bytes(), 76);
    assert_eq!(
        exact(&sb, screen.as_bytes()),
        "PATH
    VERSION     STATE     NEXT STEP
[SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client
    0.1.0-rc.8  affected  run `mcpatch apply`
    sha256 b126dcec…7d56 (original)
    note: affected: the patch targets this revision
next steps: run each command above with the --path you gave this run, so
            that it works on these installs only
1 install(s): 1 affected, 0 patched, 0 outdated, 0 upstream-fixed,
              0 modified, 0 unsupported
"
    );
}

// ---- verify's progress on a terminal ----

#[test]
fn verify_json_shows_progress_on_a_terminal_while_stdout_goes_to_a_file() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let args = [
        "verify",
        "--json",
        "--path",
        p,
        "--scenario",
        "ordinary-errors",
    ];
    let report = sb.root().join("report.json");
    // Wide enough that the node line, which names node's path (deep in a
    // checkout such as /check/work/main), stays on one line.
    let stty = which::which("stty").expect("`stty` (coreutils) sets the terminal's width");
    let (rc, screen) = on_a_pty(
        &sb.command(&args),
        &format!("'{}' cols 400 &&", stty.display()),
        &format!("> '{}'", report.display()),
    );
    assert_eq!(rc, 0, "{screen}");
    let node = node22_dir().join("node");
    assert_eq!(
        timeless(&screen),
        format!(
            "node {} ({})\n[1/1] ordinary-errors (short policy): HELD at [T] s\n",
            node22_version(),
            node.display()
        )
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap())
        .unwrap_or_else(|e| panic!("stdout is not the JSON report ({e})"));
    assert_eq!(v["installs"][0]["overall"], "HELD", "{v:#}");
    assert_eq!(v["installs"][0]["scenarios"][0]["name"], "ordinary-errors");

    // Neither a terminal: the JSON alone, nothing on stderr.
    let o = sb.run(&args);
    assert_eq!(code(&o), 0);
    assert_eq!(stderr(&o), "");
}

// ---- scenario names in help and completions ----

#[test]
fn scenario_names_are_listed_by_help_and_completions() {
    let sb = Sandbox::new();
    let names = "expired-404 expired-400 expired-401 idle-timeout restart restart-persisted ordinary-errors sse-404 strict-reinit concurrent-loss call-during-renewal forgetful cut-mid-call expired-404-sdk2 slow-timeout slow-relist abort-waiting deadline-waiting deadline-resend long-backoff gave-up refused-once losses-apart reconnect-disabled reload reload-5s auth-session-401 auth-token-401 get-stream-loss late-answers lost-again cut-kept reinit-timeout tools-changed";
    let o = sb.run(&["verify", "--help"]);
    assert_eq!(code(&o), 0);
    assert_eq!(
        stdout(&o),
        format!("Prove the installed client recovers from session loss, against a bundled fake server

Usage: mcpatch verify [OPTIONS]

Options:
      --path <P>                A file to patch, a package folder, or a folder to search below (repeatable). Without it, mcpatch looks where a host could load the package from
      --npm                     Ask `npm root -g` for npm's global folder (starts npm) instead of reading npm's configuration, for setups mcpatch cannot read
      --backup [<ID>]           Check a saved original instead (the newest backup, or the one named): the control
      --scenario <NAME>         Run only these scenarios (repeatable); reload and reload-5s (30 s and 40 s) run only when named, late-answers, lost-again, cut-kept, reinit-timeout and tools-changed too but for gemini-cli (and late-answers for mcp-remote) [possible values: {}]
  -j, --jobs <N>                Scenario runs at once (default: all of them for the DSH plugin, in one node; 4 for a bridge or an SDK client, 3 for gemini-cli, each a process of its own)
      --strict                  Judge every file by the current patch revision's expectations (SEAMLESS recovery, its rules), whatever its sha256: for hand-edited files and new releases
      --trust-owner             As root: run an install's code (the load check, verify) even when another user owns it or can write it or a folder on the way to it
      --explore <N>             Also drive the client through N plans generated from a seed, each judged by the rules every run keeps (default: 3 for a file judged by the current revision's expectations when no --scenario is named; 0: none)
      --seed <S>                The seed of the explored plans (default 2026); a failing run prints the seed that replays it with `--explore 1`
      --explore-only            Run only the explored plans, not the fixed table of scenarios
      --node <PATH>             The node binary to use (default: `node` on PATH)
      --json                    Print JSON instead of a table
      --command <CMD>           Verify a stdio MCP bridge instead (e.g. 'npx -y mcp-remote@0.15.1'), quoted as for a shell: the fake server's URL replaces {{url}} in an argument, else comes last
      --startup-timeout <SECS>  With --command: how long the bridge may take to answer its first initialize (npx may download it first) [default: 60]
  -v, --verbose                 With --command: print the bridge's stderr of each scenario (to stderr)
      --color <WHEN>            When to colour the output; auto colours a terminal unless NO_COLOR, CLICOLOR=0 or TERM=dumb is set, and CLICOLOR_FORCE colours a pipe too [default: auto] [possible values: auto, always, never]
      --target <NAME>           Work on this target only (a target under patches/: dsh-mcp-client, mcp-remote, gemini-cli, mcp-sdk, ai-sdk-mcp); default: every target
  -h, --help                    Print help

Exit codes: 0 every scenario met its expectation; 1 attention: a scenario did not (STUCK, RECYCLED, BROKEN, ...), or an install was skipped as unsupported; 2 error: bad input, node missing, or an install could not be checked (any others were checked as reported); verify changes no install. 2 wins over 1.
", names.replace(' ', ", "))
    );

    // Each shell completes --scenario (of verify and of serve) with the names, never file names.
    let completion = |shell: &str| stdout(&sb.run(&["completions", shell]));
    let bash = completion("bash");
    let case = format!(
        "                --scenario)\n                    COMPREPLY=($(compgen -W \"{names}\" -- \"${{cur}}\"))\n                    return 0\n                    ;;\n"
    );
    assert_eq!(bash.matches(&case).count(), 2, "{bash}");
    let zsh = completion("zsh");
    assert!(
        zsh.contains(&format!(
            "'*--scenario=[Run only these scenarios (repeatable); reload and reload-5s (30 s and 40 s) run only when named, late-answers, lost-again, cut-kept, reinit-timeout and tools-changed too but for gemini-cli (and late-answers for mcp-remote)]:NAME:({names})' \\\n"
        )),
        "{zsh}"
    );
    assert!(
        zsh.contains(&format!(
            "'--scenario=[The scenario whose server behaviour to run]:NAME:({names})' \\\n"
        )),
        "{zsh}"
    );
    let fish = completion("fish");
    let values = names
        .split(' ')
        .map(|n| format!("{n}\\t''"))
        .collect::<Vec<_>>()
        .join("\n");
    for (command, help) in [
        ("verify", "Run only these scenarios (repeatable); reload and reload-5s (30 s and 40 s) run only when named, late-answers, lost-again, cut-kept, reinit-timeout and tools-changed too but for gemini-cli (and late-answers for mcp-remote)"),
        ("serve", "The scenario whose server behaviour to run"),
    ] {
        let line = format!("complete -c mcpatch -n \"__fish_mcpatch_using_subcommand {command}\" -l scenario -d '{help}' -r -f -a \"{values}\"\n");
        assert!(fish.contains(&line), "{line}\n{fish}");
    }
}

// ---- colour by the usual rules ----

/// `status --path` of one affected install, plain.
fn plain_status() -> &'static str {
    "PATH  VERSION  STATE  NEXT STEP
[SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client  0.1.0-rc.8  affected  run `mcpatch apply --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client`
  sha256 b126dcec…7d56 (original)
  note: affected: the patch targets this revision
1 install(s): 1 affected, 0 patched, 0 outdated, 0 upstream-fixed, 0 modified, 0 unsupported
"
}

/// The same, coloured: the state in red.
fn coloured_status() -> String {
    plain_status().replace("  affected  ", &format!("  {E}[31maffected{E}[0m  "))
}

#[test]
fn colour_follows_no_color_clicolor_force_clicolor_and_the_flag() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    let coloured = coloured_status();
    // (flags, environment set over the sandbox's NO_COLOR=1 (an empty
    // NO_COLOR is as if unset), coloured?)
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], bool);
    let cases: [Case; 9] = [
        (&[], &[], false),
        (&[], &[("NO_COLOR", "")], false),
        (&[], &[("NO_COLOR", ""), ("CLICOLOR_FORCE", "1")], true),
        (&[], &[("CLICOLOR_FORCE", "1")], false),
        (&[], &[("NO_COLOR", ""), ("CLICOLOR_FORCE", "0")], false),
        (
            &["--color", "never"],
            &[("NO_COLOR", ""), ("CLICOLOR_FORCE", "1")],
            false,
        ),
        (&["--color", "always"], &[], true),
        (&["--color=always"], &[("TERM", "dumb")], true),
        (
            &["--color", "auto"],
            &[("NO_COLOR", ""), ("CLICOLOR_FORCE", "1"), ("TERM", "dumb")],
            true,
        ),
    ];
    for (flag, env, want) in cases {
        let mut args = vec!["status", "--path", p];
        args.extend_from_slice(flag);
        let mut cmd = sb.cmd(&args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let o = cmd.output().unwrap();
        assert_eq!(code(&o), 1, "{flag:?} {env:?}: {}", stderr(&o));
        let expected = if want {
            coloured.as_str()
        } else {
            plain_status()
        };
        assert_eq!(sb.normalize(&o.stdout), expected, "{flag:?} {env:?}");
    }
}

#[test]
fn on_a_terminal_colour_is_on_unless_term_is_dumb_clicolor_is_0_or_never() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    let coloured = coloured_status();
    for (flag, env, want) in [
        ("", ("TERM", "xterm-256color"), true),
        ("", ("TERM", "dumb"), false),
        ("", ("CLICOLOR", "0"), false),
        ("never", ("TERM", "xterm-256color"), false),
    ] {
        let mut args = vec!["status", "--path", p];
        if !flag.is_empty() {
            args.extend(["--color", flag]);
        }
        let mut cmd = sb.command(&args);
        cmd.env_remove("NO_COLOR")
            .env("TERM", "xterm-256color")
            .env("COLUMNS", "300")
            .env(env.0, env.1);
        let (rc, screen) = on_a_pty(&cmd, "", "");
        assert_eq!(rc, 1, "{screen}");
        let expected = if want {
            coloured.as_str()
        } else {
            plain_status()
        };
        assert_eq!(
            sb.normalize(screen.as_bytes()),
            expected,
            "{flag:?} {env:?}"
        );
    }
}

#[test]
fn errors_show_error_and_help_in_colour() {
    let sb = Sandbox::new();
    let empty = sb.root().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = sb.run(&[
        "status",
        "--color",
        "always",
        "--path",
        empty.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 2);
    assert_eq!(stdout(&o), "");
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("{E}[1;31merror:{E}[0m no @deepseek-ai/dsh-mcp-client, mcp-remote, @google/gemini-cli, @modelcontextprotocol/sdk, @modelcontextprotocol/client or @ai-sdk/mcp install under the --path given; looked in:
  - --path [SANDBOX]/empty
{E}[1;36mhelp:{E}[0m pass the package folder (the one holding package.json and lib/index.js), its lib/index.js, or a folder to search below
")
    );
}

#[test]
fn verify_colours_the_state_and_each_verdict() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let o = sb.run(&[
        "verify",
        "--color",
        "always",
        "--path",
        p,
        "--scenario",
        "ordinary-errors",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let held = format!("{E}[32mHELD{E}[0m");
    assert_eq!(
        sb.normalize(&o.stdout),
        format!(
            "[SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client ({E}[32mpatched{E}[0m)
  sha256 {}, node {}
SCENARIO  VERDICT  FAILED CALLS  RECOVERY MS  HANDSHAKES  NOTE
ordinary-errors  {held}  5  -  1  each error reached the caller once; 8 calls on one session, no new initialize
{held}
",
            short(&patched_hash()),
            node22_version()
        )
    );
    assert_eq!(
        timeless(&stderr(&o)),
        format!(
            "node {} ({})\n[1/1] ordinary-errors (short policy): {held} at [T] s\n",
            node22_version(),
            node22_dir().join("node").display()
        )
    );
}

#[test]
fn probe_colours_its_verdict() {
    let sb = Sandbox::new();
    let covered = Fake::start(LostSessionAnswer::NotFoundJsonRpc);
    let o = sb.run(&["probe", "--color", "always", &covered.url()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let body = |id: u32| {
        format!(
            r#"{{"error":{{"code":-32001,"message":"Session not found"}},"id":{id},"jsonrpc":"2.0"}}"#
        )
    };
    assert_eq!(
        shown(&sb, &o.stdout),
        sb.normalize(format!(
            "probe http://127.0.0.1:[PORT]/mcp
session: issued (protocol 2025-11-25, 4 tool(s) listed)

CASE  STATUS  SESSION LOST  ANSWER
unknown-session-tools-list  404  yes  {}
unknown-session-ping  404  yes  {}
delete-own-session  200  no  (empty body)
deleted-session-tools-list  404  yes  {}

{E}[32mcovered{E}[0m: to tools/list with a session id it never issued, the server answered HTTP 404 {}, which the patched client takes as session loss: it reconnects with a fresh session
",
            body(3),
            body(4),
            body(5),
            body(3)
        ).as_bytes())
    );

    let refused = Fake::start(LostSessionAnswer::ForbiddenSessionExpired);
    let o = sb.run(&["probe", "--color", "always", &refused.url()]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let words = "Forbidden: session expired";
    assert_eq!(
        shown(&sb, &o.stdout),
        sb.normalize(format!(
            "probe http://127.0.0.1:[PORT]/mcp
session: issued (protocol 2025-11-25, 4 tool(s) listed)

CASE  STATUS  SESSION LOST  ANSWER
unknown-session-tools-list  403  no  {words}
unknown-session-ping  403  no  {words}
delete-own-session  200  no  (empty body)
deleted-session-tools-list  403  no  {words}

{E}[31mnot-covered{E}[0m: to tools/list with a session id it never issued, the server answered HTTP 403 \"{words}\": the patch takes only 404, or 400/401 naming the session, as session loss; HTTP 403 is neither. The patched client would keep the dead session, and every call to this server would fail until DSH restarts
{E}[1;36mhelp:{E}[0m make the server, or the proxy in front of it, answer 404 to a session it does not know, as the MCP spec says
"
        ).as_bytes())
    );
}

// ---- diff: a unified diff computed by similar ----

#[test]
fn diff_is_a_unified_diff_of_what_apply_would_write_with_word_highlights_in_colour() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    let file = client.join("lib/index.js");
    let current = std::fs::read_to_string(&file).unwrap();
    // What apply writes: apply a copy, read it back.
    let copy = sb.client_install("0.1.0-rc.8", "copy");
    assert_eq!(
        code(&sb.run(&["apply", "--path", copy.to_str().unwrap()])),
        0
    );
    let patched = std::fs::read_to_string(copy.join("lib/index.js")).unwrap();

    let o = sb.run(&["diff", "--path", p]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let out = stdout(&o);
    let (first, diff) = out.split_once('\n').unwrap();
    assert_eq!(
        exact(&sb, first.as_bytes()),
        "# [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js (affected)"
    );
    // The same hunks another implementation (diffy) finds, with git's a/ b/ names.
    let oracle = diffy::create_patch(&current, &patched)
        .to_string()
        .replacen("--- original", "--- a/lib/index.js", 1)
        .replacen("+++ modified", "+++ b/lib/index.js", 1);
    assert_eq!(diff, oracle);
    // And it is a real patch: applied to the current file, it gives what apply writes.
    let parsed = diffy::Patch::from_str(diff).unwrap();
    assert_eq!(diffy::apply(&current, &parsed).unwrap(), patched);

    // In colour: headers bold, hunks cyan, lines red and green, and in the one
    // changed line the changed word stands out.
    let o = sb.run(&["diff", "--color", "always", "--path", p]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let red = |t: &str| format!("{E}[31m{t}{E}[0m");
    let green = |t: &str| format!("{E}[32m{t}{E}[0m");
    let red_word = |t: &str| format!("{E}[1;7;31m{t}{E}[0m");
    let green_word = |t: &str| format!("{E}[1;7;32m{t}{E}[0m");
    let args =
        r#"(client, rawName, typeof args === "object" && args !== null ? args : {}, exec, opts);"#;
    // The changed lines, whose changed words stand out.
    let words: std::collections::HashMap<String, String> = [
        (
            format!("-\t\tconst result = await callToolUncached{args}"),
            red("-\t\tconst result = await ") + &red_word("callToolUncached") + &red(args),
        ),
        (
            format!("+\t\tconst result = await callToolRecovering{args}"),
            green("+\t\tconst result = await ") + &green_word("callToolRecovering") + &green(args),
        ),
        (
            "+\t\ttoolCallTimeoutMs: config.toolCallTimeoutMs,".to_string(),
            green("+\t\ttoolCallTimeoutMs: config.toolCallTimeoutMs") + &green_word(","),
        ),
        (
            "+\t\tsessions".to_string(),
            green("+") + &green_word("\t\tsessions"),
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        diff.lines().filter(|l| words.contains_key(*l)).count(),
        words.len(),
        "each changed line is in the diff once"
    );
    let painted: String = diff
        .lines()
        .map(|l| {
            let shown = if let Some(shown) = words.get(l) {
                shown.clone()
            } else if l.starts_with("--- ") || l.starts_with("+++ ") {
                format!("{E}[1m{l}{E}[0m")
            } else if l.starts_with("@@") {
                format!("{E}[36m{l}{E}[0m")
            } else if l.starts_with('-') {
                red(l)
            } else if l.starts_with('+') {
                green(l)
            } else {
                l.to_string()
            };
            shown + "\n"
        })
        .collect();
    assert_eq!(
        exact(&sb, &o.stdout),
        format!(
            "# [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js ({E}[31maffected{E}[0m)\n{painted}"
        )
    );
}

// ---- each command's help states its own exit codes ----

/// The `Exit codes:` paragraph at the end of a command's help.
fn exit_codes_of(sb: &Sandbox, command: &str) -> String {
    let o = sb.run(&[command, "--help"]);
    assert_eq!(code(&o), 0, "{command}: {}", stderr(&o));
    let help = stdout(&o);
    let at = help
        .find("Exit codes: ")
        .unwrap_or_else(|| panic!("`{command} --help` has no exit-code line:\n{help}"));
    help[at..].to_string()
}

#[test]
fn each_commands_help_states_the_exit_codes_of_that_command() {
    let sb = Sandbox::new();
    assert_eq!(
        exit_codes_of(&sb, "status"),
        "Exit codes: 0 nothing needs attention (no install found, or each one patched, upstream-fixed or unsupported); 1 attention: an install is affected, outdated or modified, or its DSH host cannot start; 2 error: bad input (such as a --path that holds no install), or an install found that cannot be read.\n"
    );
    assert_eq!(
        exit_codes_of(&sb, "apply"),
        "Exit codes: 0 done: each affected or outdated install patched (with --dry-run: would be), or nothing to patch; 1 attention: an install was refused (modified without --yes, a revision mcpatch does not know whose patched copy failed verify, unsupported); 2 error: bad input, or an install failed: that install was left as it was, and any others were handled as reported (with --json, each install's `changed` and `error` say which); rerun after the fix, it skips what is done. 2 wins over 1.\n"
    );
    assert_eq!(
        exit_codes_of(&sb, "revert"),
        "Exit codes: 0 done: each patched install restored, or nothing to restore; 1 attention: an install was refused (changed since it was patched, or its backup holds no known original, without --yes), or a patched install has no backup to revert from; 2 error: bad input, or an install failed: that install was left as it was, and any others were handled as reported (with --json, each install's `changed` and `error` say which); rerun after the fix, it skips what is done. 2 wins over 1.\n"
    );
    assert_eq!(
        exit_codes_of(&sb, "diff"),
        "Exit codes: 0 nothing to change (no install found, or each one patched, upstream-fixed or unsupported); 1 there is a change to show: an install is affected, outdated or modified (as with diff(1) and `git diff --exit-code`); 2 error: bad input, or an install found that cannot be read.\n"
    );
    // Each speaks of its own command: apply's gate runs verify's scenarios, but
    // neither speaks of verify's own outcomes, nor apply of revert.
    assert!(!exit_codes_of(&sb, "revert").contains("verify"));
    for command in ["apply", "revert"] {
        let text = exit_codes_of(&sb, command);
        assert!(!text.contains("verify scenario"), "{command}: {text}");
    }
    assert!(!exit_codes_of(&sb, "apply").contains("revert"));
}

// ---- node errors whose hint fits how node was chosen ----

#[test]
fn without_node_on_path_the_error_says_so_in_plain_words() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    for command in ["apply", "verify"] {
        let o = sb
            .cmd(&[command, "--path", client.to_str().unwrap()])
            .env("PATH", sb.root().join("bin"))
            .output()
            .unwrap();
        assert_eq!(code(&o), 2, "{command}: {}", stdout(&o));
        assert_eq!(
            stderr(&o),
            "error: cannot run node (node): not found on PATH\nhelp: install Node.js 22 or later, or pass --node PATH\n",
            "{command}"
        );
    }
    assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);
}

#[test]
fn a_node_given_with_the_flag_that_cannot_run_is_the_one_to_fix() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    for command in ["apply", "verify"] {
        let o = sb.run(&[
            command,
            "--node",
            "/nonexistent/node",
            "--path",
            client.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 2, "{command}: {}", stdout(&o));
        assert_eq!(
            stderr(&o),
            "error: cannot run node (/nonexistent/node): No such file or directory (os error 2)\nhelp: check the path given to --node: it must be a node binary that runs (DSH itself needs Node.js 22 or later; with an older node, `verify` adds a Promise.withResolvers shim); or leave --node out to use `node` on PATH\n",
            "{command}"
        );
    }
}

// ---- bash completes --backup with backup ids ----

/// What bash's completion offers for `words` (the last one being completed),
/// run in `cwd` with the sandbox's PATH (mcpatch on it) and DSH_HOME.
fn bash_completes(sb: &Sandbox, script: &Path, words: &[&str], cwd: &Path) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let n = words.len();
    let path = std::env::join_paths([sb.root().join("bin"), node22_dir()]).unwrap();
    let line = format!(
        "export PATH='{}'; source '{}'; COMP_WORDS=({}); COMP_CWORD={}; _mcpatch mcpatch '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.to_str().unwrap(),
        script.display(),
        quoted.join(" "),
        n - 1,
        words[n - 1],
        words[n - 2]
    );
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(&line)
        .current_dir(cwd)
        .env("HOME", sb.root().join("home"))
        .env("DSH_HOME", sb.dsh_home())
        .output()
        .expect("bash runs (the tests need bash for completion)");
    assert!(o.status.success(), "{line}: {}", stderr(&o));
    let mut offered: Vec<String> = stdout(&o)
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    offered.sort();
    offered
}

#[test]
fn bash_completes_backup_with_the_backup_ids_never_file_names() {
    let sb = Sandbox::new();
    std::os::unix::fs::symlink(
        assert_cmd::cargo::cargo_bin("mcpatch"),
        sb.root().join("bin/mcpatch"),
    )
    .unwrap();
    let script = sb.root().join("mcpatch.bash");
    std::fs::write(&script, sb.run(&["completions", "bash"]).stdout).unwrap();
    // A folder whose files look like ids: none of them may be offered.
    let cwd = sb.root().join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    std::fs::write(cwd.join("2026-notes.txt"), "").unwrap();
    std::fs::write(cwd.join("other"), "").unwrap();
    for command in ["revert", "verify"] {
        assert_eq!(
            bash_completes(&sb, &script, &["mcpatch", command, "--backup", ""], &cwd),
            Vec::<String>::new(),
            "{command}: no backups, nothing offered"
        );
    }
    let a = sb.client_install("0.1.0-rc.8", "a");
    let b = sb.client_install("0.1.0-rc.8", "b");
    for client in [&a, &b] {
        assert_eq!(
            code(&sb.run(&["apply", "--path", client.to_str().unwrap()])),
            0
        );
    }
    let ids = super::harden::backup_ids(&sb);
    assert_eq!(ids.len(), 2);
    let o = sb.run(&["backups", "--ids"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!("{}\n{}\n", ids[1], ids[0]),
        "newest first"
    );
    for command in ["revert", "verify"] {
        assert_eq!(
            bash_completes(&sb, &script, &["mcpatch", command, "--backup", ""], &cwd),
            ids,
            "{command}"
        );
        assert_eq!(
            bash_completes(&sb, &script, &["mcpatch", command, "--backup", "2"], &cwd),
            ids,
            "{command}: the ids that start with what is typed"
        );
        assert_eq!(
            bash_completes(&sb, &script, &["mcpatch", command, "--backup", "x"], &cwd),
            Vec::<String>::new(),
            "{command}"
        );
    }
}

// ---- verify's table fits the terminal ----

#[test]
fn verify_fits_80_and_60_columns_and_keeps_a_row_per_scenario_into_a_pipe() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    let args = [
        "verify",
        "--path",
        p,
        "--scenario",
        "expired-404",
        "--scenario",
        "ordinary-errors",
    ];
    for columns in [80, 60] {
        let o = sb
            .cmd(&args)
            .env("COLUMNS", columns.to_string())
            .output()
            .unwrap();
        assert_eq!(
            code(&o),
            1,
            "unpatched: STUCK\n{}{}",
            stdout(&o),
            stderr(&o)
        );
        let text = stdout(&o);
        for line in text.lines() {
            assert!(
                line.chars().count() <= columns,
                "{columns} columns: {line:?} is {} wide:\n{text}",
                line.chars().count()
            );
        }
        // Each scenario on a line of its own, its figures and note below.
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|l| *l == "expired-404: STUCK (expected RECOVERED)")
            .unwrap_or_else(|| panic!("{text}"));
        assert!(lines[at + 1].starts_with("    "), "{text}");
        assert!(lines[at + 1].contains(" failed call"), "{text}");
        assert!(
            lines.contains(&"expired-404 (default policy): STUCK (expected RECOVERED)"),
            "{text}"
        );
        assert!(
            lines.iter().any(|l| l.starts_with("ordinary-errors: HELD")),
            "{text}"
        );
        assert_eq!(lines.last(), Some(&"STUCK"), "{text}");
    }
    // Into a pipe: no limit, the table with a row per scenario.
    let o = sb.cmd(&args).output().unwrap();
    let text = stdout(&o);
    assert!(
        text.lines()
            .any(|l| l.starts_with("SCENARIO") && l.ends_with("NOTE")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("expired-404  ") && l.chars().count() > 80),
        "{text}"
    );
}

// ---- the demo shows the terminal's layout ----

/// scripts/demo.sh (the README's first command) pipes each mcpatch run
/// through `tee`; on a terminal mcpatch must still lay out for that terminal,
/// not for the pipe (rows of 100-470 columns). Run offline: the real DSH
/// install from the fixtures copied, the binary under test, one scenario.
#[test]
fn the_demo_on_an_80_column_terminal_shows_each_mcpatch_run_within_80_columns() {
    let stty = which::which("stty").expect("`stty` (coreutils) sets the terminal's width");
    let host = cache().join("dsh-host/0.1.0-rc.8");
    assert!(
        host.join("lib").is_dir(),
        "the real @deepseek-ai/dsh install is missing from {}: run scripts/fetch-fixtures.sh",
        host.display()
    );
    // Node in a folder as deep as a checkout on a build machine may be: verify
    // names its path, which must wrap like every line.
    let deep = tempfile::tempdir().unwrap();
    let node_dir = deep
        .path()
        .join("builds/a-project-checked-out-deep-down/mcpatch/.cache/node22/bin");
    std::fs::create_dir_all(node_dir.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(node22_dir(), &node_dir).unwrap();
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/demo.sh"))
        .env("MCPATCH_DEMO_BIN", assert_cmd::cargo::cargo_bin("mcpatch"))
        .env("MCPATCH_DEMO_PREFIX_FROM", &host)
        .env("MCPATCH_DEMO_NODE_DIR", &node_dir)
        .env("MCPATCH_DEMO_SCENARIO", "expired-404")
        .env("TMPDIR", "/tmp")
        .env("NO_COLOR", "1");
    let (rc, screen) = on_a_pty(&cmd, &format!("'{}' cols 80 &&", stty.display()), "");
    assert_eq!(rc, 0, "{screen}");
    assert!(screen.contains("\ndemo: OK"), "{screen}");
    // What mcpatch printed: the lines between `$ mcpatch ...` and `(exit N)`.
    let mut runs = 0;
    let mut inside = false;
    for line in screen.lines() {
        if line.starts_with("$ mcpatch ") {
            inside = true;
            runs += 1;
        } else if line.starts_with("(exit ") {
            inside = false;
        } else if inside {
            assert!(
                line.chars().count() <= 80,
                "wider than the 80-column terminal ({}): {line:?}\n{screen}",
                line.chars().count()
            );
        }
    }
    assert_eq!(runs, 7, "{screen}");
}

#[test]
fn verify_of_an_sdk_project_fits_80_columns_on_stdout_and_stderr() {
    let sb = Sandbox::new();
    let project = super::mcp_sdk_clients::project_copy(&sb, "sdk-1.32.2");
    let p = project.to_str().unwrap();
    let o = sb
        .cmd(&["verify", "--path", p, "--scenario", "expired-404"])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    assert_eq!(
        code(&o),
        1,
        "unpatched: STUCK\n{}{}",
        stdout(&o),
        stderr(&o)
    );
    // Each build's progress line names the install's path and is wrapped too.
    let err = stderr(&o);
    assert!(err.contains("esm build of"), "{err}");
    assert_fits(&o.stdout, 80);
    assert_fits(&o.stderr, 80);
}
