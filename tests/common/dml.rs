//! Random DML over tables described by their columns' value domains: the one change generator
//! of the random-DML oracle tests. Small domains make equal keys, ties, duplicates and NULLs
//! common, which is where incremental maintenance goes wrong.

use super::rng::Rng;

/// What values a column takes (NULL aside).
#[derive(Clone, Debug)]
pub enum Domain {
    /// Integers in `lo..=hi`.
    Int(i64, i64),
    /// One of these strings.
    Text(Vec<String>),
}

#[derive(Clone, Debug)]
pub struct Column {
    pub name: String,
    pub sql_type: String,
    pub domain: Domain,
}

#[derive(Clone, Debug)]
pub struct Table {
    pub name: String,
    pub columns: Vec<Column>,
    /// Random rows inserted before the views are created.
    pub rows: usize,
    /// The most rows one INSERT, DELETE … LIMIT or copy statement touches.
    pub batch: usize,
    /// How often statements go to this table, against the others' weights.
    pub weight: u64,
    /// Only INSERTs change this table (`changes inserts`): views whose maintenance differs for
    /// inserts (a recursive query) see long runs of them.
    pub inserts_only: bool,
}

/// The tables a family of views reads, and how often a generated value is NULL.
#[derive(Clone, Debug)]
pub struct Schema {
    pub tables: Vec<Table>,
    pub null_pct: u64,
}

impl Table {
    /// Reads `name (col TYPE domain, …) [rows N] [batch N] [weight N] [changes inserts|all]`,
    /// a domain being `lo..hi` or `a|b|c`.
    pub fn parse(line: &str) -> Result<Table, String> {
        let open = line.find('(').ok_or("no column list")?;
        let close = line.rfind(')').ok_or("no closing parenthesis")?;
        let name = line[..open].trim().to_string();
        let columns = line[open + 1..close]
            .split(',')
            .map(Column::parse)
            .collect::<Result<Vec<_>, _>>()?;
        let mut table = Table {
            name,
            columns,
            rows: 6,
            batch: 3,
            weight: 1,
            inserts_only: false,
        };
        let words: Vec<&str> = line[close + 1..].split_whitespace().collect();
        for pair in words.chunks(2) {
            let n = || pair.get(1).and_then(|n| n.parse().ok()).ok_or("a number");
            match pair[0] {
                "rows" => table.rows = n()?,
                "batch" => table.batch = n()?,
                "weight" => table.weight = n()? as u64,
                "changes" => {
                    table.inserts_only = match pair.get(1) {
                        Some(&"inserts") => true,
                        Some(&"all") => false,
                        _ => return Err("changes inserts|all".into()),
                    }
                }
                other => return Err(format!("unknown table option {other}")),
            }
        }
        Ok(table)
    }

    pub fn create_sql(&self) -> String {
        let cols: Vec<String> = self
            .columns
            .iter()
            .map(|c| format!("{} {}", c.name, c.sql_type))
            .collect();
        format!("CREATE TABLE {} ({})", self.name, cols.join(", "))
    }

    fn ints(&self) -> Vec<&Column> {
        let int = |c: &&Column| matches!(c.domain, Domain::Int(..));
        self.columns.iter().filter(int).collect()
    }
}

impl Column {
    fn parse(text: &str) -> Result<Column, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let [name, sql_type, domain] = words.as_slice() else {
            return Err(format!("column `{text}` is not `name TYPE domain`"));
        };
        let domain = match domain.split_once("..") {
            Some((lo, hi)) => Domain::Int(
                lo.parse().map_err(|_| format!("bad bound {lo}"))?,
                hi.parse().map_err(|_| format!("bad bound {hi}"))?,
            ),
            None => Domain::Text(domain.split('|').map(String::from).collect()),
        };
        Ok(Column {
            name: name.to_string(),
            sql_type: sql_type.to_string(),
            domain,
        })
    }

    /// A value of the domain as a literal.
    fn literal(&self, r: &mut Rng) -> String {
        match &self.domain {
            Domain::Int(lo, hi) => (lo + r.below((hi - lo + 1) as u64)).to_string(),
            Domain::Text(opts) => format!("'{}'", r.pick(opts)),
        }
    }
}

impl Schema {
    fn value(&self, r: &mut Rng, c: &Column) -> String {
        if r.chance(self.null_pct) {
            "NULL".into()
        } else {
            c.literal(r)
        }
    }

    /// `c = value`, or `c IS NULL`.
    fn equals(&self, r: &mut Rng, c: &Column) -> String {
        match self.value(r, c).as_str() {
            "NULL" => format!("{} IS NULL", c.name),
            v => format!("{} = {v}", c.name),
        }
    }

    /// `c = value` or `c IS NULL` for a column of `t`.
    fn condition(&self, r: &mut Rng, t: &Table) -> String {
        let c = r.pick(&t.columns).clone();
        self.equals(r, &c)
    }

    fn row(&self, r: &mut Rng, t: &Table) -> String {
        let vals: Vec<String> = t.columns.iter().map(|c| self.value(r, c)).collect();
        format!("({})", vals.join(", "))
    }

    /// Initial rows for every table.
    pub fn fill(&self, r: &mut Rng) -> Vec<String> {
        let mut out: Vec<String> = self.tables.iter().map(Table::create_sql).collect();
        for t in &self.tables {
            if t.rows > 0 {
                let rows: Vec<String> = (0..t.rows).map(|_| self.row(r, t)).collect();
                out.push(format!("INSERT INTO {} VALUES {}", t.name, rows.join(", ")));
            }
        }
        out
    }

    /// A table, as often as its weight says.
    fn table(&self, r: &mut Rng) -> &Table {
        let total: u64 = self.tables.iter().map(|t| t.weight).sum();
        let mut at = r.below(total) as u64;
        for t in &self.tables {
            if at < t.weight {
                return t;
            }
            at -= t.weight;
        }
        unreachable!("weights add up to the total")
    }

    /// One random statement on one table: inserts (with duplicate rows), deletes by value,
    /// updates of any column (keys included), arithmetic updates, deletes of the current
    /// extreme and of a group's first values, copies of rows and of near-extreme rows, and now
    /// and then the whole table deleted.
    pub fn statement(&self, r: &mut Rng) -> String {
        let t = self.table(r);
        let any = |r: &mut Rng| r.pick(&t.columns).clone();
        let ints = t.ints();
        let n = 1 + r.below(t.batch as u64);
        let name = &t.name;
        // The INSERT kinds below: new rows, copies of rows, copies with a value moved.
        let kind = match t.inserts_only {
            true if ints.is_empty() => *r.pick(&[0, 10]),
            true => *r.pick(&[0, 10, 11]),
            false => r.below(13),
        };
        match kind {
            0..=2 => {
                let mut rows: Vec<String> = (0..n).map(|_| self.row(r, t)).collect();
                if r.chance(30) {
                    rows.push(rows[0].clone());
                }
                format!("INSERT INTO {name} VALUES {}", rows.join(", "))
            }
            3 | 4 => format!("DELETE FROM {name} WHERE {}", self.condition(r, t)),
            5 | 6 => {
                let (set, at) = (any(r), any(r));
                let value = self.value(r, &set);
                let cond = self.equals(r, &at);
                format!("UPDATE {name} SET {} = {value} WHERE {cond}", set.name)
            }
            7 if !ints.is_empty() => {
                let c = &r.pick(&ints).name;
                let d = r.below(7) - 3;
                let cond = self.condition(r, t);
                format!("UPDATE {name} SET {c} = {c} + {d} WHERE {cond}")
            }
            8 => {
                let c = any(r);
                let f = r.pick(&["max", "min"]);
                format!(
                    "DELETE FROM {name} WHERE {0} = (SELECT {f}({0}) FROM {name})",
                    c.name
                )
            }
            9 => {
                let (by, at) = (any(r), any(r));
                let dir = r.pick(&["", " DESC NULLS LAST"]);
                let cond = self.equals(r, &at);
                format!(
                    "DELETE FROM {name} WHERE rowid IN (SELECT rowid FROM {name} WHERE {cond} \
                     ORDER BY {}{dir} LIMIT {n})",
                    by.name
                )
            }
            10 => {
                let cond = self.condition(r, t);
                format!("INSERT INTO {name} SELECT * FROM {name} WHERE {cond}")
            }
            11 if !ints.is_empty() => {
                let moved = &r.pick(&ints).name;
                let d = r.below(5) - 2;
                let cols: Vec<String> = t
                    .columns
                    .iter()
                    .map(|c| match &c.name == moved {
                        true => format!("{} + {d}", c.name),
                        false => c.name.clone(),
                    })
                    .collect();
                format!(
                    "INSERT INTO {name} SELECT {} FROM {name} WHERE {} ORDER BY {moved} LIMIT {n}",
                    cols.join(", "),
                    self.condition(r, t)
                )
            }
            _ if r.chance(10) => format!("DELETE FROM {name}"),
            _ => {
                let c = any(r);
                let (a, b) = (c.literal(r), c.literal(r));
                format!("DELETE FROM {name} WHERE {} IN ({a}, {b})", c.name)
            }
        }
    }
}
