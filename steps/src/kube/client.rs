//! The Kubernetes client of one step: kubeconfig and context from the inputs or `KUBECONFIG`,
//! the cluster CA trusted from the kubeconfig, and the server's `Retry-After` kept so the
//! runner (not the client library) decides when to try again.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use kube::Client;
use kube::config::Kubeconfig;

use super::inputs::ClusterInputs;
use crate::StepError;
use crate::azure::settings::SettingsSource;

/// The environment variable naming the kubeconfig file(s), as kubectl reads it.
pub const KUBECONFIG_VAR: &str = "KUBECONFIG";

/// A connected client and the last Retry-After the server sent it.
pub struct KubeClient {
    pub client: Client,
    retry_after: Arc<Mutex<Option<Duration>>>,
    /// Where the kubeconfig came from, for messages.
    pub source: String,
    /// The kubeconfig user the context signs in as, journaled as who acted on the cluster.
    pub user: Option<String>,
}

impl KubeClient {
    /// The Retry-After of the most recent throttled answer, taken so it applies once.
    pub fn take_retry_after(&self) -> Option<Duration> {
        self.retry_after.lock().expect("retry-after lock").take()
    }
}

fn kubeconfig_error(message: String) -> StepError {
    StepError::permanent(message)
        .with_code("KubeconfigInvalid")
        .with_hint("give `kubeconfig` (a file) and optionally `context`, or set KUBECONFIG")
}

/// The kubeconfig files to read: the step's own, else KUBECONFIG (colon-separated, merged in
/// order as kubectl does), else ~/.kube/config.
fn kubeconfig_paths(cluster: &ClusterInputs, env: &SettingsSource, work_dir: &Path) -> Vec<PathBuf> {
    let resolve = |p: &str| if Path::new(p).is_absolute() { PathBuf::from(p) } else { work_dir.join(p) };
    if let Some(path) = cluster.kubeconfig.as_deref().map(str::trim).filter(|p| !p.is_empty()) {
        return vec![resolve(path)];
    }
    if let Some(list) = env.var(KUBECONFIG_VAR) {
        return list.split(':').filter(|p| !p.is_empty()).map(resolve).collect();
    }
    env.var("HOME").map(|home| vec![Path::new(&home).join(".kube/config")]).unwrap_or_default()
}

fn read_kubeconfig(paths: &[PathBuf]) -> Result<Kubeconfig, StepError> {
    let mut merged: Option<Kubeconfig> = None;
    for path in paths {
        let config = Kubeconfig::read_from(path)
            .map_err(|e| kubeconfig_error(format!("cannot read kubeconfig `{}`: {e}", path.display())))?;
        merged = Some(match merged {
            None => config,
            Some(done) => done
                .merge(config)
                .map_err(|e| kubeconfig_error(format!("cannot merge kubeconfig `{}`: {e}", path.display())))?,
        });
    }
    merged.ok_or_else(|| kubeconfig_error("no kubeconfig: neither `kubeconfig` nor KUBECONFIG is set".into()))
}

/// The client configuration a program run by a step would use (the hypershift stand-in): the
/// kubeconfig `kubeconfig`, else KUBECONFIG, else ~/.kube/config, its current context, and the
/// proxy the process's environment says.
pub fn process_config(kubeconfig: Option<&str>) -> Result<kube::Config, String> {
    let cluster = ClusterInputs { kubeconfig: kubeconfig.map(str::to_string), context: None };
    let env = SettingsSource::Process;
    let cwd = std::env::current_dir().unwrap_or_default();
    let paths = kubeconfig_paths(&cluster, &env, &cwd);
    let source = paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(":");
    let kubeconfig = read_kubeconfig(&paths).map_err(|e| e.message)?;
    super::config::from_kubeconfig(kubeconfig, None, &env).map_err(|e| format!("kubeconfig `{source}`: {e}"))
}

pub async fn connect(cluster: &ClusterInputs, env: &SettingsSource, work_dir: &Path) -> Result<KubeClient, StepError> {
    let paths = kubeconfig_paths(cluster, env, work_dir);
    let kubeconfig = read_kubeconfig(&paths)?;
    let source = paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(":");
    let context = cluster.context.clone().or_else(|| kubeconfig.current_context.clone());
    let user = kubeconfig
        .contexts
        .iter()
        .find(|named| Some(&named.name) == context.as_ref())
        .and_then(|named| named.context.as_ref()?.user.clone());
    let mut config = super::config::from_kubeconfig(kubeconfig, cluster.context.as_deref(), env)
        .map_err(|e| kubeconfig_error(format!("kubeconfig `{source}`: {e}")))?;
    // Retries belong to the runner: it journals each attempt and honours Retry-After.
    config.default_retry = false;
    let retry_after = Arc::new(Mutex::new(None));
    let client = kube::client::ClientBuilder::try_from(config)
        .map_err(|e| kubeconfig_error(format!("kubeconfig `{source}`: {e}")))?
        .with_layer(&RetryAfterLayer(retry_after.clone()))
        .build();
    Ok(KubeClient { client, retry_after, source, user })
}

/// Records the Retry-After header of throttled (429) and unavailable (503) answers.
#[derive(Clone)]
struct RetryAfterLayer(Arc<Mutex<Option<Duration>>>);

impl<S> tower::Layer<S> for RetryAfterLayer {
    type Service = RetryAfterService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        RetryAfterService { inner, slot: self.0.clone() }
    }
}

#[derive(Clone)]
struct RetryAfterService<S> {
    inner: S,
    slot: Arc<Mutex<Option<Duration>>>,
}

type BoxFuture<T> = Pin<Box<dyn std::future::Future<Output = T> + Send>>;

impl<S, Req, B> tower::Service<Req> for RetryAfterService<S>
where
    S: tower::Service<Req, Response = http::Response<B>>,
    S::Future: Send + 'static,
    B: 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let slot = self.slot.clone();
        let future = self.inner.call(request);
        Box::pin(async move {
            let response = future.await?;
            let status = response.status().as_u16();
            if status == 429 || status == 503 {
                let headers = response.headers();
                if let Some(wait) = crate::net::retry_after(|name| headers.get(name).and_then(|v| v.to_str().ok())) {
                    *slot.lock().expect("retry-after lock") = Some(wait);
                }
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_kubeconfig_wins_over_kubeconfig_env() {
        let env = SettingsSource::fixed([(KUBECONFIG_VAR, "/a/one:two"), ("HOME", "/home/x")]);
        let own = ClusterInputs { kubeconfig: Some("mine".into()), context: None };
        assert_eq!(kubeconfig_paths(&own, &env, Path::new("/w")), vec![PathBuf::from("/w/mine")]);
        let none = ClusterInputs::default();
        assert_eq!(
            kubeconfig_paths(&none, &env, Path::new("/w")),
            vec![PathBuf::from("/a/one"), PathBuf::from("/w/two")]
        );
        let home_only = SettingsSource::fixed([("HOME", "/home/x")]);
        assert_eq!(kubeconfig_paths(&none, &home_only, Path::new("/w")), vec![PathBuf::from("/home/x/.kube/config")]);
    }

    #[test]
    fn a_missing_kubeconfig_is_a_clear_error() {
        let error = read_kubeconfig(&[PathBuf::from("/nonexistent/kubeconfig")]).unwrap_err();
        assert_eq!(error.code.as_deref(), Some("KubeconfigInvalid"));
        assert!(error.message.contains("/nonexistent/kubeconfig"));
    }
}
