"""The xid check."""
