"""PhysLab: a workbench for AI-assisted theoretical physics."""

__version__ = "0.1.0"
