"""
Provides reviewsd version information.
"""

# This file is auto-generated! Do not edit!
# Use `python -m incremental.update reviewsd` to change this file.

from incremental import Version

__version__ = Version("reviewsd", 26, 11, 0)
__all__ = ["__version__"]
