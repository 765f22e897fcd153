"""One Xid, SXid or fallen-off-the-bus report, as the parser gives it and the tally counts it."""

from __future__ import annotations

from msgspec import Struct


class XidEvent(Struct, frozen=True):
    """One Xid, SXid or fallen-off-the-bus report."""

    device: str | None
    xid: int | None
    sxid: int | None
    pid: int | None
    process: str | None
    message: str
    time: str | None = None
    gpu_instance: int | None = None
    compute_instance: int | None = None
    details: tuple[str, ...] = ()

    def to_fact(self) -> dict[str, object]:
        return {
            "device": self.device,
            "xid": self.xid,
            "sxid": self.sxid,
            "pid": self.pid,
            "process": self.process,
            "time": self.time,
            "message": self.message,
        }
