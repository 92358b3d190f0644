//! `DuckType`: a DuckDB logical type as the server sees it, its SQL spelling, and a parser for
//! the type names DuckDB prints (`DESCRIBE`, `typeof()`, `duckdb_columns()`), so callers that
//! only have a type name can still build one.

/// A DuckDB logical type (built by the engine from `duckdb_logical_type`, or parsed from a name
/// with [`DuckType::parse`]).
#[derive(Clone, Debug, PartialEq)]
pub enum DuckType {
    Boolean,
    TinyInt,
    SmallInt,
    Integer,
    BigInt,
    UTinyInt,
    USmallInt,
    UInteger,
    UBigInt,
    HugeInt,
    UHugeInt,
    Float,
    Double,
    Decimal {
        width: u8,
        scale: u8,
    },
    Varchar,
    Blob,
    Date,
    Time,
    /// TIME_NS (DuckDB 2.0): sent as PostgreSQL `time`, truncated to microseconds.
    TimeNs,
    TimeTz,
    Timestamp,
    TimestampS,
    TimestampMs,
    TimestampNs,
    TimestampTz,
    /// TIMESTAMPTZ_NS (DuckDB 2.0): sent as PostgreSQL `timestamptz`, truncated to µs.
    TimestampTzNs,
    Interval,
    Uuid,
    Json,
    Enum,
    Bit,
    /// VARINT, called BIGNUM since DuckDB 1.4.
    VarInt,
    List(Box<DuckType>),
    Array(Box<DuckType>, usize),
    Struct(Vec<(String, DuckType)>),
    Map(Box<DuckType>, Box<DuckType>),
    Union(Vec<(String, DuckType)>),
    Null,
    Other(String),
}

impl DuckType {
    /// The type's SQL spelling, usable in `CAST(x AS ...)`: `DECIMAL(18,3)`, `INTEGER[]`,
    /// `STRUCT("a" INTEGER)`. ENUM and NULL have no castable name without more information and
    /// are spelled VARCHAR (their values are text on the wire anyway).
    pub fn sql_name(&self) -> String {
        let mut s = String::new();
        self.write_sql_name(&mut s);
        s
    }

    fn write_sql_name(&self, s: &mut String) {
        use DuckType::*;
        let simple = match self {
            Boolean => "BOOLEAN",
            TinyInt => "TINYINT",
            SmallInt => "SMALLINT",
            Integer => "INTEGER",
            BigInt => "BIGINT",
            UTinyInt => "UTINYINT",
            USmallInt => "USMALLINT",
            UInteger => "UINTEGER",
            UBigInt => "UBIGINT",
            HugeInt => "HUGEINT",
            UHugeInt => "UHUGEINT",
            Float => "FLOAT",
            Double => "DOUBLE",
            Varchar | Enum | Null => "VARCHAR",
            Blob => "BLOB",
            Date => "DATE",
            Time => "TIME",
            TimeNs => "TIME_NS",
            TimeTz => "TIMETZ",
            Timestamp => "TIMESTAMP",
            TimestampS => "TIMESTAMP_S",
            TimestampMs => "TIMESTAMP_MS",
            TimestampNs => "TIMESTAMP_NS",
            TimestampTz => "TIMESTAMPTZ",
            TimestampTzNs => "TIMESTAMPTZ_NS",
            Interval => "INTERVAL",
            Uuid => "UUID",
            Json => "JSON",
            Bit => "BIT",
            VarInt => "VARINT",
            Other(name) => name,
            Decimal { width, scale } => {
                s.push_str(&format!("DECIMAL({width},{scale})"));
                return;
            }
            List(inner) => {
                inner.write_sql_name(s);
                s.push_str("[]");
                return;
            }
            Array(inner, n) => {
                inner.write_sql_name(s);
                s.push_str(&format!("[{n}]"));
                return;
            }
            Struct(fields) | Union(fields) => {
                s.push_str(if matches!(self, Struct(_)) {
                    "STRUCT("
                } else {
                    "UNION("
                });
                for (i, (name, t)) in fields.iter().enumerate() {
                    if i > 0 {
                        s.push_str(", ");
                    }
                    s.push('"');
                    s.push_str(&name.replace('"', "\"\""));
                    s.push_str("\" ");
                    t.write_sql_name(s);
                }
                s.push(')');
                return;
            }
            Map(k, v) => {
                s.push_str("MAP(");
                k.write_sql_name(s);
                s.push_str(", ");
                v.write_sql_name(s);
                s.push(')');
                return;
            }
        };
        s.push_str(simple);
    }

    /// Parses a type name as DuckDB prints it (`DECIMAL(18,3)`, `INTEGER[][3]`,
    /// `STRUCT(a INTEGER, "b c" VARCHAR[])`, `MAP(VARCHAR, INTEGER)`, `ENUM('x', 'y')`,
    /// `TIMESTAMP WITH TIME ZONE`) and the usual aliases. Unknown names become `Other`.
    pub fn parse(name: &str) -> DuckType {
        let mut p = Parser {
            s: name.as_bytes(),
            pos: 0,
        };
        match p.parse_type() {
            Some(t) if p.at_end() => t,
            _ => DuckType::Other(name.trim().to_string()),
        }
    }

    /// The innermost element type under any LIST/ARRAY nesting, and the nesting depth.
    pub fn list_leaf(&self) -> (&DuckType, usize) {
        match self {
            DuckType::List(inner) | DuckType::Array(inner, _) => {
                let (leaf, depth) = inner.list_leaf();
                (leaf, depth + 1)
            }
            other => (other, 0),
        }
    }

    /// True for STRUCT, MAP and UNION: values that travel as JSON.
    pub fn is_composite(&self) -> bool {
        matches!(
            self,
            DuckType::Struct(_) | DuckType::Map(..) | DuckType::Union(_)
        )
    }
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn at_end(&mut self) -> bool {
        self.skip_ws();
        self.pos == self.s.len()
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// A bare word (letters, digits, underscore) or a double-quoted identifier.
    fn ident(&mut self) -> Option<String> {
        self.skip_ws();
        if self.s.get(self.pos) == Some(&b'"') {
            self.pos += 1;
            let mut out = Vec::new();
            loop {
                let c = *self.s.get(self.pos)?;
                self.pos += 1;
                if c == b'"' {
                    if self.s.get(self.pos) == Some(&b'"') {
                        out.push(b'"');
                        self.pos += 1;
                    } else {
                        break;
                    }
                } else {
                    out.push(c);
                }
            }
            return String::from_utf8(out).ok();
        }
        let start = self.pos;
        while self.pos < self.s.len()
            && (self.s[self.pos].is_ascii_alphanumeric() || self.s[self.pos] == b'_')
        {
            self.pos += 1;
        }
        (self.pos > start).then(|| String::from_utf8_lossy(&self.s[start..self.pos]).into_owned())
    }

    fn number(&mut self) -> Option<usize> {
        self.skip_ws();
        let start = self.pos;
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() {
            self.pos += 1;
        }
        std::str::from_utf8(&self.s[start..self.pos])
            .ok()?
            .parse()
            .ok()
    }

    /// Skips a parenthesised list we do not need the content of (ENUM values, VARCHAR(n)),
    /// honouring single-quoted strings.
    fn skip_parens(&mut self) -> Option<()> {
        let mut depth = 0usize;
        let mut in_str = false;
        loop {
            let c = *self.s.get(self.pos)?;
            self.pos += 1;
            match c {
                b'\'' => in_str = !in_str,
                b'(' if !in_str => depth += 1,
                b')' if !in_str => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(());
                    }
                }
                _ => {}
            }
        }
    }

    /// Tries to consume the given upper-case words in sequence; restores position on failure.
    fn eat_words(&mut self, words: &[&str]) -> bool {
        let save = self.pos;
        for w in words {
            match self.ident() {
                Some(id) if id.eq_ignore_ascii_case(w) => {}
                _ => {
                    self.pos = save;
                    return false;
                }
            }
        }
        true
    }

    fn fields(&mut self) -> Option<Vec<(String, DuckType)>> {
        if !self.eat(b'(') {
            return None;
        }
        let mut fields = Vec::new();
        if self.eat(b')') {
            return Some(fields);
        }
        loop {
            let name = self.ident()?;
            let t = self.parse_type()?;
            fields.push((name, t));
            if self.eat(b')') {
                return Some(fields);
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    fn parse_type(&mut self) -> Option<DuckType> {
        let word = self.ident()?.to_ascii_uppercase();
        let mut t = match word.as_str() {
            "BOOLEAN" | "BOOL" | "LOGICAL" => DuckType::Boolean,
            "TINYINT" | "INT1" => DuckType::TinyInt,
            "SMALLINT" | "INT2" | "SHORT" => DuckType::SmallInt,
            "INTEGER" | "INT" | "INT4" | "SIGNED" => DuckType::Integer,
            "BIGINT" | "INT8" | "LONG" => DuckType::BigInt,
            "UTINYINT" => DuckType::UTinyInt,
            "USMALLINT" => DuckType::USmallInt,
            "UINTEGER" => DuckType::UInteger,
            "UBIGINT" => DuckType::UBigInt,
            "HUGEINT" | "INT128" => DuckType::HugeInt,
            "UHUGEINT" | "UINT128" => DuckType::UHugeInt,
            "FLOAT" | "REAL" | "FLOAT4" => DuckType::Float,
            "DOUBLE" | "FLOAT8" => DuckType::Double,
            "DECIMAL" | "NUMERIC" => {
                if self.eat(b'(') {
                    let width = self.number()?;
                    let scale = if self.eat(b',') { self.number()? } else { 0 };
                    if !self.eat(b')') || width > 38 || scale > width {
                        return None;
                    }
                    DuckType::Decimal {
                        width: width as u8,
                        scale: scale as u8,
                    }
                } else {
                    // DuckDB's default for a bare DECIMAL.
                    DuckType::Decimal {
                        width: 18,
                        scale: 3,
                    }
                }
            }
            "VARCHAR" | "TEXT" | "STRING" | "CHAR" | "BPCHAR" | "NVARCHAR" => {
                if self.peek() == Some(b'(') {
                    self.skip_parens()?;
                }
                DuckType::Varchar
            }
            "BLOB" | "BYTEA" | "BINARY" | "VARBINARY" => DuckType::Blob,
            "DATE" => DuckType::Date,
            "TIME" => {
                if self.eat_words(&["WITH", "TIME", "ZONE"]) {
                    DuckType::TimeTz
                } else {
                    self.eat_words(&["WITHOUT", "TIME", "ZONE"]);
                    DuckType::Time
                }
            }
            "TIME_NS" => DuckType::TimeNs,
            "TIMETZ" => DuckType::TimeTz,
            "TIMESTAMP" | "DATETIME" => {
                if self.eat_words(&["WITH", "TIME", "ZONE"]) {
                    DuckType::TimestampTz
                } else {
                    self.eat_words(&["WITHOUT", "TIME", "ZONE"]);
                    DuckType::Timestamp
                }
            }
            "TIMESTAMP_US" => DuckType::Timestamp,
            "TIMESTAMP_S" => DuckType::TimestampS,
            "TIMESTAMP_MS" => DuckType::TimestampMs,
            "TIMESTAMP_NS" => DuckType::TimestampNs,
            "TIMESTAMPTZ" => DuckType::TimestampTz,
            "TIMESTAMPTZ_NS" | "TIMESTAMP_TZ_NS" => DuckType::TimestampTzNs,
            "INTERVAL" => DuckType::Interval,
            "UUID" => DuckType::Uuid,
            "JSON" => DuckType::Json,
            "ENUM" => {
                if self.peek() == Some(b'(') {
                    self.skip_parens()?;
                }
                DuckType::Enum
            }
            "BIT" | "BITSTRING" => DuckType::Bit,
            "VARINT" | "BIGNUM" => DuckType::VarInt,
            "NULL" => DuckType::Null,
            // DuckDB prints an empty struct as a bare STRUCT.
            "STRUCT" | "ROW" if self.peek() != Some(b'(') => DuckType::Struct(Vec::new()),
            "STRUCT" | "ROW" => DuckType::Struct(self.fields()?),
            "UNION" => DuckType::Union(self.fields()?),
            "MAP" => {
                if !self.eat(b'(') {
                    return None;
                }
                let k = self.parse_type()?;
                if !self.eat(b',') {
                    return None;
                }
                let v = self.parse_type()?;
                if !self.eat(b')') {
                    return None;
                }
                DuckType::Map(Box::new(k), Box::new(v))
            }
            _ => return None,
        };
        // Array suffixes bind left to right: INTEGER[3][] is a LIST of INTEGER[3].
        while self.eat(b'[') {
            if self.eat(b']') {
                t = DuckType::List(Box::new(t));
            } else {
                let n = self.number()?;
                if !self.eat(b']') {
                    return None;
                }
                t = DuckType::Array(Box::new(t), n);
            }
        }
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::DuckType::*;
    use super::*;

    #[test]
    fn sql_names() {
        assert_eq!(
            Decimal {
                width: 18,
                scale: 3
            }
            .sql_name(),
            "DECIMAL(18,3)"
        );
        assert_eq!(List(Box::new(Integer)).sql_name(), "INTEGER[]");
        assert_eq!(
            Array(Box::new(List(Box::new(Varchar))), 3).sql_name(),
            "VARCHAR[][3]"
        );
        assert_eq!(
            Struct(vec![("a".into(), Integer), ("b\"c".into(), Varchar)]).sql_name(),
            "STRUCT(\"a\" INTEGER, \"b\"\"c\" VARCHAR)"
        );
        assert_eq!(
            Map(Box::new(Varchar), Box::new(Double)).sql_name(),
            "MAP(VARCHAR, DOUBLE)"
        );
        assert_eq!(
            Union(vec![("n".into(), Integer)]).sql_name(),
            "UNION(\"n\" INTEGER)"
        );
        assert_eq!(TimestampTz.sql_name(), "TIMESTAMPTZ");
        assert_eq!(Other("GEOMETRY".into()).sql_name(), "GEOMETRY");
    }

    #[test]
    fn parse_round_trips_sql_name() {
        let types = vec![
            Boolean,
            TinyInt,
            UHugeInt,
            Decimal {
                width: 38,
                scale: 10,
            },
            TimeTz,
            TimeNs,
            TimestampNs,
            TimestampTz,
            TimestampTzNs,
            Interval,
            Uuid,
            Json,
            Bit,
            VarInt,
            List(Box::new(List(Box::new(Integer)))),
            Array(Box::new(Double), 3),
            Struct(vec![
                ("a".into(), Integer),
                ("b c".into(), List(Box::new(Varchar))),
            ]),
            Map(Box::new(Varchar), Box::new(List(Box::new(Date)))),
            Union(vec![("i".into(), Integer), ("s".into(), Varchar)]),
        ];
        for t in types {
            assert_eq!(DuckType::parse(&t.sql_name()), t, "{}", t.sql_name());
        }
    }

    #[test]
    fn parse_duckdb_spellings() {
        assert_eq!(DuckType::parse("TIMESTAMP WITH TIME ZONE"), TimestampTz);
        assert_eq!(DuckType::parse("TIME WITH TIME ZONE"), TimeTz);
        assert_eq!(DuckType::parse("ENUM('a', 'b)c')"), Enum);
        assert_eq!(DuckType::parse("varchar(10)"), Varchar);
        assert_eq!(
            DuckType::parse("STRUCT(a INTEGER, b VARCHAR)[]"),
            List(Box::new(Struct(vec![
                ("a".into(), Integer),
                ("b".into(), Varchar)
            ])))
        );
        assert_eq!(
            DuckType::parse("INTEGER[3][]"),
            List(Box::new(Array(Box::new(Integer), 3)))
        );
        assert_eq!(DuckType::parse("BIGNUM"), VarInt);
        assert_eq!(DuckType::parse("STRUCT"), Struct(vec![]));
        assert_eq!(DuckType::parse("GEOMETRY"), Other("GEOMETRY".into()));
        assert_eq!(
            DuckType::parse("INTEGER garbage"),
            Other("INTEGER garbage".into())
        );
    }

    #[test]
    fn list_leaf_depth() {
        let t = List(Box::new(Array(Box::new(Integer), 2)));
        assert_eq!(t.list_leaf(), (&Integer, 2));
        assert_eq!(Integer.list_leaf(), (&Integer, 0));
    }
}
