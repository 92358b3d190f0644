//! Password authentication: users from flags or a file, checked with
//! cleartext, md5 or SCRAM-SHA-256 (pgwire's mechanisms).

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use pgwire::api::auth::md5pass::hash_md5_password;
use pgwire::api::auth::sasl::scram::gen_salted_password;
use pgwire::api::auth::{AuthSource, LoginInfo, Password};
use pgwire::error::{PgWireError, PgWireResult};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthMethod {
    Trust,
    Password,
    Md5,
    #[value(name = "scram-sha-256")]
    Scram,
}

pub const SCRAM_ITERATIONS: usize = 4096;

/// The users the server accepts, and how passwords are checked.
#[derive(Debug)]
pub struct Users {
    pub method: AuthMethod,
    passwords: HashMap<String, String>,
}

impl Users {
    pub fn new(method: AuthMethod, passwords: HashMap<String, String>) -> Self {
        Users { method, passwords }
    }

    /// Reads `name:password` lines (blank lines and `#` comments skipped).
    pub fn parse_lines(text: &str) -> Result<HashMap<String, String>, String> {
        let mut out = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (u, p) = line
                .split_once(':')
                .ok_or_else(|| format!("line {}: expected name:password", n + 1))?;
            out.insert(u.trim().to_string(), p.to_string());
        }
        Ok(out)
    }
}

/// The auth source pgwire's mechanisms ask.
#[derive(Debug)]
pub struct Store(pub Arc<Users>);

#[async_trait]
impl AuthSource for Store {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let user = login.user().unwrap_or_default();
        let Some(pw) = self.0.passwords.get(user) else {
            return Err(PgWireError::InvalidPassword(user.to_string()));
        };
        Ok(match self.0.method {
            AuthMethod::Md5 => {
                let salt: [u8; 4] = rand::random();
                Password::new(
                    Some(salt.to_vec()),
                    hash_md5_password(user, pw, &salt).into_bytes(),
                )
            }
            AuthMethod::Scram => {
                let salt: [u8; 16] = rand::random();
                Password::new(
                    Some(salt.to_vec()),
                    gen_salted_password(pw, &salt, SCRAM_ITERATIONS),
                )
            }
            _ => Password::new(None, pw.as_bytes().to_vec()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_user_lines() {
        let u = Users::parse_lines("# users\nalice:secret\n\nbob:p:w\n").unwrap();
        assert_eq!(u.get("alice").map(String::as_str), Some("secret"));
        assert_eq!(u.get("bob").map(String::as_str), Some("p:w"));
        assert!(Users::parse_lines("nocolon").is_err());
    }
}
