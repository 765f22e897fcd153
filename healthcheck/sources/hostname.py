"""The node's name, as dcgm-exporter gives it (its `Hostname` label, `internal/pkg/hostname`):
`$NODE_NAME` where it is set (a Kubernetes pod's, from the downward API: the pod's own host
name is the pod's), else the kernel's host name. A live report's `host`, and so the
`Hostname` label that joins sitscheck's series with dcgm-exporter's."""

from __future__ import annotations

import os
import socket


def node_name() -> str:
    return os.environ.get("NODE_NAME", "").strip() or socket.gethostname()
