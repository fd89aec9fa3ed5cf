"""PhysLab's version, in a module of its own: what records and exports name (the Inspect export's
``packages``) without importing the package's front door."""

__version__ = "0.1.0"
