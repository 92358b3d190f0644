//! DuckDB type ⇄ PostgreSQL type OID, and the wire format code.

use super::DuckType;

/// PostgreSQL type OIDs this server uses (from `pg_type.dat`).
pub mod oids {
    pub const BOOL: u32 = 16;
    pub const BYTEA: u32 = 17;
    pub const CHAR: u32 = 18;
    pub const NAME: u32 = 19;
    pub const INT8: u32 = 20;
    pub const INT2: u32 = 21;
    pub const INT4: u32 = 23;
    pub const TEXT: u32 = 25;
    pub const OID: u32 = 26;
    pub const JSON: u32 = 114;
    pub const FLOAT4: u32 = 700;
    pub const FLOAT8: u32 = 701;
    pub const UNKNOWN: u32 = 705;
    pub const BPCHAR: u32 = 1042;
    pub const VARCHAR: u32 = 1043;
    pub const DATE: u32 = 1082;
    pub const TIME: u32 = 1083;
    pub const TIMESTAMP: u32 = 1114;
    pub const TIMESTAMPTZ: u32 = 1184;
    pub const INTERVAL: u32 = 1186;
    pub const TIMETZ: u32 = 1266;
    pub const BIT: u32 = 1560;
    pub const VARBIT: u32 = 1562;
    pub const NUMERIC: u32 = 1700;
    pub const UUID: u32 = 2950;
    pub const JSONB: u32 = 3802;

    pub const JSON_ARRAY: u32 = 199;
    pub const BOOL_ARRAY: u32 = 1000;
    pub const BYTEA_ARRAY: u32 = 1001;
    pub const INT2_ARRAY: u32 = 1005;
    pub const INT4_ARRAY: u32 = 1007;
    pub const TEXT_ARRAY: u32 = 1009;
    pub const VARCHAR_ARRAY: u32 = 1015;
    pub const INT8_ARRAY: u32 = 1016;
    pub const FLOAT4_ARRAY: u32 = 1021;
    pub const FLOAT8_ARRAY: u32 = 1022;
    pub const OID_ARRAY: u32 = 1028;
    pub const TIMESTAMP_ARRAY: u32 = 1115;
    pub const DATE_ARRAY: u32 = 1182;
    pub const TIME_ARRAY: u32 = 1183;
    pub const TIMESTAMPTZ_ARRAY: u32 = 1185;
    pub const INTERVAL_ARRAY: u32 = 1187;
    pub const NUMERIC_ARRAY: u32 = 1231;
    pub const TIMETZ_ARRAY: u32 = 1270;
    pub const VARBIT_ARRAY: u32 = 1563;
    pub const UUID_ARRAY: u32 = 2951;
    pub const JSONB_ARRAY: u32 = 3807;
}

/// Wire format of a value: text or PostgreSQL's binary send/recv format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Binary,
}

impl Format {
    /// Format codes from Bind: 1 is binary; 0 (and anything else, which the protocol layer
    /// should have rejected) is text.
    pub fn from_code(code: i16) -> Format {
        if code == 1 {
            Format::Binary
        } else {
            Format::Text
        }
    }
}

/// How a column or parameter is described to the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgType {
    pub oid: u32,
    /// PostgreSQL's `typname` (`int4`, `_text`).
    pub name: &'static str,
    /// PostgreSQL's `typlen`: the fixed size in bytes, or -1 for variable length.
    pub len: i16,
    /// The type modifier: `((p << 16) | s) + 4` for numeric(p,s), otherwise -1.
    pub typmod: i32,
}

const fn t(oid: u32, name: &'static str, len: i16) -> PgType {
    PgType {
        oid,
        name,
        len,
        typmod: -1,
    }
}

/// The PostgreSQL type a DuckDB type is sent as (RowDescription, ParameterDescription).
pub fn pg_type(ty: &DuckType) -> PgType {
    use oids::*;
    use DuckType::*;
    match ty {
        Boolean => t(BOOL, "bool", 1),
        TinyInt | SmallInt | UTinyInt => t(INT2, "int2", 2),
        Integer | USmallInt => t(INT4, "int4", 4),
        // PostgreSQL's oid is an unsigned 32-bit integer: the catalog's oid
        // columns are UINTEGER, and `::oid` casts are rewritten to it, so
        // drivers see 26 / 1028 (asyncpg decodes only those in its own
        // introspection queries).
        UInteger => t(OID, "oid", 4),
        BigInt => t(INT8, "int8", 8),
        UBigInt | HugeInt | UHugeInt | VarInt => t(NUMERIC, "numeric", -1),
        Decimal { width, scale } => PgType {
            typmod: (((*width as i32) << 16) | *scale as i32) + 4,
            ..t(NUMERIC, "numeric", -1)
        },
        Float => t(FLOAT4, "float4", 4),
        Double => t(FLOAT8, "float8", 8),
        Varchar | Enum | Null | Other(_) => t(TEXT, "text", -1),
        Blob => t(BYTEA, "bytea", -1),
        Date => t(DATE, "date", 4),
        Time | TimeNs => t(TIME, "time", 8),
        TimeTz => t(TIMETZ, "timetz", 12),
        Timestamp | TimestampS | TimestampMs | TimestampNs => t(TIMESTAMP, "timestamp", 8),
        TimestampTz | TimestampTzNs => t(TIMESTAMPTZ, "timestamptz", 8),
        Interval => t(INTERVAL, "interval", 16),
        Uuid => t(UUID, "uuid", 16),
        Json | Struct(_) | Map(..) | Union(_) => t(JSON, "json", -1),
        Bit => t(VARBIT, "varbit", -1),
        List(_) | Array(..) => {
            let (leaf, _) = ty.list_leaf();
            if leaf.is_composite() {
                t(JSON, "json", -1)
            } else {
                array_type_of(pg_type(leaf).oid)
            }
        }
    }
}

/// The array type whose elements are `elem_oid` (text[] for anything unknown).
pub fn array_type_of(elem_oid: u32) -> PgType {
    use oids::*;
    let (oid, name) = match elem_oid {
        BOOL => (BOOL_ARRAY, "_bool"),
        INT2 => (INT2_ARRAY, "_int2"),
        INT4 => (INT4_ARRAY, "_int4"),
        INT8 => (INT8_ARRAY, "_int8"),
        OID => (OID_ARRAY, "_oid"),
        FLOAT4 => (FLOAT4_ARRAY, "_float4"),
        FLOAT8 => (FLOAT8_ARRAY, "_float8"),
        NUMERIC => (NUMERIC_ARRAY, "_numeric"),
        BYTEA => (BYTEA_ARRAY, "_bytea"),
        DATE => (DATE_ARRAY, "_date"),
        TIME => (TIME_ARRAY, "_time"),
        TIMETZ => (TIMETZ_ARRAY, "_timetz"),
        TIMESTAMP => (TIMESTAMP_ARRAY, "_timestamp"),
        TIMESTAMPTZ => (TIMESTAMPTZ_ARRAY, "_timestamptz"),
        INTERVAL => (INTERVAL_ARRAY, "_interval"),
        UUID => (UUID_ARRAY, "_uuid"),
        JSON => (JSON_ARRAY, "_json"),
        VARBIT => (VARBIT_ARRAY, "_varbit"),
        _ => (TEXT_ARRAY, "_text"),
    };
    t(oid, name, -1)
}

/// The element OID of a PostgreSQL array type, if `oid` is one we know.
pub fn array_element_oid(oid: u32) -> Option<u32> {
    use oids::*;
    Some(match oid {
        BOOL_ARRAY => BOOL,
        INT2_ARRAY => INT2,
        INT4_ARRAY => INT4,
        INT8_ARRAY => INT8,
        FLOAT4_ARRAY => FLOAT4,
        FLOAT8_ARRAY => FLOAT8,
        NUMERIC_ARRAY => NUMERIC,
        BYTEA_ARRAY => BYTEA,
        DATE_ARRAY => DATE,
        TIME_ARRAY => TIME,
        TIMETZ_ARRAY => TIMETZ,
        TIMESTAMP_ARRAY => TIMESTAMP,
        TIMESTAMPTZ_ARRAY => TIMESTAMPTZ,
        INTERVAL_ARRAY => INTERVAL,
        UUID_ARRAY => UUID,
        JSON_ARRAY => JSON,
        JSONB_ARRAY => JSONB,
        VARBIT_ARRAY => VARBIT,
        TEXT_ARRAY => TEXT,
        VARCHAR_ARRAY => VARCHAR,
        OID_ARRAY => OID,
        _ => return None,
    })
}

/// The DuckDB type for a parameter type the client declared in Parse. `None` for 0 and
/// `unknown` (the server should infer) and for OIDs we do not know.
///
/// `numeric` without a typmod has no DuckDB equivalent (DuckDB decimals have a fixed scale);
/// DECIMAL(38,10) keeps 28 integer and 10 fractional digits, which covers what drivers send
/// for `BigDecimal`/`Decimal` in practice.
pub fn duck_type_for_oid(oid: u32) -> Option<DuckType> {
    use oids::*;
    Some(match oid {
        BOOL => DuckType::Boolean,
        INT2 => DuckType::SmallInt,
        INT4 => DuckType::Integer,
        INT8 => DuckType::BigInt,
        OID => DuckType::UInteger,
        FLOAT4 => DuckType::Float,
        FLOAT8 => DuckType::Double,
        NUMERIC => DuckType::Decimal {
            width: 38,
            scale: 10,
        },
        TEXT | VARCHAR | BPCHAR | NAME | CHAR => DuckType::Varchar,
        BYTEA => DuckType::Blob,
        DATE => DuckType::Date,
        TIME => DuckType::Time,
        TIMETZ => DuckType::TimeTz,
        TIMESTAMP => DuckType::Timestamp,
        TIMESTAMPTZ => DuckType::TimestampTz,
        INTERVAL => DuckType::Interval,
        UUID => DuckType::Uuid,
        JSON | JSONB => DuckType::Json,
        BIT | VARBIT => DuckType::Bit,
        other => {
            let elem = array_element_oid(other)?;
            DuckType::List(Box::new(duck_type_for_oid(elem)?))
        }
    })
}

/// PostgreSQL's name for a type OID, for error messages.
pub(crate) fn pg_type_name(oid: u32) -> &'static str {
    use oids::*;
    match oid {
        BOOL => "boolean",
        INT2 => "smallint",
        INT4 => "integer",
        INT8 => "bigint",
        OID => "oid",
        FLOAT4 => "real",
        FLOAT8 => "double precision",
        NUMERIC => "numeric",
        TEXT => "text",
        VARCHAR => "character varying",
        BPCHAR => "character",
        NAME => "name",
        BYTEA => "bytea",
        DATE => "date",
        TIME => "time without time zone",
        TIMETZ => "time with time zone",
        TIMESTAMP => "timestamp without time zone",
        TIMESTAMPTZ => "timestamp with time zone",
        INTERVAL => "interval",
        UUID => "uuid",
        JSON => "json",
        JSONB => "jsonb",
        BIT => "bit",
        VARBIT => "bit varying",
        _ if array_element_oid(oid).is_some() => "array",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::oids::*;
    use super::*;
    use DuckType::*;

    fn oid(t: DuckType) -> u32 {
        pg_type(&t).oid
    }

    #[test]
    fn scalar_mapping() {
        let cases = [
            (Boolean, BOOL),
            (TinyInt, INT2),
            (SmallInt, INT2),
            (UTinyInt, INT2),
            (Integer, INT4),
            (USmallInt, INT4),
            (BigInt, INT8),
            (UInteger, OID),
            (UBigInt, NUMERIC),
            (HugeInt, NUMERIC),
            (UHugeInt, NUMERIC),
            (VarInt, NUMERIC),
            (Float, FLOAT4),
            (Double, FLOAT8),
            (Varchar, TEXT),
            (Enum, TEXT),
            (Null, TEXT),
            (Other("GEOMETRY".into()), TEXT),
            (Blob, BYTEA),
            (Date, DATE),
            (Time, TIME),
            (TimeNs, TIME),
            (TimeTz, TIMETZ),
            (Timestamp, TIMESTAMP),
            (TimestampS, TIMESTAMP),
            (TimestampMs, TIMESTAMP),
            (TimestampNs, TIMESTAMP),
            (TimestampTz, TIMESTAMPTZ),
            (TimestampTzNs, TIMESTAMPTZ),
            (Interval, INTERVAL),
            (Uuid, UUID),
            (Json, JSON),
            (Bit, VARBIT),
            (Struct(vec![("a".into(), Integer)]), JSON),
            (Map(Box::new(Varchar), Box::new(Integer)), JSON),
            (Union(vec![("a".into(), Integer)]), JSON),
        ];
        for (t, expected) in cases {
            assert_eq!(oid(t.clone()), expected, "{t:?}");
        }
    }

    #[test]
    fn lengths_and_typmod() {
        assert_eq!(pg_type(&Integer).len, 4);
        assert_eq!(pg_type(&Interval).len, 16);
        assert_eq!(pg_type(&TimeTz).len, 12);
        assert_eq!(pg_type(&Varchar).len, -1);
        let d = pg_type(&Decimal {
            width: 18,
            scale: 3,
        });
        assert_eq!((d.oid, d.typmod), (NUMERIC, (18 << 16 | 3) + 4));
        assert_eq!(pg_type(&HugeInt).typmod, -1);
        assert_eq!(pg_type(&List(Box::new(Integer))).name, "_int4");
    }

    #[test]
    fn list_mapping() {
        let l = |t: DuckType| List(Box::new(t));
        assert_eq!(oid(l(Boolean)), BOOL_ARRAY);
        assert_eq!(oid(l(TinyInt)), INT2_ARRAY);
        assert_eq!(oid(l(Integer)), INT4_ARRAY);
        assert_eq!(oid(l(BigInt)), INT8_ARRAY);
        assert_eq!(oid(l(Varchar)), TEXT_ARRAY);
        assert_eq!(oid(l(Enum)), TEXT_ARRAY);
        assert_eq!(oid(l(Float)), FLOAT4_ARRAY);
        assert_eq!(oid(l(Double)), FLOAT8_ARRAY);
        assert_eq!(oid(l(HugeInt)), NUMERIC_ARRAY);
        assert_eq!(oid(l(Blob)), BYTEA_ARRAY);
        assert_eq!(oid(l(Date)), DATE_ARRAY);
        assert_eq!(oid(l(Time)), TIME_ARRAY);
        assert_eq!(oid(l(TimestampNs)), TIMESTAMP_ARRAY);
        assert_eq!(oid(l(TimestampTz)), TIMESTAMPTZ_ARRAY);
        assert_eq!(oid(l(Interval)), INTERVAL_ARRAY);
        assert_eq!(oid(l(Uuid)), UUID_ARRAY);
        assert_eq!(oid(l(Json)), JSON_ARRAY);
        assert_eq!(oid(l(TimeTz)), TIMETZ_ARRAY);
        assert_eq!(oid(l(Bit)), VARBIT_ARRAY);
        assert_eq!(oid(l(UInteger)), OID_ARRAY);
        assert_eq!(oid(l(l(Integer))), INT4_ARRAY);
        assert_eq!(oid(Array(Box::new(Double), 3)), FLOAT8_ARRAY);
        assert_eq!(oid(l(Struct(vec![("a".into(), Integer)]))), JSON);
        assert_eq!(oid(l(l(Map(Box::new(Varchar), Box::new(Integer))))), JSON);
    }

    #[test]
    fn oid_to_duck_type() {
        assert_eq!(duck_type_for_oid(INT4), Some(Integer));
        assert_eq!(duck_type_for_oid(VARCHAR), Some(Varchar));
        assert_eq!(duck_type_for_oid(JSONB), Some(Json));
        assert_eq!(duck_type_for_oid(INT8_ARRAY), Some(List(Box::new(BigInt))));
        assert_eq!(duck_type_for_oid(0), None);
        assert_eq!(duck_type_for_oid(UNKNOWN), None);
        assert_eq!(duck_type_for_oid(99999), None);
        // Every scalar we send maps back to a type that is sent with the same OID.
        for t in [
            UInteger,
            Boolean,
            SmallInt,
            Integer,
            BigInt,
            Float,
            Double,
            Varchar,
            Blob,
            Date,
            Time,
            TimeTz,
            Timestamp,
            TimestampTz,
            Interval,
            Uuid,
            Json,
            Bit,
        ] {
            let o = oid(t.clone());
            assert_eq!(oid(duck_type_for_oid(o).unwrap()), o, "{t:?}");
        }
    }

    #[test]
    fn format_codes() {
        assert_eq!(Format::from_code(0), Format::Text);
        assert_eq!(Format::from_code(1), Format::Binary);
    }
}
