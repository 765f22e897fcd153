"""The acceptance workloads (`sitscheck accept`): each runs in its own isolated child process,
one per GPU and phase, and reports on stdout as JSON lines (`protocol`)."""
