"""The pcie_link check."""
