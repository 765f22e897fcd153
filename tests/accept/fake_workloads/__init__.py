"""Stand-in acceptance workloads for the parent's tests (no GPU): see `behave`."""
