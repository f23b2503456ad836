//! The accept loop every HTTPS listener of the sandbox shares: TCP accept until shutdown, TLS on
//! each connection in its own task, then the listener's own connection handler, which is dropped
//! (closing the connection) when the sandbox shuts down. The handler is told the peer's address:
//! the request log keeps it, so a test can tell requests that came through a proxy.

use std::future::Future;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

pub(crate) async fn accept_tls<F, Fut>(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    mut shutdown: watch::Receiver<bool>,
    serve_connection: F,
) where
    F: Fn(TlsStream<TcpStream>, std::net::SocketAddr) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let serve_connection = Arc::new(serve_connection);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.changed() => return,
        };
        let Ok((tcp, peer)) = accepted else { continue };
        let acceptor = acceptor.clone();
        let serve_connection = serve_connection.clone();
        let mut conn_shutdown = shutdown.clone();
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else { return };
            tokio::select! {
                _ = serve_connection(tls, peer) => {}
                _ = conn_shutdown.changed() => {}
            }
        });
    }
}
