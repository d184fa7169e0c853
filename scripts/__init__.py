"""The command-line programs behind ``kahve`` (thin: they parse arguments and call the library)."""
