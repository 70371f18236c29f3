"""Bug trackers and email, without the database or the queue: webhook intake (webhooks: accept a
delivery, run its work), the Bugzilla and GitHub clients, attachments as streams, the flow of a
delivery (flow: where a comment is posted), email (notify) and the ledgers of what was seen and sent."""
