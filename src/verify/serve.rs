//! `mcpatch serve`: the fake stateful MCP server alone, for any MCP client,
//! driven from the terminal (Enter drops every session, `r` then Enter
//! restarts it, Ctrl-C quits) and by its control routes.

use std::io::{BufRead, Write};

use super::fake_server::{self, FakeServer};
use super::scenario::{self, ScenarioName};
use crate::error::{Error, Result};
use crate::exit_code::Outcome;
use crate::table::hanging;

/// What a line typed on serve's standard input asks for.
#[derive(Debug, PartialEq, Eq)]
enum Key {
    /// An empty line (Enter): drop every session.
    Drop,
    /// `r`: restart the server on the same port.
    Restart,
    /// Anything else: ignored, with a reminder of the keys.
    Other(String),
}

impl Key {
    fn of(line: &[u8]) -> Key {
        let text = String::from_utf8_lossy(line);
        match text.trim() {
            "" => Key::Drop,
            "r" | "R" => Key::Restart,
            other => Key::Other(other.to_string()),
        }
    }
}

/// `mcpatch serve`: the fake server alone, with sessions dropped by a key press or a control request.
pub fn serve(name: ScenarioName, port: u16) -> Result<Outcome> {
    let chosen = scenario::find(name);
    let columns = crate::width::stdout_columns();
    let rt = super::runtime()?;
    let outcome = rt.block_on(async move {
        let server = FakeServer::start(chosen.behaviour.clone(), port).await?;
        // Set up before the banner says Ctrl-C quits, and kept for the whole
        // run so that no Ctrl-C falls between two waits.
        let mut interrupt =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).map_err(
                |e| {
                    Error::io(
                        "catch",
                        "Ctrl-C (SIGINT)",
                        e,
                        "check the machine's signal limits",
                    )
                },
            )?;
        let base = format!("http://{}", server.addr());
        crate::outln!("mcpatch fake MCP server: {}", chosen.name);
        crate::out!("{}", hanging("  ", chosen.what, columns));
        crate::outln!("  MCP endpoint:  {}", server.url());
        // The control routes take this run's secret (other local users reach
        // 127.0.0.1 too): two shell lines to paste, so each curl fits 80 columns.
        crate::outln!(
            "  control:       AUTH='Authorization: Bearer {}'",
            server.control_token()
        );
        crate::outln!("                 URL={base}");
        crate::outln!("  drop sessions: press Enter");
        crate::outln!("                 or curl -X POST -H \"$AUTH\" $URL/control/invalidate");
        crate::outln!("  restart:       type r, then Enter");
        crate::outln!("                 or curl -X POST -H \"$AUTH\" $URL/control/restart");
        if let Some(c) = chosen.behaviour.reload {
            crate::outln!("  reloads:       curl -X POST -H \"$AUTH\" $URL/control/reload");
            crate::outln!(
                "                 (every {} s, {} times; $URL/control/ready counts them)",
                c.every.as_secs(),
                c.times
            );
        }
        crate::outln!("  witness log:   curl -H \"$AUTH\" $URL/control/witness");
        crate::outln!("  quit:          Ctrl-C");
        let _ = std::io::stdout().flush();
        let mut keys = read_keys();
        let mut stdin_open = true;
        let mut next_seq = 0;
        loop {
            tokio::select! {
                key = keys.recv(), if stdin_open => match key {
                    Some(Key::Drop) => { server.invalidate(); crate::outln!("dropped every session"); }
                    Some(Key::Restart) => { server.restart(); crate::outln!("restarting on {}", server.addr()); }
                    Some(Key::Other(text)) => crate::out!("{}", hanging(
                        "",
                        &format!(
                            "ignored {:?}: press Enter to drop every session, type r then Enter to restart, Ctrl-C to quit",
                            crate::output::clean(&text)
                        ),
                        columns,
                    )),
                    None => stdin_open = false,
                },
                _ = interrupt.recv() => break,
                _ = tokio::time::sleep(std::time::Duration::from_millis(200)) => {}
            }
            for e in server.witness_since(next_seq) {
                next_seq = e.seq + 1;
                crate::outln!("{}", console_line(&e));
            }
            let _ = std::io::stdout().flush();
        }
        Ok(Outcome::Clean)
    });
    // The thread reading stdin may be blocked in read(2): do not wait for it.
    rt.shutdown_background();
    outcome
}

/// The lines typed on stdin, read by a thread of their own (a blocked read
/// must not keep the runtime from ending); the channel closes at end of input.
fn read_keys() -> tokio::sync::mpsc::UnboundedReceiver<Key> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let _ = std::thread::Builder::new()
        .name("mcpatch-serve-keys".into())
        .spawn(move || {
            let stdin = std::io::stdin();
            let mut input = stdin.lock();
            let mut line = Vec::new();
            loop {
                line.clear();
                // At most one line of 4 KiB is held; a longer one is cut into pieces.
                match std::io::Read::take(&mut input, 4096).read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if tx.send(Key::of(&line)).is_err() {
                            return;
                        }
                    }
                }
            }
        });
    rx
}

/// One witness entry for the terminal, with anything a client sent escaped so
/// it cannot move the cursor, recolour or retitle the terminal.
fn console_line(e: &fake_server::WitnessEntry) -> String {
    let clean = |s: &str| crate::output::clean(s).into_owned();
    match &e.note {
        Some(n) => format!("{:>7} ms  {}", e.t_ms, clean(n)),
        None => format!(
            "{:>7} ms  {} {} session={} -> {}{}",
            e.t_ms,
            clean(&e.http_method),
            clean(e.rpc_method.as_deref().unwrap_or("-")),
            clean(e.session_sent.as_deref().unwrap_or("-")),
            e.status,
            e.session_issued
                .as_deref()
                .map(|s| format!(" (new session {})", clean(s)))
                .unwrap_or_default()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_empty_line_drops_and_only_r_restarts() {
        assert_eq!(Key::of(b"\n"), Key::Drop);
        assert_eq!(Key::of(b"  \r\n"), Key::Drop);
        assert_eq!(Key::of(b"r\n"), Key::Restart);
        assert_eq!(Key::of(b"hello\n"), Key::Other("hello".into()));
        assert_eq!(Key::of(b"q\n"), Key::Other("q".into()));
    }

    #[test]
    fn console_lines_escape_control_characters_from_clients() {
        let e = fake_server::WitnessEntry {
            seq: 0,
            t_ms: 5,
            answered_ms: 5,
            http_method: "POST".into(),
            rpc_method: Some("tools/\u{1b}]0;owned\u{7}list\u{1b}[2J".into()),
            session_sent: Some("ab\rcd".into()),
            status: 404,
            ..Default::default()
        };
        assert_eq!(
            console_line(&e),
            "      5 ms  POST tools/\\u{1b}]0;owned\\u{7}list\\u{1b}[2J session=ab\\rcd -> 404"
        );
    }
}
