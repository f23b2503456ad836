//! HTTP for the Kubernetes API: the TLS listener, a response body that can stream
//! (watches), authentication, fault injection, request logging, and routing of each URL
//! to discovery, openapi or a verb on a resource.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch as signal};
use tokio_rustls::TlsAcceptor;

use super::authz::{self, Attributes, KubeIdentity};
use super::catalog::ResourceDef;
use super::errors::KubeError;
use super::objects::{self, DeleteOptions, ListQuery, Part, ScaleChange, WriteOptions};
use super::patch::Patch;
use super::selectors::{FieldSelector, LabelSelector};
use super::{KubeShared, discovery, logs, openapi, protobuf, tables, watch};
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
    accept_tls(listener, acceptor, shutdown, move |tls| {
        let shared = shared.clone();
        let watch_shutdown = watch_shutdown.clone();
        async move {
            let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                let shared = shared.clone();
                let stop = watch_shutdown.clone();
                async move { answer(shared, req, stop).await }
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
) -> Result<Response<KubeBody>, Reset> {
    let started = shared.config.clock.now();
    let timestamp = shared.config.clock.timestamp();
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let path = parts.uri.path().to_string();
    let raw_query = parts.uri.query().unwrap_or_default().to_string();
    let req = Req::new(parts.method.clone(), &path, &raw_query, parts.headers, body);
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
                Fault::Reset if is_watch => route(&shared, identity, &req, stop, true).await,
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
                Fault::Slow(extra) => {
                    shared.config.clock.sleep(extra).await;
                    route(&shared, identity, &req, stop, false).await
                }
                Fault::None => route(&shared, identity, &req, stop, false).await,
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
        status,
        error_code: reason,
        client_id: (!identity.username.is_empty()).then(|| identity.username.clone()),
        request_id: audit_id.to_string(),
        user_agent: req.header("user-agent").map(str::to_string),
        timestamp,
        duration: shared.config.clock.since(started),
    });
}

/// A resource URL, split.
struct Target {
    res: ResourceDef,
    namespace: Option<String>,
    name: Option<String>,
    sub: Option<String>,
}

async fn route(
    shared: &Arc<KubeShared>,
    identity: &KubeIdentity,
    req: &Req,
    stop: signal::Receiver<bool>,
    cut: bool,
) -> KubeReply {
    match route_inner(shared, identity, req, stop, cut).await {
        Ok(reply) => reply,
        Err(e) => KubeReply::error(&e),
    }
}

async fn route_inner(
    shared: &Arc<KubeShared>,
    identity: &KubeIdentity,
    req: &Req,
    stop: signal::Receiver<bool>,
    cut: bool,
) -> Result<KubeReply, KubeError> {
    let segs: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    let accept = req.header("accept").unwrap_or_default().to_string();
    if req.method == Method::GET {
        let nonresource = Attributes { verb: "get".into(), path: Some(req.path.clone()), ..Attributes::default() };
        let allowed = || {
            if identity.allows(&nonresource) {
                Ok(())
            } else {
                Err(KubeError::forbidden_path(&identity.username, "get", &req.path))
            }
        };
        match segs.as_slice() {
            ["version"] => {
                allowed()?;
                return Ok(KubeReply::json(StatusCode::OK, &version()));
            }
            ["healthz"] | ["readyz"] | ["livez"] => return Ok(KubeReply::text(StatusCode::OK, "ok")),
            ["api"] => {
                allowed()?;
                let store = shared.store();
                return Ok(match discovery::aggregated_version(&accept) {
                    Some(v) => KubeReply::typed(
                        StatusCode::OK,
                        &discovery::aggregated(&store.catalog, true, v),
                        &discovery::aggregated_content_type(v),
                    ),
                    None => KubeReply::json(
                        StatusCode::OK,
                        &discovery::api_versions(shared.url.trim_start_matches("https://")),
                    ),
                });
            }
            ["apis"] => {
                allowed()?;
                let store = shared.store();
                return Ok(match discovery::aggregated_version(&accept) {
                    Some(v) => KubeReply::typed(
                        StatusCode::OK,
                        &discovery::aggregated(&store.catalog, false, v),
                        &discovery::aggregated_content_type(v),
                    ),
                    None => KubeReply::json(StatusCode::OK, &discovery::api_group_list(&store.catalog)),
                });
            }
            ["api", version] => {
                allowed()?;
                let store = shared.store();
                return discovery::resource_list(&store.catalog, "", version)
                    .map(|v| KubeReply::json(StatusCode::OK, &v))
                    .ok_or_else(KubeError::no_route);
            }
            ["apis", group] => {
                allowed()?;
                let store = shared.store();
                return discovery::api_group(&store.catalog, group)
                    .map(|v| KubeReply::json(StatusCode::OK, &v))
                    .ok_or_else(KubeError::no_route);
            }
            ["apis", group, version] => {
                allowed()?;
                let store = shared.store();
                return discovery::resource_list(&store.catalog, group, version)
                    .map(|v| KubeReply::json(StatusCode::OK, &v))
                    .ok_or_else(KubeError::no_route);
            }
            ["openapi", "v3"] => {
                allowed()?;
                let store = shared.store();
                return Ok(KubeReply::json(StatusCode::OK, &openapi::index(&store.catalog)));
            }
            ["openapi", "v3", rest @ ..] => {
                allowed()?;
                let store = shared.store();
                return openapi::document(&store.catalog, &rest.join("/"))
                    .map(|v| KubeReply::json(StatusCode::OK, &v))
                    .ok_or_else(KubeError::no_route);
            }
            _ => {}
        }
    }
    let target = parse_target(shared, &segs)?;
    let verb = verb_of(&req.method, &target, req)?;
    let subresource_verb = target.sub.is_some() && matches!(verb.as_str(), "get" | "patch" | "update");
    if !(target.res.has_verb(&verb) || subresource_verb) {
        return Err(KubeError::method_not_allowed("the server does not allow this method on the requested resource"));
    }
    let attrs = Attributes {
        verb: verb.clone(),
        group: target.res.group.clone(),
        resource: target.res.plural.clone(),
        subresource: target.sub.clone(),
        namespace: target.namespace.clone(),
        name: target.name.clone().unwrap_or_default(),
        path: None,
    };
    if !identity.allows(&attrs) {
        return Err(KubeError::forbidden(
            &identity.username,
            &verb,
            &target.res,
            target.sub.as_deref(),
            target.namespace.as_deref(),
            target.name.as_deref().unwrap_or_default(),
        ));
    }
    if target.res.group == "authorization.k8s.io" || target.res.group == "authentication.k8s.io" {
        return review(shared, identity, &target, req);
    }
    let wants_table = wants_table(&accept);
    let include_object = req.query("includeObject").unwrap_or("Metadata").to_string();
    match verb.as_str() {
        "get" => {
            let store = shared.store();
            let obj = objects::get(
                &store,
                &target.res,
                target.namespace.as_deref(),
                target.name.as_deref().unwrap_or_default(),
            )?;
            match target.sub.as_deref() {
                Some("scale") => Ok(KubeReply::json(StatusCode::OK, &objects::scale_of(&target.res, &obj)?)),
                Some("status") => Ok(KubeReply::json(StatusCode::OK, &obj)),
                Some("log") => {
                    let opts = logs::LogOptions {
                        container: req.query("container").filter(|c| !c.is_empty()).map(str::to_string),
                        tail_lines: req.query("tailLines").and_then(|n| n.parse().ok()),
                        timestamps: req.query("timestamps") == Some("true"),
                        previous: req.query("previous") == Some("true"),
                    };
                    Ok(KubeReply::text(StatusCode::OK, &logs::log(&obj, &opts)?))
                }
                Some(_) => Err(KubeError::no_route()),
                None if wants_table => {
                    let rv = obj["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_string();
                    Ok(KubeReply::json(
                        StatusCode::OK,
                        &tables::table(
                            &target.res,
                            &[obj],
                            &rv,
                            &include_object,
                            true,
                            shared.config.clock.timestamp(),
                        ),
                    ))
                }
                None => Ok(KubeReply::json(StatusCode::OK, &obj)),
            }
        }
        "list" => {
            let mut query = list_query(req, &target.res)?;
            query.read = objects::ReadAt::parse(
                req.query("resourceVersion"),
                req.query("resourceVersionMatch"),
                query.continue_token.is_some(),
            )?;
            let store = shared.store();
            let list = objects::list(&store, &target.res, target.namespace.as_deref(), &query)?;
            if wants_table {
                let items = list["items"].as_array().cloned().unwrap_or_default();
                let mut table = tables::table(
                    &target.res,
                    &items,
                    list["metadata"]["resourceVersion"].as_str().unwrap_or_default(),
                    &include_object,
                    true,
                    shared.config.clock.timestamp(),
                );
                if let Some(c) = list["metadata"].get("continue") {
                    table["metadata"]["continue"] = c.clone();
                }
                Ok(KubeReply::json(StatusCode::OK, &table))
            } else {
                Ok(KubeReply::json(StatusCode::OK, &list))
            }
        }
        "watch" => {
            let query = list_query(req, &target.res)?;
            let params = watch::WatchParams {
                resource_version: req.query("resourceVersion").map(str::to_string),
                timeout: req.query("timeoutSeconds").and_then(|t| t.parse::<u64>().ok()).map(Duration::from_secs),
                bookmarks: req.query("allowWatchBookmarks") == Some("true"),
                send_initial_events: req.query("sendInitialEvents") == Some("true"),
                table: wants_table.then_some(include_object),
                cut_after: cut.then(|| Duration::from_millis(200)),
            };
            let rx = watch::start(shared.clone(), target.res.clone(), target.namespace.clone(), query, params, stop)?;
            Ok(KubeReply::stream(rx))
        }
        "create" => {
            let body = decode_body(req)?;
            let opts = write_options(req);
            let mut store = shared.store();
            let obj = objects::create(&mut store, &target.res, target.namespace.as_deref(), body, &opts)?;
            Ok(KubeReply::json(StatusCode::CREATED, &obj))
        }
        "update" => {
            let body = decode_body(req)?;
            let opts = write_options(req);
            let name = target.name.as_deref().unwrap_or_default();
            let mut store = shared.store();
            let obj = match target.sub.as_deref() {
                Some("scale") => objects::write_scale(
                    &mut store,
                    &target.res,
                    target.namespace.as_deref(),
                    name,
                    ScaleChange::Replace(body),
                    &opts,
                )?,
                Some("status") => objects::update(
                    &mut store,
                    &target.res,
                    target.namespace.as_deref(),
                    name,
                    Part::Status,
                    body,
                    &opts,
                )?,
                Some(_) => return Err(KubeError::no_route()),
                None => objects::update(
                    &mut store,
                    &target.res,
                    target.namespace.as_deref(),
                    name,
                    Part::Main,
                    body,
                    &opts,
                )?,
            };
            Ok(KubeReply::json(StatusCode::OK, &obj))
        }
        "patch" => {
            let patch = Patch::parse(req.header("content-type").unwrap_or_default(), &req.body)?;
            let opts = write_options(req);
            if opts.force && !matches!(patch, Patch::Apply(_)) {
                return Err(KubeError::bad_request("force may not be used with non-apply patch types"));
            }
            let name = target.name.as_deref().unwrap_or_default();
            let mut store = shared.store();
            let (obj, created) = match target.sub.as_deref() {
                Some("scale") => (
                    objects::write_scale(
                        &mut store,
                        &target.res,
                        target.namespace.as_deref(),
                        name,
                        ScaleChange::Patch(&patch),
                        &opts,
                    )?,
                    false,
                ),
                Some("status") => objects::patch(
                    &mut store,
                    &target.res,
                    target.namespace.as_deref(),
                    name,
                    Part::Status,
                    &patch,
                    &opts,
                )?,
                Some(_) => return Err(KubeError::no_route()),
                None => objects::patch(
                    &mut store,
                    &target.res,
                    target.namespace.as_deref(),
                    name,
                    Part::Main,
                    &patch,
                    &opts,
                )?,
            };
            Ok(KubeReply::json(if created { StatusCode::CREATED } else { StatusCode::OK }, &obj))
        }
        "delete" => {
            let opts = delete_options(req)?;
            let mut store = shared.store();
            let obj = objects::delete(
                &mut store,
                &target.res,
                target.namespace.as_deref(),
                target.name.as_deref().unwrap_or_default(),
                &opts,
            )?;
            Ok(KubeReply::json(StatusCode::OK, &obj))
        }
        "deletecollection" => {
            let opts = delete_options(req)?;
            let query = list_query(req, &target.res)?;
            let mut store = shared.store();
            let list = objects::list(
                &store,
                &target.res,
                target.namespace.as_deref(),
                &ListQuery { limit: None, continue_token: None, ..query },
            )?;
            let mut deleted = Vec::new();
            for item in list["items"].as_array().into_iter().flatten() {
                let ns = item["metadata"]["namespace"].as_str();
                let name = item["metadata"]["name"].as_str().unwrap_or_default();
                deleted.push(objects::delete(&mut store, &target.res, ns, name, &opts)?);
            }
            Ok(KubeReply::json(
                StatusCode::OK,
                &json!({"kind": target.res.list_kind, "apiVersion": target.res.api_version(), "metadata": {"resourceVersion": store.current_rv().to_string()}, "items": deleted}),
            ))
        }
        _ => Err(KubeError::method_not_allowed("the server does not allow this method on the requested resource")),
    }
}

/// Resolves `/api/v1/...` and `/apis/{g}/{v}/...` to a resource, namespace, name and
/// subresource.
fn parse_target(shared: &KubeShared, segs: &[&str]) -> Result<Target, KubeError> {
    let (group, version, rest) = match segs {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Err(KubeError::no_route()),
    };
    let store = shared.store();
    let find = |plural: &str| store.catalog.find(group, version, plural).cloned().ok_or_else(KubeError::no_route);
    let target = match rest {
        ["namespaces", ns, plural, tail @ ..]
            if store.catalog.find(group, version, plural).is_some_and(|r| r.namespaced) =>
        {
            let res = find(plural)?;
            match tail {
                [] => Target { res, namespace: Some(ns.to_string()), name: None, sub: None },
                [name] => Target { res, namespace: Some(ns.to_string()), name: Some(name.to_string()), sub: None },
                [name, sub] => Target {
                    res,
                    namespace: Some(ns.to_string()),
                    name: Some(name.to_string()),
                    sub: Some(sub.to_string()),
                },
                _ => return Err(KubeError::no_route()),
            }
        }
        [plural] => Target { res: find(plural)?, namespace: None, name: None, sub: None },
        [plural, name] => {
            let res = find(plural)?;
            if res.namespaced {
                return Err(KubeError::no_route());
            }
            Target { res, namespace: None, name: Some(name.to_string()), sub: None }
        }
        [plural, name, sub] => {
            let res = find(plural)?;
            if res.namespaced {
                return Err(KubeError::no_route());
            }
            Target { res, namespace: None, name: Some(name.to_string()), sub: Some(sub.to_string()) }
        }
        _ => return Err(KubeError::no_route()),
    };
    if let Some(sub) = &target.sub {
        let known = sub == "status" && target.res.status_subresource
            || sub == "scale" && target.res.scale.is_some()
            || sub == "log" && target.res.log_subresource;
        if !known {
            return Err(KubeError::no_route());
        }
    }
    Ok(target)
}

fn verb_of(method: &Method, target: &Target, req: &Req) -> Result<String, KubeError> {
    let collection = target.name.is_none();
    Ok(match (method.as_str(), collection) {
        ("GET", true) if matches!(req.query("watch"), Some("true" | "1")) => "watch",
        ("GET", true) => "list",
        ("GET", false) => "get",
        ("POST", true) => "create",
        ("PUT", false) => "update",
        ("PATCH", false) => "patch",
        ("DELETE", false) => "delete",
        ("DELETE", true) => "deletecollection",
        _ => {
            return Err(KubeError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
    }
    .to_string())
}

/// Accept asks for a `meta.k8s.io` Table (kubectl get).
fn wants_table(accept: &str) -> bool {
    accept.split(',').any(|part| {
        let p: String = part.chars().filter(|c| !c.is_whitespace()).collect();
        p.contains("as=Table") && p.contains("g=meta.k8s.io")
    })
}

fn list_query(req: &Req, res: &ResourceDef) -> Result<ListQuery, KubeError> {
    Ok(ListQuery {
        labels: LabelSelector::parse(req.query("labelSelector").unwrap_or_default())?,
        fields: FieldSelector::parse(req.query("fieldSelector").unwrap_or_default(), &res.kind)?,
        limit: req.query("limit").and_then(|l| l.parse().ok()),
        continue_token: req.query("continue").filter(|c| !c.is_empty()).map(str::to_string),
        read: objects::ReadAt::default(),
    })
}

fn write_options(req: &Req) -> WriteOptions {
    let manager = req.query("fieldManager").filter(|m| !m.is_empty()).map(str::to_string).or_else(|| {
        // Like the real server: without fieldManager, the user agent's program name.
        req.header("user-agent").and_then(|ua| ua.split('/').next()).filter(|s| !s.is_empty()).map(str::to_string)
    });
    WriteOptions { manager, dry_run: req.query("dryRun") == Some("All"), force: req.query("force") == Some("true") }
}

fn delete_options(req: &Req) -> Result<DeleteOptions, KubeError> {
    let mut body = if req.body.is_empty() { json!({}) } else { decode_body(req)? };
    if let Some(p) = req.query("propagationPolicy") {
        body["propagationPolicy"] = json!(p);
    }
    if req.query("dryRun") == Some("All") {
        body["dryRun"] = json!(["All"]);
    }
    DeleteOptions::from_body(&body)
}

/// A request body: JSON, YAML or kubectl's protobuf.
fn decode_body(req: &Req) -> Result<Value, KubeError> {
    let content_type = req.header("content-type").unwrap_or("application/json").to_ascii_lowercase();
    if content_type.starts_with("application/vnd.kubernetes.protobuf") {
        return protobuf::decode(&req.body);
    }
    if content_type.starts_with("application/yaml") {
        return serde_norway::from_slice(&req.body)
            .map_err(|e| KubeError::bad_request(format!("error decoding YAML: {e}")));
    }
    if content_type.starts_with("application/json") || content_type.is_empty() {
        return req.json().map_err(|e| KubeError::bad_request(format!("the request body is not valid JSON: {e}")));
    }
    Err(KubeError::unsupported_media_type(format!(
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got {content_type})"
    )))
}

/// SelfSubjectAccessReview, SelfSubjectRulesReview and SelfSubjectReview: answered from
/// the caller's own rules, never stored.
fn review(shared: &KubeShared, identity: &KubeIdentity, target: &Target, req: &Req) -> Result<KubeReply, KubeError> {
    let _ = shared;
    let mut obj = decode_body(req)?;
    obj["apiVersion"] = json!(target.res.api_version());
    obj["kind"] = json!(target.res.kind);
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    obj["metadata"]["creationTimestamp"] = Value::Null;
    match target.res.kind.as_str() {
        "SelfSubjectAccessReview" => {
            let attrs = Attributes::from_review_spec(&obj["spec"]);
            let allowed = identity.allows(&attrs);
            obj["status"] = if allowed {
                json!({"allowed": true, "reason": format!("RBAC: allowed for User \"{}\"", identity.username)})
            } else {
                json!({"allowed": false})
            };
        }
        "SelfSubjectRulesReview" => {
            let ns = obj["spec"]["namespace"].as_str().unwrap_or_default().to_string();
            obj["status"] = authz::rules_review_status(identity, &ns);
        }
        "SelfSubjectReview" => {
            obj["status"] = json!({"userInfo": identity.user_info()});
        }
        _ => return Err(KubeError::no_route()),
    }
    Ok(KubeReply::json(StatusCode::CREATED, &obj))
}

fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "emulationMajor": "1",
        "emulationMinor": "32",
        "gitVersion": "v1.32.4",
        "gitCommit": "59526cd4867447956156ae3a602fcbac10a2c335",
        "gitTreeState": "clean",
        "buildDate": "2025-04-22T16:01:48Z",
        "goVersion": "go1.23.6",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}
