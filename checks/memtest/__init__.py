"""The `memtest` acceptance check (`sitscheck accept`)."""
