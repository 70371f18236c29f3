"""Content-sniffing parsers, one module per source of bundle-format.md, producing plain records."""
