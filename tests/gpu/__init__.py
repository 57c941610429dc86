# A package, so this directory's conftest.py is imported as gpu.conftest and does not displace
# tests/conftest.py, which the test modules import as `conftest`.
