//! Status conditions as HyperShift writes them (`metav1.Condition`: type, status, reason,
//! message, lastTransitionTime, observedGeneration): an entry keeps its transition time while
//! its status holds, and the list keeps a fixed order.

use serde_json::{Value, json};

pub(crate) struct Conditions {
    previous: Vec<Value>,
    generation: Value,
    /// When a condition that changes status now transitions.
    now: String,
    list: Vec<Value>,
    /// NodePool conditions carry a severity instead of observedGeneration-only entries.
    with_severity: bool,
}

impl Conditions {
    /// Conditions for `obj`, carrying over transition times from its current status; a
    /// condition that changes status is dated `now`.
    pub(crate) fn new(obj: &Value, now: String) -> Conditions {
        Conditions {
            previous: obj["status"]["conditions"].as_array().cloned().unwrap_or_default(),
            generation: obj["metadata"]["generation"].clone(),
            now,
            list: Vec::new(),
            with_severity: false,
        }
    }

    /// NodePool conditions (`NodePoolCondition`): False ones carry a severity.
    pub(crate) fn for_node_pool(obj: &Value, now: String) -> Conditions {
        Conditions { with_severity: true, ..Conditions::new(obj, now) }
    }

    /// Sets `type_` (replacing an earlier setting in this list).
    pub(crate) fn set(&mut self, type_: &str, status: &str, reason: &str, message: &str) -> &mut Conditions {
        let old = self.previous.iter().find(|c| c["type"] == type_);
        let time = old
            .filter(|c| c["status"] == status)
            .map(|c| c["lastTransitionTime"].clone())
            .unwrap_or_else(|| json!(self.now));
        let mut entry = json!({
            "type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": time, "observedGeneration": self.generation,
        });
        if self.with_severity
            && status == "False"
            && !matches!(type_, "AutoscalingEnabled" | "AutorepairEnabled" | "UpdatingVersion" | "UpdatingConfig")
        {
            entry["severity"] = json!("Warning");
        }
        match self.list.iter_mut().find(|c| c["type"] == type_) {
            Some(slot) => *slot = entry,
            None => self.list.push(entry),
        }
        self
    }

    pub(crate) fn set_bool(&mut self, type_: &str, ok: bool, reason: &str, message: &str) -> &mut Conditions {
        self.set(type_, if ok { "True" } else { "False" }, reason, message)
    }

    pub(crate) fn into_value(self) -> Value {
        Value::Array(self.list)
    }
}
