"""Bug trackers and email, importing neither the store nor the queue: webhook intake (webhooks: admit a
delivery, run its work), the Bugzilla and GitHub clients, attachments as streams, the flow of a
delivery (flow: where a comment is posted), email (notify) and the ledgers of deliveries seen and
messages sent (over SQL tables the caller hands in)."""
