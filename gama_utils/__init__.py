"""GAMA-Bench helper package: every notebook's logic lives here."""

__version__ = "0.1.0"
