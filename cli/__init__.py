"""The ``docreview`` command line: one module per command group; it imports the flows, never the reverse."""
