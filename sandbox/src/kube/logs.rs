//! `pods/{name}/log`: what the kubelet would stream for a container the sandbox "runs". No
//! process runs, so the log is the container's life as the sandbox knows it (its image
//! pulled, its start); the query options and the errors are the kubelet's: a container must
//! be named when there are several, a waiting container has no log yet, and there is no
//! previous instance of a container that never restarted.

use serde_json::Value;

use super::errors::KubeError;

/// The query options kubectl sends (`kubectl logs -c C --tail N --timestamps --previous`).
#[derive(Debug, Default)]
pub struct LogOptions {
    pub container: Option<String>,
    pub tail_lines: Option<usize>,
    pub timestamps: bool,
    pub previous: bool,
}

fn container_names(spec: &Value, key: &str) -> Vec<String> {
    spec[key].as_array().into_iter().flatten().filter_map(|c| c["name"].as_str()).map(str::to_string).collect()
}

/// The log text of one container of `pod`, or the error the kubelet gives.
pub fn log(pod: &Value, opts: &LogOptions) -> Result<String, KubeError> {
    let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let containers = container_names(&pod["spec"], "containers");
    let init = container_names(&pod["spec"], "initContainers");
    let container = match &opts.container {
        Some(c) => {
            if !containers.contains(c) && !init.contains(c) {
                return Err(KubeError::bad_request(format!("container {c} is not valid for pod {pod_name}")));
            }
            c.clone()
        }
        None if containers.len() == 1 => containers[0].clone(),
        None => {
            return Err(KubeError::bad_request(format!(
                "a container name must be specified for pod {pod_name}, choose one of: [{}]",
                containers.join(" ")
            )));
        }
    };
    let status = pod["status"]["containerStatuses"]
        .as_array()
        .into_iter()
        .chain(pod["status"]["initContainerStatuses"].as_array())
        .flatten()
        .find(|s| s["name"].as_str() == Some(container.as_str()));
    if opts.previous {
        return Err(KubeError::bad_request(format!(
            "previous terminated container \"{container}\" in pod \"{pod_name}\" not found"
        )));
    }
    let started = status.and_then(|s| {
        s["state"]["running"]["startedAt"].as_str().or_else(|| s["state"]["terminated"]["startedAt"].as_str())
    });
    let Some(started) = started else {
        let reason = status.and_then(|s| s["state"]["waiting"]["reason"].as_str()).unwrap_or("ContainerCreating");
        return Err(KubeError::bad_request(format!(
            "container \"{container}\" in pod \"{pod_name}\" is waiting to start: {reason}"
        )));
    };
    let image = status.and_then(|s| s["image"].as_str()).unwrap_or_default();
    let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
    let lines = [
        format!("sandbox: image {image} is present on node {node}"),
        format!("sandbox: container {container} of pod {pod_name} started"),
    ];
    let stamped: Vec<String> = lines
        .iter()
        .map(|l| {
            if opts.timestamps {
                // RFC 3339 with nanoseconds, as the kubelet prefixes each line.
                let at = started.trim_end_matches('Z');
                format!("{at}.000000000Z {l}")
            } else {
                l.clone()
            }
        })
        .collect();
    let skip = opts.tail_lines.map(|n| stamped.len().saturating_sub(n)).unwrap_or(0);
    Ok(stamped[skip..].iter().map(|l| format!("{l}\n")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(running: bool) -> Value {
        let state = if running {
            json!({"running": {"startedAt": "2026-01-02T03:04:05Z"}})
        } else {
            json!({"waiting": {"reason": "ContainerCreating"}})
        };
        json!({
            "metadata": {"name": "p"},
            "spec": {"nodeName": "n1", "containers": [{"name": "a", "image": "img"}, {"name": "b", "image": "img"}]},
            "status": {"containerStatuses": [{"name": "a", "image": "img", "state": state}, {"name": "b", "image": "img", "state": state}]},
        })
    }

    #[test]
    fn a_container_must_be_named_when_there_are_several() {
        let e = log(&pod(true), &LogOptions::default()).unwrap_err();
        assert_eq!(e.message, "a container name must be specified for pod p, choose one of: [a b]");
        let e = log(&pod(true), &LogOptions { container: Some("c".into()), ..LogOptions::default() }).unwrap_err();
        assert_eq!(e.message, "container c is not valid for pod p");
    }

    #[test]
    fn a_running_container_has_a_log_and_a_waiting_one_does_not() {
        let opts = LogOptions { container: Some("a".into()), tail_lines: Some(1), timestamps: true, previous: false };
        assert_eq!(
            log(&pod(true), &opts).unwrap(),
            "2026-01-02T03:04:05.000000000Z sandbox: container a of pod p started\n"
        );
        let e = log(&pod(false), &opts).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "container \"a\" in pod \"p\" is waiting to start: ContainerCreating")
        );
    }
}
