"""The `compute` acceptance check (`sitscheck accept`)."""
