//! Secrets: the delete token a submitter gets once, the admin token for
//! moderation, and comparing them without leaking timing.

use axum::http::{HeaderMap, StatusCode, header};
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::error::ApiError;

/// A new delete token: 32 random bytes from the OS, as 64 hex digits.
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex(&bytes)
}

/// What the database keeps of a token.
pub fn token_hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares two secrets in time that depends only on their lengths.
pub fn same_secret(a: &str, b: &str) -> bool {
    subtle::ConstantTimeEq::ct_eq(a.as_bytes(), b.as_bytes()).into()
}

/// The token of an `Authorization: Bearer TOKEN` header: 401 when there is
/// none, so that the client knows to send one.
pub fn bearer(headers: &HeaderMap, what: &str) -> Result<String, ApiError> {
    let missing = || {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            format!("Authorization: missing; send `Authorization: Bearer TOKEN` with {what}"),
        )
    };
    let value = headers.get(header::AUTHORIZATION).ok_or_else(missing)?;
    let text = value.to_str().map_err(|_| missing())?;
    let token = text.strip_prefix("Bearer ").or_else(|| text.strip_prefix("bearer ")).ok_or_else(missing)?;
    let token = token.trim();
    if token.is_empty() {
        return Err(missing());
    }
    Ok(token.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_and_hashed() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
        assert_eq!(token_hash(&a).len(), 64);
        assert!(same_secret(&token_hash(&a), &token_hash(&a)));
        assert!(!same_secret(&token_hash(&a), &token_hash(&b)));
        assert!(!same_secret("ab", "abc"));
    }
}
