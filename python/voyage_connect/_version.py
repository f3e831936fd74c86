"""The SDK's version: the service's (package.json), which it is released with."""

__version__ = "0.1.0"
