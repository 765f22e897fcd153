"""The pcie_aer check."""
