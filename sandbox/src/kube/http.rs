//! HTTP for the Kubernetes API: the TLS listener, a response body that can stream
//! (watches), authentication, fault injection and request logging. What each URL means is
//! `router/`'s business.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch as signal};
use tokio_rustls::TlsAcceptor;

use super::KubeShared;
use super::authz::KubeIdentity;
use super::errors::KubeError;
use crate::accept::accept_tls;
use crate::faults::Fault;
use crate::request_log::{LoggedRequest, Service};
use crate::wire::Req;

/// Why a streamed body ended abruptly (a watch cut by fault injection).
#[derive(Debug)]
pub(crate) struct Cut;

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("watch stream cut")
    }
}

impl std::error::Error for Cut {}

/// A whole body, or chunks from a channel (watch events). An `Err` chunk aborts the
/// connection mid-stream.
pub(crate) enum KubeBody {
    Full(Option<Bytes>),
    Stream(mpsc::Receiver<Result<Bytes, Cut>>),
}

impl hyper::body::Body for KubeBody {
    type Data = Bytes;
    type Error = Cut;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Cut>>> {
        match self.get_mut() {
            KubeBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            KubeBody::Stream(rx) => rx.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, KubeBody::Full(None))
    }
}

/// What a handler answers.
pub(crate) struct KubeReply {
    pub status: StatusCode,
    pub content_type: String,
    pub body: KubeBody,
    pub headers: Vec<(String, String)>,
    /// The Status reason of an error, for the request log.
    pub reason: Option<String>,
}

impl KubeReply {
    pub fn json(status: StatusCode, value: &Value) -> KubeReply {
        KubeReply::typed(status, value, "application/json")
    }

    pub fn typed(status: StatusCode, value: &Value, content_type: &str) -> KubeReply {
        KubeReply {
            status,
            content_type: content_type.into(),
            body: KubeBody::Full(Some(Bytes::from(serde_json::to_vec(value).unwrap_or_default()))),
            headers: Vec::new(),
            reason: None,
        }
    }

    pub fn text(status: StatusCode, text: &str) -> KubeReply {
        KubeReply {
            status,
            content_type: "text/plain; charset=utf-8".into(),
            body: KubeBody::Full(Some(Bytes::from(text.to_string()))),
            headers: Vec::new(),
            reason: None,
        }
    }

    pub fn error(e: &KubeError) -> KubeReply {
        let mut reply =
            KubeReply::json(StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), &e.status());
        reply.reason = Some(e.reason.clone());
        if let Some(secs) = e.retry_after {
            reply.headers.push(("retry-after".into(), secs.to_string()));
        }
        reply
    }

    pub fn stream(rx: mpsc::Receiver<Result<Bytes, Cut>>) -> KubeReply {
        KubeReply {
            status: StatusCode::OK,
            content_type: "application/json".into(),
            body: KubeBody::Stream(rx),
            headers: Vec::new(),
            reason: None,
        }
    }
}

pub(crate) async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    shared: Arc<KubeShared>,
    shutdown: signal::Receiver<bool>,
) {
    let watch_shutdown = shutdown.clone();
    accept_tls(listener, acceptor, shutdown, move |tls, peer| {
        let shared = shared.clone();
        let watch_shutdown = watch_shutdown.clone();
        async move {
            let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                let shared = shared.clone();
                let stop = watch_shutdown.clone();
                async move { answer(shared, req, stop, peer).await }
            });
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            // An error ends this connection only; the listener goes on.
            let _ = builder.serve_connection(TokioIo::new(tls), svc).await;
        }
    })
    .await
}

/// The reason the service future fails: hyper then drops the connection unanswered.
#[derive(Debug)]
struct Reset;

impl std::fmt::Display for Reset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection reset by fault injection")
    }
}

impl std::error::Error for Reset {}

async fn answer(
    shared: Arc<KubeShared>,
    req: Request<Incoming>,
    stop: signal::Receiver<bool>,
    peer: std::net::SocketAddr,
) -> Result<Response<KubeBody>, Reset> {
    let started = shared.config.clock.now();
    let timestamp = shared.config.clock.timestamp();
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let path = parts.uri.path().to_string();
    let raw_query = parts.uri.query().unwrap_or_default().to_string();
    let mut req = Req::new(parts.method.clone(), &path, &raw_query, parts.headers, body);
    req.peer = Some(peer.ip());
    let audit_id = uuid::Uuid::new_v4().to_string();

    let identity = crate::auth::bearer(req.header("authorization")).and_then(|t| shared.identity(t)).cloned();
    let is_watch = req.method == Method::GET && matches!(req.query("watch"), Some("true" | "1"));
    let reply = match &identity {
        None => KubeReply::error(&KubeError::unauthorized()),
        Some(identity) => {
            let fault = match is_health(&path) {
                true => Fault::None,
                false => shared.faults.lock().expect("fault lock").next_for(req.method.as_str(), &path),
            };
            match fault {
                Fault::Reset if is_watch => super::router::route(&shared, identity, &req, stop, true).await,
                Fault::Reset => {
                    log(&shared, &req, &raw_query, 0, None, identity, &audit_id, timestamp, started);
                    return Err(Reset);
                }
                Fault::Throttle { retry_after } => {
                    KubeReply::error(&KubeError::too_many_requests(retry_after.as_secs_f64().ceil().max(1.0) as u64))
                }
                Fault::ServerError => {
                    KubeReply::error(&KubeError::internal("Internal error occurred: etcdserver: request timed out"))
                }
                Fault::Forbidden => KubeReply::error(&KubeError::forbidden_path(&identity.username, "access", &path)),
                Fault::Slow(extra) => {
                    shared.config.clock.sleep(extra).await;
                    super::router::route(&shared, identity, &req, stop, false).await
                }
                Fault::None => super::router::route(&shared, identity, &req, stop, false).await,
            }
        }
    };
    let fallback = KubeIdentity {
        token: String::new(),
        username: String::new(),
        uid: String::new(),
        groups: vec![],
        rules: vec![],
    };
    log(
        &shared,
        &req,
        &raw_query,
        reply.status.as_u16(),
        reply.reason.clone(),
        identity.as_ref().unwrap_or(&fallback),
        &audit_id,
        timestamp,
        started,
    );
    let mut builder = Response::builder()
        .status(reply.status)
        .header("content-type", reply.content_type.as_str())
        .header("audit-id", audit_id.as_str())
        .header("cache-control", "no-cache, private")
        .header("x-kubernetes-pf-flowschema-uid", "00000000-0000-0000-0000-000000000001")
        .header("x-kubernetes-pf-prioritylevel-uid", "00000000-0000-0000-0000-000000000002");
    for (k, v) in &reply.headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    Ok(builder.body(reply.body).unwrap_or_else(|_| Response::new(KubeBody::Full(None))))
}

fn is_health(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/livez")
}

#[allow(clippy::too_many_arguments)]
fn log(
    shared: &KubeShared,
    req: &Req,
    raw_query: &str,
    status: u16,
    reason: Option<String>,
    identity: &KubeIdentity,
    audit_id: &str,
    timestamp: jiff::Timestamp,
    started: Instant,
) {
    shared.log.lock().expect("log lock").push(LoggedRequest {
        method: req.method.to_string(),
        service: Service::Kube,
        path: req.path.clone(),
        query: raw_query.to_string(),
        host: None,
        peer: req.peer,
        status,
        error_code: reason,
        client_id: (!identity.username.is_empty()).then(|| identity.username.clone()),
        request_id: audit_id.to_string(),
        user_agent: req.header("user-agent").map(str::to_string),
        timestamp,
        duration: shared.config.clock.since(started),
    });
}
