//! The fake server's control routes take only this run's secret (issue 29,
//! item 8): 127.0.0.1 is open to every local user, so `/control/*` without
//! the token `mcpatch serve` prints (or the one verify hands its harness) is
//! refused and logged, and each run has a token of its own.

use std::io::{BufRead, Read, Write};
use std::process::Stdio;

use super::*;

/// `mcpatch serve` running, with its port and control token from its banner.
struct Served {
    child: std::process::Child,
    port: u16,
    token: String,
    banner: Vec<String>,
    _sb: Sandbox,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve() -> Served {
    let sb = Sandbox::new();
    let mut child = sb
        .command(&["serve", "--port", "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut banner = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let last = line.contains("witness log:");
        banner.push(line);
        if last {
            break;
        }
    }
    // Keep draining the console so serve never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    let port = banner
        .iter()
        .find_map(|l| l.trim().strip_prefix("MCP endpoint:"))
        .and_then(|u| {
            u.trim()
                .trim_start_matches("http://127.0.0.1:")
                .trim_end_matches("/mcp")
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no endpoint in {banner:?}"));
    let token = banner
        .iter()
        .find_map(|l| {
            l.split_once("Bearer ")?
                .1
                .split_once('\'')
                .map(|(t, _)| t.to_string())
        })
        .unwrap_or_else(|| panic!("no token in {banner:?}"));
    Served {
        child,
        port,
        token,
        banner,
        _sb: sb,
    }
}

/// One raw HTTP/1.1 request: (status, body).
fn request(port: u16, method: &str, path: &str, auth: Option<&str>) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let auth = auth.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split_once("\r\n\r\n").unwrap().1.to_string();
    (status, body)
}

#[test]
fn control_routes_refuse_a_request_without_this_runs_token() {
    let served = serve();
    let (port, token) = (served.port, served.token.clone());
    assert_eq!(token.len(), 32, "{token}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
    let control = served
        .banner
        .iter()
        .position(|l| l.starts_with("  control:"))
        .unwrap_or_else(|| panic!("no control line in {:?}", served.banner));
    assert_eq!(
        served.banner[control..control + 4],
        [
            format!("  control:       AUTH='Authorization: Bearer {token}'"),
            format!("                 URL=http://127.0.0.1:{port}"),
            "  drop sessions: press Enter".to_string(),
            "                 or curl -X POST -H \"$AUTH\" $URL/control/invalidate".to_string(),
        ]
    );
    let refused = (
        403,
        "Forbidden: the control routes take this run's token (Authorization: Bearer TOKEN)\n"
            .to_string(),
    );
    let wrong = format!("Bearer {}", "0".repeat(32));
    for (method, path) in [
        ("POST", "/control/invalidate"),
        ("POST", "/control/restart"),
        ("POST", "/control/hold?size=1"),
        ("GET", "/control/ready"),
        ("GET", "/control/witness"),
    ] {
        assert_eq!(
            request(port, method, path, None),
            refused,
            "{method} {path}"
        );
        assert_eq!(
            request(port, method, path, Some(&wrong)),
            refused,
            "{method} {path}"
        );
        assert_eq!(
            request(port, method, path, Some(&token)),
            refused,
            "{method} {path} without `Bearer `"
        );
    }
    let bearer = format!("Bearer {token}");
    assert_eq!(
        request(port, "POST", "/control/invalidate", Some(&bearer)),
        (200, "sessions dropped\n".to_string())
    );
    let (status, witness) = request(port, "GET", "/control/witness", Some(&bearer));
    assert_eq!(status, 200);
    let w: serde_json::Value = serde_json::from_str(&witness).unwrap();
    let notes: Vec<&str> = w
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["note"].as_str())
        .collect();
    assert_eq!(
        notes.iter().filter(|n| n.starts_with("refused: ")).count(),
        15,
        "{notes:?}"
    );
    assert!(notes.contains(&"refused: /control/invalidate without this run's control token"));
    // `?since=SEQ`: only the entries from SEQ on, for a caller that polls.
    let seqs: Vec<u64> = w
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    let last = *seqs.last().unwrap();
    let (status, tail) = request(
        port,
        "GET",
        &format!("/control/witness?since={last}"),
        Some(&bearer),
    );
    assert_eq!(status, 200);
    let tail: serde_json::Value = serde_json::from_str(&tail).unwrap();
    assert_eq!(
        tail.as_array().unwrap(),
        &w.as_array().unwrap()[seqs.len() - 1..]
    );
    // Another run, another token.
    assert_ne!(serve().token, token);
}
