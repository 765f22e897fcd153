"""`xid`: NVIDIA Xid and NVSwitch SXid events in the kernel log, with what to do about them.

Reads every `NVRM: Xid`, `SXid` and "fallen off the bus" report (parse.py). A storm of one
Xid on one GPU is one finding with a count (facts keep every event). Severity and the
operator's action come from the catalog (catalog.py, from NVIDIA's Xid catalog); Xid 154's
announced recovery action and NVML's recovery-action field override the catalog's action.
Sympathetic Xids are marked: 45 logged after another Xid on the same GPU is a consequence
(info), 74 on a GPU while a peer has a critical Xid likely follows the peer's fault.
"""
