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
