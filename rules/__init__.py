"""Default rule files and hardware profiles, shipped as package data."""
