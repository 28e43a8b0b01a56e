"""One module per CLI command; :mod:`ulr.cli` discovers them."""
