"""trexlab: declarative lab automation for RFC 2544 / RFC 5180 / RFC 8219 benchmarking."""

__version__ = "0.1.0"
