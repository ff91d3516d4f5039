//! Tool definitions that differ from one session to the next: with
//! [`ServerBehaviour::tools_name_session`](super::ServerBehaviour) every tool's
//! description the server lists names the session it was listed on, so a rule
//! can tell whether the tools a host has registered after a recovery are the
//! new session's definitions or stale ones kept from a lost session.

use serde_json::Value;

/// The words that end a description listed with its session's id.
const LISTED_ON: &str = " (listed on session ";

/// Add the listing session's id to the description of every tool in `tools`
/// (a tools/list result's `tools` array).
pub(super) fn name_session(tools: &mut Value, session: &str) {
    let Some(tools) = tools.as_array_mut() else {
        return;
    };
    for tool in tools {
        let described = tool
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        tool["description"] = Value::String(format!("{described}{LISTED_ON}{session})"));
    }
}

/// The session a description names as the one it was listed on, if it names one.
pub fn listed_session(description: &str) -> Option<&str> {
    let (_, tail) = description.rsplit_once(LISTED_ON)?;
    tail.strip_suffix(')')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_listed_description_names_its_session_and_reads_back() {
        let mut tools =
            json!([{"name": "echo", "description": "Returns its text."}, {"name": "x"}]);
        name_session(&mut tools, "s-1");
        assert_eq!(
            tools[0]["description"],
            "Returns its text. (listed on session s-1)"
        );
        assert_eq!(tools[1]["description"], " (listed on session s-1)");
        assert_eq!(
            listed_session("Returns its text. (listed on session s-1)"),
            Some("s-1")
        );
        assert_eq!(listed_session("Returns its text."), None);
    }
}
