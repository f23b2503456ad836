//! The HTTPS listeners: accept, TLS, HTTP/1.1 or HTTP/2, then hand each request to its
//! service with faults, common headers and request logging applied uniformly.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};
use tokio_rustls::TlsAcceptor;

use crate::accept::accept_tls;
use crate::faults::Fault;
use crate::request_log::{LoggedRequest, Service, redact_query};
use crate::wire::{Reply, Req, retry_after_headers};
use crate::{Shared, arm, blob, entra, graph, public_names};

/// What one listener serves: a single service on its own port, or all four as Azure's public
/// host names, told apart by the `Host` each request names.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Listening {
    Service(Service),
    ByHost,
}

/// The path every service answers with 200 for readiness checks. A dot cannot start a
/// storage account name, so it never collides with a Blob path.
pub const READY_PATH: &str = "/.sandbox/ready";
/// What exists, for tests and people checking a rehearsal from another process: ARM resource
/// ids, and per Graph application its password credentials (names and key ids, never secrets).
pub const STATE_PATH: &str = "/.sandbox/state";
/// Every request answered so far by any of the services (the management cluster's Kubernetes
/// API included), oldest first, as JSON (method,
/// service, path, query with SAS signatures redacted, status, error code, client id, request
/// id, time, duration): what benchmarks count without reading a journal. Bodies are never kept.
pub const REQUESTS_PATH: &str = "/.sandbox/requests";
/// `POST` a [`crate::FaultRule`] (with `"service": "kube"` for the management cluster) to fail
/// one chosen request from then on; `GET` lists the rules and whether they fired. See
/// [`crate::faults`].
pub const FAULTS_PATH: &str = "/.sandbox/faults";
/// `POST` a policy assignment (`{"name": "require-cost-center", "definition": "require-tag",
/// "tag": "costCenter"}`; see `arm/policy.rs`) to deny the writes it denies from then on; `GET`
/// lists them.
pub const POLICIES_PATH: &str = "/.sandbox/policies";
/// `POST {"client_id": "…"}` makes that principal a person of an enterprise tenant: no standing
/// role, its ARM writes allowed only where a role assignment reaches.
pub const SCOPED_PRINCIPALS_PATH: &str = "/.sandbox/scoped-principals";

pub(crate) async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    listening: Listening,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
) {
    accept_tls(listener, acceptor, shutdown, move |tls, peer| {
        let shared = shared.clone();
        async move {
            // Fault injection closes a connection mid-request through this.
            let kill = Arc::new(Notify::new());
            let kill_for_service = kill.clone();
            let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                let shared = shared.clone();
                let kill = kill_for_service.clone();
                async move { Ok::<_, Infallible>(answer(shared, listening, req, kill, peer).await) }
            });
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection(TokioIo::new(tls), svc);
            tokio::select! {
                _ = conn => {}
                _ = kill.notified() => {}
            }
        }
    })
    .await
}

async fn answer(
    shared: Arc<Shared>,
    listening: Listening,
    req: Request<Incoming>,
    kill: Arc<Notify>,
    peer: std::net::SocketAddr,
) -> Response<Full<Bytes>> {
    let started = shared.now();
    let timestamp = shared.timestamp();
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let path = parts.uri.path().to_string();
    let raw_query = parts.uri.query().unwrap_or_default().to_string();
    // HTTP/2 names the host in `:authority` (the URI), HTTP/1.1 in `Host`.
    let host = parts
        .uri
        .authority()
        .map(|a| a.as_str().to_string())
        .or_else(|| parts.headers.get(http::header::HOST).and_then(|h| h.to_str().ok()).map(str::to_string));
    let (service, host_account, logged_host) = match listening {
        Listening::Service(service) => (service, None, None),
        Listening::ByHost => match host.as_deref().and_then(public_names::route) {
            Some(route) => (route.service, route.account, host.clone()),
            // The sandbox's own paths answer on any name (e.g. https://127.0.0.1/.sandbox/requests).
            None if path.starts_with("/.sandbox/") => (Service::Arm, None, host.clone()),
            None => return misdirected(host.as_deref()),
        },
    };
    let mut req = Req::new(parts.method.clone(), &path, &raw_query, parts.headers, body);
    req.host_account = host_account;
    req.peer = Some(peer.ip());
    let request_id = uuid::Uuid::new_v4().to_string();
    let correlation_id = req
        .header("x-ms-correlation-request-id")
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let client_request_id = req.header("x-ms-client-request-id").map(str::to_string);
    let client_id = shared.caller_client_id(&req);
    let user_agent = req.header("user-agent").map(str::to_string);

    let reply = if path == READY_PATH && req.method == http::Method::GET {
        Reply::json(StatusCode::OK, &serde_json::json!({"status": "ready", "service": service.to_string()}))
    } else if path.starts_with("/.sandbox/") && !controls(&shared, &req) {
        Reply::json(
            StatusCode::UNAUTHORIZED,
            &serde_json::json!({"error": {"code": "SandboxControlUnauthorized", "message": "the sandbox's control pages answer its own principal only: send `x-runbook-sandbox-secret: $AZURE_CLIENT_SECRET` (from its sandbox.env), or a token of that principal"}}),
        )
    } else if path == STATE_PATH && req.method == http::Method::GET {
        let state = shared.state();
        let applications: Vec<serde_json::Value> = state
            .applications
            .values()
            .map(|app| {
                serde_json::json!({
                    "displayName": app.display_name,
                    "appId": app.app_id,
                    "passwordCredentials": app.passwords.iter().map(|p| serde_json::json!({"keyId": p.key_id, "displayName": p.display_name})).collect::<Vec<_>>(),
                })
            })
            .collect();
        Reply::json(
            StatusCode::OK,
            &serde_json::json!({"resources": state.resource_ids(), "applications": applications}),
        )
    } else if path == REQUESTS_PATH && req.method == http::Method::GET {
        let requests: Vec<serde_json::Value> = shared.request_log().iter().map(LoggedRequest::to_json).collect();
        Reply::json(StatusCode::OK, &serde_json::json!({ "requests": requests }))
    } else if path == FAULTS_PATH {
        fault_rules(&shared, &req)
    } else if path == POLICIES_PATH {
        policy_assignments(&shared, &req)
    } else if path == SCOPED_PRINCIPALS_PATH && req.method == http::Method::POST {
        match req.json().ok().and_then(|b| b["client_id"].as_str().map(str::to_string)) {
            Some(client_id) => {
                shared.scoped_principals.lock().expect("scoped lock").push(client_id);
                Reply::json(StatusCode::CREATED, &serde_json::json!({}))
            }
            None => Reply::json(StatusCode::BAD_REQUEST, &serde_json::json!({"error": "give {\"client_id\": \"…\"}"})),
        }
    } else {
        match draw_fault(&shared, service, &req) {
            Fault::Reset => Reply::reset(),
            Fault::Throttle { retry_after } => throttled(&shared, service, &req, retry_after),
            Fault::ServerError => server_error(&shared, service, &correlation_id),
            Fault::Forbidden => forbidden(&shared, service, &req),
            Fault::Slow(extra) => {
                shared.config.clock.sleep(extra).await;
                dispatch(&shared, service, req).await
            }
            Fault::None => dispatch(&shared, service, req).await,
        }
    };

    let status = if reply.reset { 0 } else { reply.status.as_u16() };
    if service == Service::Arm
        && let Some(account) = public_names::created_storage_account(&parts.method, &path, status)
    {
        shared.hosts.add_account(&account);
    }
    shared.log(LoggedRequest {
        method: parts.method.to_string(),
        service,
        path: path.clone(),
        query: redact_query(&raw_query),
        host: logged_host,
        peer: Some(peer.ip()),
        status,
        error_code: reply.error_code.clone(),
        client_id,
        request_id: request_id.clone(),
        user_agent,
        timestamp,
        duration: shared.clock().since(started),
    });

    if reply.reset {
        kill.notify_one();
        // The connection task drops this connection; this future never completes.
        std::future::pending::<()>().await;
    }
    build_response(service, reply, shared.timestamp(), &request_id, &correlation_id, client_request_id)
}

/// 421: this listener answers only for Azure's public host names.
fn misdirected(host: Option<&str>) -> Response<Full<Bytes>> {
    let text = format!(
        "the sandbox answers here only as {}, {}, {} and <account>{}; this request named {}\n",
        public_names::ARM_HOST,
        public_names::ENTRA_HOST,
        public_names::GRAPH_HOST,
        public_names::BLOB_HOST_SUFFIX,
        host.unwrap_or("no host")
    );
    Response::builder()
        .status(StatusCode::MISDIRECTED_REQUEST)
        .header("content-type", "text/plain")
        .body(Full::new(Bytes::from(text)))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

fn draw_fault(shared: &Shared, service: Service, req: &Req) -> Fault {
    let mut injector = shared.faults.lock().expect("fault lock");
    if service == Service::Entra && !injector.applies_to_token_endpoint() {
        return injector.rule_fault(req.method.as_str(), &req.path).unwrap_or(Fault::None);
    }
    injector.next_for(req.method.as_str(), &req.path)
}

/// `/.sandbox/faults`: adds a rule (`POST`) or lists them (`GET`).
fn policy_assignments(shared: &Shared, req: &Req) -> Reply {
    let mut policies = shared.policies.lock().expect("policy lock");
    if req.method == http::Method::POST {
        match serde_json::from_slice::<crate::arm::policy::PolicyAssignment>(&req.body) {
            Ok(assignment) => policies.push(assignment),
            Err(e) => {
                return Reply::json(
                    StatusCode::BAD_REQUEST,
                    &serde_json::json!({"error": format!("not a policy assignment: {e}")}),
                );
            }
        }
    }
    let status = if req.method == http::Method::POST { StatusCode::CREATED } else { StatusCode::OK };
    Reply::json(status, &serde_json::json!({ "assignments": *policies }))
}

fn fault_rules(shared: &Shared, req: &Req) -> Reply {
    let listing = || {
        serde_json::json!({
            "azure": shared.faults.lock().expect("fault lock").rules(),
            "kube": shared.kube.fault_rules(),
        })
    };
    match req.method {
        http::Method::GET => Reply::json(StatusCode::OK, &listing()),
        http::Method::POST => match added_rule(&req.body) {
            Ok((service, rule)) => match service.as_deref() {
                Some("kube") => {
                    shared.kube.add_fault_rule(rule);
                    Reply::json(StatusCode::CREATED, &listing())
                }
                None | Some("azure") => {
                    shared.faults.lock().expect("fault lock").add_rule(rule);
                    Reply::json(StatusCode::CREATED, &listing())
                }
                Some(other) => Reply::json(
                    StatusCode::BAD_REQUEST,
                    &serde_json::json!({"error": format!("unknown service {other:?}: use \"kube\" or \"azure\"")}),
                ),
            },
            Err(e) => Reply::json(
                StatusCode::BAD_REQUEST,
                &serde_json::json!({"error": format!("not a fault rule: {e}"), "example": {"service": "kube", "method": "POST", "path": "/apis/hypershift.openshift.io/v1beta1/namespaces/*/hostedclusters", "ordinal": 1, "fault": "throttle", "retry_after_seconds": 1}}),
            ),
        },
        _ => Reply::empty(StatusCode::METHOD_NOT_ALLOWED),
    }
}

/// A posted rule and the service it is for (`service` is not part of the rule itself).
fn added_rule(body: &[u8]) -> Result<(Option<String>, crate::FaultRule), serde_json::Error> {
    let mut value: serde_json::Value = serde_json::from_slice(body)?;
    let service = value.as_object_mut().and_then(|o| o.remove("service")).and_then(|s| s.as_str().map(str::to_string));
    Ok((service, serde_json::from_value(value)?))
}

async fn dispatch(shared: &Arc<Shared>, service: Service, req: Req) -> Reply {
    match service {
        Service::Arm => arm::handle(shared, req).await,
        Service::Entra => entra::handle(shared, req).await,
        Service::Graph => graph::handle(shared, req).await,
        Service::Blob => blob::handle(shared, req).await,
        // The Kubernetes API has its own listener (kube::KubeApiServer); never routed here.
        Service::Kube => Reply::empty(StatusCode::NOT_FOUND),
    }
}

fn throttled(shared: &Shared, service: Service, req: &Req, after: std::time::Duration) -> Reply {
    let secs = after.as_secs().max(1);
    let reply = match service {
        Service::Arm => {
            let kind = if req.is_write() { "write" } else { "read" };
            crate::arm::errors::arm_error(
                StatusCode::TOO_MANY_REQUESTS,
                "SubscriptionRequestsThrottled",
                &format!(
                    "Number of '{kind}' requests for subscription '{}' actor '{}' exceeded. Please try again after '{secs}' seconds after additional tips available at https://aka.ms/armthrottling",
                    shared.config.subscription_id,
                    shared.caller_object_id(req).unwrap_or_default()
                ),
            )
            .with_header(
                &format!("x-ms-ratelimit-remaining-subscription-{kind}s"),
                "0",
            )
        }
        Service::Graph => crate::graph::graph_error(
            StatusCode::TOO_MANY_REQUESTS,
            "TooManyRequests",
            "Too many requests. Please retry after the time specified in the Retry-After header.",
        ),
        Service::Blob => crate::blob::blob_error(StatusCode::SERVICE_UNAVAILABLE, "ServerBusy", "The server is busy."),
        Service::Kube => Reply::empty(StatusCode::TOO_MANY_REQUESTS),
        Service::Entra => crate::entra::token_error(
            shared.timestamp(),
            StatusCode::TOO_MANY_REQUESTS,
            "temporarily_unavailable",
            90055,
            "TenantThrottlingThreshold: There are too many incoming requests. This tenant has exceeded its threshold of requests.",
        ),
    };
    retry_after_headers(reply, after)
}

/// Whether `req` may read or change the sandbox itself: it carries the sandbox principal's
/// secret (`x-runbook-sandbox-secret`) or a token of that principal. Another user of the
/// machine, who can reach the port but not read the 0600 `sandbox.env`, cannot.
fn controls(shared: &Shared, req: &Req) -> bool {
    let secret = &shared.config.client_secret;
    let by_secret = req.header("x-runbook-sandbox-secret").is_some_and(|given| {
        given.len() == secret.len() && given.bytes().zip(secret.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    });
    by_secret
        || shared.caller_object_id(req).is_some_and(|oid| oid.eq_ignore_ascii_case(crate::SANDBOX_CLIENT_OBJECT_ID))
}

/// 403 as each service says it to a caller without the permission.
fn forbidden(shared: &Shared, service: Service, req: &Req) -> Reply {
    let caller = shared.caller_object_id(req).unwrap_or_default();
    match service {
        Service::Arm => {
            crate::arm::authorization::authorization_failed(&caller, "Microsoft.Resources/write", &req.path)
        }
        Service::Graph => crate::graph::graph_error(
            StatusCode::FORBIDDEN,
            "Authorization_RequestDenied",
            "Insufficient privileges to complete the operation.",
        ),
        Service::Blob => crate::blob::blob_error(
            StatusCode::FORBIDDEN,
            "AuthorizationPermissionMismatch",
            "This request is not authorized to perform this operation using this permission.",
        ),
        Service::Kube | Service::Entra => Reply::empty(StatusCode::FORBIDDEN),
    }
}

fn server_error(shared: &Shared, service: Service, correlation_id: &str) -> Reply {
    match service {
        Service::Arm => crate::arm::errors::arm_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            &format!(
                "Encountered internal server error. Diagnostic information: timestamp '{}', subscription id '{}', tracking id '{}', request correlation id '{}'.",
                shared.timestamp().strftime("%Y%m%dT%H%M%SZ"),
                shared.config.subscription_id,
                uuid::Uuid::new_v4(),
                correlation_id
            ),
        ),
        Service::Graph => crate::graph::graph_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "serviceNotAvailable",
            "Service unavailable. Please try again later.",
        ),
        Service::Kube => Reply::empty(StatusCode::INTERNAL_SERVER_ERROR),
        Service::Blob => crate::blob::blob_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            "Server encountered an internal error. Please try again after some time.",
        ),
        Service::Entra => crate::entra::token_error(
            shared.timestamp(),
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            50000,
            "There was an error issuing a token or an issue with our sign-in service.",
        ),
    }
}

fn build_response(
    service: Service,
    reply: Reply,
    now: jiff::Timestamp,
    request_id: &str,
    correlation_id: &str,
    client_request_id: Option<String>,
) -> Response<Full<Bytes>> {
    let mut builder = Response::builder().status(reply.status);
    let date = now.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string();
    let mut common: Vec<(String, String)> = vec![
        ("x-ms-request-id".into(), request_id.into()),
        ("x-ms-correlation-request-id".into(), correlation_id.into()),
        ("date".into(), date),
        ("cache-control".into(), "no-cache".into()),
        ("strict-transport-security".into(), "max-age=31536000; includeSubDomains".into()),
    ];
    match service {
        Service::Arm => {
            common.push(("x-ms-routing-request-id".into(), format!("SANDBOX:{request_id}")));
        }
        Service::Graph => {
            common.push(("request-id".into(), request_id.into()));
            common.push(("client-request-id".into(), client_request_id.clone().unwrap_or_else(|| request_id.into())));
        }
        Service::Blob => {
            common.push(("server".into(), "Windows-Azure-Blob/1.0 Microsoft-HTTPAPI/2.0".into()));
        }
        Service::Entra | Service::Kube => {}
    }
    if let Some(id) = client_request_id {
        common.push(("x-ms-client-request-id".into(), id));
    }
    for (name, value) in common {
        if !reply.has_header(&name) {
            builder = builder.header(name, value);
        }
    }
    for (name, value) in &reply.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    builder.body(Full::new(reply.body)).unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}
