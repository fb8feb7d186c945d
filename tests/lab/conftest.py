"""The NFS lab's marker: `pytest -m lab` runs only the lab, `-m "not lab"` everything else."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "lab: runs real NFS traffic (nfs-ganesha, nfs-rs) in network namespaces; needs root"
    )
