"""Generator version of the procedural subjects; bump it whenever their anatomy changes.

Kept apart from generator.py so that loading a cached runtime bundle (every console start)
does not import the generator and scipy.interpolate.
"""
GENERATOR_VERSION = "1.6.0"
