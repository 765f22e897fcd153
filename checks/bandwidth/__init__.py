"""`bandwidth`: what each GPU's PCIe link, memory (HBM) and peer links measurably deliver."""
