//! The non-trivial parts of PostgreSQL's binary send/recv formats: `numeric` (base-10000
//! digits) and `varbit`. Fixed-width types are plain big-endian integers and are written inline
//! by the encoder.

use bytes::{BufMut, BytesMut};

use super::TypeError;

const NUMERIC_POS: u16 = 0x0000;
const NUMERIC_NEG: u16 = 0x4000;
const NUMERIC_NAN: u16 = 0xC000;
const NUMERIC_PINF: u16 = 0xD000;
const NUMERIC_NINF: u16 = 0xF000;

/// Writes a numeric `±digits × 10^-scale` in `numeric_send` format. `digits` are ASCII decimal
/// digits (leading zeros allowed), any number of them.
pub fn write_numeric(neg: bool, digits: &[u8], scale: usize, out: &mut BytesMut) {
    // Conceptually the number is laid out as a zero-padded digit string aligned on base-10000
    // boundaries (integer part padded on the left, fraction on the right); `digit_at` reads
    // that layout without building it.
    let total = digits.len();
    let int_len = total.saturating_sub(scale);
    let int_pad = (4 - int_len % 4) % 4;
    let frac_zeros = scale.saturating_sub(total); // zeros between the point and the digits
    let frac_pad = (4 - scale % 4) % 4;
    let frac_start = int_pad + int_len + frac_zeros;
    let len = frac_start + (total - int_len) + frac_pad;
    let digit_at = |p: usize| -> u16 {
        if p >= int_pad && p < int_pad + int_len {
            (digits[p - int_pad] - b'0') as u16
        } else if p >= frac_start && p < frac_start + (total - int_len) {
            (digits[int_len + p - frac_start] - b'0') as u16
        } else {
            0
        }
    };
    let group = |g: usize| (0..4).fold(0u16, |acc, k| acc * 10 + digit_at(g * 4 + k));
    let ngroups = len / 4;
    let mut weight = ((int_pad + int_len) / 4) as i32 - 1;
    let mut first = 0;
    while first < ngroups && group(first) == 0 {
        first += 1;
        weight -= 1;
    }
    let mut last = ngroups;
    while last > first && group(last - 1) == 0 {
        last -= 1;
    }
    let ndigits = last - first;
    let (weight, sign) = if ndigits == 0 {
        (0, NUMERIC_POS)
    } else {
        (weight, if neg { NUMERIC_NEG } else { NUMERIC_POS })
    };
    out.reserve(8 + 2 * ndigits);
    out.put_i16(ndigits as i16);
    out.put_i16(weight as i16);
    out.put_u16(sign);
    out.put_u16(scale as u16);
    for g in first..last {
        out.put_u16(group(g));
    }
}

/// [`write_numeric`] for a magnitude that fits a u64 (the common case: every DECIMAL up to
/// width 18, UBIGINT): base-10000 groups by arithmetic instead of via decimal text.
pub fn write_numeric_u64(neg: bool, mag: u64, scale: usize, out: &mut BytesMut) {
    if scale > 38 {
        let mut b = itoa::Buffer::new();
        return write_numeric(neg, b.format(mag).as_bytes(), scale, out);
    }
    let frac_groups = scale.div_ceil(4);
    let pad = (frac_groups * 4 - scale) as u32;
    // The value times 10^(4·frac_groups): its base-10000 digits, least significant first.
    let mut groups = [0u16; 16];
    let mut len = 0;
    let n = mag as u128 * 10u128.pow(pad);
    if let Ok(mut m) = u64::try_from(n) {
        while m > 0 {
            groups[len] = (m % 10_000) as u16;
            m /= 10_000;
            len += 1;
        }
    } else {
        let mut m = n;
        while m > 0 {
            groups[len] = (m % 10_000) as u16;
            m /= 10_000;
            len += 1;
        }
    }
    let mut lo = 0;
    while lo < len && groups[lo] == 0 {
        lo += 1;
    }
    let ndigits = len - lo;
    let (weight, sign) = if ndigits == 0 {
        (0, NUMERIC_POS)
    } else {
        (
            len as i32 - 1 - frac_groups as i32,
            if neg { NUMERIC_NEG } else { NUMERIC_POS },
        )
    };
    out.reserve(8 + 2 * ndigits);
    out.put_i16(ndigits as i16);
    out.put_i16(weight as i16);
    out.put_u16(sign);
    out.put_u16(scale as u16);
    for k in (lo..len).rev() {
        out.put_u16(groups[k]);
    }
}

/// A decoded numeric in text form, `-12.340`, or one of the special values.
pub fn numeric_to_text(b: &[u8]) -> Result<String, TypeError> {
    let bad = |d: &str| TypeError::bad_binary("numeric", d);
    if b.len() < 8 {
        return Err(bad("fewer than 8 header bytes"));
    }
    let ndigits = i16::from_be_bytes([b[0], b[1]]);
    let weight = i16::from_be_bytes([b[2], b[3]]) as i64;
    let sign = u16::from_be_bytes([b[4], b[5]]);
    let dscale = u16::from_be_bytes([b[6], b[7]]) as i64;
    if ndigits < 0 || b.len() != 8 + 2 * ndigits as usize {
        return Err(bad(&format!("{} bytes for {ndigits} digits", b.len())));
    }
    match sign {
        NUMERIC_NAN => return Ok("NaN".into()),
        NUMERIC_PINF => return Ok("Infinity".into()),
        NUMERIC_NINF => return Ok("-Infinity".into()),
        NUMERIC_POS | NUMERIC_NEG => {}
        other => return Err(bad(&format!("invalid sign 0x{other:04x}"))),
    }
    if dscale > 1000 || weight.abs() > 1000 {
        return Err(bad("scale or weight out of range"));
    }
    let groups: Vec<u16> = b[8..]
        .chunks_exact(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    if groups.iter().any(|&g| g >= 10_000) {
        return Err(bad("digit out of range"));
    }
    let group = |i: i64| -> u16 {
        if i >= 0 && (i as usize) < groups.len() {
            groups[i as usize]
        } else {
            0
        }
    };
    let mut s = String::new();
    if sign == NUMERIC_NEG && !groups.is_empty() {
        s.push('-');
    }
    // Integer part: groups with weight ≥ 0, i.e. indices 0..=weight.
    let mut int = String::new();
    for i in 0..=weight {
        int.push_str(&format!("{:04}", group(i)));
    }
    // Senders need not be canonical (a leading zero group); print like numeric_out.
    let int = int.trim_start_matches('0');
    s.push_str(if int.is_empty() { "0" } else { int });
    if dscale > 0 {
        s.push('.');
        let mut frac = String::new();
        let mut i = weight + 1;
        while (frac.len() as i64) < dscale {
            frac.push_str(&format!("{:04}", group(i)));
            i += 1;
        }
        s.push_str(&frac[..dscale as usize]);
    }
    Ok(s)
}

/// `varbit_send` from a string of '0'/'1': bit count, then the bits packed MSB first.
pub fn write_varbit(bits: &[u8], out: &mut BytesMut) {
    out.put_i32(bits.len() as i32);
    for chunk in bits.chunks(8) {
        let mut byte = 0u8;
        for (i, &c) in chunk.iter().enumerate() {
            if c == b'1' {
                byte |= 0x80 >> i;
            }
        }
        out.put_u8(byte);
    }
}

/// `varbit_recv` into a string of '0'/'1'.
pub fn varbit_to_text(b: &[u8]) -> Result<String, TypeError> {
    if b.len() < 4 {
        return Err(TypeError::bad_binary("bit varying", "missing length"));
    }
    let nbits = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    if nbits < 0 || b.len() - 4 != (nbits as usize).div_ceil(8) {
        return Err(TypeError::bad_binary(
            "bit varying",
            format!("{} data bytes for {nbits} bits", b.len() - 4),
        ));
    }
    Ok((0..nbits as usize)
        .map(|i| {
            if b[4 + i / 8] & (0x80 >> (i % 8)) != 0 {
                '1'
            } else {
                '0'
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlstate::SqlState;

    fn num(neg: bool, digits: &str, scale: usize) -> Vec<u8> {
        let mut b = BytesMut::new();
        write_numeric(neg, digits.as_bytes(), scale, &mut b);
        b.to_vec()
    }

    fn header(nd: i16, w: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&nd.to_be_bytes());
        v.extend_from_slice(&w.to_be_bytes());
        v.extend_from_slice(&sign.to_be_bytes());
        v.extend_from_slice(&dscale.to_be_bytes());
        for d in digits {
            v.extend_from_slice(&d.to_be_bytes());
        }
        v
    }

    // Expected layouts checked with PostgreSQL's numeric_send (`SELECT numeric_send(x)`).
    #[test]
    fn numeric_send_layouts() {
        assert_eq!(num(false, "12340", 3), header(2, 0, 0, 3, &[12, 3400]));
        assert_eq!(num(false, "0", 2), header(0, 0, 0, 2, &[]));
        assert_eq!(num(true, "1", 4), header(1, -1, NUMERIC_NEG, 4, &[1]));
        assert_eq!(num(false, "1", 5), header(1, -2, 0, 5, &[1000]));
        assert_eq!(num(false, "100000000", 0), header(1, 2, 0, 0, &[1]));
        assert_eq!(
            num(false, "123456789", 0),
            header(3, 2, 0, 0, &[1, 2345, 6789])
        );
        assert_eq!(
            num(false, "340282366920938463463374607431768211455", 0),
            header(
                10,
                9,
                0,
                0,
                &[340, 2823, 6692, 938, 4634, 6337, 4607, 4317, 6821, 1455]
            )
        );
        assert_eq!(num(false, "000123", 0), header(1, 0, 0, 0, &[123]));
        // Longer than any fixed buffer: a 309-digit BIGNUM.
        let big = format!("1{}", "0".repeat(308));
        assert_eq!(num(false, &big, 0), header(1, 77, 0, 0, &[1]));
        assert_eq!(
            numeric_to_text(&num(true, &big, 0)).unwrap(),
            format!("-{big}")
        );
    }

    #[test]
    fn numeric_u64_fast_path_matches_general() {
        for (neg, mag, scale) in [
            (false, 12340u64, 3usize),
            (false, 0, 2),
            (true, 1, 4),
            (false, 1, 5),
            (false, 100_000_000, 0),
            (false, 123_456_789, 0),
            (true, u64::MAX, 0),
            (false, u64::MAX, 7),
            (false, 999_999_999_999_999_999, 18),
            (false, 5, 19),
            (true, 10_000, 4),
        ] {
            let mut fast = BytesMut::new();
            write_numeric_u64(neg, mag, scale, &mut fast);
            let digits = mag.to_string();
            assert_eq!(
                fast.to_vec(),
                num(neg, &digits, scale),
                "{neg} {mag} {scale}"
            );
        }
    }

    #[test]
    fn numeric_round_trip_through_text() {
        for (neg, digits, scale, text) in [
            (false, "12340", 3, "12.340"),
            (true, "5", 3, "-0.005"),
            (false, "0", 2, "0.00"),
            (false, "123456789", 0, "123456789"),
            (true, "100000000", 4, "-10000.0000"),
            (false, "1", 5, "0.00001"),
            (
                false,
                "99999999999999999999999999999999999999",
                38,
                "0.99999999999999999999999999999999999999",
            ),
        ] {
            assert_eq!(numeric_to_text(&num(neg, digits, scale)).unwrap(), text);
        }
        assert_eq!(
            numeric_to_text(&header(0, 0, NUMERIC_NAN, 0, &[])).unwrap(),
            "NaN"
        );
        assert_eq!(
            numeric_to_text(&header(0, 0, NUMERIC_NINF, 0, &[])).unwrap(),
            "-Infinity"
        );
    }

    #[test]
    fn numeric_recv_rejects_bad_lengths() {
        assert_eq!(
            numeric_to_text(&[0, 1]).unwrap_err().sqlstate(),
            SqlState::PROTOCOL_VIOLATION
        );
        let mut h = header(2, 0, 0, 0, &[1]);
        assert_eq!(
            numeric_to_text(&h).unwrap_err().sqlstate(),
            SqlState::PROTOCOL_VIOLATION
        );
        h = header(1, 0, 0x1234, 0, &[1]);
        assert_eq!(
            numeric_to_text(&h).unwrap_err().sqlstate(),
            SqlState::PROTOCOL_VIOLATION
        );
    }

    #[test]
    fn varbit_round_trip() {
        let mut b = BytesMut::new();
        write_varbit(b"101000001", &mut b);
        assert_eq!(b.to_vec(), vec![0, 0, 0, 9, 0b1010_0000, 0b1000_0000]);
        assert_eq!(varbit_to_text(&b).unwrap(), "101000001");
        assert_eq!(
            varbit_to_text(&[0, 0, 0, 9, 1]).unwrap_err().sqlstate(),
            SqlState::PROTOCOL_VIOLATION
        );
    }
}
