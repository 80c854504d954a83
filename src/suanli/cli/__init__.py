"""The command line: one module per verb; each parses, calls the library, renders."""
