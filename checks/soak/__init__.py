"""The `soak` acceptance check (`sitscheck accept`)."""
