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
