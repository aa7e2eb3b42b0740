//! The `db` forwarder: accepts connections on a listener inside an attempt's network and relays each
//! one, byte for byte, to the database sidecar on the host's loopback. It is the attempt's only path
//! to anything outside its namespace, and it leads to exactly one address.
//!
//! The same relay runs the other way for a server in its HTTP mode: a listener on the runner's
//! loopback, each connection relayed to the server's port inside the attempt's network. Nothing
//! inside can use that path outward.

use std::io::ErrorKind;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::{SandboxError, io_err};

pub(crate) struct Forwarder {
    stop: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
    acceptor: Option<JoinHandle<()>>,
}

/// Opens the far side of one relayed connection.
pub(crate) type Connect = Box<dyn Fn() -> std::io::Result<TcpStream> + Send>;

impl Forwarder {
    pub(crate) fn start(
        listener: TcpListener,
        upstream: SocketAddr,
    ) -> Result<Forwarder, SandboxError> {
        Self::start_with(
            listener,
            Box::new(move || TcpStream::connect_timeout(&upstream, Duration::from_secs(5))),
        )
    }

    /// Relays every connection accepted on `listener` to a connection `connect` opens (the reverse
    /// direction: from the runner's loopback into an attempt's network, see
    /// [`super::World::expose`]).
    pub(crate) fn start_with(
        listener: TcpListener,
        connect: Connect,
    ) -> Result<Forwarder, SandboxError> {
        listener
            .set_nonblocking(true)
            .map_err(io_err("forwarder nonblocking"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::new(Mutex::new(Vec::new()));
        let (stop2, open2) = (Arc::clone(&stop), Arc::clone(&open));
        let acceptor = std::thread::Builder::new()
            .name("db-forwarder".into())
            .spawn(move || {
                while !stop2.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((inside, _)) => {
                            let _ = inside.set_nonblocking(false);
                            let Ok(outside) = connect() else {
                                let _ = inside.shutdown(Shutdown::Both);
                                continue;
                            };
                            relay(inside, outside, &open2);
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(20))
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(20)),
                    }
                }
            })
            .map_err(io_err("spawn forwarder"))?;
        Ok(Forwarder {
            stop,
            open,
            acceptor: Some(acceptor),
        })
    }

    /// Stops accepting and closes every relayed connection.
    pub(crate) fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        let open = std::mem::take(
            &mut *self
                .open
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for s in open {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.halt();
    }
}

fn relay(a: TcpStream, b: TcpStream, open: &Arc<Mutex<Vec<TcpStream>>>) {
    let (Ok(a2), Ok(b2)) = (a.try_clone(), b.try_clone()) else {
        return;
    };
    {
        let mut list = open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let (Ok(x), Ok(y)) = (a.try_clone(), b.try_clone()) {
            list.push(x);
            list.push(y);
        }
    }
    pump(a, b2);
    pump(b, a2);
}

fn pump(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::thread::Builder::new()
        .name("db-relay".into())
        .spawn(move || {
            let _ = std::io::copy(&mut from, &mut to);
            let _ = to.shutdown(Shutdown::Write);
        });
}
