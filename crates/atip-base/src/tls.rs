//! The crypto behind every HTTPS connection atip makes: rustls with ring's provider.
//! reqwest is built without its default provider (AWS-LC, a C library that was the
//! longest unit of a fresh build), so each HTTP client factory calls [`use_ring`] first;
//! without it, building a client would panic.

/// Make ring rustls' process-wide crypto provider, unless one is already installed (by
/// an earlier call, or by a program embedding atip that chose its own).
pub fn use_ring() {
    // Err only means a provider is already installed: that one stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A random secret from the operating system's source (tokens, keys).
pub fn random_bytes(buf: &mut [u8]) -> std::io::Result<()> {
    use ring::rand::SecureRandom;
    ring::rand::SystemRandom::new()
        .fill(buf)
        .map_err(|_| std::io::Error::other("no random bytes from the operating system"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_config_builds_once_ring_is_installed() {
        use_ring();
        use_ring(); // idempotent
        let provider = rustls::crypto::CryptoProvider::get_default().expect("installed");
        assert!(!provider.cipher_suites.is_empty());
        let config = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("ring supports TLS 1.2 and 1.3")
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        assert!(config.alpn_protocols.is_empty());
    }

    #[test]
    fn random_bytes_fill_the_buffer() {
        let (mut a, mut b) = ([0u8; 32], [0u8; 32]);
        random_bytes(&mut a).unwrap();
        random_bytes(&mut b).unwrap();
        assert_ne!(a, b);
        assert_ne!(a, [0u8; 32]);
    }
}
