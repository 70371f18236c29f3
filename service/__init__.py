"""Online service: API, UI, workers, notifications, feedback store."""
