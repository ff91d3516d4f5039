//! Plain-text tables for the terminal: every column but the last padded to its
//! widest cell, two spaces between columns.

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A header and rows of cells.
#[derive(Debug)]
pub struct Table {
    header: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles and alignments (one per column).
    pub fn new(header: &[&str], align: &[Align]) -> Self {
        assert_eq!(header.len(), align.len(), "one alignment per column");
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            align: align.to_vec(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        assert_eq!(cells.len(), self.header.len(), "one cell per column");
        self.rows.push(cells);
    }

    /// The header line, then one line per row, each ending in a newline.
    pub fn lines(&self) -> Vec<String> {
        let columns = self.header.len();
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                std::iter::once(&self.header)
                    .chain(&self.rows)
                    .map(|r| r[c].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        std::iter::once(&self.header)
            .chain(&self.rows)
            .map(|r| {
                let mut line = String::new();
                for (c, cell) in r.iter().enumerate() {
                    if c + 1 == columns {
                        line.push_str(cell);
                        break;
                    }
                    let pad = " ".repeat(widths[c] - cell.chars().count());
                    match self.align[c] {
                        Align::Left => line.push_str(&format!("{cell}{pad}  ")),
                        Align::Right => line.push_str(&format!("{pad}{cell}  ")),
                    }
                }
                line.push('\n');
                line
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_padded_to_the_widest_cell_and_the_last_is_not() {
        let mut t = Table::new(
            &["A", "NUM", "NOTE"],
            &[Align::Left, Align::Right, Align::Left],
        );
        t.row(vec!["long name".into(), "7".into(), "x".into()]);
        t.row(vec!["b".into(), "1234".into(), "y y".into()]);
        assert_eq!(
            t.lines(),
            [
                format!("A{}NUM  NOTE\n", " ".repeat(11)),
                format!("long name{}7  x\n", " ".repeat(5)),
                format!("b{}1234  y y\n", " ".repeat(10)),
            ]
        );
    }
}
