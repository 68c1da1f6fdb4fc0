//! `fetch::download` against a small HTTP server on 127.0.0.1 that the tests start: a clean
//! transfer, an interrupted one that resumes with a range request, a corrupted body, a server
//! that ignores ranges, and an unreachable server.

use dyad_datasets::DataError;
use dyad_datasets::fetch::{FetchOptions, Outcome, download, sha256_file};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn payload() -> Vec<u8> {
    (0..200_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

fn sha(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Serves `payload()` at several paths with different misbehaviours; counts requests.
struct Server {
    port: u16,
    requests: Arc<AtomicUsize>,
}

fn start() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let requests = Arc::new(AtomicUsize::new(0));
    let count = requests.clone();
    std::thread::spawn(move || {
        let cut_served = AtomicUsize::new(0);
        for stream in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            let _ = serve(stream, &cut_served);
        }
    });
    Server { port, requests }
}

fn serve(mut stream: TcpStream, cut_served: &AtomicUsize) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut range_start = None;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h)?;
        if h.trim().is_empty() {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("range: bytes=") {
            range_start = v.trim().trim_end_matches('-').parse::<usize>().ok();
        }
    }
    let mut body = payload();
    let n = body.len();
    let honour_range = path != "/norange";
    if path == "/corrupt" {
        body[n / 2] ^= 0xff;
    }
    match range_start {
        Some(s) if honour_range && s >= n => {
            write!(
                stream,
                "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )?;
        }
        Some(s) if honour_range => {
            write!(
                stream,
                "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {s}-{}/{n}\r\nConnection: close\r\n\r\n",
                n - s,
                n - 1
            )?;
            stream.write_all(&body[s..])?;
        }
        _ => {
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {n}\r\nConnection: close\r\n\r\n"
            )?;
            let first_cut = (path == "/cut" || path == "/norange")
                && cut_served.fetch_add(1, Ordering::SeqCst) == 0;
            if first_cut {
                // Announce everything, send 40 %, hang up.
                stream.write_all(&body[..n * 2 / 5])?;
                stream.flush()?;
                return stream.shutdown(std::net::Shutdown::Both);
            }
            stream.write_all(&body)?;
        }
    }
    stream.flush()
}

fn opts() -> FetchOptions {
    FetchOptions {
        connect_timeout: Duration::from_secs(3),
        read_timeout: Duration::from_secs(5),
    }
}

#[test]
fn clean_download_is_verified_and_not_repeated() {
    let s = start();
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("sub/file.bin");
    let want = sha(&payload());
    let url = format!("http://127.0.0.1:{}/ok", s.port);
    let mut seen = Vec::new();
    let out = download(&url, &dest, Some(&want), Some(200_000), &opts(), &mut |p| {
        seen.push(p)
    })
    .unwrap();
    assert_eq!(
        out,
        Outcome::Downloaded {
            bytes: 200_000,
            resumed_from: 0
        }
    );
    assert_eq!(std::fs::read(&dest).unwrap(), payload());
    assert_eq!(seen.last().unwrap().done, 200_000);
    assert_eq!(seen.last().unwrap().total, Some(200_000));
    let before = s.requests.load(Ordering::SeqCst);
    assert_eq!(
        download(&url, &dest, Some(&want), None, &opts(), &mut |_| {}).unwrap(),
        Outcome::AlreadyPresent
    );
    assert_eq!(
        s.requests.load(Ordering::SeqCst),
        before,
        "a verified file is not downloaded again"
    );
}

#[test]
fn an_interrupted_transfer_resumes_with_a_range_request() {
    let s = start();
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("file.bin");
    let want = sha(&payload());
    let url = format!("http://127.0.0.1:{}/cut", s.port);
    let e = download(
        &url,
        &dest,
        Some(&want),
        Some(200_000),
        &opts(),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(matches!(e, DataError::Fetch { .. }), "{e}");
    assert!(e.to_string().contains("run again to resume"), "{e}");
    assert!(!dest.exists());
    let part = dir.path().join("file.bin.part");
    assert_eq!(std::fs::metadata(&part).unwrap().len(), 80_000);
    let out = download(
        &url,
        &dest,
        Some(&want),
        Some(200_000),
        &opts(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(
        out,
        Outcome::Downloaded {
            bytes: 120_000,
            resumed_from: 80_000
        }
    );
    assert_eq!(sha256_file(&dest).unwrap(), want);
    assert!(!part.exists());
}

#[test]
fn a_server_ignoring_ranges_restarts_from_zero() {
    let s = start();
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("file.bin");
    let want = sha(&payload());
    let url = format!("http://127.0.0.1:{}/norange", s.port);
    assert!(download(&url, &dest, Some(&want), None, &opts(), &mut |_| {}).is_err());
    let out = download(&url, &dest, Some(&want), None, &opts(), &mut |_| {}).unwrap();
    assert_eq!(
        out,
        Outcome::Downloaded {
            bytes: 200_000,
            resumed_from: 0
        }
    );
    assert_eq!(std::fs::read(&dest).unwrap(), payload());
}

#[test]
fn a_corrupted_body_fails_the_checksum_and_is_deleted() {
    let s = start();
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("file.bin");
    let url = format!("http://127.0.0.1:{}/corrupt", s.port);
    let e = download(
        &url,
        &dest,
        Some(&sha(&payload())),
        Some(200_000),
        &opts(),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(e.to_string().contains("checksum mismatch"), "{e}");
    assert!(!dest.exists());
    assert!(!dir.path().join("file.bin.part").exists());
}

#[test]
fn an_unreachable_server_fails_fast() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let e = download(
        &format!("http://127.0.0.1:{port}/x"),
        &dir.path().join("f"),
        None,
        None,
        &opts(),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(e.to_string().contains("cannot reach"), "{e}");
}

#[test]
fn data_sets_without_a_public_address_explain_how_to_get_them() {
    let dir = tempfile::tempdir().unwrap();
    let info = dyad_datasets::registry::dataset("imagenet-sbow").unwrap();
    let e = dyad_datasets::fetch::fetch(info, dir.path(), &opts(), &mut |_, _| {}).unwrap_err();
    assert!(e.to_string().contains("ImageNet account"), "{e}");
}
