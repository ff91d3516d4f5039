//! Requests to a path the fake server does not serve (anything but the MCP
//! endpoint and the control routes): answered with a plain 404, as a real
//! MCP server without OAuth answers an OAuth client's discovery
//! (`/.well-known/oauth-*`) and dynamic client registration (`/register`),
//! and written to the witness log, so a rule can see that a client started
//! a sign-in (a 401 naming the session taken for a demand to sign in).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::behaviour::WitnessEntry;
use super::sessions::Shared;

/// Answer a request to a path the server does not serve with 404, and log
/// it: its `http_method` is the method and the path (`GET /register`), so no
/// rule about the MCP endpoint's GET or POST takes it for one of those.
pub(super) async fn unrouted(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    shared.log_note(
        format!("{} {}", request.method(), request.uri().path()),
        StatusCode::NOT_FOUND.as_u16(),
        UNROUTED_NOTE.to_string(),
    );
    (StatusCode::NOT_FOUND, "Not Found").into_response()
}

/// The note on a witness entry of a request to a path the server does not serve.
pub const UNROUTED_NOTE: &str = "not an MCP or control path: answered 404";

/// The path of a witnessed request to a path the server does not serve
/// (`None` for any other entry).
pub fn unrouted_path(e: &WitnessEntry) -> Option<&str> {
    if e.note.as_deref() != Some(UNROUTED_NOTE) {
        return None;
    }
    e.http_method.split_once(' ').map(|(_, path)| path)
}

/// Whether `path` is on an OAuth client's sign-in path: authorization server
/// or protected resource discovery, dynamic client registration, the token
/// or authorization endpoint.
pub fn is_sign_in_path(path: &str) -> bool {
    path.starts_with("/.well-known/oauth-")
        || path.starts_with("/.well-known/openid-configuration")
        || ["/register", "/token", "/authorize"].contains(&path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sign_in_paths_are_discovery_registration_token_and_authorization() {
        for p in [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
            "/register",
            "/token",
            "/authorize",
        ] {
            assert!(is_sign_in_path(p), "{p}");
        }
        for p in ["/mcp", "/favicon.ico", "/registered", "/.well-known/other"] {
            assert!(!is_sign_in_path(p), "{p}");
        }
    }
}
