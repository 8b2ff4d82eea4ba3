"""Companion code for the course: small, readable reference implementations, plot helpers and exercise checks.

Each lesson has its own module (`companion.scatter` for lesson 01, ...); `companion.course` sets a notebook up.
"""

__version__ = "0.1.0"
