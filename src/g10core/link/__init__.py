"""The links between devices: the GPU's PCIe link (``pcie``: spec, validation, Python handle;
``_pcie``: the compiled link shared by host copies and SSD peer traffic)."""
