//! The server journal's read connection, on a thread of its own: the blocking client runs a
//! runtime of its own and must not be called from inside another one, and the journal is read
//! from async code. Each read is a closure run on that thread.

use std::sync::mpsc;

use postgres::Client;

use crate::error::Error;

type Task = Box<dyn FnOnce(&mut Client) + Send>;

pub(crate) struct Reader {
    tasks: mpsc::Sender<Task>,
    url: String,
}

impl Reader {
    /// Connects on a new thread; fails as the connection does.
    pub(crate) fn spawn(config: postgres::Config, url: &str) -> Result<Reader, Error> {
        let (tasks, queue) = mpsc::channel::<Task>();
        let (ready, connected) = mpsc::sync_channel(1);
        let thread_url = url.to_string();
        std::thread::Builder::new()
            .name("runbook-journal-reader".to_string())
            .spawn(move || {
                let mut client = match super::connect(&config, &thread_url) {
                    Ok(client) => {
                        let _ = ready.send(Ok(()));
                        client
                    }
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        return;
                    }
                };
                while let Ok(task) = queue.recv() {
                    task(&mut client);
                }
            })
            .map_err(|e| Error::Server { url: url.to_string(), message: format!("cannot start a thread: {e}") })?;
        connected
            .recv()
            .map_err(|_| Error::Server { url: url.to_string(), message: "the reader stopped".into() })??;
        Ok(Reader { tasks, url: url.to_string() })
    }

    /// Runs `read` on the reader's thread and waits for its answer.
    pub(crate) fn call<T: Send + 'static>(
        &self,
        read: impl FnOnce(&mut Client) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        let (reply, answer) = mpsc::sync_channel(1);
        let task: Task = Box::new(move |client| {
            let _ = reply.send(read(client));
        });
        let gone = || Error::Server { url: self.url.clone(), message: "the reader thread has stopped".into() };
        self.tasks.send(task).map_err(|_| gone())?;
        answer.recv().map_err(|_| gone())?
    }
}
