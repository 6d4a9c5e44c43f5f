//! Minisign (Ed25519) keys and signatures, through the `minisign` crate.
//!
//! atip signs with unencrypted secret keys only (a build runs unattended, and the
//! crate would otherwise prompt on a terminal for a password). Signatures carry a
//! trusted comment that says what was signed (the file, and for the catalog the registry,
//! generation and expiry): a valid signature whose trusted comment is not the one the
//! reader expects is refused, so a signature cannot be moved to another file or vouch for
//! another generation. The comment is fixed by what is signed, so signing the same bytes
//! with the same key differs only in the signature's random nonce (see `SigningKey::sign`).
//!
//! A key id is the 16 upper-case hex digits minisign prints (`minisign public key: ID`).
//! Must not decide what is trusted: callers pass the keys they trust to `verify`.

use std::fs;
use std::io::Cursor;
use std::path::{Path, PathBuf};

/// A secret key loaded for signing, with its public half.
pub struct SigningKey {
    sk: minisign::SecretKey,
    /// The public half.
    pub public: TrustedKey,
}

/// A public key this machine (or a build) knows.
#[derive(Clone)]
pub struct TrustedKey {
    key: minisign::PublicKey,
    /// Key id, 16 upper-case hex digits.
    pub id: String,
    /// The key as minisign writes it on one line (base64).
    pub base64: String,
}

impl std::fmt::Debug for TrustedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TrustedKey({})", self.id)
    }
}

/// Why a key could not be read, made or used. The message names the file and what was
/// wrong with it; the cause (I/O, minisign) is kept as the source.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Text that is not a minisign public key.
    #[error("not a minisign public key ({0})")]
    NotPublicKey(#[source] minisign::PError),
    /// A key file could not be read.
    #[error("failed to read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A key file's content is not usable.
    #[error("{}: {source}", path.display())]
    In {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: Box<KeyError>,
    },
    /// A secret key file that is not a minisign secret key.
    #[error("not a minisign secret key ({0})")]
    NotSecretKey(#[source] minisign::PError),
    /// A secret key that is encrypted (atip signs unattended, so it cannot ask for the
    /// password).
    #[error("not an unencrypted minisign secret key ({0}); make one with `atip registry keygen`")]
    Encrypted(#[source] minisign::PError),
    /// The public half of a secret key could not be derived.
    #[error("{0}")]
    NoPublicHalf(#[source] minisign::PError),
    /// `keygen` would replace a key file.
    #[error("{} already exists; atip never replaces a key", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// Generating or encoding a key pair failed.
    #[error("failed to {what}: {source}")]
    Generate {
        /// `generate a key pair`, `encode the secret key`.
        what: &'static str,
        /// Why.
        #[source]
        source: minisign::PError,
    },
    /// A key file could not be created or written.
    #[error("failed to {what} {}: {source}", path.display())]
    Write {
        /// `create`, `write`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Signing failed.
    #[error("failed to sign ({comment}): {source}")]
    Sign {
        /// The trusted comment of the signature.
        comment: String,
        /// Why.
        #[source]
        source: minisign::PError,
    },
}

impl KeyError {
    /// This error, about the file at `path`.
    fn in_file(self, path: &Path) -> KeyError {
        KeyError::In {
            path: path.to_owned(),
            source: Box::new(self),
        }
    }

    fn read(path: &Path, source: std::io::Error) -> KeyError {
        KeyError::Read {
            path: path.to_owned(),
            source,
        }
    }

    fn write(what: &'static str, path: &Path, source: std::io::Error) -> KeyError {
        KeyError::Write {
            what,
            path: path.to_owned(),
            source,
        }
    }
}

impl From<KeyError> for crate::output::AtipError {
    /// Making a key (`keygen`) fails as an output error; reading or using one as
    /// `signing_key_invalid`.
    fn from(e: KeyError) -> Self {
        use crate::output::{AtipError, ErrorCode};
        match e {
            KeyError::Exists { .. } | KeyError::Write { .. } | KeyError::Generate { .. } => {
                AtipError::new(ErrorCode::FileWriteFailed, e.to_string())
                    .hint("choose a new file name; atip never replaces a key")
            }
            _ => AtipError::new(ErrorCode::SigningKeyInvalid, e.to_string())
                .hint("make a key with `atip registry keygen KEYFILE`"),
        }
    }
}

/// What a signature check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A valid signature by this trusted key (id).
    Signed(String),
    /// A signature by a key that is not among the trusted ones (its id). Nothing is
    /// said about whether the signature itself is valid: no key to check it with.
    UnknownSigner(String),
    /// Not a signature, or a signature that does not match the bytes.
    Bad(String),
}

fn key_id(keynum: &[u8]) -> String {
    let mut n = [0u8; 8];
    let len = keynum.len().min(8);
    n[..len].copy_from_slice(&keynum[..len]);
    format!("{:016X}", u64::from_le_bytes(n))
}

impl TrustedKey {
    fn from_key(key: minisign::PublicKey) -> TrustedKey {
        // The public key's bytes: 2 bytes of algorithm, 8 of key number, 32 of key.
        let bytes = key.to_bytes();
        TrustedKey {
            id: key_id(&bytes[2..10]),
            base64: key.to_base64(),
            key,
        }
    }

    /// Parses a public key: minisign's one-line base64 form, or the whole `.pub` file
    /// (a comment line, then the base64 line).
    pub fn parse(text: &str) -> Result<TrustedKey, KeyError> {
        let line = text
            .lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty() && !l.starts_with("untrusted comment:"))
            .unwrap_or("");
        let key = minisign::PublicKey::from_base64(line).map_err(KeyError::NotPublicKey)?;
        Ok(TrustedKey::from_key(key))
    }

    /// Reads a public key file (`KEYFILE.pub`).
    pub fn read(path: &Path) -> Result<TrustedKey, KeyError> {
        let text = fs::read_to_string(path).map_err(|e| KeyError::read(path, e))?;
        TrustedKey::parse(&text).map_err(|e| e.in_file(path))
    }
}

/// The public key file written beside a secret key file.
pub fn public_path(secret: &Path) -> PathBuf {
    let mut s = secret.as_os_str().to_owned();
    s.push(".pub");
    PathBuf::from(s)
}

/// Writes a new key pair: the secret key to `path` (mode 0600, never over an existing
/// file) and the public key to `path.pub`. Returns the public key.
pub fn keygen(path: &Path) -> Result<TrustedKey, KeyError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let pair =
        minisign::KeyPair::generate_unencrypted_keypair().map_err(|source| KeyError::Generate {
            what: "generate a key pair",
            source,
        })?;
    let public = TrustedKey::from_key(pair.pk.clone());
    let sk_text = pair
        .sk
        .to_box(Some("atip registry secret key (unencrypted)"))
        .map_err(|source| KeyError::Generate {
            what: "encode the secret key",
            source,
        })?
        .into_string();
    let pk_text = format!(
        "untrusted comment: minisign public key: {}\n{}\n",
        public.id, public.base64
    );
    let pub_path = public_path(path);
    if pub_path.exists() {
        return Err(KeyError::Exists { path: pub_path });
    }
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                KeyError::Exists {
                    path: path.to_owned(),
                }
            } else {
                KeyError::write("create", path, e)
            }
        })?;
    f.write_all(sk_text.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| KeyError::write("write", path, e))?;
    fs::write(&pub_path, pk_text).map_err(|e| KeyError::write("write", &pub_path, e))?;
    Ok(public)
}

impl SigningKey {
    /// Reads an unencrypted minisign secret key file.
    pub(crate) fn read(path: &Path) -> Result<SigningKey, KeyError> {
        let text = fs::read_to_string(path).map_err(|e| KeyError::read(path, e))?;
        let boxed = minisign::SecretKeyBox::from_string(&text)
            .map_err(|e| KeyError::NotSecretKey(e).in_file(path))?;
        let sk = minisign::SecretKey::from_unencrypted_box(boxed)
            .map_err(|e| KeyError::Encrypted(e).in_file(path))?;
        let pk = minisign::PublicKey::from_secret_key(&sk)
            .map_err(|e| KeyError::NoPublicHalf(e).in_file(path))?;
        Ok(SigningKey {
            sk,
            public: TrustedKey::from_key(pk),
        })
    }

    /// Signs `bytes` with `comment` as the trusted comment ([`file_comment`],
    /// [`catalog_comment`]). Returns the `.minisig` file's text.
    pub(crate) fn sign(&self, bytes: &[u8], comment: &str) -> Result<String, KeyError> {
        minisign::sign(
            Some(&self.public.key),
            &self.sk,
            Cursor::new(bytes),
            Some(comment),
            Some(&format!("signature from atip, key {}", self.public.id)),
        )
        .map(|b| b.into_string())
        .map_err(|source| KeyError::Sign {
            comment: comment.to_owned(),
            source,
        })
    }
}

/// The trusted comment of a shim's signature: the file's path inside the tree.
pub(crate) fn file_comment(file: &str) -> String {
    format!("atip registry file:{file}")
}

/// The trusted comment of the catalog's signature: its path, the registry's name, the
/// generation and the expiry, so the signature vouches for exactly that generation.
pub(crate) fn catalog_comment(registry: &str, generation: u64, expires: &str) -> String {
    format!(
        "atip registry file:{} registry:{registry} generation:{generation} expires:{expires}",
        super::INDEX_PATH
    )
}

/// Checks a `.minisig` text over `bytes` against the trusted keys; a valid signature
/// counts only when its (signed) trusted comment is exactly `comment`.
pub(crate) fn verify(keys: &[TrustedKey], bytes: &[u8], sig_text: &str, comment: &str) -> Verdict {
    let sig = match minisign::SignatureBox::from_string(sig_text) {
        Ok(s) => s,
        Err(e) => return Verdict::Bad(format!("not a minisign signature ({e})")),
    };
    let id = key_id(sig.keynum());
    let Some(key) = keys.iter().find(|k| k.id == id) else {
        return Verdict::UnknownSigner(id);
    };
    if let Err(e) = minisign::verify(&key.key, &sig, Cursor::new(bytes), true, false, false) {
        return Verdict::Bad(format!("signature by key {id} does not match ({e})"));
    }
    // minisign::verify checked the global signature over the trusted comment.
    match sig.trusted_comment() {
        Ok(c) if c == comment => Verdict::Signed(id),
        Ok(c) => Verdict::Bad(format!(
            "signature by key {id} vouches for {c:?}, not {comment:?}"
        )),
        Err(e) => Verdict::Bad(format!(
            "signature by key {id} has no trusted comment ({e})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keygen_sign_verify_and_refusals() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("key");
        let public = keygen(&path).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(matches!(keygen(&path), Err(KeyError::Exists { .. })));
        assert!(
            keygen(&path)
                .unwrap_err()
                .to_string()
                .ends_with("already exists; atip never replaces a key")
        );
        let read_pub = TrustedKey::read(&public_path(&path)).unwrap();
        assert_eq!(read_pub.id, public.id);
        assert_eq!(TrustedKey::parse(&public.base64).unwrap().id, public.id);

        let key = SigningKey::read(&path).unwrap();
        assert_eq!(key.public.id, public.id);
        let c = catalog_comment("team", 2, "2030-01-01T00:00:00Z");
        let sig = key.sign(b"hello", &c).unwrap();
        assert_eq!(
            verify(std::slice::from_ref(&public), b"hello", &sig, &c),
            Verdict::Signed(public.id.clone())
        );
        assert!(matches!(
            verify(std::slice::from_ref(&public), b"hellO", &sig, &c),
            Verdict::Bad(_)
        ));
        assert!(matches!(
            verify(std::slice::from_ref(&public), b"hello", "garbage", &c),
            Verdict::Bad(_)
        ));
        // A valid signature that vouches for another generation, registry or file.
        for other in [
            catalog_comment("team", 1, "2030-01-01T00:00:00Z"),
            catalog_comment("other", 2, "2030-01-01T00:00:00Z"),
            catalog_comment("team", 2, "2031-01-01T00:00:00Z"),
            file_comment("shims/index.json"),
        ] {
            match verify(std::slice::from_ref(&public), b"hello", &sig, &other) {
                Verdict::Bad(m) => assert!(m.contains("vouches for"), "{m}"),
                v => panic!("{v:?}"),
            }
        }
        let other = keygen(&t.path().join("other")).unwrap();
        assert_eq!(
            verify(&[other], b"hello", &sig, &c),
            Verdict::UnknownSigner(public.id.clone())
        );
        assert!(TrustedKey::parse("RWnotakey").is_err());
        assert!(SigningKey::read(&public_path(&path)).is_err());
    }
}
