"""Where a job waits and who runs it: the Queue protocol, the embedded queue (worker threads and
`vsandx worker` processes on the database) and Celery (app, tasks, the API's side), the two job kinds
(diagnosis_jobs, webhook_jobs), worker processes and their supervisor, housekeeping and retraining."""
