//! A tiny static file server for remote-registry tests: HTTP/1.1 with keep-alive on
//! 127.0.0.1, serving a directory with strong ETags and 304s, optional bearer auth,
//! and failure modes (hang, 500, a 50 MB body without Content-Length). Every request is
//! logged with the status it got. Stops when dropped.
use sha2::Digest;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How the server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Files, ETags, 304s.
    Normal,
    /// Reads the request and never answers.
    Hang,
    /// 500 to everything.
    Error500,
    /// 200 with 50 MB of body and no Content-Length.
    Huge,
}

struct Shared {
    root: PathBuf,
    mode: Mode,
    token: Option<String>,
    cache_control: Option<String>,
    log: Vec<(String, u16)>,
}

/// The running server.
pub struct StaticServer {
    pub url: String,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
}

impl StaticServer {
    pub fn start(root: &Path) -> StaticServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = Arc::new(Mutex::new(Shared {
            root: root.to_path_buf(),
            mode: Mode::Normal,
            token: None,
            cache_control: None,
            log: Vec::new(),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (s2, stop2) = (shared.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let (s3, stop3) = (s2.clone(), stop2.clone());
                        std::thread::spawn(move || serve(conn, &s3, &stop3));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        StaticServer { url, shared, stop }
    }

    pub fn set_mode(&self, mode: Mode) {
        self.shared.lock().unwrap().mode = mode;
    }

    pub fn require_token(&self, token: &str) {
        self.shared.lock().unwrap().token = Some(token.to_owned());
    }

    /// Sends `Cache-Control: VALUE` with every 200 and 304 from now on.
    pub fn set_cache_control(&self, value: &str) {
        self.shared.lock().unwrap().cache_control = Some(value.to_owned());
    }

    /// The requests so far (path, status), and forgets them.
    pub fn take_log(&self) -> Vec<(String, u16)> {
        std::mem::take(&mut self.shared.lock().unwrap().log)
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(conn: TcpStream, shared: &Mutex<Shared>, stop: &AtomicBool) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut out = conn;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut headers: Vec<(String, String)> = Vec::new();
        loop {
            let mut l = String::new();
            if reader.read_line(&mut l).unwrap_or(0) == 0 {
                return;
            }
            let l = l.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
            }
        }
        let header = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or("/")
            .to_owned();
        let (mode, root, token, cache_control) = {
            let s = shared.lock().unwrap();
            let cc = s
                .cache_control
                .as_ref()
                .map(|v| format!("Cache-Control: {v}\r\n"))
                .unwrap_or_default();
            (s.mode, s.root.clone(), s.token.clone(), cc)
        };
        let log = |status: u16| shared.lock().unwrap().log.push((path.clone(), status));
        if let Some(t) = token
            && header("authorization") != Some(format!("Bearer {t}"))
        {
            log(401);
            let _ = out.write_all(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n");
            continue;
        }
        match mode {
            Mode::Hang => {
                log(0);
                let until = Instant::now() + Duration::from_secs(30);
                while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(20));
                }
                return;
            }
            Mode::Error500 => {
                log(500);
                let _ = out.write_all(
                    b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\n\r\noops!",
                );
                continue;
            }
            Mode::Huge => {
                log(200);
                let _ = out.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
                let chunk = vec![b' '; 64 * 1024];
                for _ in 0..(50 * 1024 * 1024 / chunk.len()) {
                    if out.write_all(&chunk).is_err() {
                        break;
                    }
                }
                return;
            }
            Mode::Normal => {}
        }
        let rel = path.trim_start_matches('/');
        let file = if rel.split('/').any(|c| c == ".." || c.is_empty()) {
            None
        } else {
            std::fs::read(root.join(rel)).ok()
        };
        let Some(body) = file else {
            log(404);
            let _ = out.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
            continue;
        };
        let etag = format!("\"{}\"", &hex::encode(sha2::Sha256::digest(&body))[..16]);
        if header("if-none-match").as_deref() == Some(etag.as_str()) {
            log(304);
            let _ = out.write_all(
                format!("HTTP/1.1 304 Not Modified\r\nETag: {etag}\r\n{cache_control}\r\n")
                    .as_bytes(),
            );
            continue;
        }
        log(200);
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nETag: {etag}\r\nLast-Modified: Thu, 01 Jan 2026 00:00:00 GMT\r\n{cache_control}\r\n",
            body.len()
        );
        if out.write_all(head.as_bytes()).is_err() || out.write_all(&body).is_err() {
            return;
        }
    }
}
