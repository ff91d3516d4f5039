//! Server-sent events, for MCP servers that answer a POST with a
//! `text/event-stream`: splits the stream into events as the WHATWG
//! EventSource rules say (any of CRLF, LF, CR ends a line; `data:` lines join
//! with LF; a blank line dispatches) and hands back each event's data.

/// Incremental parser: feed it bytes as they arrive.
#[derive(Debug, Default)]
pub struct SseParser {
    pending: Vec<u8>,
    data: String,
    has_data: bool,
    /// A CR ended the last chunk: a LF starting the next one belongs to it.
    after_cr: bool,
    started: bool,
}

impl SseParser {
    /// Feed the next bytes; returns the data of every event they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut events = Vec::new();
        let mut bytes = bytes;
        if self.after_cr && bytes.first() == Some(&b'\n') {
            bytes = &bytes[1..];
        }
        self.after_cr = false;
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                b'\r' | b'\n' => {
                    if b == b'\n' && i > 0 && bytes[i - 1] == b'\r' {
                        continue;
                    }
                    let line = std::mem::take(&mut self.pending);
                    self.line(&line, &mut events);
                    if b == b'\r' && i + 1 == bytes.len() {
                        self.after_cr = true;
                    }
                }
                _ => self.pending.push(b),
            }
        }
        events
    }

    fn line(&mut self, raw: &[u8], events: &mut Vec<String>) {
        let mut text = String::from_utf8_lossy(raw).into_owned();
        if !self.started {
            self.started = true;
            if let Some(rest) = text.strip_prefix('\u{feff}') {
                text = rest.to_string();
            }
        }
        if text.is_empty() {
            if self.has_data {
                events.push(std::mem::take(&mut self.data));
                self.has_data = false;
            }
            return;
        }
        if text.starts_with(':') {
            return;
        }
        let (field, value) = match text.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (text.as_str(), ""),
        };
        if field == "data" {
            if self.has_data {
                self.data.push('\n');
            }
            self.data.push_str(value);
            self.has_data = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_on_blank_lines_with_any_line_ending() {
        let mut p = SseParser::default();
        let stream = "\u{feff}: comment\r\nevent: message\r\nid: 1\r\ndata: {\"a\":1}\r\n\r\ndata: x\rdata: y\r\rdata:z\n\ndata: p\r\ndata: q\r\n\r\n";
        assert_eq!(
            p.feed(stream.as_bytes()),
            ["{\"a\":1}", "x\ny", "z", "p\nq"]
        );
    }

    #[test]
    fn an_event_may_arrive_one_byte_at_a_time() {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for b in b"event: message\r\ndata: {\"id\":\r\ndata: 2}\r\n\r\n" {
            out.extend(p.feed(&[*b]));
        }
        assert_eq!(out, ["{\"id\":\n2}"]);
    }

    #[test]
    fn an_event_without_a_data_line_dispatches_nothing() {
        let mut p = SseParser::default();
        assert!(p.feed(b"id: 1\nretry: 100\n\n").is_empty());
        assert_eq!(p.feed(b"id: 0\ndata\n\n"), [""]);
    }
}
